//! The core's command line: `system1 decide` with its exit codes, `system1 config show|path|check`,
//! and the logs (stderr at the configured level, tagged with the request id, question text only at
//! DEBUG, `log_file` appending).

use crate::support;
use crate::support::{TestEnv, stderr, stdout};
use serde_json::{Value, json};

fn code(o: &std::process::Output) -> i32 {
    o.status.code().expect("exit code")
}

#[test]
fn decide_prints_the_decision_and_exits_0() {
    let env = TestEnv::with_mock("");
    let o = env.run(&["decide", "--question", "Ship it?"], "");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("yes (confidence 0.90"), "{}", stdout(&o));
    let o = env.run(&["decide", "-q", "Which?", "--option", "red", "-o", "green", "--context", r#"{"k": 1}"#], "");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("red "), "{}", stdout(&o));
    let o = env.run(&["decide", "-q", "Which?", "-o", "red", "-o", "green", "--json"], "");
    assert_eq!(code(&o), 0);
    let v: Value = serde_json::from_slice(&o.stdout).expect("--json prints the response");
    assert_eq!((v["status"].as_str(), v["decision"].as_str()), (Some("decided"), Some("red")));
    assert_eq!(v["attempts"][0]["outcome"], "ok");
}

#[test]
fn decide_keeps_stderr_quiet_unless_the_log_level_is_debug() {
    let mut env = TestEnv::with_mock("log_level = \"INFO\"\n");
    let o = env.run(&["decide", "-q", "Ship it?"], "");
    assert_eq!(code(&o), 0);
    assert_eq!(stderr(&o), "", "the printed answer is enough on a terminal");
    env.set_env("SYSTEM1_LOG_LEVEL", "DEBUG");
    let o = env.run(&["decide", "-q", "Ship it?"], "");
    assert!(stderr(&o).contains(" INFO [") && stderr(&o).contains("decide: decided via mock"), "{}", stderr(&o));
}

#[test]
fn decide_exits_4_when_it_abstains() {
    let env = TestEnv::with_mock("");
    let o = env.run(&["decide", "-q", "Ship it?", "--min-confidence", "0.95"], "");
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("abstained: confidence 0.90 is below the threshold 0.95"), "{}", stdout(&o));
    let o = env.run(&["decide", "-q", "Ship it?", "--min-confidence", "0.95", "--json"], "");
    assert_eq!(code(&o), 4);
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["status"], "abstained");
    let paused = TestEnv::with_mock("");
    support::write(&paused.install_dir.join("paused"), "");
    let o = paused.run(&["decide", "-q", "Ship it?"], "");
    assert_eq!(code(&o), 4);
    assert!(stdout(&o).contains("paused"), "{}", stdout(&o));
}

#[test]
fn decide_exits_1_on_an_error_and_3_on_a_broken_config() {
    let env = TestEnv::with_mock("[providers.mock]\nfail = \"error\"\n");
    let o = env.run(&["decide", "-q", "Ship it?"], "");
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).is_empty());
    assert!(stderr(&o).contains("system1: mock: configured to fail"), "{}", stderr(&o));
    assert!(stderr(&o).contains("attempt mock: Error"), "{}", stderr(&o));
    let o = env.run(&["decide", "-q", "Ship it?", "--json"], "");
    assert_eq!(code(&o), 1);
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON even on error");
    assert_eq!(v["error"]["code"], "provider_error");

    let ok = TestEnv::with_mock("");
    for args in [
        &["decide", "-q", "Which?", "-o", "only"][..],
        &["decide", "-q", "", "-o", "a", "-o", "b"],
        &["decide", "-q", "q", "--min-confidence", "1.5"],
        &["decide", "-q", "q", "--context", "[1, 2]"],
    ] {
        let o = ok.run(args, "");
        assert_eq!(code(&o), 1, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("system1: "), "{args:?}");
    }
    let o = ok.run(&["decide", "-q", "q", "--context", "{not json"], "");
    assert_eq!(code(&o), 2, "a malformed flag is a usage error");
    assert!(stderr(&o).contains("--context"), "{}", stderr(&o));
    let o = ok.run(&["decide"], "");
    assert_eq!(code(&o), 2, "--question is required");

    let broken = TestEnv::new();
    broken.write_config("[gateway]\nprovider = \"mock\"\ntimeout_s = -1\n");
    let o = broken.run(&["decide", "-q", "Ship it?"], "");
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("config error") && stderr(&o).contains("gateway.timeout_s"), "{}", stderr(&o));
}

#[test]
fn config_path_show_and_check() {
    let mut env = TestEnv::with_mock("timeout_s = 2\n[providers.mock]\ndelay_ms = 5\n");
    env.set_env("SYSTEM1_MIN_CONFIDENCE", "0.7");
    env.set_env("SYSTEM1_MOCK_DELAY_MS", "7");
    let o = env.run(&["config", "path"], "");
    assert_eq!((code(&o), stdout(&o).trim()), (0, env.config.to_str().expect("utf-8")));

    let o = env.run(&["config", "show"], "");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let show = stdout(&o);
    let line = |key: &str| -> String {
        show.lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("{key} in {show}"))
            .to_string()
    };
    let file = format!("# file {}", env.config.display());
    assert!(line("gateway.provider").contains("\"mock\"") && line("gateway.provider").ends_with(&file), "{show}");
    assert!(
        line("gateway.timeout_s").starts_with("gateway.timeout_s = 2.0") && line("gateway.timeout_s").ends_with(&file)
    );
    assert!(
        line("gateway.min_confidence").contains("0.7")
            && line("gateway.min_confidence").ends_with("# env SYSTEM1_MIN_CONFIDENCE")
    );
    assert!(line("gateway.log_level").ends_with("# default"));
    assert!(
        line("providers.mock.delay_ms").contains("= 7")
            && line("providers.mock.delay_ms").ends_with("# env SYSTEM1_MOCK_DELAY_MS")
    );
    assert!(line("routing.budget_ms").ends_with("# default"));
    assert!(show.starts_with(&format!("# config file: {} (read)", env.config.display())), "{show}");
    support::snapshots(&env).bind(|| insta::assert_snapshot!("config_show", show));

    let o = env.run(&["config", "check"], "");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("config ok"));

    // A fallback engine's keys are listed too, and a secret from the environment is never shown.
    env.set_env("SYSTEM1_FALLBACK", "laya");
    env.set_env("SYSTEM1_LAYA_API_KEY", "sk-do-not-print");
    let o = env.run(&["config", "show"], "");
    let show = stdout(&o);
    assert!(!show.contains("sk-do-not-print"), "{show}");
    let key = show.lines().find(|l| l.starts_with("providers.laya.api_key = ")).expect("api_key listed");
    assert!(key.contains("\"<set>\"") && key.ends_with("# env SYSTEM1_LAYA_API_KEY"), "{key}");
    assert!(show.contains("gateway.fallback = [\"laya\"]"), "{show}");
    assert!(show.lines().any(|l| l.starts_with("providers.laya.endpoint = ")), "{show}");

    env.write_config(
        "[gateway]\nprovider = \"mock\"\ntimeout_s = 0\nfallbak = [\"x\"]\n[providers.mock]\napi_key = \"k\"\n",
    );
    let o = env.run(&["config", "check"], "");
    assert_eq!(code(&o), 3);
    let errors = stderr(&o);
    support::snapshots(&env).bind(|| insta::assert_snapshot!("config_check_errors", errors));
    let o = env.run(&["config", "show"], "");
    assert!(stdout(&o).contains("# error: unknown key gateway.fallbak"), "{}", stdout(&o));
}

/// Runs one server session: initialize, one decision with a known request id, end of input.
fn session(env: &TestEnv, question: &str) -> (String, Vec<Value>) {
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "system1_decide", "arguments": {"question": question, "request_id": "rid-42"}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "system1_decide", "arguments": {"question": question, "bogus": 1, "request_id": "rid-43"}}}),
    ]
    .iter()
    .map(|m| format!("{m}\n"))
    .collect::<String>();
    let o = env.run(&["mcp"], &input);
    assert!(o.status.success());
    let replies = stdout(&o).lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    (stderr(&o), replies)
}

fn assert_log_lines(log: &str) {
    let shape = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR) \[[^\]]+\] \S")
        .expect("regex");
    for line in log.lines() {
        assert!(shape.is_match(line), "log line without time, level or request id: {line:?}");
    }
}

#[test]
fn logs_go_to_stderr_tagged_with_the_request_id_and_never_show_the_question_at_info() {
    let question = "Should we rotate the SECRET-PROJECT-KEY?";
    let env = TestEnv::with_mock("");
    let (log, replies) = session(&env, question);
    assert_eq!(replies.len(), 3);
    assert_log_lines(&log);
    assert!(log.contains("INFO [rid-42] decide: decided via mock"), "{log}");
    assert!(log.contains("INFO [rid-43] invalid request: unknown field(s): bogus"), "{log}");
    assert!(!log.contains("SECRET-PROJECT-KEY"), "question text logged at INFO: {log}");
    assert!(!log.contains("DEBUG"));

    let env = TestEnv::with_mock("log_level = \"DEBUG\"\n");
    let (log, _) = session(&env, question);
    assert_log_lines(&log);
    assert!(log.contains("DEBUG [rid-42] question: \"Should we rotate the SECRET-PROJECT-KEY?\""), "{log}");

    let mut env = TestEnv::with_mock("log_level = \"DEBUG\"\n");
    env.set_env("SYSTEM1_LOG_LEVEL", "warning");
    let (log, replies) = session(&env, question);
    assert_eq!(replies.len(), 3);
    assert!(log.is_empty(), "nothing below WARNING: {log}");
}

#[test]
fn log_file_appends_every_line_too() {
    let mut env = TestEnv::with_mock("");
    let file = env.root.join("logs/system1.log");
    env.set_env("SYSTEM1_LOG_FILE", file.to_str().expect("utf-8"));
    let (first_stderr, _) = session(&env, "q one?");
    let first = std::fs::read_to_string(&file).expect("log file written");
    assert_eq!(first, first_stderr, "the file gets the same lines as stderr");
    let (_, _) = session(&env, "q two?");
    let both = std::fs::read_to_string(&file).expect("log file");
    assert!(both.starts_with(&first) && both.len() > first.len(), "the second run appended");
    assert_eq!(both.matches("INFO [rid-42] decide: decided").count(), 2);
    assert_log_lines(&both);
}

/// `config show` as key -> (value, source).
fn shown(env: &TestEnv) -> std::collections::BTreeMap<String, (String, String)> {
    let o = env.run(&["config", "show"], "");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    stdout(&o)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (kv, source) = l.split_once("  # ").expect("value and source");
            let (k, v) = kv.split_once(" = ").expect("key = value");
            (k.trim().to_string(), (v.trim().to_string(), source.trim().to_string()))
        })
        .collect()
}

#[test]
fn config_example_lists_every_key_at_its_default() {
    let example = TestEnv::new();
    example.write_config(include_str!("../../config.example.toml"));
    let o = example.run(&["config", "check"], "");
    assert_eq!(code(&o), 0, "config.example.toml is valid: {}", stderr(&o));
    let defaults = TestEnv::new();
    defaults
        .write_config("[providers.laya]\n[providers.von]\n[providers.systemone]\n[providers.ollama]\n[providers.local]\n[providers.mock]\n");
    let (example, defaults) = (shown(&example), shown(&defaults));
    assert_eq!(example.keys().collect::<Vec<_>>(), defaults.keys().collect::<Vec<_>>(), "the same keys");
    for (key, (value, source)) in &example {
        if key.ends_with(".api_key") {
            assert_eq!(source, "default", "no secret in the example");
            continue;
        }
        assert!(source.starts_with("file "), "{key} is missing from config.example.toml");
        assert_eq!(value, &defaults[key].0, "{key}: the example shows another value than the default");
    }
}

/// Runs `args` with a stdout whose reader is already gone, as `system1 ... | head` ends up.
fn with_closed_stdout(env: &TestEnv, args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    env.command(args).stdout(writer).stderr(std::process::Stdio::piped()).output().expect("run system1")
}

#[test]
fn a_closed_stdout_is_success_not_a_panic() {
    // `system1 config show | head -1`: the reader is gone before the command writes.
    let env = TestEnv::with_mock("");
    let out = with_closed_stdout(&env, &["config", "show"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "no panic message");
}

#[test]
fn every_kind_of_command_output_ends_quietly_on_a_closed_stdout() {
    // One command per way of printing: a JSON document, a table built line by line in a helper,
    // an answer line, and the report's one big write.
    let env = TestEnv::with_mock("");
    let projects = env.root.join("projects");
    std::fs::create_dir_all(&projects).expect("an empty projects dir");
    let cases: [&[&str]; 5] = [
        &["schema"],
        &["route", "--prompt", "Rename the flag in src/cli.rs and update its three callers to match"],
        &["decide", "--question", "Ship it?"],
        &["toggle", "status"],
        &["report", "--dir", projects.to_str().expect("utf-8 path")],
    ];
    for args in cases {
        let out = with_closed_stdout(&env, args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}: nothing on stderr, no panic");
    }
}

#[test]
fn a_stdout_that_cannot_be_written_is_a_clear_error_not_a_panic() {
    // A full disk is a real failure, unlike a reader that has gone: exit 1 and say so.
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("SKIPPED: no /dev/full on this system");
        return;
    };
    let env = TestEnv::with_mock("");
    let out = env.command(&["schema"]).stdout(full).stderr(std::process::Stdio::piped()).output().expect("run");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.starts_with("system1: cannot write to stdout:"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
