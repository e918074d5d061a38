//! Text from outside reaches a terminal and a model's context escaped and short, through the real
//! binary: an engine's error body with terminal escapes (a new window title, a cleared screen),
//! fifty newlines and 100 KB of filler is quoted as one escaped line of a few hundred characters
//! in `decide`, `doctor` and the MCP tool result. And an API key no HTTP header can carry is a
//! config error that says so, not an obscure failure of every request.

use crate::support::fake_http::{FakeServer, Reply, Request};
use crate::support::{TestEnv, stderr, stdout};
use serde_json::json;

fn hostile_body() -> String {
    format!("\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[H{}{}", "\n".repeat(50), "A".repeat(100_000))
}

/// No escape character, bell or run of blank lines, and nothing near the body's size.
fn assert_tame(what: &str, text: &str) {
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{what} passed a control character: {text:?}");
    assert!(!text.contains("\n\n\n"), "{what} passed the newlines: {text:?}");
    assert!(text.len() < 20_000, "{what} quoted {} bytes", text.len());
}

#[test]
fn an_engines_error_body_is_printed_escaped_and_capped() {
    for json_body in [true, false] {
        let server = FakeServer::start(move |_r: &Request| {
            if json_body {
                Reply::json(500, &json!({"detail": hostile_body()}))
            } else {
                Reply::text(500, &hostile_body())
            }
        });
        let mut env = TestEnv::new();
        env.set_env("SYSTEM1_PROVIDER", "von");
        env.set_env("SYSTEM1_VON_ENDPOINT", &server.url());
        let out = env.run(&["decide", "-q", "Does the command delete data?"], "");
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(all.contains("HTTP 500"), "{all}");
        assert!(all.contains("\\u{1b}]0;owned"), "the escape is shown, escaped: {all}");
        assert_tame("decide", &all);
        let out = env.run(&["doctor"], "");
        assert_tame("doctor", &format!("{}{}", stdout(&out), stderr(&out)));

        let mut mcp = env.mcp();
        mcp.initialize("2025-06-18");
        let r = mcp.call("system1_decide", json!({"question": "Does the command delete data?"}));
        assert_eq!(r["status"], "error", "{r}");
        assert_tame("the tool result", &r.to_string());
        assert!(mcp.close().success());
    }
}

#[test]
fn an_api_key_with_a_control_or_non_ascii_character_is_a_config_error() {
    for (key, says) in
        [("sk-abc\u{1b}[2Jdef", "a control character (U+001B)"), ("sk-\u{201c}abc", "a non-ASCII character (U+201C)")]
    {
        let mut env = TestEnv::with_mock("[providers.von]\n");
        env.set_env("SYSTEM1_VON_API_KEY", key);
        let out = env.run(&["config", "check"], "");
        assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
        let err = stderr(&out);
        assert!(err.contains("SYSTEM1_VON_API_KEY") && err.contains(says), "{err}");
        assert!(!err.contains("abc"), "the key is not shown: {err}");
    }
    let mut env = TestEnv::with_mock("[providers.von]\n");
    env.set_env("SYSTEM1_VON_API_KEY", "sk-abc_DEF-123");
    let out = env.run(&["config", "check"], "");
    assert_eq!(out.status.code(), Some(0), "a printable key passes: {}", stderr(&out));
}
