//! A fake Anthropic Messages API on the loopback fake server, for driving the real Claude Code CLI
//! offline.
//!
//! `POST /v1/messages` is answered as a stream of server-sent events in the order the real API
//! uses (message_start, ping, per block content_block_start/delta/stop, message_delta,
//! message_stop); every other request (Claude Code's `HEAD /` preconnect among them) gets 404.
//! A test scripts the replies with a function of the request body, and reads back every body.
//!
//! Like a real model, the fake never calls a deferred tool blind: Claude Code 2.1.332 sends MCP tools
//! by name only (listed in a system message, schemas not loaded), so a scripted call to a tool that
//! is deferred in that request goes out as a `ToolSearch` call with `select:<names>` instead; once
//! the schemas are loaded the script runs again on the next request and its call goes through.

#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::fake_http::{FakeServer, Reply, Request};

/// One content block of a scripted reply.
#[derive(Debug, Clone)]
pub enum Block {
    Text(String),
    ToolUse { id: String, name: String, input: Value },
}

impl Block {
    pub fn text(t: &str) -> Block {
        Block::Text(t.to_string())
    }

    /// A tool call with a fresh id.
    pub fn tool(name: &str, input: Value) -> Block {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        Block::ToolUse { id: format!("toolu_e2e_{n:04}"), name: name.to_string(), input }
    }
}

type Script = dyn Fn(&Value) -> Vec<Block> + Send + Sync;

pub struct FakeAnthropic {
    server: FakeServer,
    script: Arc<Mutex<Arc<Script>>>,
}

impl FakeAnthropic {
    pub fn start() -> Self {
        let default: Arc<Script> = Arc::new(|_: &Value| vec![Block::text("ok")]);
        let script = Arc::new(Mutex::new(default));
        let scripted = script.clone();
        let server = FakeServer::start(move |r: &Request| {
            if !is_messages(r) {
                return Reply::json(404, &json!({}));
            }
            let request = r.json();
            let f = scripted.lock().map(|f| f.clone()).expect("script lock");
            let blocks = load_deferred_first(&request, f(&request));
            Reply::new(200, "text/event-stream", events(&request, &blocks))
                .with_header("cache-control", "no-cache")
                .with_header("request-id", "req_e2e")
        });
        FakeAnthropic { server, script }
    }

    pub fn base_url(&self) -> String {
        self.server.url()
    }

    /// Replaces the reply script (each reply is computed from the request body).
    pub fn script(&self, f: impl Fn(&Value) -> Vec<Block> + Send + Sync + 'static) {
        *self.script.lock().unwrap() = Arc::new(f);
    }

    /// Every `/v1/messages` body received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.server.requests().iter().filter(|r| is_messages(r)).map(Request::json).collect()
    }

    pub fn clear(&self) {
        self.server.clear();
    }
}

/// `POST /v1/messages` (with or without a query), not `/v1/messages/count_tokens` and the like.
fn is_messages(r: &Request) -> bool {
    r.method == "POST" && r.path.starts_with("/v1/messages") && !r.path.starts_with("/v1/messages/")
}

/// The scripted reply, with its calls to deferred tools replaced by one `ToolSearch` call that
/// selects them all (the reply's text is kept).
fn load_deferred_first(request: &Value, blocks: Vec<Block>) -> Vec<Block> {
    let loaded = tool_names(request);
    let deferred = deferred_tools(request);
    let mut wanted: Vec<String> = Vec::new();
    for b in &blocks {
        if let Block::ToolUse { name, .. } = b
            && !loaded.contains(name)
            && deferred.contains(name)
            && !wanted.contains(name)
        {
            wanted.push(name.clone());
        }
    }
    if wanted.is_empty() {
        return blocks;
    }
    let mut out: Vec<Block> = blocks.into_iter().filter(|b| matches!(b, Block::Text(_))).collect();
    out.push(Block::tool(TOOL_SEARCH, json!({"query": format!("select:{}", wanted.join(",")), "max_results": 5})));
    out
}

/// The SSE stream for one reply.
fn events(request: &Value, blocks: &[Block]) -> String {
    static MSG: AtomicUsize = AtomicUsize::new(0);
    let id = format!("msg_e2e_{:04}", MSG.fetch_add(1, Ordering::SeqCst));
    let model = request["model"].as_str().unwrap_or("claude-opus-4-8");
    let mut out = String::new();
    let mut event = |name: &str, data: Value| out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 100, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
    );
    event("ping", json!({"type": "ping"}));
    for (index, block) in blocks.iter().enumerate() {
        match block {
            Block::Text(text) => {
                event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
                );
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
                );
            }
            Block::ToolUse { id, name, input } => {
                event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                );
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
                );
            }
        }
        event("content_block_stop", json!({"type": "content_block_stop", "index": index}));
    }
    let stop = if blocks.iter().any(|b| matches!(b, Block::ToolUse { .. })) { "tool_use" } else { "end_turn" };
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 20}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}

// ---- reading requests ----

/// Every text in a request's messages (string contents, text blocks, tool_result texts), in order.
pub fn texts(request: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for m in request["messages"].as_array().into_iter().flatten() {
        collect_text(&m["content"], &mut out);
    }
    out
}

fn collect_text(content: &Value, out: &mut Vec<String>) {
    match content {
        Value::String(s) => out.push(s.clone()),
        Value::Array(blocks) => {
            for b in blocks {
                match b["type"].as_str() {
                    Some("text") => out.push(b["text"].as_str().unwrap_or_default().to_string()),
                    Some("tool_result") => collect_text(&b["content"], out),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// The text of the system-role messages (Claude Code's mid-conversation system context).
pub fn system_messages(request: &Value) -> String {
    let mut out = Vec::new();
    for m in request["messages"].as_array().into_iter().flatten().filter(|m| m["role"] == "system") {
        collect_text(&m["content"], &mut out);
    }
    out.join("\n")
}

/// The tool_result block answering `tool_use_id`, if the request carries it.
pub fn tool_result<'a>(request: &'a Value, tool_use_id: &str) -> Option<&'a Value> {
    request["messages"]
        .as_array()?
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == tool_use_id)
}

/// The names in a request's `tools[]`.
pub fn tool_names(request: &Value) -> Vec<String> {
    request["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str().map(str::to_string)).collect()
}

/// Claude Code's tool that loads deferred tools' schemas (2.1.332).
pub const TOOL_SEARCH: &str = "ToolSearch";

/// The tools a request lists as deferred: named in a system message, their schemas not loaded.
pub fn deferred_tools(request: &Value) -> Vec<String> {
    const HEAD: &str = "The following deferred tools are now available via ToolSearch";
    let system = system_messages(request);
    let Some(start) = system.find(HEAD) else { return Vec::new() };
    // The heading line, then one name a line up to a blank line.
    system[start..].lines().skip(1).take_while(|l| !l.trim().is_empty()).map(|l| l.trim().to_string()).collect()
}

/// Every `ToolSearch` call in a request's history: its query, and the tools its result named.
pub fn tool_searches(request: &Value) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for m in request["messages"].as_array().into_iter().flatten() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_use" && b["name"] == TOOL_SEARCH {
                let id = b["id"].as_str().unwrap_or_default();
                let found = tool_result(request, id)
                    .and_then(|r| r["content"].as_array())
                    .map(|c| c.iter().filter_map(|x| x["tool_name"].as_str().map(str::to_string)).collect())
                    .unwrap_or_default();
                out.push((b["input"]["query"].as_str().unwrap_or_default().to_string(), found));
            }
        }
    }
    out
}

/// Whether a request comes from a subagent (Claude Code marks its billing header so).
pub fn is_subagent(request: &Value) -> bool {
    request["system"].to_string().contains("cc_is_subagent=true")
}
