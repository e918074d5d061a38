//! `system1 hook session-start|prompt|agent`: the plugin's hooks. Whatever happens inside, a hook
//! exits 0 and prints nothing unless it has something for Claude Code: it must never disturb the
//! user's prompt.

use crate::error::Result;
use crate::hook;

#[derive(clap::Args)]
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
    /// PreToolUse on Agent/Task: record-only.
    Agent,
}

pub fn run(args: Args) -> Result<i32> {
    let event = match args.event {
        Event::SessionStart => hook::Event::SessionStart,
        Event::Prompt => hook::Event::Prompt,
        Event::Agent => hook::Event::Agent,
    };
    Ok(hook::run(event))
}
