//! `system1 install` and `system1 uninstall`: not built yet (see the open issues).

use crate::error::{Error, Result};

#[derive(clap::Args)]
pub struct Args {}

#[derive(clap::Args)]
pub struct UninstallArgs {}

pub fn run(_args: Args) -> Result<i32> {
    Err(Error::failure("`system1 install` is not available in this build yet"))
}

pub fn run_uninstall(_args: UninstallArgs) -> Result<i32> {
    Err(Error::failure("`system1 uninstall` is not available in this build yet"))
}
