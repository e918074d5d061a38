//! Malformed input to the stdio server: each message gets the JSON-RPC answer it deserves (or none,
//! for a notification), the server keeps serving afterwards, and every line it writes is a
//! JSON-RPC message.

use std::time::Duration;

use crate::support;
use crate::support::{McpClient, TestEnv};
use serde_json::{Value, json};

/// Sends `bytes` as one line, then a ping with a marker id, and returns every message written
/// before the ping's reply. Proves both the answer (or silence) and that the server still serves.
fn exchange(c: &mut McpClient, bytes: &[u8]) -> Vec<Value> {
    static MARK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let mark = format!("mark-{}", MARK.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
    let mut line = bytes.to_vec();
    line.push(b'\n');
    c.send_raw(&line);
    c.send(&json!({"jsonrpc": "2.0", "id": mark, "method": "ping"}));
    let mut before = Vec::new();
    loop {
        let msg = c.recv(Duration::from_secs(20)).expect("the server answered the ping after bad input");
        assert_jsonrpc(&msg);
        if msg["id"] == mark.as_str() {
            assert_eq!(msg["result"], json!({}));
            return before;
        }
        before.push(msg);
    }
}

/// A JSON-RPC response (or, in a batch, an array of them).
fn assert_jsonrpc(msg: &Value) {
    if let Value::Array(items) = msg {
        assert!(!items.is_empty());
        items.iter().for_each(assert_jsonrpc);
        return;
    }
    assert_eq!(msg["jsonrpc"], "2.0", "{msg}");
    assert!(msg.get("id").is_some(), "a response carries an id: {msg}");
    assert!(msg.get("result").is_some() != msg.get("error").is_some(), "result xor error: {msg}");
}

/// The single error reply to `bytes`: its code and id.
fn error_of(c: &mut McpClient, bytes: &[u8]) -> (i64, Value) {
    let replies = exchange(c, bytes);
    assert_eq!(replies.len(), 1, "exactly one reply to {:?}: {replies:?}", String::from_utf8_lossy(bytes));
    let e = &replies[0]["error"];
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{e}");
    (e["code"].as_i64().expect("error code"), replies[0]["id"].clone())
}

fn server(version: &str) -> (TestEnv, McpClient) {
    let env = TestEnv::with_mock("");
    let mut c = env.mcp();
    c.initialize(version);
    (env, c)
}

#[test]
fn unparseable_input_is_a_parse_error_with_a_null_id() {
    let (_env, mut c) = server("2025-11-25");
    for bad in [
        &b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": "[..],
        b"not json at all",
        b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"} trailing",
        b"{'jsonrpc': '2.0'}",
        // Bytes that are not UTF-8, inside a string and alone.
        b"{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"ping\", \"params\": {\"x\": \"\xff\xfe\"}}",
        b"\xc3\x28\xa0\xa1",
        // A lone surrogate escape is not a Unicode string.
        b"{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"ping\", \"params\": {\"x\": \"\\ud800\"}}",
    ] {
        assert_eq!(error_of(&mut c, bad), (-32700, Value::Null), "{:?}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn deeply_nested_json_is_refused_cleanly() {
    let (_env, mut c) = server("2025-11-25");
    let depth = 10_000;
    let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    assert_eq!(error_of(&mut c, arrays.as_bytes()), (-32700, Value::Null));
    let objects = format!(
        "{{\"jsonrpc\": \"2.0\", \"id\": 4, \"method\": \"ping\", \"params\": {}{}}}",
        "{\"a\": ".repeat(depth),
        "}".repeat(depth)
    );
    assert_eq!(error_of(&mut c, objects.as_bytes()), (-32700, Value::Null));
}

#[test]
fn empty_and_blank_lines_are_ignored() {
    let (_env, mut c) = server("2025-11-25");
    assert!(exchange(&mut c, b"").is_empty());
    assert!(exchange(&mut c, b"   \t ").is_empty());
    assert!(exchange(&mut c, b"\r").is_empty());
}

#[test]
fn requests_that_are_not_valid_json_rpc_are_invalid_requests() {
    let (_env, mut c) = server("2025-11-25");
    // The id can be read: it is echoed.
    for (bad, id) in [
        (json!({"jsonrpc": "1.0", "id": 5, "method": "ping"}), json!(5)),
        (json!({"id": 6, "method": "ping"}), json!(6)),
        (json!({"jsonrpc": 2.0, "id": 7, "method": "ping"}), json!(7)),
        (json!({"jsonrpc": "2.0", "id": "m", "method": 12}), json!("m")),
        (json!({"jsonrpc": "2.0", "id": 8}), json!(8)),
    ] {
        assert_eq!(error_of(&mut c, bad.to_string().as_bytes()), (-32600, id), "{bad}");
    }
    // Not an object at all.
    for bad in ["42", "\"ping\"", "null", "true"] {
        assert_eq!(error_of(&mut c, bad.as_bytes()), (-32600, Value::Null), "{bad}");
    }
}

#[test]
fn ids_of_the_wrong_type_are_refused_with_a_null_id() {
    let (_env, mut c) = server("2025-11-25");
    for id in [Value::Null, json!(1.5), json!(2.0), json!(true), json!({"a": 1}), json!([1])] {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
        assert_eq!(error_of(&mut c, msg.to_string().as_bytes()), (-32600, Value::Null), "id {id}");
    }
}

#[test]
fn ids_are_echoed_with_their_exact_type_and_value() {
    let (_env, mut c) = server("2025-11-25");
    for id in [
        json!(7),
        json!("7"),
        json!(0),
        json!(-3),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(""),
        json!("id with spaces and ünïcode"),
    ] {
        let replies = exchange(&mut c, json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string().as_bytes());
        assert_eq!(replies.len(), 1);
        assert_eq!(replies[0]["id"], id, "echoed exactly");
        assert_eq!(replies[0]["id"].is_string(), id.is_string());
    }
    // Also on a tool call answered from another thread, and on an error.
    for id in [json!("42"), json!(42)] {
        c.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "system1_health"}}));
        let reply = c.wait_for(&id, Duration::from_secs(20));
        assert_eq!(reply["id"], id);
        let err = exchange(&mut c, json!({"jsonrpc": "2.0", "id": id, "method": "nope"}).to_string().as_bytes());
        assert_eq!(err[0]["id"], id);
        assert_eq!(err[0]["error"]["code"], -32601);
    }
}

#[test]
fn unknown_methods_and_bad_params_get_their_codes() {
    let (_env, mut c) = server("2025-11-25");
    let call = |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
    assert_eq!(error_of(&mut c, call("resources/list", json!({})).to_string().as_bytes()), (-32601, json!(9)));
    assert_eq!(error_of(&mut c, call("", json!({})).to_string().as_bytes()), (-32601, json!(9)));
    for params in [json!([]), json!("x"), json!(3), Value::Null] {
        for method in ["ping", "tools/list", "tools/call", "initialize"] {
            let (code, id) = error_of(&mut c, call(method, params.clone()).to_string().as_bytes());
            assert_eq!((code, id), (-32602, json!(9)), "{method} with params {params}");
        }
    }
    assert_eq!(error_of(&mut c, call("tools/call", json!({})).to_string().as_bytes()), (-32602, json!(9)));
    assert_eq!(
        error_of(&mut c, call("tools/call", json!({"name": ["system1_decide"]})).to_string().as_bytes()),
        (-32602, json!(9))
    );
}

#[test]
fn bad_notifications_and_client_responses_are_not_answered() {
    let (_env, mut c) = server("2025-11-25");
    for quiet in [
        json!({"jsonrpc": "1.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": "x"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": null}}),
        json!({"jsonrpc": "2.0", "method": "no/such/notification", "params": [1, 2]}),
        json!({"jsonrpc": "2.0", "id": 77, "result": {}}),
        json!({"jsonrpc": "2.0", "id": 78, "error": {"code": -1, "message": "x"}}),
    ] {
        assert!(exchange(&mut c, quiet.to_string().as_bytes()).is_empty(), "{quiet} got an answer");
    }
}

#[test]
fn batches_are_refused_except_in_protocol_2025_03_26() {
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "two", "method": "tools/call", "params": {"name": "system1_decide", "arguments": {"question": "q?"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "nope"},
        17
    ]);
    for version in ["2024-11-05", "2025-06-18", "2025-11-25"] {
        let (_env, mut c) = server(version);
        assert_eq!(error_of(&mut c, batch.to_string().as_bytes()), (-32600, Value::Null), "{version}");
    }
    let (_env, mut c) = server("2025-03-26");
    // A batch with a tool call runs on its own thread, so its reply is the next message, whenever.
    c.send(&batch);
    let reply = c.recv(Duration::from_secs(20)).expect("the batch is answered");
    assert_jsonrpc(&reply);
    let items = reply.as_array().expect("a batch is answered with an array");
    assert_eq!(items.len(), 4, "every request but the notification is answered: {items:?}");
    assert_eq!(items[0], json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    assert_eq!(items[1]["id"], "two");
    let text: Value =
        serde_json::from_str(items[1]["result"]["content"][0]["text"].as_str().expect("text")).expect("JSON text");
    assert_eq!(text["status"], "decided");
    assert_eq!(items[2]["error"]["code"], -32601);
    assert_eq!(items[3]["error"]["code"], -32600);
    assert_eq!(items[3]["id"], Value::Null);
    // An empty batch is itself invalid; a batch of notifications gets no answer at all.
    assert_eq!(error_of(&mut c, b"[]"), (-32600, Value::Null));
    let quiet = json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]);
    assert!(exchange(&mut c, quiet.to_string().as_bytes()).is_empty());
}

#[test]
fn a_ten_megabyte_line_is_answered_and_the_server_keeps_serving() {
    let (_env, mut c) = server("2025-11-25");
    let big = "x".repeat(10 * 1024 * 1024);
    // A well-formed call whose question is far too long: a tool error, invalid_request.
    let call = json!({"jsonrpc": "2.0", "id": "big", "method": "tools/call",
                      "params": {"name": "system1_decide", "arguments": {"question": big}}});
    c.send(&call);
    let reply = c.wait_for(&json!("big"), Duration::from_secs(60));
    assert_eq!(reply["result"]["isError"], true);
    let s = &reply["result"]["structuredContent"];
    assert_eq!(s["error"]["code"], "invalid_request", "{}", s["error"]);
    assert!(s["error"]["message"].as_str().is_some_and(|m| m.len() < 500), "the message does not echo the question");
    // Ten megabytes of junk: a parse error.
    let junk = format!("{{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\", \"params\": {big}}}");
    assert_eq!(error_of(&mut c, junk.as_bytes()), (-32700, Value::Null));
    // A huge valid ping is still a ping.
    let padded = json!({"jsonrpc": "2.0", "id": "padded", "method": "ping", "params": {"pad": big}});
    let replies = exchange(&mut c, padded.to_string().as_bytes());
    assert_eq!(replies, [json!({"jsonrpc": "2.0", "id": "padded", "result": {}})]);
}

#[test]
fn stdout_carries_only_protocol_lines_whatever_the_input() {
    // Even with DEBUG logging, everything but protocol goes to stderr.
    let env = TestEnv::new();
    env.write_config("[gateway]\nprovider = \"mock\"\nlog_level = \"DEBUG\"\n");
    let mut input: Vec<u8> = Vec::new();
    for line in [
        &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"}}"[..],
        b"garbage",
        b"\xff\xfe\xfd",
        b"",
        b"[1,2]",
        b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"system1_decide\",\"arguments\":{\"question\":\"multi\\nline?\"}}}",
        b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"system1_capabilities\"}}",
        b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}",
    ] {
        input.extend_from_slice(line);
        input.push(b'\n');
    }
    let out = env.run(&["mcp"], &String::from_utf8_lossy(&input));
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8");
    let mut ids = Vec::new();
    for line in text.lines() {
        let msg: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON on stdout: {line:?}: {e}"));
        assert_jsonrpc(&msg);
        ids.push(msg["id"].clone());
    }
    assert_eq!(ids.len(), 7, "initialize, 3 errors, decide, capabilities, ping: {text}");
    assert!(!support::stderr(&out).is_empty(), "logs went to stderr");
}

#[test]
fn a_line_over_the_16_mib_limit_is_refused_and_skipped() {
    let (_env, mut c) = server("2025-11-25");
    // A request that would be valid, but whose line is longer than any message may be.
    let pad = "x".repeat(17 * 1024 * 1024);
    let huge = json!({"jsonrpc": "2.0", "id": "huge", "method": "ping", "params": {"pad": pad}});
    let (code, id) = error_of(&mut c, huge.to_string().as_bytes());
    assert_eq!((code, id), (-32600, Value::Null));
    // What followed the long line on the same stream is read normally.
    assert_eq!(exchange(&mut c, b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}").len(), 1);
}
