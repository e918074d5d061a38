//! `system1 completions <shell>`: the shell's completion script for every subcommand and option,
//! written by clap_complete from the same command tree clap parses with, so it never falls behind.

use crate::error::{Result, exit};

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  source <(system1 completions bash)                 # this bash session; put it in ~/.bashrc to keep it
  system1 completions zsh > ~/.zfunc/_system1         # zsh: a folder on $fpath, then `compinit`
  system1 completions fish > ~/.config/fish/completions/system1.fish
  system1 completions powershell >> $PROFILE")]
pub struct Args {
    /// The shell to write the script for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// `command` is the whole tree, from `cli.rs`: this module sits below it and cannot build it.
pub fn run(args: Args, mut command: clap::Command) -> Result<i32> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "system1", &mut script);
    crate::output::write_bytes(&script)?;
    Ok(exit::OK)
}
