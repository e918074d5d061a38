//! The server driven by the official MCP Python SDK client (`support/sdk_client.py`, mcp 2.3.0 in
//! the venv `scripts/test` creates and names in `SYSTEM1_TEST_PYTHON`), once in each era: the
//! `server/discover` probe adopting protocol 2026-07-28, and the `initialize` handshake; the tool list, each tool, and every structuredContent validated against
//! its outputSchema. Without that Python the test fails under CI and is skipped loudly elsewhere.

use crate::support;
use crate::support::{TestEnv, stderr, stdout};
use serde_json::Value;

fn sdk_python() -> Option<String> {
    match std::env::var("SYSTEM1_TEST_PYTHON") {
        Ok(p) if std::path::Path::new(&p).exists() => Some(p),
        other => {
            let why = format!("SYSTEM1_TEST_PYTHON is {other:?}: run the tests with scripts/test");
            support::missing_test_dep(
                &format!("the MCP SDK client test cannot run under CI: {why}"),
                &format!("the MCP Python SDK client test: {why}"),
            );
            None
        }
    }
}

/// The SDK client script with `args`, in the scratch environment of `env` (which the SDK passes on
/// to the server it spawns).
fn run_sdk(python: &str, env: &TestEnv, args: &[&str]) -> std::process::Output {
    let script = format!("{}/tests/it/support/sdk_client.py", env!("CARGO_MANIFEST_DIR"));
    let mut cmd = std::process::Command::new(python);
    cmd.arg(&script).arg(support::BIN).args(args);
    let scratch = env.command(&[]);
    for (k, v) in scratch.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.output().expect("run the SDK client")
}

#[test]
fn the_official_python_sdk_client_speaks_to_the_server() {
    let Some(python) = sdk_python() else { return };
    let env = TestEnv::with_mock("");
    let out = run_sdk(&python, &env, &[]);
    assert!(out.status.success(), "SDK client failed:\n{}\n{}", stdout(&out), stderr(&out));
    let summary: Vec<Value> = serde_json::from_str(stdout(&out).trim()).expect("one JSON summary line");
    assert_eq!(summary.len(), 2, "{summary:?}");
    // "auto" probes server/discover and adopts the stateless era; "legacy" uses initialize.
    for (run, (mode, protocol)) in summary.iter().zip([("auto", "2026-07-28"), ("legacy", "2025-11-25")]) {
        assert_eq!(run["mode"], mode);
        assert_eq!(run["protocol"], protocol, "{run}");
        assert_eq!(run["server"], format!("system1 {}", env!("CARGO_PKG_VERSION")));
        assert_eq!(run["statuses"], serde_json::json!(["decided", "decided", "abstained", "error", "ok", null]));
    }
}

/// 50 calls at once from the SDK (more than the 32 the server runs at once), each taking a second
/// on the engine: the calls past 32 wait their turn instead of being refused, and all 50 decide.
#[test]
fn fifty_concurrent_calls_from_the_sdk_are_all_answered() {
    let Some(python) = sdk_python() else { return };
    let env = TestEnv::with_mock("[providers.mock]\ndelay_ms = 1000\n");
    let out = run_sdk(&python, &env, &["concurrent", "50"]);
    assert!(out.status.success(), "SDK client failed:\n{}\n{}", stdout(&out), stderr(&out));
    let summary: Value = serde_json::from_str(stdout(&out).trim()).expect("one JSON summary line");
    let statuses = summary["statuses"].as_array().expect("50 statuses");
    let not_decided: Vec<&Value> = statuses.iter().filter(|s| *s != "decided").collect();
    assert_eq!((statuses.len(), not_decided), (50, vec![]), "{}", stderr(&out));
}
