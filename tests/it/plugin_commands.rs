//! The plugin's commands through the real binary: the session-start hook (silent, and each case
//! that speaks), `toggle` (pause takes effect on a running server with no restart), `smoke`
//! against the mock and against a missing or broken server, and `doctor`'s findings.

use std::path::Path;

use crate::support;
use crate::support::fake_http::{FakeServer, Reply, Request, free_port};
use crate::support::{CUT_OFF, TestEnv, stderr, stdout, write};
use serde_json::{Value, json};

const SESSION_START: &str = r#"{"session_id":"s1","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","hook_event_name":"SessionStart","source":"startup"}"#;

/// Runs the session-start hook; returns its stdout (must be empty or one JSON object) and exit code.
fn session_start(env: &TestEnv) -> (String, Option<Value>) {
    let out = env.run(&["hook", "session-start"], SESSION_START);
    assert_eq!(out.status.code(), Some(0), "hooks always exit 0; stderr: {}", stderr(&out));
    let text = stdout(&out);
    let parsed = if text.trim().is_empty() {
        None
    } else {
        Some(serde_json::from_str::<Value>(text.trim()).unwrap_or_else(|e| panic!("not JSON: {text:?}: {e}")))
    };
    (text, parsed)
}

fn context(v: &Value) -> String {
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let ctx = v["hookSpecificOutput"]["additionalContext"].as_str().expect("additionalContext").to_string();
    assert_eq!(v["systemMessage"].as_str(), Some(ctx.as_str()), "the user sees the same line");
    ctx
}

/// Writes `pending` entries waiting for labels, of every kind `calibrate pending` lists (prompts with
/// no labels or only some, spawns without an outcome or with a doubtful automatic one), plus
/// entries that must not count.
fn write_routing_log(env: &TestEnv, pending: usize) {
    let all = json!({"read_only": true, "design": false, "review": false, "specified": true});
    let waiting = |i: usize| match i % 4 {
        0 => json!({"id": format!("p{i}"), "source": "prompt", "prompt": "x", "decision": "sonnet"}),
        1 => json!({"id": format!("p{i}"), "source": "prompt", "prompt": "x", "labels": {"read_only": true}}),
        2 => json!({"id": format!("a{i}"), "source": "agent", "prompt": "x", "labels": all}),
        _ => json!({"id": format!("a{i}"), "source": "agent", "labels": all, "outcome": "failed",
                    "outcome_source": "auto", "outcome_doubtful": "same-role re-spawn"}),
    };
    let mut text = String::new();
    for i in 0..pending {
        text.push_str(&format!("{}\n", waiting(i)));
    }
    // Fully labelled prompts and spawns, skill entries and a broken line are not waiting for labels.
    for i in 0..5 {
        let labelled = json!({"id": format!("l{i}"), "source": "prompt", "labels": all});
        let agent = json!({"id": format!("d{i}"), "source": "agent", "labels": all, "outcome": "succeeded",
                           "outcome_source": "auto"});
        let skill = json!({"id": format!("k{i}"), "source": "skill"});
        text.push_str(&format!("{labelled}\n{agent}\n{skill}\n"));
    }
    text.push_str("{not json\n");
    write(&env.install_dir.join("logs/routing.jsonl"), &text);
}

/// `calibrate pending`'s count of entries waiting for labels.
fn calibrate_pending(env: &TestEnv) -> u64 {
    let out = env.run(&["calibrate", "pending"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("pending is JSON");
    v["tally"]["pending"].as_u64().expect("a count")
}

#[test]
fn session_start_is_silent_when_all_is_well() {
    // A mock with answers is a deliberate setup (doctor names it); only the placeholder is announced.
    let env = TestEnv::with_mock("[routing]\nenabled = true\n");
    let (text, _) = session_start(&env);
    assert_eq!(text, "", "routing on, engine up, nothing pending: silent");
    let env = TestEnv::with_mock("");
    assert_eq!(session_start(&env).0, "", "routing off: silent");
}

#[test]
fn session_start_reports_a_broken_config() {
    let env = TestEnv::new();
    env.write_config("[gateway]\nprovider = \"mock\"\ntimeout_s = \"soon\"\n");
    let (_, v) = session_start(&env);
    let ctx = context(&v.expect("a message"));
    assert!(ctx.contains("config"), "{ctx}");
    assert!(ctx.contains(&env.config.display().to_string()), "names the file: {ctx}");
    assert!(ctx.contains("timeout_s"), "names the key: {ctx}");
    assert!(ctx.contains("/system1:doctor"), "{ctx}");
}

#[test]
fn session_start_says_how_to_start_an_engine_that_does_not_answer() {
    let env = TestEnv::with_mock("[routing]\nenabled = true\n[providers.mock]\ndown = true\n");
    let (_, v) = session_start(&env);
    let ctx = context(&v.expect("a message"));
    assert!(ctx.contains("routing is on") && ctx.contains("mock"), "{ctx}");
    assert!(ctx.contains("/system1:doctor"), "{ctx}");

    // Routing off: no probe, no message. Paused: no probe either.
    let env = TestEnv::with_mock("[providers.mock]\ndown = true\n");
    assert_eq!(session_start(&env).0, "");
    let env = TestEnv::with_mock("[routing]\nenabled = true\n[providers.mock]\ndown = true\n");
    write(&env.install_dir.join("paused"), "paused at 2026-01-01T00:00:00Z\n");
    assert_eq!(session_start(&env).0, "", "paused: routing is off, so no engine message");
}

#[test]
fn session_start_reports_a_refused_engine_endpoint() {
    let port = free_port();
    let env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"laya\"\ntimeout_s = 5.0\n[routing]\nenabled = true\n[providers.laya]\nendpoint = \"http://127.0.0.1:{port}\"\n"
    ));
    let (_, v) = session_start(&env);
    let ctx = context(&v.expect("a message"));
    assert!(ctx.contains("laya") && ctx.contains("does not answer"), "{ctx}");
    assert!(ctx.contains("system1 engine start laya"), "says how to start it: {ctx}");
}

#[test]
fn session_start_probes_a_hanging_engine_for_a_moment_only() {
    let hangs = FakeServer::start(|_: &Request| Reply::hang());
    let env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"laya\"\ntimeout_s = 60\n[routing]\nenabled = true\n[providers.laya]\nendpoint = \"{}\"\n",
        hangs.url()
    ));
    let started = std::time::Instant::now();
    let (_, v) = session_start(&env);
    // The probe has its own short bound: neither the 60 s timeout nor the fake's 60 s hang applies.
    assert!(started.elapsed() < CUT_OFF, "bounded probe: {:?}", started.elapsed());
    let ctx = context(&v.expect("a message"));
    assert!(ctx.contains("laya") && ctx.contains("does not answer"), "{ctx}");
    assert_eq!(hangs.requests().len(), 1, "one probe: {:?}", hangs.paths());
}

#[test]
fn session_start_suggests_calibrate_from_thirty_pending_prompts() {
    let env = TestEnv::with_mock("");
    write_routing_log(&env, 29);
    assert_eq!(session_start(&env).0, "", "29 pending: silent");
    write_routing_log(&env, 30);
    let (_, v) = session_start(&env);
    let ctx = context(&v.expect("a message"));
    assert!(ctx.contains("30 logged prompts and spawns") && ctx.contains("/system1:calibrate"), "{ctx}");
}

#[test]
fn the_session_start_count_is_the_count_calibrate_shows() {
    // The nudge once counted unlabelled prompts only, while `calibrate pending` (which the calibrate
    // skill shows) also counted partly labelled prompts and spawns waiting for an outcome.
    let env = TestEnv::with_mock("");
    for n in [29, 30, 37] {
        write_routing_log(&env, n);
        assert_eq!(calibrate_pending(&env), n as u64);
        let (_, v) = session_start(&env);
        match v {
            None => assert!(n < 30, "{n} pending: the nudge must speak"),
            Some(v) => {
                let ctx = context(&v);
                assert!(ctx.contains(&format!("system1: {n} logged prompts and spawns")), "{ctx}");
            }
        }
    }
    let out = env.run(&["doctor"], "");
    assert!(stdout(&out).contains("37 logged prompts and spawns wait for labels"), "{}", stdout(&out));
}

#[test]
fn session_start_notices_a_plugin_newer_than_the_binary() {
    let mut env = TestEnv::with_mock("");
    env.set_env("CLAUDE_PLUGIN_ROOT", env!("CARGO_MANIFEST_DIR"));
    assert_eq!(session_start(&env).0, "", "the repository's plugin.json matches the binary");
    let root = env.root.join("plugin");
    write(&root.join(".claude-plugin/plugin.json"), r#"{"name": "system1", "version": "0.2.0"}"#);
    env.set_env("CLAUDE_PLUGIN_ROOT", &root.display().to_string());
    let ctx = context(&session_start(&env).1.expect("a message"));
    assert!(ctx.contains("plugin is version 0.2.0") && ctx.contains("/system1:setup"), "{ctx}");
}

#[test]
fn session_start_stays_silent_after_a_compaction() {
    let env = TestEnv::new();
    env.write_config("[gateway]\nprovider = \"nope\"\n");
    assert!(session_start(&env).1.is_some(), "startup: the broken config is reported");
    let compact = SESSION_START.replace("startup", "compact");
    let out = env.run(&["hook", "session-start"], &compact);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "", "compact: already said at startup");
    let resume = SESSION_START.replace("startup", "resume");
    assert!(!stdout(&env.run(&["hook", "session-start"], &resume)).is_empty(), "resume: said again");
}

#[test]
fn session_start_is_silent_on_bad_input() {
    let env = TestEnv::with_mock("[gateway]\n");
    for input in ["", "not json", "[1,2]"] {
        let out = env.run(&["hook", "session-start"], input);
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(stdout(&out), "", "input {input:?}");
    }
}

#[test]
fn toggle_pauses_a_running_server_from_the_next_call() {
    let env = TestEnv::with_mock("");
    let mut server = env.mcp();
    server.initialize("2025-06-18");
    let ask = json!({"question": "Ship it?"});
    assert_eq!(server.call("system1_decide", ask.clone())["status"], "decided");

    let out = env.run(&["toggle", "off"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let r = server.call("system1_decide", ask.clone());
    assert_eq!(r["status"], "abstained", "paused with no restart: {r}");
    assert!(r["rationale"].as_str().unwrap_or("").contains("paused"), "{r}");
    assert_eq!(r["decision"], Value::Null);

    let status = stdout(&env.run(&["toggle", "status"], ""));
    support::snapshots(&env).bind(|| insta::assert_snapshot!(status, @r"
        System-1:      paused since [DATETIME] UTC (`[BIN] toggle on` resumes)
        gateway:       off (engines: mock)
        routing hint:  off
        spawn model:   enforce off (record only: spawns run on the model Claude gives them)
        skill picker:  off
        engine health: paused (mock up in [TIME] ms: mock engine, model mock: not a real engine, it gives configured answers; a real one is set up with `[BIN] engine install local`, and `[BIN] engine probe` shows what else this machine can run)
        decisions today: 2 (abstained 1, decided 1)
        "));

    let out = env.run(&["toggle", "on"], "");
    assert!(out.status.success());
    assert_eq!(server.call("system1_decide", ask)["status"], "decided", "resumed with no restart");
    // A request that fails validation is the caller's mistake, not a decision: it is not counted.
    assert_eq!(server.call("system1_decide", json!({"question": ""}))["error"]["code"], "invalid_request");
    server.close();

    let status = stdout(&env.run(&["toggle", "status"], ""));
    support::snapshots(&env).bind(|| insta::assert_snapshot!(status, @r"
        System-1:      on
        gateway:       on (engines: mock)
        routing hint:  off
        spawn model:   enforce off (record only: spawns run on the model Claude gives them)
        skill picker:  off
        engine health: ok (mock up in [TIME] ms: mock engine, model mock: not a real engine, it gives configured answers; a real one is set up with `[BIN] engine install local`, and `[BIN] engine probe` shows what else this machine can run)
        decisions today: 3 (abstained 1, decided 2)
        "));
}

#[test]
fn toggle_status_shows_routing_and_picker_modes() {
    let env = TestEnv::with_mock("[routing]\nenabled = true\nhint = true\n[skills]\nenabled = true\n");
    let status = stdout(&env.run(&["toggle"], ""));
    support::snapshots(&env).bind(|| insta::assert_snapshot!(status, @r"
        System-1:      on
        gateway:       on (engines: mock)
        routing hint:  on (hints)
        spawn model:   enforce off (record only: spawns run on the model Claude gives them)
        skill picker:  on (log only, no hints)
        engine health: ok (mock up in [TIME] ms: mock engine, model mock: not a real engine, it gives configured answers; a real one is set up with `[BIN] engine install local`, and `[BIN] engine probe` shows what else this machine can run)
        decisions today: 0
        "));
}

#[test]
fn smoke_checks_the_server_as_a_client_does() {
    let env = TestEnv::with_mock("");
    let out = env.run(&["smoke", "--bin", support::BIN, "--question", "Which?", "--option", "red", "-o", "green"], "");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    support::snapshots(&env).bind(|| insta::assert_snapshot!(text, @r#"
        launch     [BIN] mcp
        ok         initialize: system1 [VERSION], protocol 2025-11-25 ([TIME] ms)
        ok         tools/list: system1_decide, system1_health, system1_capabilities
        ok         system1_health: ok (mock up: mock engine, model mock: not a real engine, it gives configured answers; a real one is set up with `[BIN] engine install local`, and `[BIN] engine probe` shows what else this machine can run)
        ok         system1_decide: "red" (confidence 0.90, mock, [TIME] ms)
        smoke: ok
        "#));
}

#[test]
fn smoke_launches_the_installed_binary_by_default() {
    let env = TestEnv::with_mock("");
    let out = env.run(&["smoke"], "");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    support::snapshots(&env).bind(|| {
        insta::assert_snapshot!(text, @r"
        launch     [ROOT]/home/.system1-gateway/bin/system1 mcp
        FAIL       cannot start [ROOT]/home/.system1-gateway/bin/system1: No such file or directory (os error 2)
        fix:       install it with /system1:setup (or `[BIN] install`), or pass --bin
        ")
    });

    let bin = env.install_dir.join("bin/system1");
    support::copy_executable(Path::new(support::BIN), &bin);
    let out = env.run(&["smoke"], "");
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).contains(&format!("launch     {} mcp", bin.display())));
}

#[test]
fn smoke_launches_the_registered_command() {
    let env = TestEnv::with_mock("");
    let registered = json!({"mcpServers": {"system1": {"type": "stdio", "command": support::BIN, "args": ["mcp"]}}});
    write(&env.claude_dir.join(".claude.json"), &registered.to_string());
    let out = env.run(&["smoke"], "");
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).contains(&format!("launch     {} mcp", support::BIN)), "{}", stdout(&out));
}

#[cfg(unix)]
#[test]
fn smoke_reports_a_broken_server_with_its_stderr() {
    let env = TestEnv::with_mock("");
    let broken = env.root.join("broken");
    support::write_executable(
        &broken,
        "#!/bin/sh\necho 'Segmentation fault, or some banner' \necho 'boom: cannot load' >&2\nexit 3\n",
    );
    let out = env.run(&["smoke", "--bin", &broken.display().to_string()], "");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    support::snapshots(&env).bind(|| insta::assert_snapshot!(text, @r"
        launch     [ROOT]/broken mcp
        FAIL       initialize: not JSON-RPC on stdout (expected value at line 1 column 1): Segmentation fault, or some banner
        server stderr (last lines):
          boom: cannot load
        smoke: FAILED (run `[BIN] doctor` for fixes)
        "));

    let silent = env.root.join("silent");
    support::write_executable(&silent, "#!/bin/sh\necho 'gone' >&2\nexit 0\n");
    let text = stdout(&env.run(&["smoke", "--bin", &silent.display().to_string()], ""));
    assert!(text.contains("FAIL       initialize: the server closed its output"), "{text}");
}

#[test]
fn smoke_tells_an_engine_that_is_down_from_a_server_that_fails() {
    // The server works, the engine is stopped: a warning with the fix, and exit 5 (install.sh then
    // succeeds with a warning).
    let env = TestEnv::with_mock("[providers.mock]\ndown = true\n");
    let out = env.run(&["smoke", "--bin", support::BIN], "");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(5), "{text}");
    support::snapshots(&env).bind(|| {
        insta::assert_snapshot!(text, @r"
        launch     [BIN] mcp
        ok         initialize: system1 [VERSION], protocol 2025-11-25 ([TIME] ms)
        ok         tools/list: system1_decide, system1_health, system1_capabilities
        warn       system1_health: down (mock down: configured as down)
        fix:       mock: the mock engine is configured as down: remove `down = true` from [providers.mock]
        smoke: the server works, but no engine answers (exit 5)
        ")
    });
    // A broken config is the server's failure.
    let env = TestEnv::new();
    env.write_config("[gateway]\nprovider = \"nope\"\n");
    let out = env.run(&["smoke", "--bin", support::BIN], "");
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("FAIL       system1_health: down"), "{}", stdout(&out));
    let env = TestEnv::with_mock("[providers.mock]\nfail = \"malformed\"\n");
    let out = env.run(&["smoke", "--bin", support::BIN, "-q", "Ship?"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("FAIL       system1_decide: error malformed_response"), "{}", stdout(&out));
}

/// A scratch env where everything doctor checks is in order: installed, registered, plugin found.
fn healthy_env(extra: &str) -> TestEnv {
    let mut env = TestEnv::with_mock(extra);
    let bin = env.install_dir.join("bin/system1");
    support::copy_executable(Path::new(support::BIN), &bin);
    let claude_json = json!({"mcpServers": {"system1": {"type": "stdio", "command": bin, "args": ["mcp"], "env": {}}}});
    write(&env.claude_dir.join(".claude.json"), &claude_json.to_string());
    env.set_env("CLAUDE_PLUGIN_ROOT", env!("CARGO_MANIFEST_DIR"));
    env
}

fn doctor(env: &TestEnv) -> (i32, String) {
    let out = env.run(&["doctor"], "");
    (out.status.code().unwrap_or(-1), stdout(&out))
}

#[test]
fn doctor_is_all_good_on_a_healthy_install() {
    // A real engine's wire format (laya-serve's, on the loopback fake): with the mock alone, no real
    // engine is set up, and doctor says so.
    let laya = FakeServer::start(crate::support::fake_laya::healthy);
    let env = healthy_env("");
    env.write_config(&format!("[gateway]\nprovider = \"laya\"\n[providers.laya]\nendpoint = \"{}\"\n", laya.url()));
    let (code, text) = doctor(&env);
    assert_eq!(code, 0, "{text}");
    support::snapshots(&env).bind(|| insta::assert_snapshot!(text, @r#"
        ok    config [ROOT]/home/.config/system1/config.toml is valid (engines: laya)
        ok    binary [VERSION] matches the plugin ([REPO]/.claude-plugin/plugin.json)
        ok    MCP server registered (user scope): [ROOT]/home/.system1-gateway/bin/system1 mcp
        ok    laya engine (primary) at http://127.0.0.1:[PORT] answers health in [TIME] ms: laya-serve at http://127.0.0.1:[PORT] is up; typed-decisions is loaded on ?
        ok    test decision by laya in [TIME] ms ("no" at 0.80)
        ok    no decisions in the last 7 days
        ok    not paused (routing off; enforce off)
        doctor: all good
        "#));

    let env = healthy_env("");
    let (code, text) = doctor(&env);
    assert_eq!(code, 0, "a warning: {text}");
    support::snapshots(&env).bind(|| insta::assert_snapshot!(text, @r#"
        ok    config [ROOT]/home/.config/system1/config.toml is valid (engines: mock)
        ok    binary [VERSION] matches the plugin ([REPO]/.claude-plugin/plugin.json)
        ok    MCP server registered (user scope): [ROOT]/home/.system1-gateway/bin/system1 mcp
        warn  no real engine is set up: the mock answers as it is configured to, not by deciding
              fix: install the local engine with `~/.system1-gateway/bin/system1 engine install local` (a 91 MB model that runs inside system1 on the CPU: no GPU, Python or server; it switches the config install wrote to it), or pick another engine with /system1:choose-model
        ok    mock engine (primary) answers health in [TIME] ms: mock engine, model mock: not a real engine, it gives configured answers; a real one is set up with `~/.system1-gateway/bin/system1 engine install local`, and `~/.system1-gateway/bin/system1 engine probe` shows what else this machine can run
        ok    test decision by mock in [TIME] ms ("yes" at 0.90)
        ok    no decisions in the last 7 days
        ok    not paused (routing off; enforce off)
        doctor: 1 finding needs attention
        "#));
}

#[test]
fn doctor_finds_missing_install_registration_and_version_drift() {
    let env = TestEnv::with_mock("");
    let root = env.root.join("plugin");
    write(&root.join(".claude-plugin/plugin.json"), r#"{"name": "system1", "version": "9.9.9"}"#);
    // Claude Code is here (its config file exists) but has no system1 server registered.
    write(&env.claude_dir.join(".claude.json"), "{}");
    let mut env = env;
    env.set_env("CLAUDE_PLUGIN_ROOT", &root.display().to_string());
    let (code, text) = doctor(&env);
    assert_eq!(code, 1, "{text}");
    support::snapshots(&env).bind(|| insta::assert_snapshot!(text, @r#"
        ok    config [ROOT]/home/.config/system1/config.toml is valid (engines: mock)
        FAIL  the binary is not installed at [ROOT]/home/.system1-gateway/bin/system1
              fix: install it with /system1:setup (or `[BIN] install`)
        warn  binary [VERSION] differs from the plugin's version 9.9.9 ([ROOT]/plugin/.claude-plugin/plugin.json)
              fix: reinstall the binary for this plugin with /system1:setup (upgrade)
        FAIL  the system1 MCP server is not registered with Claude Code ([ROOT]/home/.claude/.claude.json has no mcpServers.system1)
              fix: `claude` is not on PATH here: in a shell where it is, run `claude mcp add --scope user --transport stdio system1 -- [ROOT]/home/.system1-gateway/bin/system1 mcp`
        warn  no real engine is set up: the mock answers as it is configured to, not by deciding
              fix: install the local engine with `[BIN] engine install local` (a 91 MB model that runs inside system1 on the CPU: no GPU, Python or server; it switches the config install wrote to it), or pick another engine with /system1:choose-model
        ok    mock engine (primary) answers health in [TIME] ms: mock engine, model mock: not a real engine, it gives configured answers; a real one is set up with `[BIN] engine install local`, and `[BIN] engine probe` shows what else this machine can run
        ok    test decision by mock in [TIME] ms ("yes" at 0.90)
        ok    no decisions in the last 7 days
        ok    not paused (routing off; enforce off)
        doctor: 4 findings need attention
        "#));
}

#[cfg(unix)]
#[test]
fn doctor_compares_the_installed_binary_not_itself() {
    let env = healthy_env("");
    let bin = env.install_dir.join("bin/system1");
    support::write_executable(&bin, "#!/bin/sh\necho 'system1 0.0.1'\n");
    let (_, text) = doctor(&env);
    assert!(text.contains("warn  binary 0.0.1 differs from the plugin's version 0.1.0"), "{text}");
    support::write_executable(&bin, "#!/bin/sh\nexit 7\n");
    let (code, text) = doctor(&env);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("FAIL  the installed binary") && text.contains("does not run"), "{text}");
}

#[test]
fn doctor_reads_the_installed_plugin_record() {
    let env = healthy_env("");
    let mut env = env;
    env.env.retain(|(k, _)| k != "CLAUDE_PLUGIN_ROOT");
    let cache = env.claude_dir.join("plugins/cache/system1-gateway/system1/0.0.9");
    write(&cache.join(".claude-plugin/plugin.json"), r#"{"name": "system1", "version": "0.0.9"}"#);
    let records = json!({"version": 2, "plugins": {"system1@system1-gateway": [{"scope": "user", "installPath": cache, "version": "0.0.9"}]}});
    write(&env.claude_dir.join("plugins/installed_plugins.json"), &records.to_string());
    let (_, text) = doctor(&env);
    assert!(text.contains("differs from the plugin's version 0.0.9 (system1@system1-gateway"), "{text}");
}

/// A plugin installed from a clone that held build output and test dependencies: Claude Code
/// copied them into its cache (first_hour's end-to-end test shows it does). Doctor says so, with
/// the size, and how to reinstall without them; the same folders in a plugin loaded straight from
/// a clone (CLAUDE_PLUGIN_ROOT outside the cache, as with `claude --plugin-dir`) are not a finding.
#[test]
fn doctor_notices_build_output_copied_into_the_plugin_cache() {
    let mut env = healthy_env("");
    env.env.retain(|(k, _)| k != "CLAUDE_PLUGIN_ROOT");
    let clone = env.root.join("clone");
    write(&clone.join("target/release/system1"), "build output\n");
    env.set_env("CLAUDE_PLUGIN_ROOT", clone.to_str().unwrap());
    let cache = env.claude_dir.join("plugins/cache/system1-gateway/system1/0.1.0");
    write(&cache.join(".claude-plugin/plugin.json"), r#"{"name": "system1", "version": "0.1.0"}"#);
    let records = json!({"version": 2, "plugins": {"system1@system1-gateway": [{"scope": "user", "installPath": cache, "version": "0.1.0"}]}});
    write(&env.claude_dir.join("plugins/installed_plugins.json"), &records.to_string());
    let (_, text) = doctor(&env);
    assert!(!text.contains("copied from the folder"), "a clean cache, a build in a --plugin-dir clone: {text}");

    write(&cache.join("target/release/deps/big"), &"x".repeat(3_000_000));
    write(&cache.join(".test-deps/venv/bin/python"), "#!/bin/sh\n");
    let (code, text) = doctor(&env);
    assert_eq!(code, 0, "a warning, not a failure: {text}");
    let what = format!(
        "warn  the system1 plugin in Claude Code's cache ({}) holds target/ (3 MB) and .test-deps/ (0 MB), copied from the folder it was installed from",
        cache.display()
    );
    assert!(text.contains(&what), "{what}: {text}");
    let fix = format!(
        "fix: delete the copy (`rm -rf {c}/target {c}/.test-deps`); so that the next install does not bring it back, remove target/ and .test-deps/ from that clone",
        c = cache.display()
    );
    assert!(text.contains(&fix), "{fix}: {text}");
    assert!(
        text.contains("`/plugin uninstall system1@system1-gateway` and `/plugin install system1@system1-gateway`"),
        "{text}"
    );
}

#[test]
fn doctor_reads_a_version_1_plugin_record() {
    // installed_plugins.json version 1 kept one object per plugin id, not a list of installs; the
    // skill picker always read both, doctor skipped this one and reported no plugin at all.
    let mut env = healthy_env("");
    env.env.retain(|(k, _)| k != "CLAUDE_PLUGIN_ROOT");
    let records = json!({"version": 1, "plugins": {"system1@system1-gateway": {"scope": "user", "installPath": env.root.join("gone"), "version": "0.0.7"}}});
    write(&env.claude_dir.join("plugins/installed_plugins.json"), &records.to_string());
    let (_, text) = doctor(&env);
    assert!(text.contains("differs from the plugin's version 0.0.7 (system1@system1-gateway in "), "{text}");
}

#[test]
fn doctor_reports_a_broken_config_with_its_fix() {
    let env = healthy_env("");
    env.write_config("[gateway]\nprovider = \"mock\"\nmin_confidence = 2\n");
    let (code, text) = doctor(&env);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("FAIL  config: ") && text.contains("min_confidence"), "{text}");
    assert!(text.contains("system1 config check"), "{text}");
}

#[test]
fn doctor_reports_an_engine_that_is_down_malformed_or_timing_out() {
    let env = healthy_env("[providers.mock]\ndown = true\nfail = \"error\"\n");
    let (code, text) = doctor(&env);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("FAIL  mock engine (primary) is down"), "{text}");
    assert!(text.contains("FAIL  test decision: mock failed"), "{text}");

    let env = healthy_env("[providers.mock]\nfail = \"malformed\"\n");
    let (code, text) = doctor(&env);
    assert_eq!(code, 1);
    assert!(text.contains("FAIL  test decision: mock answered malformed"), "{text}");
    assert!(text.contains("[providers.mock] endpoint and model"), "{text}");

    let mut env = healthy_env("[providers.mock]\nfail = \"timeout\"\n");
    env.set_env("SYSTEM1_TIMEOUT_S", "0.2");
    let env_text = doctor(&env).1;
    assert!(env_text.contains("FAIL  test decision: mock timed out"), "{env_text}");
    assert!(env_text.contains("timeout_s"), "{env_text}");
}

#[test]
fn doctor_reports_a_refused_engine_endpoint() {
    let port = free_port();
    let env = healthy_env("");
    env.write_config(&format!(
        "[gateway]\nprovider = \"laya\"\n[providers.laya]\nendpoint = \"http://127.0.0.1:{port}\"\n"
    ));
    let (code, text) = doctor(&env);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(&format!("FAIL  laya engine (primary) at http://127.0.0.1:{port} is down")), "{text}");
    assert!(text.contains("system1 engine start laya"), "{text}");
}

#[test]
fn doctor_finds_constant_abstention_in_the_tallies() {
    let env = healthy_env("");
    let day = chrono_today();
    let line = json!({"time": "t", "status": "abstained", "provider": "mock", "latency_ms": 1.0}).to_string();
    write(&env.install_dir.join(format!("logs/decisions-{day}.jsonl")), &format!("{line}\n").repeat(12));
    let (code, text) = doctor(&env);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("FAIL  12 decisions in the last 7 days: 0 decided, 12 abstained, 0 errors: it always abstains"),
        "{text}"
    );
    assert!(text.contains("min_confidence"), "{text}");
}

#[test]
fn doctor_warns_when_paused() {
    let env = healthy_env("");
    assert!(env.run(&["toggle", "off"], "").status.success());
    let (code, text) = doctor(&env);
    assert_eq!(code, 0, "paused on purpose is a warning, not a fault: {text}");
    // The fix names the installed binary, by path.
    support::snapshots(&env).bind(|| insta::assert_snapshot!(text, @r#"
        ok    config [ROOT]/home/.config/system1/config.toml is valid (engines: mock)
        ok    binary [VERSION] matches the plugin ([REPO]/.claude-plugin/plugin.json)
        ok    MCP server registered (user scope): [ROOT]/home/.system1-gateway/bin/system1 mcp
        warn  no real engine is set up: the mock answers as it is configured to, not by deciding
              fix: install the local engine with `~/.system1-gateway/bin/system1 engine install local` (a 91 MB model that runs inside system1 on the CPU: no GPU, Python or server; it switches the config install wrote to it), or pick another engine with /system1:choose-model
        ok    mock engine (primary) answers health in [TIME] ms: mock engine, model mock: not a real engine, it gives configured answers; a real one is set up with `~/.system1-gateway/bin/system1 engine install local`, and `~/.system1-gateway/bin/system1 engine probe` shows what else this machine can run
        ok    test decision by mock in [TIME] ms ("yes" at 0.90)
        ok    no decisions in the last 7 days
        warn  System-1 is paused since [DATETIME] UTC: decisions abstain and the hooks are silent
              fix: `~/.system1-gateway/bin/system1 toggle on` (or /system1:toggle on)
        doctor: 2 findings need attention
        "#));
}

fn chrono_today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}
