//! `system1 hook session-start|prompt|agent|spawned`: the plugin's hooks. Whatever happens inside, a
//! hook exits 0 and prints nothing unless it has something for Claude Code: it must never disturb the
//! user's prompt. An event this version does not know (a newer plugin's hooks.json run by an older
//! binary) is read and ignored the same way.

use crate::error::Result;
use crate::hook;

#[derive(clap::Args)]
#[command(after_help = "\
Example (Claude Code runs these from the plugin's hooks/hooks.json):
  echo '{\"prompt\": \"Rename the flag in src/cli.rs\"}' | system1 hook prompt")]
pub struct Args {
    #[command(subcommand)]
    event: Event,
}

#[derive(clap::Subcommand)]
enum Event {
    /// SessionStart: silent unless something needs the user.
    SessionStart,
    /// UserPromptSubmit: the model-routing hint and the skill picker.
    Prompt,
    /// PreToolUse on Agent/Task: records the spawn, and under `[routing] enforce` sets its model.
    Agent,
    /// PostToolUse on Agent/Task: records the model the spawn ran on.
    Spawned,
    /// Any other event: silent.
    #[command(external_subcommand)]
    Other(#[allow(dead_code, reason = "clap needs somewhere to put the event's words")] Vec<String>),
}

pub fn run(args: Args) -> Result<i32> {
    let event = match args.event {
        Event::SessionStart => hook::Event::SessionStart,
        Event::Prompt => hook::Event::Prompt,
        Event::Agent => hook::Event::Agent,
        Event::Spawned => hook::Event::Spawned,
        Event::Other(_) => {
            // Read the input so that Claude Code never writes into a closed pipe.
            let _ = std::io::copy(&mut std::io::Read::take(std::io::stdin(), hook::MAX_INPUT), &mut std::io::sink());
            return Ok(crate::error::exit::OK);
        }
    };
    Ok(hook::run(event))
}
