//! The hooks have a deadline on everything they read, through the real binary: stdin is read up to
//! the first complete JSON object (a caller that leaves it open is not waited on) and for at most a
//! moment when nothing comes; the config is read only when it is a small regular file (a FIFO
//! would hang every prompt, a huge file costs seconds and gigabytes on each).

#![cfg(unix)]

use crate::support::{CUT_OFF, TestEnv, stderr, stdout, write};
use serde_json::json;

const PROMPT: &str = "Read the payment module and explain how refunds are computed for partial orders";

fn routing_env() -> TestEnv {
    TestEnv::with_mock(
        "[routing]\nenabled = true\nhint = true\n[providers.mock]\nanswers = { design = \"no\", review = \"no\" }\n",
    )
}

fn payload(env: &TestEnv) -> String {
    json!({"session_id": "s", "cwd": env.home, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT}).to_string()
}

#[test]
fn a_payload_written_with_stdin_left_open_is_answered() {
    let env = routing_env();
    let out = env
        .run_within(&["hook", "prompt"], &payload(&env), true, CUT_OFF)
        .expect("the hook answers without waiting for the end of its input");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("the hint");
    assert!(v["hookSpecificOutput"]["additionalContext"].as_str().unwrap().contains("model \"haiku\""), "{v}");
    // Trailing bytes after the object (a second object, a newline) change nothing.
    let out = env.run(&["hook", "prompt"], &format!("{}\n{{\"more\": 1}}\n", payload(&env)));
    assert!(stdout(&out).contains("System-1 routing hint"), "{}", stdout(&out));
}

#[test]
fn no_input_with_stdin_left_open_ends_the_hook_silently() {
    let env = routing_env();
    for partial in ["", "{\"prompt\": \"Read the payment"] {
        let out = env
            .run_within(&["hook", "prompt"], partial, true, CUT_OFF)
            .unwrap_or_else(|| panic!("the hook waited on stdin for ever with {partial:?}"));
        assert!(out.status.success());
        assert_eq!((stdout(&out), stderr(&out)), (String::new(), String::new()));
    }
}

#[test]
fn a_config_that_is_a_fifo_or_huge_is_refused_without_reading_it() {
    let env = routing_env();
    std::fs::remove_file(&env.config).unwrap();
    let made = std::process::Command::new("mkfifo").arg(&env.config).status().expect("run mkfifo");
    assert!(made.success());
    let out = env
        .run_within(&["hook", "prompt"], &payload(&env), false, CUT_OFF)
        .expect("the hook ends despite a FIFO config");
    assert!(out.status.success());
    assert_eq!(stdout(&out), "", "a broken config makes the hook silent");
    let out =
        env.run_within(&["config", "check"], "", false, CUT_OFF).expect("config check ends despite a FIFO config");
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("is not a regular file"), "{}", stderr(&out));

    // Valid TOML, but more than a config needs to be: refused unread.
    std::fs::remove_file(&env.config).unwrap();
    let filler: String =
        (0..40_000).map(|i| format!("# padding line {i:06} of a config nobody wrote by hand\n")).collect();
    write(&env.config, &format!("[gateway]\nprovider = \"mock\"\n{filler}"));
    let out = env.run(&["config", "check"], "");
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    assert!(stderr(&out).contains("is larger than 1 MiB"), "{}", stderr(&out));
}
