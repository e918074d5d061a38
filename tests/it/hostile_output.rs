//! Text from outside reaches a terminal and a model's context escaped and short, through the real
//! binary: an engine's error body with terminal escapes (a new window title, a cleared screen),
//! fifty newlines and 100 KB of filler is quoted as one escaped line of a few hundred characters
//! in `decide`, `doctor` and the MCP tool result. And an API key no HTTP header can carry is a
//! config error that says so, not an obscure failure of every request.

use crate::support::fake_http::{FakeServer, Reply, Request};
use crate::support::{TestEnv, stderr, stdout};
use serde_json::json;

fn hostile_body() -> String {
    format!("\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[H\r{}{}", "\n".repeat(50), "A".repeat(100_000))
}

/// No escape character, bell, carriage return or run of blank lines, and nothing near the body's size.
fn assert_tame(what: &str, text: &str) {
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\r'),
        "{what} passed a control character: {text:?}"
    );
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

/// What is wrong with `text`: an escape character, bell or carriage return in it, or more than
/// `cap` bytes.
fn untamed(what: &str, text: &str, cap: usize) -> Vec<String> {
    let mut wrong: Vec<String> = ['\u{1b}', '\u{7}', '\r']
        .into_iter()
        .filter(|c| text.contains(*c))
        .map(|c| format!("{what} passed {c:?}: {:?}", text.chars().take(300).collect::<String>()))
        .collect();
    if text.len() >= cap {
        wrong.push(format!("{what} printed {} bytes", text.len()));
    }
    wrong
}

/// A von that is up and answers, but whose own words are hostile: its version in /health, the
/// truncation note of every answer, and (for a choice) the option it picks.
fn von_with_hostile_words() -> FakeServer {
    FakeServer::start(|r: &Request| {
        if r.path == "/health" {
            return Reply::json(200, &json!({"status": "ok", "version": hostile_body(), "engine": hostile_body()}));
        }
        let truncation = json!({"state_tokens": 9000, "kept_tokens": 8192, "strategy": hostile_body()});
        let answers: serde_json::Map<String, serde_json::Value> = r.json()["questions"]
            .as_object()
            .map(|qs| {
                qs.keys()
                    .map(|id| {
                        let a = if r.json()["questions"][id]["type"] == "noul" {
                            json!({"type": "noul", "noul": 0.7, "noul_raw": 0.7})
                        } else {
                            json!({"type": "choice", "choice": hostile_body(), "confidence": 0.6,
                                   "probabilities": {"hold": 0.4, "go": 0.6}})
                        };
                        (id.clone(), a)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Reply::json(200, &json!({"model": "von-1.3.0", "answers": answers, "truncation": truncation}))
    })
}

/// What an engine says when it answers (its version, a note on how it read the state, the option
/// it picked), not only its error bodies, reaches every command and the tool result escaped and
/// capped: `decide`, `doctor`, `smoke` and `engine status` print no escape, bell or carriage
/// return, and none of them, nor the MCP tool result, carries the 100 KB.
#[test]
fn an_engines_answers_and_health_are_printed_escaped_and_capped() {
    let server = von_with_hostile_words();
    let mut env = TestEnv::new();
    env.set_env("SYSTEM1_PROVIDER", "von");
    env.set_env("SYSTEM1_VON_ENDPOINT", &server.url());
    let runs: [&[&str]; 6] = [
        &["decide", "-q", "Does the command delete data?"],
        &["decide", "-q", "Does the command delete data?", "--json"],
        &["decide", "-q", "Merge now?", "-o", "hold", "-o", "go"],
        &["doctor"],
        &["engine", "status"],
        &["smoke", "--bin", crate::support::BIN, "-q", "Merge now?", "-o", "hold", "-o", "go"],
    ];
    // Every command is run, and what each got wrong is told together.
    let mut wrong = Vec::new();
    for args in runs {
        let out = env.run(args, "");
        wrong.extend(untamed(&args.join(" "), &format!("{}{}", stdout(&out), stderr(&out)), 20_000));
    }
    let mut mcp = env.mcp();
    mcp.initialize("2025-06-18");
    for args in [
        json!({"question": "Does the command delete data?"}),
        json!({"question": "Merge now?", "options": ["hold", "go"]}),
    ] {
        let r = mcp.call("system1_decide", args.clone());
        wrong.extend(untamed(&format!("the tool result for {args}"), &r.to_string(), 20_000));
    }
    let r = mcp.call("system1_health", json!({}));
    wrong.extend(untamed("the health tool", &r.to_string(), 20_000));
    assert!(mcp.close().success());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The words are shown, escaped, where they belong.
    let out = env.run(&["decide", "-q", "Does the command delete data?", "--json"], "");
    assert!(stdout(&out).contains("(\\\\u{1b}]0;owned\\\\u{7}"), "{}", stdout(&out));
    let out = env.run(&["doctor"], "");
    assert!(stdout(&out).contains("von \\u{1b}]0;owned\\u{7}"), "{}", stdout(&out));
}

/// Text from files and settings reaches the terminal escaped too: a config value (`config show`,
/// and `config check`'s error on stderr) and a transcript's model and folder (`report`), each with
/// an escape sequence, a bell and a carriage return in it.
#[test]
fn text_from_files_and_settings_is_printed_terminal_safe() {
    let evil = "\u{1b}]0;owned\u{7}\u{1b}[2J\r";
    let env = TestEnv::with_mock(&format!("[providers.mock]\nmodel = {:?}\n", evil));
    let file = env.claude_dir.join("projects/-home-u-w1/11111111-aaaa.jsonl");
    let line = json!({"type": "assistant", "uuid": "u1", "parentUuid": null, "isSidechain": false,
                      "timestamp": "2026-10-01T10:00:01.000Z", "sessionId": "11111111-aaaa", "cwd": format!("/home/u/w1{evil}"),
                      "message": {"id": "msg_1", "model": format!("claude-opus-4-8{evil}"), "role": "assistant",
                                  "content": [{"type": "text", "text": "hi"}],
                                  "usage": {"input_tokens": 100, "output_tokens": 10}}});
    crate::support::write(&file, &format!("{line}\n"));
    let mut wrong = Vec::new();
    let runs: [&[&str]; 4] = [
        &["config", "show"],
        &["report", "--since", "2026-09-01"],
        &["report", "--since", "2026-09-01", "--by", "model"],
        &["report", "--since", "2026-09-01", "--by", "project"],
    ];
    for args in runs {
        let out = env.run(args, "");
        wrong.extend(untamed(&args.join(" "), &format!("{}{}", stdout(&out), stderr(&out)), 100_000));
    }
    // A config error quotes the value, on stderr.
    let bad = TestEnv::with_mock(&format!("[gateway]\nprovider = {:?}\n", evil));
    let out = bad.run(&["config", "check"], "");
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    wrong.extend(untamed("config check", &format!("{}{}", stdout(&out), stderr(&out)), 100_000));
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
