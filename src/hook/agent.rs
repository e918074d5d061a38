//! The spawn hooks. Before a spawn (PreToolUse on Agent/Task): the brief's features and rule tier
//! logged next to the model Claude chose, and under `[routing] enforce` the call rewritten to the
//! rule's tier (`updatedInput`, only `model` changed); otherwise it prints nothing and the call
//! passes exactly as Claude made it. After it (PostToolUse): the model the spawn ran on, logged.
//! Neither ever blocks a spawn or grants a permission.

use serde_json::Value;

use super::HookResult;
use crate::config::Loaded;
use crate::logging;
use crate::routing::agent::{self, Spawn};
use crate::routing::gate::Gate;
use crate::routing::{Until, enforce, log};

/// PreToolUse: `raw` is the hook input's text (the rewrite copies the call's input from it byte for
/// byte), `payload` the same parsed.
pub fn before(loaded: &Loaded, raw: &str, payload: &Value) -> HookResult {
    let Some(spawn) = Spawn::from_hook(raw, payload) else { return Ok(None) };
    let run = agent::run(loaded, &spawn, Until::FirstGate);
    // Logged, as the hook's stderr is not shown: a broken config, or no answer from the engine.
    if let Some(gate @ Gate::ConfigError(_)) = run.gates.first() {
        logging::warn("hook", &format!("agent: the spawn passes as it is: {gate}"));
    } else if let Some(Err(why)) = run.verdict.as_ref().map(|v| &v.routed.asked.features) {
        logging::warn("hook", &format!("agent: the spawn passes as it is, the engine gave no answer: {why}"));
    }
    if let Some(entry) = agent::entry(&spawn, &run)
        && let Err(e) = log::append(&entry)
    {
        // A log that cannot be written must not cost the user the rewrite they configured.
        logging::warn("hook", &format!("cannot write the routing log: {e}"));
    }
    Ok(run.updated_input.map(|input| enforce::hook_output(&input)))
}

/// PostToolUse: records what the spawn ran on; prints nothing.
pub fn after(loaded: &Loaded, payload: &Value) -> HookResult {
    if let Some(entry) = agent::spawned(loaded, payload) {
        log::append(&entry).map_err(|e| format!("cannot write the routing log: {e}"))?;
    }
    Ok(None)
}
