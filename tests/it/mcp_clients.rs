//! What MCP clients other than Claude Code send, over the real binary's stdio: the control arguments
//! they add to every tool (Gemini CLI's `wait_for_previous`), arguments to the tools that take none,
//! and tool schemas that name no JSON Schema dialect.

use crate::support::TestEnv;
use serde_json::{Value, json};

const NEWEST: &str = "2025-11-25";

fn call(c: &mut crate::support::McpClient, name: &str, arguments: Value) -> Value {
    let reply = c.request("tools/call", json!({"name": name, "arguments": arguments}));
    reply.get("result").cloned().unwrap_or_else(|| panic!("{name}: not a tool result: {reply}"))
}

#[test]
fn every_tool_accepts_gemini_clis_wait_for_previous() {
    let env = TestEnv::with_mock("");
    let mut c = env.mcp();
    c.initialize("2025-06-18");
    for wait in [true, false] {
        // The call exactly as Gemini CLI 0.61.0 forwards it.
        let r = call(
            &mut c,
            "system1_decide",
            json!({"question": "Ship it?", "options": ["ship", "hold"], "wait_for_previous": wait}),
        );
        assert_eq!(r["isError"], false, "{r}");
        assert_eq!(r["structuredContent"]["status"], "decided", "{r}");
        assert_eq!(r["structuredContent"]["decision"], "ship");
        for tool in ["system1_health", "system1_capabilities"] {
            let r = call(&mut c, tool, json!({"wait_for_previous": wait}));
            assert_eq!(r["isError"], false, "{tool}: {r}");
            assert!(r["structuredContent"]["gateway_version"].is_string(), "{tool}: {r}");
        }
    }
}

#[test]
fn the_unknown_field_rule_still_holds_for_everything_else() {
    let env = TestEnv::with_mock("");
    let mut c = env.mcp();
    c.initialize(NEWEST);
    for (args, unknown) in [
        (json!({"question": "Ship it?", "wait_for_previous": true, "extra": 1}), "extra"),
        // Not the boolean Gemini CLI declares: not its control argument.
        (json!({"question": "Ship it?", "wait_for_previous": "yes"}), "wait_for_previous"),
        (json!({"question": "Ship it?", "waitForPrevious": true}), "waitForPrevious"),
    ] {
        let r = call(&mut c, "system1_decide", args.clone());
        assert_eq!(r["isError"], true, "{args}: {r}");
        let d = &r["structuredContent"];
        assert_eq!(d["error"]["code"], "invalid_request", "{args}: {d}");
        let message = d["error"]["message"].as_str().unwrap_or("");
        assert!(message.starts_with(&format!("unknown field(s): {unknown}; allowed: ")), "{args}: {message}");
    }
}

#[test]
fn health_and_capabilities_refuse_arguments_as_their_schemas_say() {
    let env = TestEnv::with_mock("");
    for version in ["2024-11-05", "2025-06-18", NEWEST] {
        let mut c = env.mcp();
        c.initialize(version);
        let list = c.request("tools/list", json!({}));
        for tool in ["system1_health", "system1_capabilities"] {
            let listed = list["result"]["tools"].as_array().expect("tools").iter().find(|t| t["name"] == tool).cloned();
            assert_eq!(
                listed.expect("listed")["inputSchema"],
                json!({"type": "object", "additionalProperties": false}),
                "{version} {tool}"
            );
            let r = call(&mut c, tool, json!({"verbose": true, "wait_for_previous": false}));
            assert_eq!(r["isError"], true, "{version} {tool}: {r}");
            assert!(r.get("structuredContent").is_none(), "a refusal is not a result of the schema: {r}");
            let text = r["content"][0]["text"].as_str().unwrap_or("");
            assert_eq!(text, format!("invalid_request: {tool} takes no arguments; unknown argument(s): verbose"));
            // No arguments at all, or an empty object, is the ordinary call.
            let r = c.request("tools/call", json!({"name": tool}));
            assert_eq!(r["result"]["isError"], false, "{version} {tool}: {r}");
            assert_eq!(call(&mut c, tool, json!({}))["isError"], false);
        }
    }
}

#[test]
fn no_tool_schema_names_a_dialect_and_the_schema_files_do() {
    let env = TestEnv::with_mock("");
    let mut c = env.mcp();
    c.initialize(NEWEST);
    let list = c.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 3);
    for t in tools {
        for key in ["inputSchema", "outputSchema"] {
            let text = t[key].to_string();
            assert!(t[key].is_object(), "{}: {key}", t["name"]);
            assert!(!text.contains("$schema"), "{} {key} names a dialect: {text}", t["name"]);
        }
    }
    for file in ["request.json", "response.json", "health.json", "capabilities.json"] {
        let path = format!("{}/schema/{file}", env!("CARGO_MANIFEST_DIR"));
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("schema file")).expect("JSON");
        assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema", "{file}");
    }
}
