//! The hooks' common frame: read the hook JSON from stdin, run the handler, print its output.
//! Any failure (bad input, a broken config, a panic) is logged to the log file when one is set,
//! and the hook stays silent with exit 0.

pub mod agent;
pub mod prompt;
pub mod session_start;

use std::io::{Read, Write};
use std::panic::AssertUnwindSafe;

use serde_json::Value;

use crate::logging;

#[derive(Debug, Clone, Copy)]
pub enum Event {
    SessionStart,
    Prompt,
    /// PreToolUse on Agent/Task.
    Agent,
    /// PostToolUse on Agent/Task.
    Spawned,
}

/// What a handler wants printed (one JSON object's text for Claude Code), or `None` for silence.
pub type Output = Option<String>;

/// A handler's failure, logged and otherwise swallowed.
pub type HookResult = Result<Output, String>;

pub fn run(event: Event) -> i32 {
    // A panic message on stderr would be noise in the user's session: it goes to the log file
    // only, and none is written before the config has said where that file is.
    std::panic::set_hook(Box::new(|info| {
        if logging::initialized() {
            logging::error("hook", &format!("internal error: {info}"))
        }
    }));
    // Everything runs under the unwind guard, the config loading too: whatever happens, the hook
    // exits 0 with nothing on stdout unless the handler produced an answer.
    let output = std::panic::catch_unwind(AssertUnwindSafe(|| answer(event))).ok().flatten();
    if let Some(out) = output {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{out}").and_then(|_| stdout.flush());
    }
    0
}

/// Loads the config, reads the hook's input and runs the handler; `None` for silence.
fn answer(event: Event) -> Output {
    let loaded = crate::config::load();
    let g = &loaded.config.gateway;
    logging::init(&g.log_level, &g.log_file, false);
    let mut input = String::new();
    if std::io::stdin().take(16 * 1024 * 1024).read_to_string(&mut input).is_err() {
        logging::warn("hook", "hook input is not UTF-8 text");
        return None;
    }
    let payload: Value = match serde_json::from_str(&input) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            logging::warn("hook", "hook input is not a JSON object");
            return None;
        }
        Err(e) => {
            logging::warn("hook", &format!("hook input is not JSON: {e}"));
            return None;
        }
    };
    let outcome = match event {
        Event::SessionStart => session_start::handle(&loaded, &payload),
        Event::Prompt => prompt::handle(&loaded, &payload),
        Event::Agent => agent::before(&loaded, &input, &payload),
        Event::Spawned => agent::after(&loaded, &payload),
    };
    outcome.unwrap_or_else(|e| {
        logging::warn("hook", &format!("{event:?}: {e}"));
        None
    })
}

/// The `hookSpecificOutput` object Claude Code reads from a hook's stdout.
pub fn additional_context(event_name: &str, text: &str) -> Value {
    serde_json::json!({"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}})
}
