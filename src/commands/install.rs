//! `system1 install` and `system1 uninstall [--purge]`: thin wrappers that print what `install`
//! did, one line per step.

use crate::error::{Result, exit};
use crate::install;

/// Copy this binary into the install dir (`~/.system1-gateway/bin`, or `SYSTEM1_INSTALL_DIR`), write
/// the config from the example when there is none, and register the MCP server with Claude Code
/// (`claude mcp add --scope user`), or print the command when `claude` is not on PATH.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 install
  system1 install --no-register              # print the `claude mcp add` command instead of running it")]
pub struct Args {
    /// Do not run `claude mcp add`; print the command instead.
    #[arg(long)]
    no_register: bool,
}

/// Remove the MCP registration, the installed binary and any engine start-at-login entry. The
/// config, the engines and the logs are kept unless `--purge` is given.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 uninstall
  system1 uninstall --purge                  # also the config, engines, logs and calibration")]
pub struct UninstallArgs {
    /// Also delete the config file and what system1 keeps in the install dir (engines, logs,
    /// calibration); anything else there stays.
    #[arg(long)]
    purge: bool,
}

pub fn run(args: Args) -> Result<i32> {
    let mut lines = Vec::new();
    let outcome = install::install(!args.no_register, &mut lines);
    if outcome.is_ok() {
        lines.push(format!(
            "other MCP clients (Codex, Gemini CLI, Cursor, ...): {} mcp-config CLIENT prints the entry to paste",
            crate::paths::installed_binary().display()
        ));
    }
    print_lines(&lines)?;
    outcome.map(|()| exit::OK)
}

pub fn run_uninstall(args: UninstallArgs) -> Result<i32> {
    let mut lines = Vec::new();
    let outcome = install::uninstall(args.purge, &mut lines);
    print_lines(&lines)?;
    outcome.map(|()| exit::OK)
}

/// What was done, even when a later step failed (the error follows on stderr).
fn print_lines(lines: &[String]) -> Result<()> {
    for line in lines {
        outln!("{line}")?;
    }
    Ok(())
}
