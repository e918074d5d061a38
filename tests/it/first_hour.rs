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

/// A scratch install with no engine anywhere: `system1 install` writes the placeholder config
/// (the mock, abstaining).
fn installed_without_engine() -> TestEnv {
    let mut env = TestEnv::new();
    env.set_env("SYSTEM1_LAYA_ENDPOINT", "http://127.0.0.1:9");
    let out = env.run(&["install", "--no-register"], "");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("with the mock engine, which abstains"), "{}", stdout(&out));
    env
}

fn session_start_text(env: &TestEnv) -> String {
    let out = env.run(&["hook", "session-start"], SESSION_START);
    assert!(out.status.success());
    let text = stdout(&out);
    if text.trim().is_empty() {
        return String::new();
    }
    let v: Value = serde_json::from_str(text.trim()).expect("hook JSON");
    v["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or_default().to_string()
}

#[test]
fn no_engine_is_said_plainly_wherever_it_shows() {
    let env = installed_without_engine();
    let install_local = "`~/.system1-gateway/bin/system1 engine install local`";

    // The abstain rationale says why.
    let (v, code) = env.decide_json(&["-q", "Ship it?"]);
    assert_eq!(code, 4, "{v}");
    let why = v["rationale"].as_str().unwrap_or_default();
    assert!(why.contains("no engine is set up") && why.contains(install_local), "{v}");

    // Health's detail.
    let mut mcp = env.mcp();
    mcp.initialize("2025-06-18");
    let health = mcp.call("system1_health", json!({}));
    let health = health.to_string();
    assert!(health.contains("not a real engine, it abstains on every question"), "{health}");
    mcp.close();

    // Doctor: a warning with the way to get one, not "all good".
    let pinned = crate::support::snapshots(&env);
    let text = doctor_without_claude(&env);
    pinned.bind(|| insta::assert_snapshot!("doctor_without_an_engine", text));

    // Session start: once.
    let first = session_start_text(&env);
    assert!(first.contains("no real engine is set up") && first.contains("/system1:choose-model"), "{first}");
    assert_eq!(session_start_text(&env), "", "said once");

    // After a dozen abstentions doctor blames the missing engine, not the threshold.
    for _ in 0..11 {
        env.decide_json(&["-q", "Ship it?"]);
    }
    let text = doctor_without_claude(&env);
    pinned.bind(|| insta::assert_snapshot!("doctor_without_an_engine_after_abstentions", text));
}

/// `system1 doctor` with no `claude` on PATH, so that its registration line is the same on every
/// machine.
fn doctor_without_claude(env: &TestEnv) -> String {
    let empty = env.root.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    stdout(&env.command(&["doctor"]).env("PATH", &empty).output().expect("run doctor"))
}

/// A laya-serve that is up but refuses every decision with `status` and `body`.
fn refusing_laya(status: u16, body: Value) -> FakeServer {
    FakeServer::start(move |r| match r.path.as_str() {
        "/health" => Reply::json(200, &json!({"status": "ok", "loaded": ["typed-decisions"]})),
        _ => Reply::json(status, &body),
    })
}

#[test]
fn doctor_gives_each_engine_failure_its_own_fix_and_names_the_provider_once() {
    let cases = [
        (422, json!({"detail": "unknown model './x'; choose one of ['english']"})),
        (501, json!({"detail": "Not Implemented"})),
        (500, json!({"detail": "inference failed"})),
    ];
    let mut fixes = Vec::new();
    for (status, body) in cases {
        let laya = refusing_laya(status, body);
        let env = TestEnv::new();
        env.write_config(&format!("[gateway]\nprovider = \"laya\"\n[providers.laya]\nendpoint = \"{}\"\n", laya.url()));
        let text = stdout(&env.run(&["doctor"], ""));
        let failed = text.lines().skip_while(|l| !l.starts_with("FAIL  test decision")).nth(1).unwrap_or_default();
        assert!(!text.contains("Start it with"), "{text}");
        assert!(!text.contains("laya: laya:"), "the provider named twice: {text}");
        // Each case has its own scratch root: named alike, so the fixes compare and pin.
        fixes.push(failed.replace(&env.root.display().to_string(), "[ROOT]"));
        let out = env.run(&["decide", "-q", "Ship it?"], "");
        assert!(!stderr(&out).contains("laya: laya:"), "{}", stderr(&out));
        assert!(stderr(&out).contains(&format!("laya: HTTP {status}")), "{}", stderr(&out));
    }
    // Not installed, and not running: the install first.
    let env = TestEnv::new();
    env.write_config("[gateway]\nprovider = \"laya\"\n[providers.laya]\nendpoint = \"http://127.0.0.1:9\"\n");
    let text = stdout(&env.run(&["doctor"], ""));
    assert!(text.contains("laya is not installed: `") && text.contains(" engine install laya`, then `"), "{text}");
    // Each status its own fix, whatever the detail's words.
    crate::support::snapshots(&env).bind(|| insta::assert_snapshot!("doctor_laya_refusal_fixes", fixes.join("\n")));
    fixes.dedup();
    assert_eq!(fixes.len(), 3, "{fixes:?}");
}

#[test]
fn config_values_must_have_their_type_and_show_says_which_are_invalid() {
    let env = TestEnv::new();
    env.write_config("[gateway]\nprovider = \"mock\"\nfallback = \"laya\"\n[routing]\nenabled = \"yes\"\n");
    let out = env.run(&["config", "check"], "");
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    let all = format!("{}{}", stdout(&out), stderr(&out));
    crate::support::snapshots(&env).bind(|| insta::assert_snapshot!("config_check_values_of_the_wrong_type", all));

    // From the environment, text is the only way to say it, and is parsed.
    let mut env2 = TestEnv::with_mock("");
    env2.set_env("SYSTEM1_ROUTING_ENABLED", "yes");
    let out = env2.run(&["config", "check"], "");
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));

    env.write_config("[gateway]\nprovider = \"mock\"\nfallback = [\"mock\"]\ntimeout_s = -1\n[providers.laya]\nmodel = \"english\"\n");
    let text = stdout(&env.run(&["config", "show"], ""));
    let timeout = text.lines().find(|l| l.starts_with("gateway.timeout_s")).unwrap_or_default();
    assert!(timeout.starts_with("gateway.timeout_s = -1 ") && timeout.contains("invalid:"), "{text}");
    assert!(text.contains("# engines: mock\n"), "the chain, each engine once: {text}");
    assert!(text.contains("# configured but not in the chain (not asked): laya"), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("providers.mock.answer ")).count(), 1, "{text}");
    assert!(text.lines().any(|l| l.starts_with("providers.laya.model = \"english\"")), "{text}");
}

#[test]
fn the_hooks_own_failures_reach_log_file() {
    let env = TestEnv::new();
    let log = env.root.join("system1.log");
    env.write_config(&format!(
        "[gateway]\nprovider = \"mock\"\nlog_file = {:?}\n[routing]\nenabled = true\nhint = true\nlog_dirs = [{:?}]\n\
         [providers.mock]\nfail = \"error\"\n",
        log.display().to_string(),
        env.root.display().to_string()
    ));
    let payload = json!({"session_id": "s", "transcript_path": "/dev/null", "cwd": env.root, "prompt_id": "p1",
        "hook_event_name": "UserPromptSubmit", "prompt": TASK});
    let out = env.run(&["hook", "prompt"], &payload.to_string());
    assert!(out.status.success());
    assert_eq!(stdout(&out).trim(), "", "silent to the user");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains("prompt: no routing hint, the engine gave no answer"), "{text}");

    let spawn = json!({"session_id": "s", "transcript_path": "/dev/null", "cwd": env.root,
        "hook_event_name": "PreToolUse", "tool_name": "Agent", "tool_use_id": "t1",
        "tool_input": {"description": "d", "prompt": TASK, "subagent_type": "general-purpose"}});
    let out = env.run(&["hook", "agent"], &spawn.to_string());
    assert!(out.status.success());
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains("agent: the spawn passes as it is, the engine gave no answer"), "{text}");
}

#[test]
fn small_things_are_said_right() {
    // No internal question key in a lone question's error.
    let env = TestEnv::with_mock("[providers.mock]\nfail = \"malformed\"\n");
    let out = env.run(&["decide", "-q", "Ship it?"], "");
    assert!(!stderr(&out).contains("question \"decision\""), "{}", stderr(&out));

    // `engine start` names its argument and what it takes.
    let help = stdout(&env.run(&["engine", "start", "--help"], ""));
    assert!(help.contains("<NAME>") && help.contains("laya or von"), "{help}");

    // smoke's decisions are checks, not uses: doctor's tally does not count them.
    let env = TestEnv::with_mock("");
    std::fs::create_dir_all(&env.install_dir).unwrap();
    for _ in 0..3 {
        env.run(&["smoke", "--bin", crate::support::BIN, "-q", "Ship?"], "");
    }
    let text = stdout(&env.run(&["doctor"], ""));
    assert!(text.contains("ok    no decisions in the last 7 days"), "{text}");
    env.run(&["decide", "-q", "Ship?"], "");
    let text = stdout(&env.run(&["doctor"], ""));
    assert!(text.contains("1 decision in the last"), "one, and singular: {text}");
}

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
        let mut cmd = Command::new(&wrapper);
        crate::support::sandbox(&mut cmd, &env.home);
        cmd.arg("--version").env("SYSTEM1_INSTALL_DIR", install_dir).output().expect("run bin/system1")
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

/// With the real Claude Code, each version: the plugin installed from a clone (as README says,
/// after `scripts/install.sh`, which builds outside it) copies the clone's files and no build
/// output into the plugin cache, and the plugin's `bin/system1` is on the Bash tool's PATH, so
/// `system1 --version`, pre-approved by that name, runs the installed binary.
#[cfg(unix)]
#[test]
fn claude_code_copies_no_build_output_and_puts_the_plugins_system1_on_path() {
    use crate::support::claude_cli;
    use crate::support::fake_anthropic::{Block, FakeAnthropic, tool_result};
    for version in claude_cli::VERSIONS {
        let Some(claude) = claude_cli::find(&format!("first_hour {version}"), version) else { continue };
        let env = TestEnv::new();
        let clone = env.root.join("clone");
        claude_cli::plugin_checkout(&clone);
        // What Claude Code does with what it finds there: a target/ would be copied (hence
        // install.sh builds elsewhere; docs/install.md says what remains).
        crate::support::write(&clone.join("target/release/marker"), "build output\n");
        let api = FakeAnthropic::start();
        let project = env.root.join("project");
        std::fs::create_dir_all(&project).unwrap();
        let claude_cmd = |args: &[&str]| {
            let mut cmd = Command::new(&claude);
            cmd.args(args).current_dir(&project);
            claude_cli::offline(&mut cmd, &env, &api.base_url());
            claude_cli::run_within(cmd, std::time::Duration::from_secs(120))
        };
        let ok = |what: &str, out: &std::process::Output| {
            assert!(out.status.success(), "{version} {what}: {}{}", stdout(out), stderr(out));
        };
        ok("marketplace add", &claude_cmd(&["plugin", "marketplace", "add", clone.to_str().unwrap()]));
        ok("plugin install", &claude_cmd(&["plugin", "install", "system1@system1-gateway"]));
        let cache = env.claude_dir.join(format!("plugins/cache/system1-gateway/system1/{}", env!("CARGO_PKG_VERSION")));
        assert!(cache.join("bin/system1").is_file(), "{version}: {}", cache.display());
        assert!(
            cache.join("target/release/marker").is_file(),
            "{version}: Claude Code no longer copies target/: update docs/install.md"
        );
        std::fs::remove_dir_all(clone.join("target")).unwrap();
        ok("plugin uninstall", &claude_cmd(&["plugin", "uninstall", "system1@system1-gateway"]));
        ok("plugin install again", &claude_cmd(&["plugin", "install", "system1@system1-gateway"]));
        assert!(!cache.join("target").exists(), "{version}: build output in the plugin cache");

        crate::support::copy_executable(Path::new(crate::support::BIN), &env.install_dir.join("bin/system1"));
        const ID: &str = "toolu_first_hour_bash";
        api.script(|req| {
            if tool_result(req, ID).is_some() {
                return vec![Block::text("FIRST-HOUR-DONE")];
            }
            let input = json!({"command": "system1 --version", "description": "system1 version"});
            vec![Block::ToolUse { id: ID.into(), name: "Bash".into(), input }]
        });
        let out = claude_cmd(&[
            "-p",
            "FIRST-HOUR: which system1?",
            "--allowedTools",
            "Bash(system1 --version)",
            "--no-session-persistence",
        ]);
        ok("claude -p", &out);
        let requests = api.requests();
        let result =
            requests.iter().find_map(|r| tool_result(r, ID)).unwrap_or_else(|| panic!("{version}: no Bash result"));
        let shown = result.to_string();
        assert!(shown.contains(&format!("system1 {}", env!("CARGO_PKG_VERSION"))), "{version}: {shown}");
    }
}

/// The config `system1 install` writes spells out the defaults: `config show` says each such value
/// is the default (the routing rules too), a value the user changed shows as set, and `doctor`
/// does not take the spelled-out `[serve]` table for a server the user wants running.
#[test]
fn the_defaults_the_written_config_spells_out_read_as_defaults() {
    let env = installed_without_engine();
    let show = stdout(&env.run(&["config", "show"], ""));
    let file = format!("# file {}", env.config.display());
    let from_file: Vec<&str> = show.lines().filter(|l| l.contains(&file)).collect();
    assert!(from_file.len() > 30, "{show}");
    for line in &from_file {
        // The placeholder provider and answer are what install chose, not defaults.
        if line.starts_with("gateway.provider ") || line.starts_with("providers.mock.") {
            continue;
        }
        assert!(line.ends_with(", the same as the default"), "{line}");
    }
    assert!(from_file.iter().any(|l| l.starts_with("routing.rules = ")), "{show}");

    // A value changed by hand is the user's.
    let text = std::fs::read_to_string(&env.config).unwrap();
    env.write_config(&text.replacen("timeout_s = 5.0", "timeout_s = 2.0", 1).replacen(
        "{ when = { design = true }, tier = \"opus\" },",
        "{ when = { design = true }, tier = \"sonnet\" },",
        1,
    ));
    let show = stdout(&env.run(&["config", "show"], ""));
    for key in ["gateway.timeout_s = 2.0", "routing.rules = "] {
        let line = show.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("{key}: {show}"));
        assert!(line.ends_with(&file), "set by the user: {line}");
    }

    // The [serve] table the install spelled out asks for no server: nothing answering is no finding.
    let doctor = stdout(&env.run(&["doctor"], ""));
    assert!(!doctor.contains("[serve] is configured") && !doctor.contains("other than system1 serve"), "{doctor}");
}

/// Every list of the engines a user can name has them all, `local` included: evaluate's help, the
/// config install writes, docs/configuration.md and README's picture against the names the binary
/// itself knows (its error for an unknown one); engine's help and the plugin's description name the
/// local engine.
#[test]
fn every_list_of_the_providers_names_them_all() {
    let env = TestEnv::new();
    let err = stderr(&env.run(&["evaluate", "--provider", "nonsense"], ""));
    let known: Vec<String> = err
        .split("known: ")
        .nth(1)
        .and_then(|k| k.lines().next())
        .unwrap_or_else(|| panic!("the known providers: {err}"))
        .split(", ")
        .map(str::to_string)
        .collect();
    assert!(known.len() >= 6 && known.contains(&"local".to_string()), "{known:?}");

    let help = stdout(&env.run(&["evaluate", "--help"], ""));
    let provider_help = help.rsplit("--provider <PROVIDER>").next().and_then(|h| h.split("\n  -").next()).unwrap();
    let read = |rel: &str| std::fs::read_to_string(Path::new(ROOT).join(rel)).unwrap();
    let example = read("config.example.toml");
    let config_line = example.lines().find(|l| l.contains("# primary engine:")).expect("the provider line");
    let docs = read("docs/configuration.md");
    let docs_row = docs.lines().find(|l| l.starts_with("| `provider` |")).expect("the provider row");
    let readme = read("README.md");
    let picture = readme.split("Claude Code ──stdio").nth(1).and_then(|p| p.split("```").next()).unwrap();
    for name in &known {
        assert!(provider_help.contains(name.as_str()), "evaluate --help: {name}: {provider_help}");
        assert!(config_line.contains(&format!(" {name} ")) || config_line.ends_with(name.as_str()), "{config_line}");
        assert!(docs_row.contains(&format!("`{name}`")), "docs/configuration.md: {name}");
        assert!(picture.contains(name.as_str()), "README's picture: {name}");
    }
    let engine_help = stdout(&env.run(&["engine", "--help"], ""));
    assert!(engine_help.contains("and the local engine"), "{engine_help}");
    assert!(read(".claude-plugin/plugin.json").contains("the built-in local engine"), "plugin.json");
}
