//! The agent hook (PreToolUse on Agent/Task): record-only. It logs the brief's features and rule
//! tier next to the model the orchestrator chose, prints nothing and never changes the spawn.

use serde_json::Value;

use super::HookResult;
use crate::config::Loaded;
use crate::routing;

pub fn handle(loaded: &Loaded, payload: &Value) -> HookResult {
    if let Some(entry) = routing::record_agent(loaded, payload) {
        routing::log::append(&entry).map_err(|e| format!("cannot write the routing log: {e}"))?;
    }
    Ok(None)
}
