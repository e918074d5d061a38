//! The prompt hook (UserPromptSubmit): the routing hint and the skill picker. Advisory only: it
//! never blocks or rewrites the prompt; it adds at most two lines of context, and says nothing at
//! all whenever it has nothing sure to say. The work itself is `routing::run_prompt`, shared with
//! `system1 route`.

use serde_json::Value;

use super::{HookResult, additional_context};
use crate::config::Loaded;
use crate::logging;
use crate::routing::gate::Gate;
use crate::routing::{self, Input, Until};

pub fn handle(loaded: &Loaded, payload: &Value) -> HookResult {
    let Some(prompt) = payload.get("prompt").and_then(Value::as_str) else { return Ok(None) };
    let input = Input::from_payload(payload, prompt);
    let run = routing::run_prompt(loaded, &input, Until::FirstGate);
    log_failures(&run);
    // A log that cannot be written must not cost the user the hint.
    if let Err(e) = routing::log::append_all(&routing::entries(&input, &run)) {
        logging::warn("hook", &format!("cannot write the routing log: {e}"));
    }
    Ok(run.context().map(|text| additional_context(super::Event::Prompt.name(), &text).to_string()))
}

/// The hook's own failures go to `log_file` (its stderr is not shown), so that a hook that stays
/// silent can be told from one that had nothing sure to say: a broken config, or an engine that
/// failed or timed out (the gateway's line before this one, under the same request id, says how).
/// A prompt below the threshold is no failure.
fn log_failures(run: &routing::Run) {
    if let Some(gate @ Gate::ConfigError(_)) = run.gates.first() {
        logging::warn("hook", &format!("prompt: no hint: {gate}"));
        return;
    }
    let Some(hints) = &run.hints else { return };
    if let Some(Err(why)) = hints.routing.as_ref().map(|r| &r.asked.features) {
        logging::warn("hook", &format!("prompt: no routing hint, the engine gave no answer: {why}"));
    }
    if let Some(routing::skills::Pick::Failed(why)) = hints.picked.as_ref().map(|p| &p.pick) {
        logging::warn("hook", &format!("prompt: no skill hint, the engine gave no answer: {why}"));
    }
}
