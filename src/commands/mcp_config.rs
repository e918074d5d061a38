//! `system1 mcp-config [CLIENT]`: the ready-to-paste server entry for an MCP client other than
//! Claude Code, for the installed binary and the `SYSTEM1_*` settings of this shell. The entry
//! alone goes to stdout, so it can be piped; where it goes and what to know goes to stderr.

use crate::config;
use crate::error::{Result, exit};
use crate::mcp::clients::{Client, Launch, entry};
use crate::paths;

/// Print the entry that starts the installed `system1 mcp` from another MCP client: its absolute
/// path (clients do not expand `~`), the config and install dir when they are not the default, and
/// this shell's other SYSTEM1_* settings as the client can take them (secrets only by name, in
/// Codex's env_vars and Gemini's redaction allowlist). Without CLIENT, list the clients.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 mcp-config                         # the entry for every client, each in its own format
  system1 mcp-config codex >> ~/.codex/config.toml")]
pub struct Args {
    #[arg(value_enum)]
    client: Option<ClientArg>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ClientArg {
    ClaudeDesktop,
    Cursor,
    Windsurf,
    Vscode,
    Gemini,
    Codex,
}

impl From<ClientArg> for Client {
    fn from(c: ClientArg) -> Client {
        match c {
            ClientArg::ClaudeDesktop => Client::ClaudeDesktop,
            ClientArg::Cursor => Client::Cursor,
            ClientArg::Windsurf => Client::Windsurf,
            ClientArg::Vscode => Client::VsCode,
            ClientArg::Gemini => Client::Gemini,
            ClientArg::Codex => Client::Codex,
        }
    }
}

pub fn run(args: Args) -> Result<i32> {
    let Some(client) = args.client.map(Client::from) else {
        outln!("The entry for each MCP client: system1 mcp-config CLIENT")?;
        for c in Client::ALL {
            outln!("  {:<15} {:<18} {}", c.id(), c.name(), c.config_file())?;
        }
        return Ok(exit::OK);
    };
    let binary = paths::installed_binary();
    let command = std::path::absolute(&binary).unwrap_or(binary);
    let launch = Launch::new(command, &config::process_env());
    out!("{}", entry(client, &launch))?;

    let merge = if client == Client::Codex { "append to" } else { "merge into" };
    eprintln!("# {}: {merge} {}", client.name(), client.config_file());
    if !launch.command.is_file() {
        eprintln!(
            "note: {} is not installed yet: run `{}` first",
            launch.command.display(),
            crate::text::command("install")
        );
    }
    for var in launch.withheld(client) {
        eprintln!(
            "note: {var} is not written: it is a secret, and {} takes only values. Put the key alone in a file only you can read (chmod 600) and name it in api_key_file (docs/configuration.md#secrets).",
            client.name()
        );
    }
    if client == Client::Gemini {
        eprintln!(
            "note: Gemini CLI runs only in trusted folders: trust the folder when it asks, or pass --skip-trust to headless `gemini -p`. \"trust\": true lets it call system1's three read-only tools without asking, which `gemini -p` needs unless you pass --approval-mode yolo; remove it to confirm each call."
        );
    }
    Ok(exit::OK)
}
