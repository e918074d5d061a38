//! `system1 outcomes`: not built yet (see the open issues).

use crate::error::{Error, Result};

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> Result<i32> {
    Err(Error::failure("`system1 outcomes` is not available in this build yet"))
}
