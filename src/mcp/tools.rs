//! The three tools as MCP sees them: their listing and their results.

use serde_json::{Value, json};

use crate::gateway::{Gateway, Status, schema};

/// Newest protocol first; `initialize` echoes the client's version when it is one of these.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Tool annotations arrived in 2025-03-26; titles, output schemas and structured results in 2025-06-18.
fn has_annotations(version: &str) -> bool {
    version >= "2025-03-26"
}
fn has_structured(version: &str) -> bool {
    version >= "2025-06-18"
}

fn input_schema(mut s: Value) -> Value {
    if let Value::Object(m) = &mut s {
        m.remove("$schema");
        m.remove("title");
    }
    s
}

pub fn list(version: &str) -> Value {
    let tools = [
        (
            "system1_decide",
            "System-1 decide",
            "Fast decision from a local System-1 engine: picks one of `options` (or answers yes/no without options) with a calibrated confidence. For quick, low-stakes triage and classification, not for reasoning, facts or code. status \"abstained\" means: decide it yourself.",
            input_schema(schema::request()),
            schema::response(),
        ),
        (
            "system1_health",
            "System-1 health",
            "Health of the System-1 gateway and its engines: ok, degraded, down or paused, with a probe per provider.",
            schema::no_arguments(),
            schema::health(),
        ),
        (
            "system1_capabilities",
            "System-1 capabilities",
            "System-1 gateway version, provider chain, limits (max_options), timeout, threshold, calibration fits and the request/response JSON Schemas.",
            schema::no_arguments(),
            schema::capabilities(),
        ),
    ];
    let list: Vec<Value> = tools
        .into_iter()
        .map(|(name, title, description, input, output)| {
            let mut t = json!({"name": name, "description": description, "inputSchema": input});
            if has_structured(version) {
                t["title"] = json!(title);
                t["outputSchema"] = output;
            }
            if has_annotations(version) {
                t["annotations"] = json!({"title": title, "readOnlyHint": true, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false});
            }
            t
        })
        .collect();
    json!({"tools": list})
}

/// Runs a tool. `None` means no such tool (a protocol error, not a tool result).
pub fn call(gateway: &Gateway, name: &str, arguments: &Value, version: &str) -> Option<Value> {
    let (structured, is_error) = match name {
        "system1_decide" => {
            let resp = gateway.decide(arguments);
            let is_error = resp.status == Status::Error;
            (serde_json::to_value(&resp).unwrap_or(Value::Null), is_error)
        }
        "system1_health" => (serde_json::to_value(gateway.health()).unwrap_or(Value::Null), false),
        "system1_capabilities" => (gateway.capabilities(), false),
        _ => return None,
    };
    let text = serde_json::to_string(&structured).unwrap_or_default();
    let mut result = json!({"content": [{"type": "text", "text": text}], "isError": is_error});
    if has_structured(version) {
        result["structuredContent"] = structured;
    }
    Some(result)
}
