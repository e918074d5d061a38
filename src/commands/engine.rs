//! `system1 engine`: not built yet (see the open issues).

use crate::error::{Error, Result};

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> Result<i32> {
    Err(Error::failure("`system1 engine` is not available in this build yet"))
}
