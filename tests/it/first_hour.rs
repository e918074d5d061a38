//! The first hour, as a new user meets it: no engine yet, an engine that fails, a config typed by
//! hand, the hooks' own failures, the skills' pre-approved commands and the plugin's `system1` on
//! the Bash tool's PATH. Each message must be true and each printed command runnable as printed.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::fake_http::{FakeServer, Reply};
use crate::support::{TestEnv, stderr, stdout};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const SESSION_START: &str = r#"{"session_id":"s1","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","hook_event_name":"SessionStart","source":"startup"}"#;
/// Ten words and more, so the prompt hook asks the engine.
const TASK: &str = "Read src/main.rs and explain how the command line arguments are parsed and dispatched";

/// The `Bash(...)` patterns of a skill's `allowed-tools`.
fn allowed(skill: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(ROOT).join("skills").join(skill).join("SKILL.md")).unwrap();
    let line = text.lines().find(|l| l.starts_with("allowed-tools:")).unwrap_or_default();
    line.split("Bash(").skip(1).map(|p| p.split(')').next().unwrap_or_default().to_string()).collect()
}

/// Whether a pattern pre-approves `command`, as Claude Code reads one: a trailing `*` is a prefix.
fn approves(pattern: &str, command: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => command.starts_with(prefix),
        None => command == pattern,
    }
}

#[test]
fn skills_pre_approve_only_commands_that_write_nothing() {
    let writes = [
        "system1 install",
        "system1 uninstall",
        "system1 uninstall --purge",
        "system1 calibrate fit --apply",
        "system1 calibrate label --id x --tier haiku",
        "system1 outcomes --apply",
        "system1 toggle on",
        "system1 toggle off",
        "system1 engine install local",
        "system1 engine start laya",
        "system1 engine stop laya",
        "system1 engine autostart on laya",
        "system1 config edit",
        "system1 report --svg /tmp/x.svg",
        "system1 calibrate fit --plot /tmp/x.svg",
    ];
    let reads = [
        ("doctor", "system1 doctor"),
        ("report", "system1 report"),
        ("toggle", "system1 toggle status"),
        ("calibrate", "system1 calibrate pending"),
        ("setup", "system1 --version"),
        ("choose-model", "system1 engine probe"),
    ];
    for skill in ["calibrate", "choose-model", "doctor", "report", "setup", "toggle"] {
        let patterns = allowed(skill);
        assert!(!patterns.is_empty(), "{skill}");
        for p in &patterns {
            // Bare `system1`: the plugin's bin/system1 is on the Bash tool's PATH, wherever the binary is installed.
            assert!(p.starts_with("system1 "), "{skill}: {p}");
            for w in writes {
                assert!(!approves(p, w), "{skill} pre-approves `{w}` ({p})");
            }
        }
    }
    for (skill, command) in reads {
        assert!(allowed(skill).iter().any(|p| approves(p, command)), "{skill} does not pre-approve `{command}`");
    }
}

#[cfg(unix)]
#[test]
fn the_plugins_system1_runs_the_installed_binary_or_says_how_to_install_it() {
    let wrapper = Path::new(ROOT).join("bin/system1");
    let env = TestEnv::new();
    let run = |install_dir: &Path| {
        Command::new(&wrapper)
            .arg("--version")
            .env("HOME", &env.home)
            .env("SYSTEM1_INSTALL_DIR", install_dir)
            .output()
            .expect("run bin/system1")
    };
    let out = run(&env.install_dir);
    assert_eq!(out.status.code(), Some(127));
    assert!(stderr(&out).contains("run /system1:setup"), "{}", stderr(&out));
    crate::support::copy_executable(Path::new(crate::support::BIN), &env.install_dir.join("bin/system1"));
    let out = run(&env.install_dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(env!("CARGO_PKG_VERSION")), "{}", stdout(&out));
    // Without SYSTEM1_INSTALL_DIR, the default under HOME.
    let default = env.home.join(".system1-gateway/bin/system1");
    crate::support::copy_executable(Path::new(crate::support::BIN), &default);
    let out = Command::new(&wrapper)
        .arg("--version")
        .env("HOME", &env.home)
        .env_remove("SYSTEM1_INSTALL_DIR")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}
