//! The session_start hook: not built yet (see the open issues). Silent.

use serde_json::Value;

use super::HookResult;
use crate::config::Loaded;

pub fn handle(_loaded: &Loaded, _payload: &Value) -> HookResult {
    Ok(None)
}
