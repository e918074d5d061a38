//! The command-line tree. Each subcommand's arguments and handler live in `commands/<name>.rs`;
//! this file only lists them and dispatches.

use clap::{CommandFactory, Parser, Subcommand};

use crate::commands;
use crate::error::Result;

/// Fast System-1 decisions for Claude Code, from a local decision engine.
#[derive(Parser)]
#[command(name = "system1", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the stdio MCP server (what `claude mcp add` and other MCP clients launch).
    Mcp(commands::mcp::Args),
    /// Serve the gateway over HTTP as a System One API server (POST /v1/systemone).
    Serve(commands::serve::Args),
    /// Print the server entry for another MCP client (Codex, Gemini CLI, Cursor, ...).
    McpConfig(commands::mcp_config::Args),
    /// The Claude Code plugin's hooks: read the hook JSON on stdin, answer on stdout.
    Hook(commands::hook::Args),
    /// Show what the prompt hook would do with a prompt, step by step.
    Route(commands::route::Args),
    /// Ask for one decision from the command line.
    Decide(commands::decide::Args),
    /// Launch the installed server as an MCP client does and check it.
    Smoke(commands::smoke::Args),
    /// Diagnose the config, the registration and the engine, with fixes.
    Doctor(commands::doctor::Args),
    /// Pause or resume System-1 everywhere, or show its state.
    Toggle(commands::toggle::Args),
    /// Is System-1 used, and does it pay off? A report from Claude Code transcripts.
    Report(commands::report::Args),
    /// Claude Code's status line: model, session and today's cost, what routing saved, System-1's state.
    #[command(after_help = commands::statusline::READS)]
    Statusline(commands::statusline::Args),
    /// Propose outcome labels for subagent spawns from the transcripts.
    Outcomes(commands::outcomes::Args),
    /// Label the routing log and fit the confidence calibration.
    Calibrate(commands::calibrate::Args),
    /// Measure an engine on the labelled log and give the READY verdict.
    Evaluate(commands::evaluate::Args),
    /// Compare engines on labelled sets: accuracy, calibration, latency, and the tier they route to.
    Study(commands::study::Args),
    /// Install this binary, write the config and register the MCP server.
    Install(commands::install::Args),
    /// Unregister and remove the installed binary (and with --purge, everything).
    Uninstall(commands::install::UninstallArgs),
    /// Install, start, stop and inspect the engine servers on this machine (laya, von, the decision server), and the local engine.
    Engine(commands::engine::Args),
    /// Show the effective config and where each value came from; check it.
    Config(commands::config::Args),
    /// Write the request and response JSON Schemas.
    Schema(commands::schema::Args),
    /// Print the completion script for a shell (bash, zsh, fish, powershell, elvish).
    Completions(commands::completions::Args),
}

pub fn run() -> Result<i32> {
    if let Some(event) = hook_fast_path() {
        return Ok(crate::hook::run(event));
    }
    if statusline_fast_path() {
        return Ok(commands::statusline::show());
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with exit 0; usage errors to stderr with exit 2.
            let _ = e.print();
            return Ok(e.exit_code());
        }
    };
    match cli.command {
        Command::Mcp(a) => commands::mcp::run(a),
        Command::Serve(a) => commands::serve::run(a),
        Command::McpConfig(a) => commands::mcp_config::run(a),
        Command::Hook(a) => commands::hook::run(a),
        Command::Route(a) => commands::route::run(a),
        Command::Decide(a) => commands::decide::run(a),
        Command::Smoke(a) => commands::smoke::run(a),
        Command::Doctor(a) => commands::doctor::run(a),
        Command::Toggle(a) => commands::toggle::run(a),
        Command::Report(a) => commands::report::run(a),
        Command::Statusline(a) => commands::statusline::run(a),
        Command::Outcomes(a) => commands::outcomes::run(a),
        Command::Calibrate(a) => commands::calibrate::run(a),
        Command::Evaluate(a) => commands::evaluate::run(a),
        Command::Study(a) => commands::study::run(a),
        Command::Install(a) => commands::install::run(a),
        Command::Uninstall(a) => commands::install::run_uninstall(a),
        Command::Engine(a) => commands::engine::run(a),
        Command::Config(a) => commands::config::run(a),
        Command::Schema(a) => commands::schema::run(a),
        Command::Completions(a) => commands::completions::run(a, Cli::command()),
    }
}

/// `system1 statusline` exactly, recognised without clap, as the hooks are: Claude Code runs it each
/// time the status line updates.
fn statusline_fast_path() -> bool {
    let mut args = std::env::args_os().skip(1);
    matches!((args.next(), args.next()), (Some(cmd), None) if cmd == "statusline")
}

/// `system1 hook <event>` exactly, recognised without clap: Claude Code runs it on every prompt, and
/// building the whole command tree would cost it about a third of a millisecond each time.
fn hook_fast_path() -> Option<crate::hook::Event> {
    let mut args = std::env::args_os().skip(1);
    let (Some(cmd), Some(event), None) = (args.next(), args.next(), args.next()) else { return None };
    if cmd != "hook" {
        return None;
    }
    match event.to_str()? {
        "prompt" => Some(crate::hook::Event::Prompt),
        "agent" => Some(crate::hook::Event::Agent),
        "agent-spawn" => Some(crate::hook::Event::AgentSpawn),
        "spawned" => Some(crate::hook::Event::Spawned),
        "session-start" => Some(crate::hook::Event::SessionStart),
        _ => None,
    }
}
