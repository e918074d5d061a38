//! The spawn hooks. Before a spawn, by one of two mechanisms: the plugin's function-hook module at
//! `agent.spawn` (`hooks/spawn.mjs`, Claude Code 2.1.287 and later), which runs `system1 hook
//! agent-spawn` and sets the spawn's `model` to what it prints; or, where that module does not act
//! in the session, the PreToolUse hook on Agent/Task, which rewrites the call (`updatedInput`, only
//! `model` changed). Either logs the brief's features and rule tier next to the model Claude chose,
//! naming itself in the entry, and under `[routing] enforce` sets the rule's tier; otherwise it
//! prints nothing and the spawn passes exactly as Claude made it. After it (PostToolUse): the model
//! the spawn ran on, logged. None ever blocks a spawn or grants a permission.

use serde_json::Value;

use super::HookResult;
use crate::config::Loaded;
use crate::logging;
use crate::routing::agent::{self, Spawn};
use crate::routing::entry::Via;
use crate::routing::gate::Gate;
use crate::routing::{Until, enforce, log};

/// Whether the plugin's module acts on this session's spawns: `SPAWN_MODULE_VAR` names its session.
pub fn module_acts(payload: &Value, module_acts: Option<&str>) -> bool {
    let session = payload.get("session_id").and_then(Value::as_str).filter(|s| !s.is_empty());
    session.is_some() && session == module_acts
}

/// Whether the PreToolUse hook leaves this spawn to the plugin's module: the module named this
/// hook input's session in the hook's environment. The hook's frame asks before it loads the
/// config, and then prints and logs nothing.
pub fn steps_aside(payload: &Value) -> bool {
    module_acts(payload, std::env::var(crate::claude_code::SPAWN_MODULE_VAR).ok().as_deref())
}

/// PreToolUse, where the module does not act ([`steps_aside`]): `raw` is the hook input's text (the
/// rewrite copies the call's input from it byte for byte), `payload` the same parsed.
pub fn before(loaded: &Loaded, raw: &str, payload: &Value) -> HookResult {
    let Some(run) = decide(loaded, raw, payload, Via::PreToolUse) else { return Ok(None) };
    Ok(run.updated_input.map(|input| enforce::hook_output(&input)))
}

/// The module's call at `agent.spawn`: the same input as PreToolUse's (the module builds it from
/// the spawn), answered with `{"model": "<tier>"}` when the model is to be set, else nothing.
pub fn at_spawn(loaded: &Loaded, raw: &str, payload: &Value) -> HookResult {
    let Some(run) = decide(loaded, raw, payload, Via::AgentSpawn) else { return Ok(None) };
    let tier = run.verdict.as_ref().and_then(|v| v.action.as_ref().ok()).filter(|_| run.updated_input.is_some());
    Ok(tier.map(|t| serde_json::json!({ "model": t.name() }).to_string()))
}

/// Runs the spawn through routing and logs it as acted on `via`; `None` when the input carries no
/// spawn.
fn decide(loaded: &Loaded, raw: &str, payload: &Value, via: Via) -> Option<agent::AgentRun> {
    let spawn = Spawn::from_hook(raw, payload)?;
    let run = agent::run(loaded, &spawn, Until::FirstGate);
    // Logged, as the hook's stderr is not shown: a broken config, or no answer from the engine.
    if let Some(gate @ Gate::ConfigError(_)) = run.gates.first() {
        logging::warn("hook", &format!("agent: the spawn passes as it is: {gate}"));
    } else if let Some(Err(why)) = run.verdict.as_ref().map(|v| &v.routed.asked.features) {
        logging::warn("hook", &format!("agent: the spawn passes as it is, the engine gave no answer: {why}"));
    }
    if let Some(entry) = agent::entry(&spawn, &run, via)
        && let Err(e) = log::append(&entry)
    {
        // A log that cannot be written must not cost the user the rewrite they configured.
        logging::warn("hook", &format!("cannot write the routing log: {e}"));
    }
    Some(run)
}

/// PostToolUse: records what the spawn ran on; prints nothing.
pub fn after(loaded: &Loaded, payload: &Value) -> HookResult {
    if let Some(entry) = agent::spawned(loaded, payload) {
        log::append(&entry).map_err(|e| format!("cannot write the routing log: {e}"))?;
    }
    Ok(None)
}
