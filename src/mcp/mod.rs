//! The stdio MCP server: newline-delimited JSON-RPC 2.0, hand-written on serde_json.
//!
//! The main thread reads stdin line by line and answers everything but `tools/call` inline; each
//! tool call runs on its own thread, so a decision waiting on a slow engine holds up neither
//! `ping`, nor health, nor another decision. Replies are written whole, one line each, under one
//! lock; stdout carries nothing else. End of input ends the process within a short grace period.
//!
//! Two protocol eras share the loop. The handshake era (2024-11-05 to 2025-11-25) starts with
//! `initialize`, which fixes the version for the connection. The stateless era (2026-07-28) has no
//! handshake: a client probes `server/discover`, then every request names its version in `_meta`,
//! and its results carry that era's fields. Each request is answered in the era it speaks.
//!
//! Every malformed message that can be answered is answered (-32700 parse error, -32600 invalid
//! request, -32601 unknown method, -32602 bad params, -32022 unsupported protocol version), with
//! `id: null` where the id can't be read.

pub mod tools;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use crate::gateway::Gateway;
use crate::logging;

/// A line longer than this is refused: its bytes are skipped as they arrive, never parsed, so one
/// message can never hold more memory than this (a decision request with the longest question and
/// 256 of the longest options is under 600 kB).
const MAX_LINE: usize = 16 * 1024 * 1024;

/// After end of input, replies still being worked on get this long to be written (a script may pipe
/// its requests in and close stdin). Shorter than the 2 s the SDK clients wait before SIGTERM.
const EOF_GRACE: std::time::Duration = std::time::Duration::from_millis(1000);

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;

struct Server {
    gateway: Arc<Gateway>,
    out: Mutex<std::io::Stdout>,
    /// The negotiated protocol version (the newest until `initialize` says otherwise).
    version: Mutex<Option<String>>,
    /// Tool calls still running, by id, each with whether the client cancelled it (its reply is
    /// then dropped). One map under one lock, so a cancellation can never outlive its call.
    in_flight: Mutex<HashMap<String, bool>>,
}

impl Server {
    fn version(&self) -> String {
        self.version.lock().map(|v| v.clone()).ok().flatten().unwrap_or_else(|| tools::PROTOCOL_VERSIONS[0].to_string())
    }

    fn send(&self, msg: &Value) {
        let mut line = match serde_json::to_string(msg) {
            Ok(s) => s,
            Err(_) => return,
        };
        line.push('\n');
        let Ok(mut out) = self.out.lock() else { return };
        if out.write_all(line.as_bytes()).and_then(|_| out.flush()).is_err() {
            // The client is gone (broken pipe): nothing more can be said.
            std::process::exit(0);
        }
    }
}

fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// Runs the server until stdin closes.
pub fn serve(gateway: Gateway) -> i32 {
    let server = Arc::new(Server {
        gateway: Arc::new(gateway),
        out: Mutex::new(std::io::stdout()),
        version: Mutex::new(None),
        in_flight: Mutex::new(HashMap::new()),
    });
    for e in &server.gateway.config_errors {
        logging::warn("startup", &format!("config error: {e}"));
    }
    for e in &server.gateway.calibration.errors {
        logging::warn("startup", &format!("calibration skipped: {e}"));
    }
    let mut reader = BufReader::with_capacity(1 << 16, std::io::stdin().lock());
    let mut buf = Vec::with_capacity(1 << 12);
    loop {
        buf.clear();
        match (&mut reader).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                logging::error("stdin", &format!("cannot read stdin: {e}"));
                break;
            }
        }
        if buf.len() > MAX_LINE && buf.last() != Some(&b'\n') {
            // Skip the rest of the oversized line, then refuse it.
            let mut skipped = Vec::new();
            loop {
                skipped.clear();
                match (&mut reader).take(1 << 20).read_until(b'\n', &mut skipped) {
                    Ok(0) => break,
                    Ok(_) if skipped.last() == Some(&b'\n') => break,
                    Ok(_) => continue,
                    Err(_) => break,
                }
            }
            server.send(&error(Value::Null, INVALID_REQUEST, format!("message longer than {MAX_LINE} bytes")));
            continue;
        }
        // A bug must not take the server down with it: the panic is logged and reading goes on.
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle_line(&server, &buf))).is_err() {
            logging::error("rpc", "internal error while handling a message (see the panic above)");
        }
        // One huge message must not keep its memory for the rest of the session.
        if buf.capacity() > 1 << 20 {
            buf = Vec::with_capacity(1 << 12);
        }
    }
    // Input is over. Replies still being worked on may be written for a short grace period; then
    // the process exits, whatever is in flight.
    let deadline =
        std::time::Instant::now() + EOF_GRACE.min(server.gateway.timeout + std::time::Duration::from_millis(100));
    while server.in_flight.lock().map(|f| !f.is_empty()).unwrap_or(false) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let _ = server.out.lock().map(|mut o| o.flush());
    0
}

fn handle_line(server: &Arc<Server>, line: &[u8]) {
    let trimmed = line.trim_ascii();
    if trimmed.is_empty() {
        return;
    }
    let msg: Value = match serde_json::from_slice(trimmed) {
        Ok(v) => v,
        Err(e) => {
            logging::info("rpc", &format!("parse error: {e}"));
            server.send(&error(Value::Null, PARSE_ERROR, format!("parse error: {e}")));
            return;
        }
    };
    match msg {
        Value::Object(obj) => {
            if let Some(reply) = handle_message(server, obj, false) {
                server.send(&reply);
            }
        }
        Value::Array(items) => handle_batch(server, items),
        _ => server.send(&error(Value::Null, INVALID_REQUEST, "a message must be a JSON object")),
    }
}

/// JSON-RPC batches exist only in protocol 2025-03-26; elsewhere they are refused.
fn handle_batch(server: &Arc<Server>, items: Vec<Value>) {
    let version = server.version();
    if version != "2025-03-26" {
        server.send(&error(Value::Null, INVALID_REQUEST, format!("batches are not supported in protocol {version}")));
        return;
    }
    if items.is_empty() {
        server.send(&error(Value::Null, INVALID_REQUEST, "empty batch"));
        return;
    }
    let replies: Vec<Value> = items
        .into_iter()
        .filter_map(|item| match item {
            Value::Object(obj) => handle_message(server, obj, true),
            _ => Some(error(Value::Null, INVALID_REQUEST, "a message must be a JSON object")),
        })
        .collect();
    if !replies.is_empty() {
        server.send(&Value::Array(replies));
    }
}

fn valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// Handles one message; returns the reply to send now, if any. Tool calls outside a batch reply
/// later from their own thread.
fn handle_message(server: &Arc<Server>, mut obj: Map<String, Value>, in_batch: bool) -> Option<Value> {
    let id = obj.remove("id");
    let is_notification = id.is_none();
    let reply_id = match &id {
        Some(v) if valid_id(v) => v.clone(),
        _ => Value::Null,
    };
    if let Some(v) = &id
        && !valid_id(v)
    {
        return Some(error(Value::Null, INVALID_REQUEST, "id must be a string or an integer"));
    }
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return (!is_notification).then(|| error(reply_id, INVALID_REQUEST, "jsonrpc must be \"2.0\""));
    }
    let Some(Value::String(method)) = obj.remove("method") else {
        if obj.contains_key("result") || obj.contains_key("error") {
            return None; // a reply from the client; this server sends no requests
        }
        return (!is_notification).then(|| error(reply_id, INVALID_REQUEST, "method must be a string"));
    };
    let params = obj.remove("params").unwrap_or_else(|| Value::Object(Map::new()));
    if is_notification {
        handle_notification(server, &method, &params);
        return None;
    }
    let Value::Object(mut params) = params else {
        return Some(error(reply_id, INVALID_PARAMS, "params must be an object"));
    };
    let rid = format!("rpc:{reply_id}");
    logging::debug(&rid, &method);
    // A request of the stateless 2026-07-28 era names its protocol version in `_meta`; it is
    // answered in that era's shape. Anything else is the handshake era (`initialize` always is).
    let modern = match params.get("_meta").and_then(|m| m.get(tools::VERSION_META_KEY)) {
        Some(_) if method == "initialize" => None,
        None => None,
        Some(Value::String(v)) if tools::MODERN_VERSIONS.contains(&v.as_str()) => Some(v.clone()),
        Some(v) => return Some(tools::unsupported_version(reply_id, v)),
    };
    let reply = |value: Value| {
        let value = if modern.is_some() { tools::modern_result(value, method == "tools/list") } else { value };
        Some(result(reply_id.clone(), value))
    };
    match method.as_str() {
        "initialize" => {
            let requested = params.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
            let version =
                if tools::PROTOCOL_VERSIONS.contains(&requested) { requested } else { tools::PROTOCOL_VERSIONS[0] };
            if let Ok(mut v) = server.version.lock() {
                *v = Some(version.to_string());
            }
            let client = params
                .get("clientInfo")
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("unknown client");
            logging::info(&rid, &format!("initialize from {client}: protocol {version} (asked {requested:?})"));
            reply(json!({
                "protocolVersion": version,
                "capabilities": tools::capabilities(),
                "serverInfo": tools::server_info(),
            }))
        }
        "server/discover" => {
            let client = params
                .get("_meta")
                .and_then(|m| m.get(tools::CLIENT_INFO_META_KEY))
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("unknown client");
            logging::info(&rid, &format!("server/discover from {client}"));
            Some(result(reply_id, tools::discover()))
        }
        "ping" => reply(json!({})),
        "tools/list" => reply(tools::list(modern.as_deref().unwrap_or(&server.version()))),
        "tools/call" => {
            let Some(Value::String(name)) = params.remove("name") else {
                return Some(error(reply_id, INVALID_PARAMS, "params.name must be the tool's name"));
            };
            let arguments = match params.remove("arguments") {
                None | Some(Value::Null) => Value::Object(Map::new()),
                Some(a @ Value::Object(_)) => a,
                Some(_) => return Some(error(reply_id, INVALID_PARAMS, "params.arguments must be an object")),
            };
            if !crate::gateway::TOOLS.contains(&name.as_str()) {
                return Some(error(reply_id, INVALID_PARAMS, format!("unknown tool: {name}")));
            }
            let version = modern.clone().unwrap_or_else(|| server.version());
            let key = reply_id.to_string();
            let panic_id = reply_id.clone();
            let busy_id = reply_id.clone();
            let finish = move |r: Value| {
                let r = if modern.is_some() { tools::modern_result(r, false) } else { r };
                result(reply_id, r)
            };
            // Every request gets its answer, even if the tool has a bug: a panic becomes -32603.
            let run = move |gateway: &crate::gateway::Gateway| match std::panic::catch_unwind(
                std::panic::AssertUnwindSafe(|| tools::call(gateway, &name, &arguments, &version)),
            ) {
                Ok(r) => r.map(finish),
                Err(_) => Some(error(panic_id, INTERNAL_ERROR, format!("internal error in {name}"))),
            };
            if in_batch {
                return run(&server.gateway);
            }
            if let Ok(mut f) = server.in_flight.lock() {
                f.insert(key.clone(), false);
            }
            let worker = Arc::clone(server);
            let (worker_key, worker_rid) = (key.clone(), rid.clone());
            let spawned = std::thread::Builder::new().name("tool-call".into()).spawn(move || {
                let (server, key, rid) = (worker, worker_key, worker_rid);
                let reply = run(&server.gateway);
                let cancelled = server.in_flight.lock().map(|f| f.get(&key) == Some(&true)).unwrap_or(false);
                match reply {
                    Some(r) if !cancelled => server.send(&r),
                    _ => logging::info(&rid, "reply dropped: the request was cancelled"),
                }
                // Only now is the call over: end of input waits for this, so the reply is never cut off.
                if let Ok(mut f) = server.in_flight.lock() {
                    f.remove(&key);
                }
            });
            match spawned {
                Ok(_) => None,
                Err(e) => {
                    // Out of threads: say so now rather than leave the request unanswered.
                    logging::error(&rid, &format!("cannot start a thread for the call: {e}"));
                    if let Ok(mut f) = server.in_flight.lock() {
                        f.remove(&key);
                    }
                    Some(error(busy_id, INTERNAL_ERROR, format!("the server is overloaded: {e}")))
                }
            }
        }
        other => Some(error(reply_id, METHOD_NOT_FOUND, format!("method not found: {other}"))),
    }
}

fn handle_notification(server: &Server, method: &str, params: &Value) {
    if method == "notifications/cancelled"
        && let Some(id) = params.get("requestId").filter(|v| valid_id(v))
        && let Ok(mut f) = server.in_flight.lock()
        && let Some(cancelled) = f.get_mut(&id.to_string())
    {
        *cancelled = true;
    }
}
