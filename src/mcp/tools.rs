//! The three tools as MCP sees them: their listing and their results.

use serde_json::{Value, json};

use crate::gateway::{Gateway, Status, request, schema};

/// Handshake-era protocols, newest first; `initialize` echoes the client's version when it is one
/// of these.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Stateless-era protocols (no `initialize`: each request names its version in `_meta`).
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];

/// The reserved `_meta` keys of the stateless era.
pub const VERSION_META_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_INFO_META_KEY: &str = "io.modelcontextprotocol/clientInfo";
const SERVER_INFO_META_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// JSON-RPC error of the stateless era for a protocol version this server does not speak.
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

pub fn server_info() -> Value {
    json!({"name": "system1", "title": "System-1 gateway", "version": crate::gateway::VERSION})
}

pub fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}})
}

/// The answer to `server/discover`: the stateless versions served, capabilities and identity.
/// Clients that speak only the handshake era never send it; dual-era clients adopt this.
pub fn discover() -> Value {
    modern_result(json!({"supportedVersions": MODERN_VERSIONS, "capabilities": capabilities()}), true)
}

/// A result in the stateless era's shape: `resultType`, the server's identity in `_meta`, and for
/// cacheable results (`tools/list`, `server/discover`) caching hints that allow no reuse.
pub fn modern_result(mut result: Value, cacheable: bool) -> Value {
    if let Value::Object(m) = &mut result {
        m.insert("resultType".into(), json!("complete"));
        if cacheable {
            m.insert("ttlMs".into(), json!(0));
            m.insert("cacheScope".into(), json!("private"));
        }
        m.insert("_meta".into(), json!({SERVER_INFO_META_KEY: server_info()}));
    }
    result
}

/// -32022 for a request naming a version this server does not speak, listing the ones it does
/// (the handshake versions too, so that a dual-era client falls back to `initialize`).
pub fn unsupported_version(id: Value, requested: &Value) -> Value {
    let supported: Vec<&str> = MODERN_VERSIONS.iter().chain(PROTOCOL_VERSIONS.iter()).copied().collect();
    let requested = requested.as_str().map(String::from).unwrap_or_else(|| requested.to_string());
    json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": UNSUPPORTED_PROTOCOL_VERSION,
        "message": format!("protocol version {requested:?} is not supported; supported: {}", supported.join(", ")),
        "data": {"supported": supported, "requested": requested},
    }})
}

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
            let resp = match request::validate(arguments) {
                Ok(req) => gateway.decide(&req),
                Err(invalid) => gateway.refuse(&invalid),
            };
            let is_error = resp.status == Status::Error;
            (serde_json::to_value(&resp).unwrap_or(Value::Null), is_error)
        }
        "system1_health" => (serde_json::to_value(gateway.health()).unwrap_or(Value::Null), false),
        "system1_capabilities" => (serde_json::to_value(gateway.capabilities()).unwrap_or(Value::Null), false),
        _ => return None,
    };
    let text = serde_json::to_string(&structured).unwrap_or_default();
    let mut result = json!({"content": [{"type": "text", "text": text}], "isError": is_error});
    if has_structured(version) {
        result["structuredContent"] = structured;
    }
    Some(result)
}
