//! The stdio MCP server: newline-delimited JSON-RPC 2.0, hand-written on serde_json.
//!
//! The main thread reads stdin line by line and answers everything but `tools/call` inline; each
//! tool call runs on its own thread (a 2025-03-26 batch holding one runs on its own thread too,
//! its members side by side), so a decision waiting on a slow engine holds up neither `ping`, nor
//! health, nor another decision. At most [`MAX_CALLS`] run at once; a call past that count waits
//! its turn in a queue (first come, first run, on the thread of a call that finished), so a client
//! sending 50 calls at once has them all answered. What is bounded is memory: the messages of the
//! calls running and waiting hold at most [`MAX_CALL_BYTES`] together, and only a call that would
//! pass that is refused, at once, with [`BUSY`]. Replies are written whole, one line each, under one
//! lock; stdout carries nothing else. End of input ends the process once every call still running
//! or waiting is answered (each within its time budget once it runs), at once when none is.
//!
//! Two protocol eras share the loop. The handshake era (2024-11-05 to 2025-11-25) starts with
//! `initialize`, which fixes the version for the connection. The stateless era (2026-07-28) has no
//! handshake: a client probes `server/discover`, then every request names its version in `_meta`,
//! and its results carry that era's fields. Each request is answered in the era it speaks.
//!
//! Every malformed message that can be answered is answered (-32700 parse error, -32600 invalid
//! request, -32601 unknown method, -32602 bad params, -32022 unsupported protocol version), with
//! `id: null` where the id can't be read.
//!
//! [`rpc`] reads lines and message envelopes; this file runs the loop and answers each method;
//! [`tools`] lists the three tools and runs them on the gateway. [`clients`] writes the entry each
//! other MCP client needs to start this server.

pub mod clients;
mod rpc;
pub mod tools;

use std::collections::{HashMap, VecDeque};
use std::io::{BufReader, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::gateway::Gateway;
use crate::logging;
use rpc::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, Line, MAX_LINE, METHOD_NOT_FOUND, Message, PARSE_ERROR, Request,
    error, read_envelope, read_line, result, valid_id,
};

/// Beyond its own time budget, a call still running at end of input gets this long for its reply
/// to be written (the timeouts are the engine's; the gateway's own work comes on top).
const REPLY_MARGIN: Duration = Duration::from_millis(250);

/// At most this many tool calls run at once (a batch counts one per tool call it runs at once, up
/// to [`BATCH_RUNNERS`]); a call past it waits in the queue until one finishes. Each running call
/// holds its message and the engine's working memory (the local engine's forward pass, an HTTP
/// engine's request body) until it is answered: without a bound, 1,000 concurrent local decides
/// took 3.9 GB.
pub const MAX_CALLS: usize = 32;

/// What a call waiting in the queue costs beyond its message: its parsed arguments' allocations,
/// its closure and its entry. Counted against [`MAX_CALL_BYTES`] with the message, so that a flood
/// of tiny calls is bounded too (at most 16,384 waiting).
const CALL_OVERHEAD: usize = 1024;

/// At most this many bytes of messages (each line as read, plus [`CALL_OVERHEAD`]) may belong to
/// tool calls running or waiting to run; a call that would go past it is refused with [`BUSY`]. A
/// call holds several times its message's
/// size while it runs (the parsed arguments, the request the gateway checks, the text the engine
/// reads, an HTTP engine's body: about 7 times, measured on 4 MB contexts), so this bounds what
/// large contexts cost: 100 calls of 15 MB took 5.9 GB. It is the longest message allowed
/// ([`rpc::MAX_LINE`]), which therefore always runs when nothing else does.
pub const MAX_CALL_BYTES: usize = rpc::MAX_LINE;

/// The JSON-RPC error of a tool call refused because [`MAX_CALL_BYTES`] would be passed (an
/// implementation-defined server error, in the range JSON-RPC leaves to servers).
pub const BUSY: i64 = -32001;

/// What one admitted call (or batch) holds of the bounds, given back when it is over.
#[derive(Clone, Copy)]
struct Weight {
    calls: usize,
    bytes: usize,
}

/// Tool calls running or waiting, by id, what they hold of the bounds together, and the queue of
/// those waiting. One map under one lock, so a cancellation can never outlive its call, and
/// admission sees every call.
#[derive(Default)]
struct Flights {
    by_key: HashMap<String, InFlight>,
    /// Of the calls running: what they count against [`MAX_CALLS`].
    calls: usize,
    /// Of the calls running and waiting: what they count against [`MAX_CALL_BYTES`].
    bytes: usize,
    waiting: VecDeque<Job>,
}

/// A tool call (or a batch holding one) running or waiting to run.
struct InFlight {
    /// The client cancelled it: its reply is dropped (and, while it waits, it never runs).
    cancelled: bool,
    /// By when it is answered, whatever its engines do: its time budget from its start (`None`
    /// while it waits). End of input waits for it until then.
    deadline: Option<Instant>,
}

/// A call admitted but not yet run: what it holds, how many turns of the chain it may take, and
/// the work, which sends its reply.
struct Job {
    key: String,
    weight: Weight,
    rounds: u32,
    work: Work,
}

/// Runs the call and sends its reply; gives the calls waiting that its end lets run.
type Work = Box<dyn FnOnce(&Arc<Server>) -> Vec<Job> + Send>;

impl Job {
    /// Runs the call (unless it was cancelled while it waited); the calls waiting that its end lets run.
    fn run(self, server: &Arc<Server>) -> Vec<Job> {
        let cancelled =
            server.in_flight.lock().map(|f| f.by_key.get(&self.key).is_some_and(|c| c.cancelled)).unwrap_or(false);
        if cancelled {
            // Cancelled while it waited: never run, and its share of the bound given back.
            server.finish(&self.key, self.weight)
        } else {
            (self.work)(server)
        }
    }
}

struct Server {
    gateway: Arc<Gateway>,
    /// What the tools offer, which the chain fixes for the server's life.
    offer: tools::Offer,
    out: Mutex<std::io::Stdout>,
    /// The negotiated protocol version (the newest until `initialize` says otherwise).
    version: Mutex<Option<String>>,
    in_flight: Mutex<Flights>,
}

impl Server {
    fn version(&self) -> String {
        self.version.lock().map(|v| v.clone()).ok().flatten().unwrap_or_else(|| tools::PROTOCOL_VERSIONS[0].to_string())
    }

    /// By when a call that starts now and may take `rounds` turns of the whole provider chain (each
    /// provider within the timeout) is answered.
    fn deadline(&self, rounds: u32) -> Instant {
        Instant::now() + self.gateway.chain_budget() * rounds.max(1) + REPLY_MARGIN
    }

    /// Admits a call (or a batch): given back to run now when it fits beside the calls running
    /// ([`MAX_CALLS`]) and none waits before it, else queued (`None`), to be run by the thread of a
    /// call that finishes. Refused (with the message of the busy error) when its bytes would take
    /// the calls running and waiting past [`MAX_CALL_BYTES`], and when a call with this key is
    /// running or waiting already: a second call under one id would take the first's place, and
    /// whichever finished first would end the wait for both at end of input.
    fn admit(&self, job: Job) -> Result<Option<Job>, Refused> {
        let mut f = self.in_flight.lock().map_err(|_| Refused::Busy("the server is shutting down".to_string()))?;
        if f.by_key.contains_key(&job.key) {
            return Err(Refused::IdInUse);
        }
        // The first call always fits: a single message is at most rpc::MAX_LINE bytes.
        let idle = f.by_key.is_empty();
        if !idle && f.bytes + job.weight.bytes > MAX_CALL_BYTES {
            return Err(Refused::Busy(format!(
                "busy: the {} tool calls running and waiting hold {} bytes of requests, and this one ({} bytes) \
                 would pass the server's bound of {MAX_CALL_BYTES} bytes; retry when one is answered",
                f.by_key.len(),
                f.bytes,
                job.weight.bytes
            )));
        }
        f.bytes += job.weight.bytes;
        if f.waiting.is_empty() && (f.calls == 0 || f.calls + job.weight.calls <= MAX_CALLS) {
            f.calls += job.weight.calls;
            f.by_key.insert(job.key.clone(), InFlight { cancelled: false, deadline: Some(self.deadline(job.rounds)) });
            return Ok(Some(job));
        }
        f.by_key.insert(job.key.clone(), InFlight { cancelled: false, deadline: None });
        f.waiting.push_back(job);
        Ok(None)
    }

    /// Gives back what a call held of the bounds and its id; then the calls waiting that now fit,
    /// first come first, each registered as running from now.
    fn finish(&self, key: &str, weight: Weight) -> Vec<Job> {
        let Ok(mut f) = self.in_flight.lock() else { return Vec::new() };
        f.by_key.remove(key);
        f.calls = f.calls.saturating_sub(weight.calls);
        f.bytes = f.bytes.saturating_sub(weight.bytes);
        let mut ready = Vec::new();
        while let Some(next) = f.waiting.front() {
            if f.calls != 0 && f.calls + next.weight.calls > MAX_CALLS {
                break;
            }
            let Some(next) = f.waiting.pop_front() else { break };
            f.calls += next.weight.calls;
            let deadline = self.deadline(next.rounds);
            if let Some(entry) = f.by_key.get_mut(&next.key) {
                entry.deadline = Some(deadline);
            }
            ready.push(next);
        }
        ready
    }

    fn send(&self, msg: &Value) {
        let Some(line) = line_of(msg) else { return };
        let Ok(mut out) = self.out.lock() else { return };
        Self::write_line(&mut out, &line);
    }

    fn write_line(out: &mut std::io::Stdout, line: &str) {
        if out.write_all(line.as_bytes()).and_then(|_| out.flush()).is_err() {
            // The client is gone (broken pipe): nothing more can be said.
            std::process::exit(0);
        }
    }

    /// Ends a running call: gives back what it holds of the bounds and its id, then writes its reply
    /// unless the client cancelled it. Both happen under the output lock, so a client that has read
    /// the reply finds the call over (its id free, its share of the bound given back: before, a call
    /// sent right after a reply could be refused busy or "id in use"), while end of input, which
    /// takes that lock last, still never exits before the reply is written (the calls waiting that
    /// now run are registered as running in the same step). Whether it was sent, and the calls
    /// waiting that are now to run.
    fn answer(&self, key: &str, weight: Weight, reply: Option<Value>) -> (bool, Vec<Job>) {
        let line = reply.as_ref().and_then(line_of);
        let Ok(mut out) = self.out.lock() else {
            return (false, self.finish(key, weight));
        };
        let cancelled = self.in_flight.lock().map(|f| f.by_key.get(key).is_some_and(|c| c.cancelled)).unwrap_or(false);
        let ready = self.finish(key, weight);
        match line {
            Some(line) if !cancelled => {
                Self::write_line(&mut out, &line);
                (true, ready)
            }
            _ => (false, ready),
        }
    }
}

/// One JSON-RPC message as the line that carries it.
fn line_of(msg: &Value) -> Option<String> {
    let mut line = serde_json::to_string(msg).ok()?;
    line.push('\n');
    Some(line)
}

/// Runs the server until stdin closes.
pub fn serve(gateway: Gateway) -> i32 {
    let server = Arc::new(Server {
        offer: tools::Offer::of(&gateway),
        gateway: Arc::new(gateway),
        out: Mutex::new(std::io::stdout()),
        version: Mutex::new(None),
        in_flight: Mutex::new(Flights::default()),
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
        match read_line(&mut reader, &mut buf) {
            Line::End => break,
            Line::TooLong => {
                server.send(&error(Value::Null, INVALID_REQUEST, format!("message longer than {MAX_LINE} bytes")));
                continue;
            }
            Line::Read => {}
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
    wait_for_replies(&server);
    // The last log lines, unless stderr is stuck (then they were counted as dropped).
    logging::flush(Duration::from_millis(200));
    0
}

/// Input is over. Every call still running or waiting is answered: the process waits until each
/// has sent its reply or is past its deadline (its timeouts could not hold), then exits. A call
/// waiting has no deadline yet; it gets one when a running call finishes and hands it its thread,
/// so the wait goes on while some call running is within its deadline. With nothing in flight it
/// exits at once.
fn wait_for_replies(server: &Server) {
    let waiting = || {
        let now = Instant::now();
        server.in_flight.lock().map(|f| f.by_key.values().any(|c| c.deadline.is_some_and(|d| d > now))).unwrap_or(false)
    };
    while waiting() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = server.out.lock().map(|mut o| o.flush());
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
            if let Some(reply) = handle_message(server, obj, Run::Thread(line.len())) {
                server.send(&reply);
            }
        }
        Value::Array(items) => handle_batch(server, items, line.len()),
        _ => server.send(&error(Value::Null, INVALID_REQUEST, "a message must be a JSON object")),
    }
}

/// JSON-RPC batches exist only in protocol 2025-03-26; elsewhere they are refused. A batch's reply
/// is one array, sent when its last member is answered; the members run side by side on threads
/// of the batch's own (registered in `in_flight` like a tool call, so end of input waits for it),
/// so neither the reading thread nor one slow member holds up the rest.
fn handle_batch(server: &Arc<Server>, items: Vec<Value>, bytes: usize) {
    let version = server.version();
    if version != "2025-03-26" {
        server.send(&error(Value::Null, INVALID_REQUEST, format!("batches are not supported in protocol {version}")));
        return;
    }
    if items.is_empty() {
        server.send(&error(Value::Null, INVALID_REQUEST, "empty batch"));
        return;
    }
    let tool_calls = items.iter().filter(|i| i.get("method").and_then(Value::as_str) == Some("tools/call")).count();
    if tool_calls == 0 {
        // Nothing in it waits on an engine: answered here, as a single message would be.
        if let Some(reply) = batch_replies(server, items, Run::Inline) {
            server.send(&reply);
        }
        return;
    }
    static BATCHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    // Not the text of any JSON id, so never taken for one by a cancellation.
    let key = format!("batch#{}", BATCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    // Up to BATCH_RUNNERS members run at once; the others wait for a runner.
    let weight = Weight { calls: tool_calls.min(BATCH_RUNNERS), bytes: bytes + CALL_OVERHEAD };
    let rounds = items.len().div_ceil(BATCH_RUNNERS) as u32;
    // Held here until the batch is admitted: a refused batch is still answered from it.
    let held = Arc::new(Mutex::new(Some(items)));
    let (batch, job_key) = (held.clone(), key.clone());
    let work = move |server: &Arc<Server>| {
        let items = batch.lock().ok().and_then(|mut b| b.take()).unwrap_or_default();
        let reply = batch_replies(server, items, Run::Inline);
        server.answer(&job_key, weight, reply).1
    };
    let job = Job { key, weight, rounds, work: Box::new(work) };
    // The batch's key is new, so only the bound can refuse it.
    match server.admit(job) {
        Ok(Some(job)) => {
            if let Err(job) = spawn_worker(server, job) {
                let ready = server.finish(&job.key, job.weight);
                ready.into_iter().for_each(|j| work_on(server, j));
                server.send(&error(Value::Null, INTERNAL_ERROR, "the server is overloaded: no thread for a batch"));
            }
        }
        Ok(None) => {}
        Err(refused) => {
            let why = match refused {
                Refused::Busy(why) => why,
                Refused::IdInUse | Refused::NoThread(_) => "the server cannot take the batch".to_string(),
            };
            // Past the bound: every tool call in it is refused at once, the rest answered as usual.
            logging::info("rpc", &format!("batch refused: {why}"));
            let items = held.lock().ok().and_then(|mut b| b.take()).unwrap_or_default();
            if let Some(reply) = batch_replies(server, items, Run::Busy(why)) {
                server.send(&reply);
            }
        }
    }
}

/// At most this many members of one batch run at once; the rest wait for a free runner.
const BATCH_RUNNERS: usize = 16;

/// Every member's reply, in the batch's order, as the one array to send (`None` when the batch
/// held only notifications). Members run on up to [`BATCH_RUNNERS`] threads; `run` says how
/// their tool calls run (inline, or refused as busy).
fn batch_replies(server: &Arc<Server>, items: Vec<Value>, run: Run) -> Option<Value> {
    let answer = |item: Value| match item {
        Value::Object(obj) => handle_message(server, obj, run.clone()),
        _ => Some(error(Value::Null, INVALID_REQUEST, "a message must be a JSON object")),
    };
    let replies: Vec<Option<Value>> = if items.len() == 1 {
        items.into_iter().map(answer).collect()
    } else {
        let slots: Vec<Mutex<Option<Value>>> = items.into_iter().map(|i| Mutex::new(Some(i))).collect();
        let replies: Vec<Mutex<Option<Value>>> = slots.iter().map(|_| Mutex::new(None)).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..slots.len().min(BATCH_RUNNERS) {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(slot) = slots.get(i) else { break };
                        let Some(item) = slot.lock().ok().and_then(|mut s| s.take()) else { continue };
                        // A member that panics is answered like a tool call that does: -32603.
                        let id = item.get("id").filter(|v| valid_id(v)).cloned().unwrap_or(Value::Null);
                        let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| answer(item)))
                            .unwrap_or_else(|_| Some(error(id, INTERNAL_ERROR, "internal error in a batch member")));
                        if let Ok(mut r) = replies[i].lock() {
                            *r = reply;
                        }
                    }
                });
            }
        });
        replies.into_iter().map(|r| r.into_inner().ok().flatten()).collect()
    };
    let replies: Vec<Value> = replies.into_iter().flatten().collect();
    (!replies.is_empty()).then_some(Value::Array(replies))
}

/// The stateless-era version a request names in `_meta`: such a request is answered in that era's
/// shape. `None` is the handshake era (`initialize` always is); a version this server does not
/// speak is refused with the error to send.
fn stateless_version(request: &Request) -> Result<Option<String>, Value> {
    match request.params.get("_meta").and_then(|m| m.get(tools::VERSION_META_KEY)) {
        Some(_) if request.method == "initialize" => Ok(None),
        None => Ok(None),
        Some(Value::String(v)) if tools::MODERN_VERSIONS.contains(&v.as_str()) => Ok(Some(v.clone())),
        Some(v) => Err(tools::unsupported_version(request.id.clone(), v)),
    }
}

/// How a tool call runs.
#[derive(Clone)]
enum Run {
    /// On its own thread, which sends the reply; the message was this many bytes.
    Thread(usize),
    /// Here, as a member of a batch that was admitted whole.
    Inline,
    /// Not at all: a member of a batch refused as busy, for this reason.
    Busy(String),
}

/// Handles one message; returns the reply to send now, if any. Tool calls outside a batch reply
/// later from their own thread.
fn handle_message(server: &Arc<Server>, obj: Map<String, Value>, run: Run) -> Option<Value> {
    let request = match read_envelope(obj) {
        Message::Request(r) => r,
        Message::Notification { method, params } => {
            handle_notification(server, &method, &params);
            return None;
        }
        Message::Ignored => return None,
        Message::Invalid(reply) => return Some(reply),
    };
    logging::debug(&request.rid, &request.method);
    let modern = match stateless_version(&request) {
        Ok(v) => v,
        Err(reply) => return Some(reply),
    };
    let value = match request.method.as_str() {
        "initialize" => initialize(server, &request),
        // Already in the stateless era's shape, whichever era asks.
        "server/discover" => {
            let value = discover(server, &request);
            return Some(result(request.id, value));
        }
        "ping" => json!({}),
        "tools/list" => {
            if let Some(why) = cursor_problem(&request.params) {
                return Some(error(request.id, INVALID_PARAMS, why));
            }
            tools::list(modern.as_deref().unwrap_or(&server.version()), server.offer)
        }
        "tools/call" => return call_tool(server, request, modern, run),
        other => return Some(error(request.id, METHOD_NOT_FOUND, format!("method not found: {other}"))),
    };
    let value = if modern.is_some() { tools::modern_result(value, request.method == "tools/list") } else { value };
    Some(result(request.id, value))
}

/// What is wrong with a `tools/list` cursor, if anything. Every tool is on the one page, so no
/// cursor was ever handed out: a string other than `""` names no page, and anything else is not
/// a cursor at all.
fn cursor_problem(params: &Map<String, Value>) -> Option<&'static str> {
    match params.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) if c.is_empty() => None,
        Some(Value::String(_)) => Some("params.cursor names no page: every tool is on the first page"),
        Some(_) => Some("params.cursor must be a string"),
    }
}

/// `initialize`: fixes the connection's protocol version, the client's when this server speaks it.
fn initialize(server: &Server, request: &Request) -> Value {
    let requested = request.params.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
    let version = if tools::PROTOCOL_VERSIONS.contains(&requested) { requested } else { tools::PROTOCOL_VERSIONS[0] };
    if let Ok(mut v) = server.version.lock() {
        *v = Some(version.to_string());
    }
    let client = request
        .params
        .get("clientInfo")
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("unknown client");
    logging::info(&request.rid, &format!("initialize from {client}: protocol {version} (asked {requested:?})"));
    json!({
        "protocolVersion": version,
        "capabilities": tools::capabilities(),
        "serverInfo": tools::server_info(),
        "instructions": server.offer.instructions(),
    })
}

fn discover(server: &Server, request: &Request) -> Value {
    let client = request
        .params
        .get("_meta")
        .and_then(|m| m.get(tools::CLIENT_INFO_META_KEY))
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("unknown client");
    logging::info(&request.rid, &format!("server/discover from {client}"));
    tools::discover(server.offer)
}

/// `tools/call`: inside a batch the tool runs inline; otherwise on its own thread, which sends the
/// reply itself (unless the client cancelled the call meanwhile), or is refused as busy at once
/// when the server's bound on calls in flight would be passed.
fn call_tool(server: &Arc<Server>, request: Request, modern: Option<String>, how: Run) -> Option<Value> {
    let Request { id, mut params, rid, .. } = request;
    let Some(Value::String(name)) = params.remove("name") else {
        return Some(error(id, INVALID_PARAMS, "params.name must be the tool's name"));
    };
    let arguments = match params.remove("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(a @ Value::Object(_)) => a,
        Some(_) => return Some(error(id, INVALID_PARAMS, "params.arguments must be an object")),
    };
    if !crate::gateway::TOOLS.contains(&name.as_str()) {
        return Some(error(id, INVALID_PARAMS, format!("unknown tool: {name}")));
    }
    let version = modern.clone().unwrap_or_else(|| server.version());
    let key = id.to_string();
    let busy_id = id.clone();
    // Every request gets its answer, even if the tool has a bug: a panic becomes -32603.
    let call = move |gateway: &Gateway| {
        let called = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            tools::call(gateway, &name, &arguments, &version)
        }));
        match called {
            Ok(r) => r.map(|r| result(id, if modern.is_some() { tools::modern_result(r, false) } else { r })),
            Err(_) => Some(error(id, INTERNAL_ERROR, format!("internal error in {name}"))),
        }
    };
    let bytes = match how {
        Run::Inline => return call(&server.gateway),
        Run::Busy(why) => return Some(busy(busy_id, why)),
        Run::Thread(bytes) => bytes,
    };
    match spawn_call(server, key, &rid, Weight { calls: 1, bytes: bytes + CALL_OVERHEAD }, call) {
        Ok(()) => None,
        Err(Refused::Busy(why)) => {
            logging::info(&rid, &format!("refused: {why}"));
            Some(busy(busy_id, why))
        }
        // Refused at once, so that the client hears of it and the call running keeps its reply.
        Err(Refused::IdInUse) => {
            logging::info(&rid, "refused: a call with this id is still running");
            let why = format!("request id {busy_id} is already in use by a call still running; use a new id");
            Some(error(busy_id, INVALID_REQUEST, why))
        }
        Err(Refused::NoThread(e)) => {
            // Out of threads: say so now rather than leave the request unanswered.
            logging::error(&rid, &format!("cannot start a thread for the call: {e}"));
            Some(error(busy_id, INTERNAL_ERROR, format!("the server is overloaded: {e}")))
        }
    }
}

/// The busy error: the bounds, and how many calls and bytes are in flight, in `data` too.
fn busy(id: Value, why: String) -> Value {
    let mut reply = error(id, BUSY, why);
    reply["error"]["data"] = json!({"max_calls": MAX_CALLS, "max_call_bytes": MAX_CALL_BYTES});
    reply
}

/// Why a call was not started.
enum Refused {
    Busy(String),
    /// A call with the same id is still running.
    IdInUse,
    NoThread(std::io::Error),
}

/// Runs a tool call on a thread of its own, or queues it until a running call's thread is free; it
/// is registered in `in_flight` until its reply goes out (or is dropped, when the client cancelled
/// it). Refused when its bytes would pass the bound.
fn spawn_call(
    server: &Arc<Server>,
    key: String,
    rid: &str,
    weight: Weight,
    run: impl FnOnce(&Gateway) -> Option<Value> + Send + 'static,
) -> Result<(), Refused> {
    let rid = rid.to_string();
    let job_key = key.clone();
    let work = move |server: &Arc<Server>| {
        let reply = run(&server.gateway);
        let (sent, ready) = server.answer(&job_key, weight, reply);
        if !sent {
            logging::info(&rid, "reply dropped: the request was cancelled");
        }
        ready
    };
    let Some(job) = server.admit(Job { key, weight, rounds: 1, work: Box::new(work) })? else {
        return Ok(());
    };
    spawn_worker(server, job).map_err(|job| {
        // No thread for it: it is refused, and what its place lets run gets this thread.
        let ready = server.finish(&job.key, job.weight);
        ready.into_iter().for_each(|j| work_on(server, j));
        Refused::NoThread(std::io::Error::other("no thread could be started for the call"))
    })
}

/// Starts a thread that runs `job` and then the calls waiting that its end lets run; the job back
/// when no thread could be started.
fn spawn_worker(server: &Arc<Server>, job: Job) -> Result<(), Job> {
    // Shared, so that a spawn that fails (and drops its closure) gives the job back.
    let slot = Arc::new(Mutex::new(Some(job)));
    let (worker, taken) = (Arc::clone(server), slot.clone());
    let spawned = std::thread::Builder::new().name("tool-call".into()).spawn(move || {
        if let Some(job) = taken.lock().ok().and_then(|mut j| j.take()) {
            work_on(&worker, job);
        }
    });
    match spawned {
        Ok(_) => Ok(()),
        Err(e) => {
            logging::error("rpc", &format!("cannot start a thread for a tool call: {e}"));
            match slot.lock().ok().and_then(|mut j| j.take()) {
                Some(job) => Err(job),
                None => Ok(()),
            }
        }
    }
}

/// Runs `first` on this thread, then each call waiting that a finished one lets run: the first of
/// them here, any other (a batch's end can free several places) on a thread of its own.
fn work_on(server: &Arc<Server>, first: Job) {
    let mut mine = VecDeque::from([first]);
    while let Some(job) = mine.pop_front() {
        for next in job.run(server) {
            if mine.is_empty() {
                mine.push_back(next);
            } else if let Err(next) = spawn_worker(server, next) {
                mine.push_back(next);
            }
        }
    }
}

fn handle_notification(server: &Server, method: &str, params: &Value) {
    if method == "notifications/cancelled"
        && let Some(id) = params.get("requestId").filter(|v| valid_id(v))
        && let Ok(mut f) = server.in_flight.lock()
        && let Some(call) = f.by_key.get_mut(&id.to_string())
    {
        call.cancelled = true;
    }
}
