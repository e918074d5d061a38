//! The prompt hook (UserPromptSubmit): the routing hint and the skill picker. Advisory only: it
//! never blocks or rewrites the prompt; it adds at most two lines of context, and says nothing at
//! all whenever it has nothing sure to say. The work itself is `routing::run_prompt`, shared with
//! `system1 route`.

use serde_json::Value;

use super::{HookResult, additional_context};
use crate::config::Loaded;
use crate::logging;
use crate::routing::{self, Input, Mode};

pub fn handle(loaded: &Loaded, payload: &Value) -> HookResult {
    let Some(prompt) = payload.get("prompt").and_then(Value::as_str) else { return Ok(None) };
    let input = Input::from_payload(payload, prompt);
    let run = routing::run_prompt(loaded, &input, Mode::Hook);
    for entry in routing::entries(&input, &run) {
        // A log that cannot be written must not cost the user the hint.
        if let Err(e) = routing::log::append(&entry) {
            logging::warn("hook", &format!("cannot write the routing log: {e}"));
        }
    }
    Ok(run.context().map(|text| additional_context("UserPromptSubmit", &text).to_string()))
}
