//! The MCP server's bounds on tool calls in flight (docs/tools.md, "Concurrency"): past the count a
//! call waits its turn, past the bytes it is refused at once with the busy error; every other call
//! is answered as it would be alone, no reply is dropped, and the process's memory stays bounded
//! however much the client sends at once.
//! Through the real binary over real pipes, with the real all-MiniLM-L6-v2 in the chain and a
//! laya-serve fake behind it that holds its answers until the test lets go, so what runs beside
//! what does not depend on the machine's speed.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::local_engine::model_dir;
use crate::support::fake_http::{FakeServer, Reply, Request};
use crate::support::fake_laya::healthy;
use crate::support::{CUT_OFF, McpClient, TestEnv};
use serde_json::{Value, json};

/// The busy error's code (docs/tools.md).
const BUSY: i64 = -32001;

/// A laya fake that answers at once while open, and holds every question while closed.
struct Gate {
    server: FakeServer,
    open: Arc<(Mutex<bool>, Condvar)>,
}

impl Gate {
    fn start(open: bool) -> Self {
        let state = Arc::new((Mutex::new(open), Condvar::new()));
        let gate = state.clone();
        let server = FakeServer::start(move |r: &Request| {
            if r.path != "/v1/systemone" {
                return healthy(r);
            }
            let (lock, cvar) = &*gate;
            let open = cvar.wait_timeout_while(lock.lock().unwrap(), Duration::from_secs(60), |o| !*o).unwrap();
            if *open.0 { healthy(r) } else { Reply::json(503, &json!({"detail": "never released"})) }
        });
        Gate { server, open: state }
    }

    fn set(&self, open: bool) {
        *self.open.0.lock().unwrap() = open;
        self.open.1.notify_all();
    }

    /// Waits until `n` questions have reached the engine (or a minute passes); how many did.
    fn wait_for_questions(&self, n: usize) -> usize {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.server.requests_to("/v1/systemone").len() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.server.requests_to("/v1/systemone").len()
    }
}

/// The local engine first (it passes a yes/no question it has no head for on), the gated fake
/// behind it: every call embeds its context with the real model, then waits on the fake.
fn env(gate: &Gate) -> Option<TestEnv> {
    let dir = model_dir()?;
    let env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\nfallback = [\"laya\"]\ntimeout_s = 60\n\
         [providers.local]\nmodel_dir = {dir:?}\n[providers.laya]\nendpoint = \"{}\"\n",
        gate.server.url()
    ));
    Some(env)
}

fn decide(id: usize, context: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "system1_decide",
                      "arguments": {"question": "Does this change need a second reviewer?", "context": {"change": context}}}})
}

/// What an answer says, without what differs from call to call (its id and timings).
fn gist(reply: &Value) -> Value {
    let s = &reply["result"]["structuredContent"];
    let attempts: Vec<Value> = s["attempts"]
        .as_array()
        .map(|a| a.iter().map(|t| json!([t["provider"], t["outcome"], t["detail"]])).collect())
        .unwrap_or_default();
    json!({"status": s["status"], "decision": s["decision"], "confidence": s["confidence"],
           "probabilities": s["probabilities"], "provider": s["provider"], "attempts": attempts})
}

/// Sends `messages` from a thread of its own (the server may stop reading while the test waits on
/// its replies), then a ping with the id `"last"`, and collects every reply up to that ping's:
/// the replies sent before the server read the ping (by then each call was admitted or refused).
fn send_all(c: &mut McpClient, messages: Vec<Value>) -> Vec<Value> {
    let mut lines = Vec::new();
    for m in messages.iter().chain([&json!({"jsonrpc": "2.0", "id": "last", "method": "ping"})]) {
        let mut line = serde_json::to_vec(m).unwrap();
        line.push(b'\n');
        lines.push(line);
    }
    for line in lines {
        c.send_raw(&line);
    }
    let mut before = Vec::new();
    loop {
        let reply = c.recv(CUT_OFF).expect("the server answers the ping after the calls");
        if reply["id"] == "last" {
            return before;
        }
        before.push(reply);
    }
}

fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/<pid>/status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM in /proc/<pid>/status");
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("VmHWM in kB")
}

/// 40 calls at once where the server runs 32: none is refused; the last 8 wait their turn while a
/// ping sent after them is answered at once, only 32 reach the engine while it holds them, and
/// once it lets go all 40 are answered, each as a call alone is, and the bound is free again.
#[test]
fn calls_past_the_count_wait_their_turn_and_every_one_is_answered() {
    let gate = Gate::start(true);
    let Some(env) = env(&gate) else { return };
    let mut c = env.mcp();
    c.initialize("2025-06-18");
    let context = "The patch renames one private helper and updates its two callers.";
    c.send(&decide(0, context));
    let alone = c.recv(CUT_OFF).expect("the call alone is answered");
    assert_eq!(alone["result"]["structuredContent"]["status"], "decided", "{alone}");
    gate.set(false);

    let early = send_all(&mut c, (1..=40).map(|id| decide(id, context)).collect());
    assert_eq!(early, Vec::<Value>::new(), "nothing is refused, and the ping is answered before any call");
    assert_eq!(gate.wait_for_questions(33), 33, "32 calls run at once and reach the engine");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(gate.server.requests_to("/v1/systemone").len(), 33, "the other 8 wait while 32 run");

    gate.set(true);
    let mut answered = std::collections::HashSet::new();
    while answered.len() < 40 {
        let reply = c.recv(CUT_OFF).expect("every call is answered");
        assert_eq!(gist(&reply), gist(&alone), "an answer under load is the answer alone: {reply}");
        assert!(answered.insert(reply["id"].as_i64().unwrap()), "one reply per call: {reply}");
    }
    assert_eq!(answered, (1..=40).collect(), "every call");
    // The bound is given back as calls finish.
    c.send(&decide(41, context));
    let after = c.recv(CUT_OFF).expect("a call after the load");
    assert_eq!(gist(&after), gist(&alone), "{after}");
    assert!(c.close().success());
}

/// 48 calls of 4 MB each (192 MB at once): those that fit the byte budget run, the rest are refused
/// busy; no reply is dropped, every answer is the answer alone, and the server's peak memory stays
/// within 8 times the budget over what one call alone took. Without the bound every call ran
/// at once and the server held several times the whole payload (about 4x: 5.9 GB for 100 calls of 15 MB).
#[test]
fn large_calls_at_once_stay_within_the_memory_bound() {
    let gate = Gate::start(true);
    let Some(env) = env(&gate) else { return };
    let mut c = env.mcp();
    c.initialize("2025-06-18");
    let sentence = "The service retries the upload after a timeout and logs the attempt. ";
    let context = sentence.repeat((4 << 20) / sentence.len());
    c.send(&decide(0, &context));
    let alone = c.recv(CUT_OFF).expect("the call alone is answered");
    assert_eq!(alone["result"]["structuredContent"]["status"], "decided", "{alone}");
    let pid = c.child.id();
    let base_kb = peak_rss_kb(pid);
    gate.set(false);

    let calls = 48;
    let early = send_all(&mut c, (1..=calls).map(|id| decide(id, &context)).collect());
    let busy: Vec<&Value> = early.iter().filter(|r| r["error"]["code"] == BUSY).collect();
    assert!(!busy.is_empty(), "192 MB at once is past the byte budget: {}", early.len());
    assert_eq!(busy.len(), early.len(), "only busy errors come before the engine answers");
    let budget = busy[0]["error"]["data"]["max_call_bytes"].as_u64().expect("the budget in the error's data");
    let admitted = calls - busy.len();
    assert!(admitted >= 1, "the first call always runs");
    assert_eq!(gate.wait_for_questions(admitted + 1), admitted + 1, "every admitted call reached the engine");
    // Every admitted call now holds its request and its engine request at once.
    let peak_kb = peak_rss_kb(pid);
    let payload = (calls * context.len()) as u64;
    let bound_kb = base_kb + 8 * budget / 1024;
    assert!(
        bound_kb < 2 * payload / 1024,
        "the bound ({bound_kb} kB) must be well under what the whole payload costs held at once ({payload} bytes)"
    );
    assert!(
        peak_kb <= bound_kb,
        "peak RSS {peak_kb} kB with {admitted} calls admitted, past {base_kb} kB + 8 x the {budget}-byte budget"
    );

    gate.set(true);
    let mut answered = std::collections::HashSet::new();
    for r in &busy {
        assert!(answered.insert(r["id"].as_i64().unwrap()), "one reply per call: {r}");
    }
    while answered.len() < calls {
        let reply = c.recv(CUT_OFF).expect("every call is answered or refused: none is dropped");
        assert_eq!(gist(&reply), gist(&alone), "an answer under load is the answer alone: {reply}");
        assert!(answered.insert(reply["id"].as_i64().unwrap()), "one reply per call: {reply}");
    }
    assert!(c.close().success());
}
