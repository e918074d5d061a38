//! The MCP server against clients and environments that misbehave: batches whose members wait on
//! a slow engine, a stderr nobody reads, input that ends while calls are still running, fields of
//! the wrong type, request ids made to forge log lines. Through the real binary over real pipes.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::support::fake_http::{FakeServer, Reply, Request};
use crate::support::fake_laya::healthy;
use crate::support::{CUT_OFF, TestEnv};
use serde_json::json;

/// A laya fake that holds every question until the test lets go (then answers as laya does), so
/// the order of events shows what ran beside what, whatever the machine's speed.
struct HeldEngine {
    server: FakeServer,
    released: Arc<(Mutex<bool>, Condvar)>,
}

impl HeldEngine {
    fn start() -> Self {
        let released = Arc::new((Mutex::new(false), Condvar::new()));
        let gate = released.clone();
        let server = FakeServer::start(move |r: &Request| {
            if r.path != "/v1/systemone" {
                return healthy(r);
            }
            let (lock, cvar) = &*gate;
            let open = cvar.wait_timeout_while(lock.lock().unwrap(), Duration::from_secs(20), |o| !*o).unwrap();
            if *open.0 { healthy(r) } else { Reply::json(503, &json!({"detail": "never released"})) }
        });
        HeldEngine { server, released }
    }

    /// Waits until `n` questions have reached the engine (or 10 s pass); how many did.
    fn wait_for_questions(&self, n: usize) -> usize {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.server.requests_to("/v1/systemone").len() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.server.requests_to("/v1/systemone").len()
    }

    fn release(&self) {
        *self.released.0.lock().unwrap() = true;
        self.released.1.notify_all();
    }

    fn config(&self) -> String {
        format!(
            "[gateway]\nprovider = \"laya\"\ntimeout_s = 30\n[providers.laya]\nendpoint = \"{}\"\n",
            self.server.url()
        )
    }
}

fn decide(id: i64) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "system1_decide", "arguments": {"question": format!("slow {id}?")}}})
}

/// Protocol 2025-03-26 batches: the members run side by side, and the batch holds up neither the
/// reading thread nor a ping sent after it.
#[test]
fn a_batch_of_slow_decides_runs_side_by_side_and_holds_up_no_ping() {
    let engine = HeldEngine::start();
    let env = TestEnv::new();
    env.write_config(&engine.config());
    let mut c = env.mcp();
    c.initialize("2025-03-26");
    c.send(&json!([decide(1), decide(2), decide(3)]));
    c.send(&json!({"jsonrpc": "2.0", "id": "after", "method": "ping"}));
    let first = c.recv(Duration::from_secs(10)).expect("the ping is answered while the batch waits");
    assert_eq!(first["id"], "after", "{first}");
    assert_eq!(engine.wait_for_questions(3), 3, "the batch's decides ran one after another");
    engine.release();
    let batch = c.recv(CUT_OFF).expect("the batch's reply");
    let items = batch.as_array().expect("one array for the batch");
    let ids: Vec<i64> = items.iter().filter_map(|m| m["id"].as_i64()).collect();
    assert_eq!(ids, [1, 2, 3], "{batch}");
    for item in items {
        let text: serde_json::Value =
            serde_json::from_str(item["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text["status"], "decided", "{item}");
    }
}

/// A client that pipes the server's stderr and never reads it: once the pipe is full (64 KiB of
/// log lines), tool calls must still be answered; the lines that could not be written are dropped,
/// and their count is written when stderr moves again.
#[test]
fn a_full_stderr_pipe_does_not_stall_tool_calls() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::Stdio;
    let env = TestEnv::with_mock("log_level = \"DEBUG\"\n");
    let mut child = env
        .command(&["mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn system1 mcp");
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<serde_json::Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(serde_json::from_str(&line).expect("stdout is JSON-RPC"));
        }
    });
    // At DEBUG every question is logged whole: 80 of 7 KB are more than the pipe and the
    // server's queue hold together.
    let question = format!("Is this the one? {}", "word ".repeat(1400));
    // Written from a thread of its own: a stalled server stops reading, and the test must then
    // fail on its deadline, not block on a full stdin pipe.
    let writer = std::thread::spawn(move || {
        for id in 0..80 {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                              "params": {"name": "system1_decide", "arguments": {"question": question}}});
            writeln!(stdin, "{call}").ok()?;
        }
        writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": "last", "method": "ping"})).ok()?;
        stdin.flush().ok()?;
        Some(stdin)
    });
    let deadline = Instant::now() + CUT_OFF;
    let mut answered = std::collections::HashSet::new();
    while answered.len() < 81 {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(msg) = rx.recv_timeout(left) else {
            panic!("{} of 81 requests answered while nobody read stderr", answered.len());
        };
        answered.insert(msg["id"].to_string());
    }
    // Reading stderr now: the lines written, then the count of those dropped.
    let mut err = child.stderr.take().unwrap();
    drop(writer.join().unwrap());
    let mut text = String::new();
    let _ = err.read_to_string(&mut text);
    let _ = child.wait();
    assert!(
        text.contains("log lines dropped: stderr was not being read"),
        "{}",
        &text[text.len().saturating_sub(500)..]
    );
}

/// Input that ends while calls are running: each is answered when it finishes within its timeout,
/// here 2 s after end of input (the server used to give replies 1 s, then exit without them).
#[test]
fn calls_in_flight_at_end_of_input_are_answered_within_their_timeout() {
    let env = TestEnv::with_mock("timeout_s = 10\n[providers.mock]\ndelay_ms = 2000\n");
    let mut input = String::new();
    for id in 0..3 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "system1_decide", "arguments": {"question": "piped in?"}}});
        input.push_str(&format!("{call}\n"));
    }
    let out = env.run_within(&["mcp"], &input, false, CUT_OFF).expect("the server exits after answering");
    assert!(out.status.success(), "{out:?}");
    let replies: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("stdout is JSON-RPC"))
        .collect();
    assert_eq!(replies.len(), 3, "{replies:?}");
    for r in &replies {
        assert_eq!(r["result"]["structuredContent"]["status"], "decided", "{r}");
    }
}
