//! Every file the binary only reads is opened the one guarded way (a regular file, of bounded size,
//! a link only where one belongs), through the real binary: a FIFO in its place is refused at once
//! instead of hanging the reader (the MCP server's `initialize`, the hooks, `report`), and a link
//! to `/dev/zero` is refused instead of read without end. The calibration file, the local heads,
//! the embedding cache, the model folder's files, the routing log as the PostToolUse hook reads it,
//! and a subagent's `.meta.json`.

#![cfg(unix)]

use std::path::Path;

use crate::local_untrusted::write_model;
use crate::support::{CUT_OFF, TestEnv, stderr, stdout, write};
use serde_json::{Value, json};

fn mkfifo(path: &Path) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    let _ = std::fs::remove_file(path);
    let made = std::process::Command::new("mkfifo").arg(path).status().expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}

fn link_to_zero(path: &Path) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    let _ = std::fs::remove_file(path);
    std::os::unix::fs::symlink("/dev/zero", path).unwrap();
}

const PROMPT: &str = "Read the payment module and explain how refunds are computed for partial orders";

fn prompt_payload(env: &TestEnv) -> String {
    json!({"session_id": "s", "cwd": env.home, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT}).to_string()
}

/// `system1_capabilities`' calibration errors, from a server that must answer `initialize` first.
fn calibration_errors(env: &TestEnv) -> String {
    let mut mcp = env.mcp();
    let init = mcp.initialize("2025-06-18");
    assert!(init["error"].is_null(), "{init}");
    let caps = mcp.call("system1_capabilities", json!({}));
    assert!(mcp.close().success());
    caps["calibration_errors"].to_string()
}

#[test]
fn a_calibration_file_that_is_a_fifo_or_a_link_to_dev_zero_is_refused_unread() {
    let env = TestEnv::with_mock("[routing]\nenabled = true\nhint = true\n");
    let cal = env.install_dir.join("calibration.json");
    mkfifo(&cal);
    // Before, the server never answered `initialize`: it waited for a writer to the FIFO.
    let errors = calibration_errors(&env);
    assert!(errors.contains("calibration.json") && errors.contains("a FIFO"), "{errors}");
    for (event, payload) in [
        ("prompt", prompt_payload(&env)),
        (
            "session-start",
            json!({"session_id": "s", "hook_event_name": "SessionStart", "source": "startup"}).to_string(),
        ),
    ] {
        let out = env
            .run_within(&["hook", event], &payload, false, CUT_OFF)
            .unwrap_or_else(|| panic!("the {event} hook waited on the FIFO"));
        assert!(out.status.success(), "{event}: {}", stderr(&out));
    }
    let (v, _) = env.decide_json(&["--question", "Which?", "--option", "a", "--option", "b"]);
    assert_eq!(v["provider"], "mock", "the shipped fits still apply: {v}");

    // A link to /dev/zero (9 GB read before): calibrate's own file is never a link.
    link_to_zero(&cal);
    let errors = calibration_errors(&env);
    assert!(errors.contains("calibration.json") && errors.contains("symbolic link"), "{errors}");
    // A regular file over the cap is refused unread.
    std::fs::remove_file(&cal).unwrap();
    let f = std::fs::File::create(&cal).unwrap();
    f.set_len(17 << 20).unwrap();
    let errors = calibration_errors(&env);
    assert!(errors.contains("is larger than 16 MiB"), "{errors}");
}

fn local_env(env: &TestEnv, model: &Path) {
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\n[providers.local]\nmodel_dir = {:?}\n",
        model.to_str().unwrap()
    ));
}

/// `decide` with the local engine, which must end within the cut-off: its JSON answer.
fn local_decide(env: &TestEnv) -> Value {
    let out = env
        .run_within(
            &["decide", "--json", "--question", "Which one?", "--option", "pick", "--option", "this"],
            "",
            false,
            CUT_OFF,
        )
        .expect("decide waited on a file it reads");
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)))
}

#[test]
fn the_local_engines_files_are_read_only_when_regular_and_in_bounds() {
    let env = TestEnv::new();
    let model = env.root.join("model");
    write_model(&model, 6, None, 5);
    local_env(&env, &model);
    let v = local_decide(&env);
    assert_eq!(v["provider"], "local", "the control answers: {v}");

    // The embedding cache the decision wrote, and the local heads file: each a FIFO.
    let cache_dir = env.install_dir.join("engines/local/cache");
    let cache = std::fs::read_dir(&cache_dir).unwrap().next().expect("a cache file").unwrap().path();
    mkfifo(&cache);
    let v = local_decide(&env);
    assert_eq!(v["provider"], "local", "a FIFO cache is no cache: {v}");
    link_to_zero(&cache);
    let v = local_decide(&env);
    assert_eq!(v["provider"], "local", "a link to /dev/zero is no cache: {v}");
    std::fs::remove_file(&cache).unwrap();

    mkfifo(&env.install_dir.join("local-heads.json"));
    let v = local_decide(&env);
    assert_eq!(v["provider"], "local", "the heads file is skipped: {v}");
    std::fs::remove_file(env.install_dir.join("local-heads.json")).unwrap();

    // The optional sentence_bert_config.json: skipped, the window comes from config.json.
    mkfifo(&model.join("sentence_bert_config.json"));
    let v = local_decide(&env);
    assert_eq!(v["provider"], "local", "{v}");
    std::fs::remove_file(model.join("sentence_bert_config.json")).unwrap();

    // The three required files: a FIFO or a device is a load error that names the file.
    for (file, fault, says) in [
        ("config.json", "fifo", "a FIFO"),
        ("tokenizer.json", "zero", "a device"),
        ("model.safetensors", "fifo", "a FIFO"),
        ("model.safetensors", "zero", "a device"),
    ] {
        let env = TestEnv::new();
        let model = env.root.join("model");
        write_model(&model, 6, None, 5);
        local_env(&env, &model);
        if fault == "fifo" {
            mkfifo(&model.join(file));
        } else {
            link_to_zero(&model.join(file));
        }
        let v = local_decide(&env);
        assert_eq!(v["error"]["code"], "provider_error", "{file} {fault}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(file) && message.contains(says), "{file} {fault}: {message}");
    }
}

#[test]
fn a_config_json_over_its_cap_is_refused_unread() {
    let env = TestEnv::new();
    let model = env.root.join("model");
    write_model(&model, 6, None, 5);
    local_env(&env, &model);
    let f = std::fs::OpenOptions::new().append(true).open(model.join("config.json")).unwrap();
    f.set_len(2 << 20).unwrap();
    let v = local_decide(&env);
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("config.json") && message.contains("is larger than 1 MiB"), "{v}");
}

pub(crate) fn post_payload(cwd: &Path, id: &str) -> String {
    json!({"session_id": "sess", "transcript_path": "/dev/null", "cwd": cwd, "hook_event_name": "PostToolUse",
           "tool_name": "Agent", "tool_input": {"description": "survey", "prompt": "Find every caller of parse_rules", "model": "haiku"},
           "tool_response": {"status": "completed", "agentId": "a1", "resolvedModel": "claude-haiku-4-5",
                             "content": [{"type": "text", "text": "done"}]},
           "tool_use_id": id, "duration_ms": 40})
    .to_string()
}

#[test]
fn the_posttooluse_hook_never_waits_on_or_floods_from_the_routing_log() {
    let env = TestEnv::new();
    let repo = env.logged_repo();
    let log = env.install_dir.join("logs/routing.jsonl");
    for fault in ["fifo", "zero"] {
        if fault == "fifo" {
            mkfifo(&log);
        } else {
            // 7.8 GB and 10 s before.
            link_to_zero(&log);
        }
        let out = env
            .run_within(&["hook", "spawned"], &post_payload(&repo, "t1"), false, CUT_OFF)
            .unwrap_or_else(|| panic!("the PostToolUse hook waited on a {fault} routing log"));
        assert!(out.status.success(), "{fault}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{fault}");
    }
}

/// A session with one subagent spawn, in Claude Code's layout, whose `.meta.json` is a FIFO.
fn transcripts_with_a_fifo_meta(env: &TestEnv) {
    let dir = env.claude_dir.join("projects/-home-u-w1");
    let common = |kind: &str, n: u32| {
        json!({"type": kind, "uuid": format!("u{n}"), "parentUuid": null, "isSidechain": false,
               "timestamp": format!("2026-10-01T10:00:{n:02}.000Z"), "sessionId": "11111111-aaaa", "cwd": "/home/u/w1"})
    };
    let mut spawn = common("assistant", 1);
    spawn["message"] = json!({"id": "msg_1", "model": "claude-opus-4-8", "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "Agent",
                     "input": {"description": "d", "prompt": "look around", "subagent_type": "general-purpose"}}],
        "usage": {"input_tokens": 100, "output_tokens": 10}});
    let mut result = common("user", 2);
    result["message"] =
        json!({"role": "user", "content": [{"tool_use_id": "toolu_1", "type": "tool_result", "content": "done"}]});
    result["toolUseResult"] = json!({"status": "completed", "agentId": "a1", "resolvedModel": "claude-haiku-4-5",
                                     "content": [{"type": "text", "text": "done"}]});
    write(&dir.join("11111111-aaaa.jsonl"), &format!("{spawn}\n{result}\n"));
    let sub = dir.join("11111111-aaaa/subagents");
    let line = json!({"type": "assistant", "isSidechain": true, "agentId": "a1", "timestamp": "2026-10-01T10:00:01.500Z",
        "message": {"id": "msg_s", "model": "claude-haiku-4-5", "content": [{"type": "text", "text": "hi"}],
                    "usage": {"input_tokens": 10, "output_tokens": 5}}});
    write(&sub.join("agent-a1.jsonl"), &format!("{line}\n"));
    mkfifo(&sub.join("agent-a1.meta.json"));
}

#[test]
fn report_and_outcomes_skip_a_meta_json_that_is_a_fifo() {
    let env = TestEnv::new();
    transcripts_with_a_fifo_meta(&env);
    for args in [&["report", "--json"][..], &["outcomes", "--json"][..]] {
        let out = env.run_within(args, "", false, CUT_OFF).unwrap_or_else(|| panic!("{args:?} waited on the FIFO"));
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let _: Value =
            serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&out)));
    }
}
