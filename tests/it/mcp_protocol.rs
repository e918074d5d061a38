//! The stdio MCP server as a protocol: the handshake at every supported version, the tool listing,
//! ping, notifications, cancellation, concurrency and end of input, all through the real binary
//! over real pipes. Malformed input has its own file (`mcp_bad_input.rs`).

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::support::fake_http::{FakeServer, Reply, Request};
use crate::support::fake_laya::healthy;
use crate::support::{CUT_OFF, TestEnv};
use serde_json::{Value, json};

const VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const NEWEST: &str = "2025-11-25";

fn tool<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["result"]["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("tool {name} missing from {list}"))
}

/// Waits for the process to end; `None` if it is still running after `limit`.
fn wait_exit(child: &mut std::process::Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

#[test]
fn handshake_echoes_each_supported_version() {
    let env = TestEnv::with_mock("");
    for version in VERSIONS {
        let mut c = env.mcp();
        let reply = c.initialize(version);
        let r = &reply["result"];
        assert_eq!(reply["jsonrpc"], "2.0");
        assert_eq!(r["protocolVersion"], version, "{reply}");
        assert_eq!(r["serverInfo"]["name"], "system1");
        assert_eq!(r["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
        assert!(r["capabilities"]["tools"].is_object(), "tools capability declared: {reply}");
        assert_eq!(c.request("ping", json!({}))["result"], json!({}));
    }
}

#[test]
fn handshake_answers_the_newest_version_to_an_unknown_or_missing_one() {
    let env = TestEnv::with_mock("");
    for asked in [json!("2099-01-01"), json!("1.0"), json!(20250618), Value::Null] {
        let mut c = env.mcp();
        let mut params = json!({"capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
        if !asked.is_null() {
            params["protocolVersion"] = asked.clone();
        }
        let reply = c.request("initialize", params);
        assert_eq!(reply["result"]["protocolVersion"], NEWEST, "asked {asked}: {reply}");
        assert!(reply.get("error").is_none());
    }
}

#[test]
fn tools_list_has_the_three_tools_with_the_schemas_each_version_knows() {
    let env = TestEnv::with_mock("");
    for version in VERSIONS {
        let mut c = env.mcp();
        c.initialize(version);
        let list = c.request("tools/list", json!({}));
        let tools = list["result"]["tools"].as_array().expect("tools");
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["system1_decide", "system1_health", "system1_capabilities"], "{version}");
        let structured = version >= "2025-06-18";
        for t in tools {
            assert_eq!(t["inputSchema"]["type"], "object", "{version}: {t}");
            assert!(t["description"].as_str().is_some_and(|d| !d.is_empty()));
            assert_eq!(t.get("outputSchema").is_some(), structured, "{version}: outputSchema only from 2025-06-18");
            if structured {
                assert_eq!(t["outputSchema"]["type"], "object");
                assert!(t["title"].is_string());
            }
            assert_eq!(t.get("annotations").is_some(), version >= "2025-03-26", "{version}: annotations");
        }
        let decide = tool(&list, "system1_decide");
        assert_eq!(decide["inputSchema"]["required"], json!(["question"]));
        assert_eq!(decide["inputSchema"]["additionalProperties"], false);
        assert_eq!(
            tool(&list, "system1_health")["inputSchema"],
            json!({"type": "object", "additionalProperties": false})
        );
    }
}

#[test]
fn tool_results_carry_structured_content_and_the_same_json_as_text() {
    let env = TestEnv::with_mock("");
    for version in VERSIONS {
        let mut c = env.mcp();
        c.initialize(version);
        for (name, args) in [
            ("system1_decide", json!({"question": "Ship it?"})),
            ("system1_health", json!({})),
            ("system1_capabilities", json!({})),
        ] {
            let reply = c.request("tools/call", json!({"name": name, "arguments": args}));
            let r = &reply["result"];
            assert_eq!(r["isError"], false, "{version} {name}: {reply}");
            let content = r["content"].as_array().expect("content");
            assert_eq!(content.len(), 1);
            assert_eq!(content[0]["type"], "text");
            let text: Value = serde_json::from_str(content[0]["text"].as_str().expect("text")).expect("text is JSON");
            if version >= "2025-06-18" {
                assert_eq!(r["structuredContent"], text, "{version} {name}: structured and text agree");
            } else {
                assert!(r.get("structuredContent").is_none(), "{version}: no structuredContent before 2025-06-18");
            }
            assert!(text.is_object());
        }
    }
}

#[test]
fn each_tool_answers_over_stdio() {
    let env = TestEnv::with_mock("");
    let mut c = env.mcp();
    c.initialize(NEWEST);

    let d = c.call("system1_decide", json!({"question": "Which?", "options": ["red", "green"], "request_id": "r-7"}));
    assert_eq!(d["status"], "decided");
    assert_eq!(d["decision"], "red");
    assert_eq!(d["request_id"], "r-7");
    assert_eq!(d["provider"], "mock");

    let h = c.call("system1_health", json!({}));
    assert_eq!(h["status"], "ok", "{h}");
    assert_eq!(h["gateway_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(h["schema_version"], "1");
    assert_eq!(h["config_file"], env.config.display().to_string());
    assert_eq!(h["config_errors"], json!([]));
    assert_eq!(h["providers"][0]["name"], "mock");
    assert_eq!(h["providers"][0]["role"], "primary");
    assert_eq!(h["providers"][0]["ok"], true);
    assert!(h["providers"][0]["latency_ms"].as_f64().is_some());

    let caps = c.call("system1_capabilities", json!({}));
    assert_eq!(caps["gateway_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(caps["schema_versions"], json!(["1"]));
    assert_eq!(caps["tools"], json!(["system1_decide", "system1_health", "system1_capabilities"]));
    assert_eq!(caps["provider_chain"], json!(["mock"]));
    assert_eq!(caps["timeout_s"], 5.0);
    assert_eq!(caps["min_confidence"], 0.6);
    assert_eq!(caps["providers"]["mock"]["max_options"], 256);
    assert_eq!(caps["available_providers"].as_array().map(|a| a.contains(&json!("mock"))), Some(true));
    assert!(caps["calibration_fits"].as_array().is_some_and(|f| !f.is_empty()), "shipped fits are listed");
    let committed = |name: &str| -> Value {
        let path = format!("{}/schema/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(path).expect("schema file")).expect("schema JSON")
    };
    assert_eq!(caps["request_schema"], committed("request.json"));
    assert_eq!(caps["response_schema"], committed("response.json"));
}

#[test]
fn unknown_tool_and_unusable_params_are_protocol_errors() {
    let env = TestEnv::with_mock("");
    let mut c = env.mcp();
    c.initialize(NEWEST);
    for params in [
        json!({"name": "system1_nope", "arguments": {}}),
        json!({"arguments": {"question": "q"}}),
        json!({"name": 3}),
        json!({"name": "system1_decide", "arguments": "question"}),
        json!({"name": "system1_decide", "arguments": [1]}),
    ] {
        let reply = c.request("tools/call", params.clone());
        assert_eq!(reply["error"]["code"], -32602, "{params}: {reply}");
        assert!(reply.get("result").is_none());
    }
    // Missing arguments mean an empty object: a tool result, not a protocol error.
    let reply = c.request("tools/call", json!({"name": "system1_health"}));
    assert_eq!(reply["result"]["structuredContent"]["status"], "ok", "{reply}");
}

#[test]
fn notifications_get_no_reply() {
    let env = TestEnv::with_mock("");
    let mut c = env.mcp();
    c.initialize(NEWEST);
    for method in ["notifications/initialized", "notifications/progress", "notifications/whatever", "ping"] {
        c.send(&json!({"jsonrpc": "2.0", "method": method, "params": {}}));
    }
    c.send(&json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "system1_decide", "arguments": {}}}));
    c.send(&json!({"jsonrpc": "2.0", "id": "after", "method": "ping"}));
    let next = c.recv(Duration::from_secs(10)).expect("ping reply");
    assert_eq!(next["id"], "after", "the notifications were answered: {next}");
    assert!(c.recv(Duration::from_millis(300)).is_none(), "nothing else was written");
}

#[test]
fn a_slow_decide_blocks_neither_ping_nor_health_nor_another_decide() {
    // The engine holds every question until the test lets go, so the order of the replies shows what
    // waited for what, whatever the machine's speed.
    let released = Arc::new((Mutex::new(false), Condvar::new()));
    let gate = released.clone();
    let engine = FakeServer::start(move |r: &Request| {
        if r.path != "/v1/systemone" {
            return healthy(r);
        }
        let (lock, cvar) = &*gate;
        let open = cvar.wait_timeout_while(lock.lock().unwrap(), Duration::from_secs(20), |open| !*open).unwrap();
        if *open.0 { healthy(r) } else { Reply::json(503, &json!({"detail": "never released"})) }
    });
    let env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"laya\"\ntimeout_s = 30\n[providers.laya]\nendpoint = \"{}\"\n",
        engine.url()
    ));
    let mut c = env.mcp();
    c.initialize(NEWEST);
    let decide = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "system1_decide", "arguments": {"question": format!("slow {id}?")}}})
    };
    c.send(&decide(1));
    c.send(&decide(2));
    c.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
    c.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "system1_health"}}));
    // Ping and health come back while both decisions are still waiting on the engine.
    let first = c.recv(Duration::from_secs(10)).expect("a reply");
    let second = c.recv(Duration::from_secs(10)).expect("a reply");
    let mut early: Vec<i64> = [&first, &second].iter().filter_map(|m| m["id"].as_i64()).collect();
    early.sort();
    assert_eq!(early, [3, 4], "ping and health answered first: {first} {second}");
    // Both questions reach the engine before either is answered: the decisions run side by side.
    let deadline = Instant::now() + Duration::from_secs(10);
    while engine.requests_to("/v1/systemone").len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(engine.requests_to("/v1/systemone").len(), 2, "the second decide waited for the first");
    *released.0.lock().unwrap() = true;
    released.1.notify_all();
    let a = c.recv(Duration::from_secs(10)).expect("decide reply");
    let b = c.recv(Duration::from_secs(10)).expect("decide reply");
    let mut ids: Vec<i64> = [&a, &b].iter().filter_map(|m| m["id"].as_i64()).collect();
    ids.sort();
    assert_eq!(ids, [1, 2]);
    assert_eq!(a["result"]["structuredContent"]["status"], "decided", "{a}");
    assert_eq!(b["result"]["structuredContent"]["status"], "decided", "{b}");
}

#[test]
fn a_cancelled_request_gets_no_reply_and_the_server_keeps_serving() {
    let env = TestEnv::with_mock("timeout_s = 30\n[providers.mock]\ndelay_ms = 800\n");
    let mut c = env.mcp();
    c.initialize(NEWEST);
    c.send(&json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                   "params": {"name": "system1_decide", "arguments": {"question": "q?"}}}));
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": "slow", "reason": "user gave up"}}));
    // Cancelling something unknown or finished is ignored.
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}}));
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(1800) {
        if let Some(m) = c.recv(Duration::from_millis(100)) {
            panic!("a cancelled request was answered: {m}");
        }
    }
    // The same id used again later is answered normally.
    c.send(&json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                   "params": {"name": "system1_decide", "arguments": {"question": "q?"}}}));
    let reply = c.wait_for(&json!("slow"), Duration::from_secs(10));
    assert_eq!(reply["result"]["structuredContent"]["status"], "decided");
}

#[test]
fn end_of_input_ends_the_server_promptly_with_or_without_a_call_in_flight() {
    // With none in flight the server leaves at once. A call in flight is answered first, within its
    // timeout: an engine that hangs (30 s here) is cut off at the 1 s timeout, and that answer is
    // written before the server exits (mcp_hostile tests a call that finishes after end of input).
    for in_flight in [false, true] {
        let env = TestEnv::with_mock("timeout_s = 1\n[providers.mock]\ndelay_ms = 30000\n");
        let mut c = env.mcp();
        c.initialize(NEWEST);
        if in_flight {
            c.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "system1_decide", "arguments": {"question": "q?"}}}));
            std::thread::sleep(Duration::from_millis(100));
        }
        c.close_input();
        let status = wait_exit(&mut c.child, CUT_OFF).expect("server exits on end of input");
        assert!(status.success(), "in flight: {in_flight}; {status:?}");
        if in_flight {
            // Written before the exit: the bound only gives a loaded machine time to pass it through the pipe.
            let reply = c.recv(CUT_OFF).expect("the call in flight is answered");
            assert_eq!(reply["result"]["structuredContent"]["error"]["code"], "provider_timeout", "{reply}");
        }
    }
}

#[test]
fn replies_finished_soon_after_end_of_input_are_still_written() {
    let env = TestEnv::with_mock("[providers.mock]\ndelay_ms = 200\n");
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": NEWEST}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "system1_decide", "arguments": {"question": "piped?"}}}),
    ]
    .iter()
    .map(|m| format!("{m}\n"))
    .collect::<String>();
    let out = env.run(&["mcp"], &input);
    assert!(out.status.success());
    let lines: Vec<Value> =
        String::from_utf8(out.stdout).expect("utf-8").lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[1]["result"]["structuredContent"]["status"], "decided");
}

/// `_meta` of a request in the stateless 2026-07-28 era.
fn envelope(version: &str) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": version,
           "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"},
           "io.modelcontextprotocol/clientCapabilities": {}})
}

fn assert_modern(result: &Value, cacheable: bool) {
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "system1");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(result.get("ttlMs").is_some(), cacheable, "{result}");
    if cacheable {
        assert_eq!((result["ttlMs"].as_u64(), result["cacheScope"].as_str()), (Some(0), Some("private")));
    }
}

#[test]
fn the_stateless_era_is_served_without_initialize() {
    let env = TestEnv::with_mock("");
    let mut c = env.mcp();
    let d = c.request("server/discover", json!({"_meta": envelope("2026-07-28")}));
    let r = &d["result"];
    assert_eq!(r["supportedVersions"], json!(["2026-07-28"]), "{d}");
    assert!(r["capabilities"]["tools"].is_object());
    assert_modern(r, true);

    let list = c.request("tools/list", json!({"_meta": envelope("2026-07-28")}));
    assert_modern(&list["result"], true);
    assert_eq!(list["result"]["tools"].as_array().map(Vec::len), Some(3));
    assert!(tool(&list, "system1_decide")["outputSchema"].is_object());

    let call = c.request(
        "tools/call",
        json!({"_meta": envelope("2026-07-28"), "name": "system1_decide", "arguments": {"question": "q?"}}),
    );
    assert_modern(&call["result"], false);
    assert_eq!(call["result"]["structuredContent"]["status"], "decided");
    assert_eq!(call["result"]["isError"], false);

    // A version the server does not speak: -32022, naming every version it does.
    let bad = c.request("tools/list", json!({"_meta": envelope("2099-01-01")}));
    assert_eq!(bad["error"]["code"], -32022, "{bad}");
    assert_eq!(bad["error"]["data"]["requested"], "2099-01-01");
    let supported = bad["error"]["data"]["supported"].as_array().expect("supported");
    for v in ["2026-07-28", "2025-11-25", "2024-11-05"] {
        assert!(supported.contains(&json!(v)), "{bad}");
    }
    let bad = c.request("server/discover", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": 7}}));
    assert_eq!((bad["error"]["code"].as_i64(), bad["error"]["data"]["requested"].as_str()), (Some(-32022), Some("7")));
}

#[test]
fn both_eras_share_one_server_and_initialize_stays_the_handshake() {
    let env = TestEnv::with_mock("");
    let mut c = env.mcp();
    // A dual-era client's probe, then its fallback: the handshake works after discover.
    assert!(c.request("server/discover", json!({"_meta": envelope("2026-07-28")}))["result"].is_object());
    let init = c.request(
        "initialize",
        json!({"_meta": envelope("2026-07-28"), "protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert!(init["result"].get("resultType").is_none(), "the handshake has the handshake shape: {init}");
    let legacy = c.request("tools/list", json!({}));
    assert!(legacy["result"].get("resultType").is_none() && legacy["result"].get("ttlMs").is_none());
    let legacy = c.request("tools/call", json!({"name": "system1_health"}));
    assert!(legacy["result"].get("resultType").is_none());
    assert_eq!(legacy["result"]["structuredContent"]["status"], "ok");
    // A request carrying an ordinary `_meta` (a progress token) is still the handshake era.
    let progress = c.request("tools/list", json!({"_meta": {"progressToken": 5}}));
    assert!(progress["result"].get("resultType").is_none());
}

#[test]
fn a_client_that_stops_reading_ends_the_server_quietly() {
    use std::io::Write;
    let env = TestEnv::with_mock("");
    let mut child = env
        .command(&["mcp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().expect("stdin");
    // Writes may fail once the server is gone; that is the point.
    for _ in 0..3 {
        let _ = stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
        let _ = stdin.flush();
    }
    let status = wait_exit(&mut child, Duration::from_secs(10)).expect("the server ended with nobody reading");
    assert!(status.success(), "a broken pipe is a normal end: {status:?}");
}

/// A call sent the moment the previous call's reply is read finds that call over: its id free
/// (and its share of the bound given back). The reply used to be written before the call was
/// taken off the list of running calls, so a client quick to reuse the id got "already in use".
#[test]
fn an_id_is_free_again_as_soon_as_its_reply_is_read() {
    let env = TestEnv::with_mock("");
    let mut c = env.mcp();
    c.initialize(NEWEST);
    for round in 0..300 {
        c.send(&json!({"jsonrpc": "2.0", "id": "again", "method": "tools/call",
                       "params": {"name": "system1_decide", "arguments": {"question": "q?"}}}));
        let reply = c.wait_for(&json!("again"), Duration::from_secs(10));
        assert_eq!(reply["result"]["structuredContent"]["status"], "decided", "round {round}: {reply}");
    }
    assert!(c.close().success());
}
