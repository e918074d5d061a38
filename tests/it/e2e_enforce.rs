//! `[routing] enforce` end to end with the real Claude Code CLI, in every version of
//! `claude_cli::VERSIONS`, offline against the fake Anthropic API: one `claude -p` session per
//! version, with the plugin's hooks from this checkout (`--plugin-dir`) running the test build,
//! spawns eight subagents. Before each spawn the fake model's script sets the case up (the mode in
//! the config, a dead engine, the pause file, a calibration fit that lowers a confidence), so one
//! session walks every case; the fake API's request log then shows the model each subagent's
//! requests used, and the routing log what the PreToolUse and PostToolUse hooks recorded.
//!
//! Where Claude Code loads function-hook modules (2.1.287 and later: 2.1.332, and 2.1.337 where
//! its platform package installs), the plugin's module sets the model at `agent.spawn` and the
//! PreToolUse hook answers nothing: the same spawns run on the same models, and every agent entry
//! names the mechanism that acted. The last two spawns replace the installed binary with one that
//! crashes, then with one that hangs past the module's (and the PreToolUse hook's) 5 s: each spawn
//! still runs on the model Claude asked for.
//!
//! The mock's answers give the brief the default tier, sonnet, so a rewrite always shows as sonnet
//! and a call left alone as the model Claude gave it. `SYSTEM1_E2E_DUMP=<file>` keeps the requests
//! the fake API received, `SYSTEM1_E2E_EVENTS=<file>` the session's stream-json events.

#![cfg(unix)]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::support;
use crate::support::claude_cli::{self, hook_responses};
use crate::support::fake_anthropic::{Block, FakeAnthropic, is_subagent, texts, tool_result};
use crate::support::{TestEnv, stdout, write};
use serde_json::{Value, json};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const PROMPT: &str = "E2E-ENFORCE-MAIN: spawn the subagents the script asks for, one after the other";
const FINAL: &str = "E2E-ENFORCE-FINAL";
const LIMIT: Duration = Duration::from_secs(120);

/// What the test arranges before a spawn.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Setup {
    Mode(&'static str),
    /// `set`, and the engine refuses connections.
    EngineDown,
    /// `set`, and System-1 paused.
    Paused,
    /// `set`, and a fit that lowers `design` under min_confidence.
    LowConfidence,
    /// The installed binary crashes (SIGSEGV) when a spawn hook runs it.
    Crash,
    /// The installed binary hangs when a spawn hook runs it.
    Hang,
}

/// One spawn: the setup, the Agent call's `model` and `subagent_type`, and the model its subagent
/// must run on (`None`: the parent's, as a fork does).
struct Spawn {
    setup: Setup,
    model: Option<&'static str>,
    subagent_type: &'static str,
    runs_on: Option<&'static str>,
}

const SPAWNS: [Spawn; 10] = [
    Spawn { setup: Setup::Mode("fill"), model: None, subagent_type: "general-purpose", runs_on: Some("sonnet") },
    Spawn {
        setup: Setup::Mode("raise"),
        model: Some("haiku"),
        subagent_type: "general-purpose",
        runs_on: Some("sonnet"),
    },
    Spawn { setup: Setup::Mode("set"), model: Some("opus"), subagent_type: "general-purpose", runs_on: Some("sonnet") },
    Spawn { setup: Setup::Mode("off"), model: Some("haiku"), subagent_type: "general-purpose", runs_on: Some("haiku") },
    Spawn { setup: Setup::EngineDown, model: Some("haiku"), subagent_type: "general-purpose", runs_on: Some("haiku") },
    Spawn { setup: Setup::Paused, model: Some("haiku"), subagent_type: "general-purpose", runs_on: Some("haiku") },
    Spawn {
        setup: Setup::LowConfidence,
        model: Some("haiku"),
        subagent_type: "general-purpose",
        runs_on: Some("haiku"),
    },
    Spawn { setup: Setup::Mode("set"), model: Some("haiku"), subagent_type: "fork", runs_on: None },
    // Last: they replace the binary.
    Spawn { setup: Setup::Crash, model: Some("haiku"), subagent_type: "general-purpose", runs_on: Some("haiku") },
    Spawn { setup: Setup::Hang, model: Some("haiku"), subagent_type: "general-purpose", runs_on: Some("haiku") },
];

fn id(n: usize) -> String {
    format!("toolu_enforce_{n}")
}

/// The brief of spawn `n`: its marker, and more than ten words.
fn brief(n: usize) -> String {
    format!("E2E-SPAWN-{n}: read the files under src and report every function longer than fifty lines")
}

#[test]
fn enforce_with_claude_code_2_1_197() {
    enforce_end_to_end(claude_cli::PINNED);
}

#[test]
fn enforce_with_claude_code_2_1_332() {
    enforce_end_to_end(claude_cli::NEWEST);
}

#[test]
fn enforce_with_claude_code_2_1_337() {
    enforce_end_to_end(claude_cli::PLATFORM_NEWEST);
}

/// A stand-in for the installed binary whose spawn hooks (`hook agent`, `hook agent-spawn`) crash or
/// hang; like the real one, `hook agent` steps aside in the session the module marked. Every other
/// command exits 0 at once.
fn broken_binary(env: &TestEnv, setup: Setup) {
    let fail = if setup == Setup::Crash { "kill -SEGV $$" } else { "exec sleep 60" };
    let script = format!(
        "#!/bin/sh\ncase \"$2\" in\n  agent) [ -n \"$SYSTEM1_SPAWN_MODULE\" ] && exit 0; cat >/dev/null; {fail} ;;\n  \
         agent-spawn) cat >/dev/null; {fail} ;;\nesac\ncat >/dev/null\nexit 0\n"
    );
    support::write_executable(&env.install_dir.join("bin/system1"), &script);
}

/// Writes the config (and the pause file, and the calibration fit) for `setup`.
fn arrange(env: &TestEnv, project: &Path, dead_port: u16, setup: Setup) {
    let (mode, provider) = match setup {
        Setup::Mode(m) => (m, "mock"),
        Setup::EngineDown => ("set", "laya"),
        Setup::Paused | Setup::LowConfidence | Setup::Crash | Setup::Hang => ("set", "mock"),
    };
    if matches!(setup, Setup::Crash | Setup::Hang) {
        broken_binary(env, setup);
    }
    env.write_config(&format!(
        "[gateway]\nprovider = \"{provider}\"\n[providers.mock]\nanswers = {{ design = \"no\", review = \"no\", specified = \"no\" }}\n\
         [providers.laya]\nendpoint = \"http://127.0.0.1:{dead_port}\"\n\
         [routing]\nenabled = true\nenforce = \"{mode}\"\nlog_dirs = [{:?}]\n",
        project.display().to_string()
    ));
    let pause = env.install_dir.join("paused");
    if setup == Setup::Paused {
        write(&pause, "paused by the e2e test\n");
    } else {
        let _ = std::fs::remove_file(&pause);
    }
    if setup == Setup::LowConfidence {
        support::lower_design_confidence(env);
    } else {
        let _ = std::fs::remove_file(env.install_dir.join("calibration.json"));
    }
}

/// The spawn whose brief a subagent request carries (a fork's history holds earlier briefs in
/// tool calls, not texts; its own directive comes last).
fn spawn_of(request: &Value) -> Option<usize> {
    let texts = texts(request);
    (0..SPAWNS.len()).rev().find(|n| texts.iter().any(|t| t.contains(&format!("E2E-SPAWN-{n}:"))))
}

fn enforce_end_to_end(version: &str) {
    let Some(claude) = claude_cli::find(&format!("e2e_enforce {version}"), version) else { return };
    let env = Arc::new(TestEnv::new());
    let project = env.root.join("project");
    std::fs::create_dir_all(&project).unwrap();
    // The hooks run the binary in the install dir: the test build.
    support::copy_executable(Path::new(support::BIN), &env.install_dir.join("bin/system1"));
    let dead_port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    arrange(&env, &project, dead_port, SPAWNS[0].setup);

    // The fake model: a subagent says it is done; the main loop, seeing n spawns answered, sets up
    // spawn n and makes it; after the last, it finishes (also when 2.1.332 reports a background
    // agent's end in a task notification).
    let api = FakeAnthropic::start();
    let (script_env, script_project) = (env.clone(), project.clone());
    api.script(move |req| {
        if is_subagent(req) {
            return vec![Block::text("E2E-SUBAGENT-DONE")];
        }
        if !texts(req).iter().any(|t| t.contains("E2E-ENFORCE-MAIN")) {
            return vec![Block::text("ok")];
        }
        let n = (0..SPAWNS.len()).filter(|n| tool_result(req, &id(*n)).is_some()).count();
        let Some(spawn) = SPAWNS.get(n) else { return vec![Block::text(FINAL)] };
        arrange(&script_env, &script_project, dead_port, spawn.setup);
        let mut input =
            json!({"description": format!("spawn {n}"), "prompt": brief(n), "subagent_type": spawn.subagent_type});
        if let Some(m) = spawn.model {
            input["model"] = json!(m);
        }
        vec![Block::ToolUse { id: id(n), name: "Agent".into(), input }]
    });

    let mut cmd = Command::new(&claude);
    cmd.args([
        "-p",
        PROMPT,
        "--plugin-dir",
        ROOT,
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-hook-events",
        "--no-session-persistence",
    ]);
    claude_cli::offline(&mut cmd, &env, &api.base_url());
    cmd.current_dir(&project);
    let out = claude_cli::run_within(cmd, LIMIT);
    assert!(out.status.success(), "claude -p failed: {}\n{}", stdout(&out), support::stderr(&out));
    let events: Vec<Value> = stdout(&out).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let requests = api.requests();
    if let Some(path) = std::env::var_os("SYSTEM1_E2E_DUMP") {
        let _ = std::fs::write(path, serde_json::to_string_pretty(&requests).unwrap_or_default());
    }
    let main_model = requests.iter().find(|r| !is_subagent(r)).and_then(|r| r["model"].as_str()).unwrap_or_default();

    // The model each spawn's subagent ran on, from its requests to the API.
    for (n, spawn) in SPAWNS.iter().enumerate() {
        let models: Vec<&str> = requests
            .iter()
            .filter(|r| is_subagent(r) && spawn_of(r) == Some(n))
            .filter_map(|r| r["model"].as_str())
            .collect();
        let case =
            format!("{version}, spawn {n} ({:?}, model {:?}, {})", spawn.setup, spawn.model, spawn.subagent_type);
        match spawn.runs_on {
            Some(tier) => {
                assert!(!models.is_empty(), "{case}: no subagent request reached the API");
                assert!(models.iter().all(|m| m.contains(tier)), "{case}: ran on {models:?}, not {tier}");
            }
            // 2.1.197 has no fork agent type (the call fails, nothing runs); 2.1.332 runs it on the
            // parent's model, whatever `model` says.
            None => assert!(models.iter().all(|m| *m == main_model), "{case}: a fork ran on {models:?}"),
        }
    }

    // The hook answered only the three rewrites, with updatedInput and nothing else.
    let pre: Vec<&str> = hook_responses(&events, "PreToolUse")
        .into_iter()
        .filter(|h| h["hook_name"] == "PreToolUse:Agent")
        .map(|h| h["stdout"].as_str().unwrap_or_default())
        .collect();
    if let Some(path) = std::env::var_os("SYSTEM1_E2E_EVENTS") {
        let _ = std::fs::write(path, stdout(&out));
    }
    assert_eq!(pre.len(), SPAWNS.len(), "one PreToolUse hook per spawn: {pre:?}");
    let answered: Vec<&str> = pre.iter().copied().filter(|o| !o.trim().is_empty()).collect();
    // Where the module acts, the PreToolUse hook steps aside.
    let modules = claude_cli::has_modules(version);
    assert_eq!(answered.len(), if modules { 0 } else { 3 }, "{version}: answers {answered:?}");
    for (n, out) in answered.iter().enumerate() {
        let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
        let specific = v["hookSpecificOutput"].as_object().expect("hookSpecificOutput");
        assert_eq!(specific.len(), 2, "only the event name and updatedInput: {out}");
        let updated = &specific["updatedInput"];
        assert_eq!((&updated["model"], &updated["prompt"]), (&json!("sonnet"), &json!(brief(n))), "{out}");
    }

    // The routing log: what each hook saw and did, and what each spawn ran on.
    let log: Vec<Value> = std::fs::read_to_string(env.install_dir.join("logs/routing.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("whole JSON lines"))
        .collect();
    let agent = |n: usize| log.iter().find(|e| e["source"] == "agent" && e["tool_use_id"] == id(n));
    let ran = |n: usize| log.iter().find(|e| e["source"] == "spawn" && e["tool_use_id"] == id(n));
    for n in 0..3 {
        let (a, r) =
            (agent(n).expect("an agent entry"), ran(n).unwrap_or_else(|| panic!("{version}: no spawn entry {n}")));
        assert_eq!(a["tier_after"], "sonnet", "{a}");
        assert_eq!((&r["ran_tier"], &r["took_effect"]), (&json!("sonnet"), &json!(true)), "{r}");
        assert!(r["resolved_model"].as_str().unwrap_or_default().contains("sonnet"), "{r}");
    }
    assert_eq!(agent(0).unwrap()["enforce"], "fill");
    assert_eq!((&agent(1).unwrap()["enforce"], &agent(1).unwrap()["tier_before"]), (&json!("raise"), &json!("haiku")));
    assert_eq!((&agent(2).unwrap()["enforce"], &agent(2).unwrap()["tier_before"]), (&json!("set"), &json!("opus")));
    let off = agent(3).expect("the record-only spawn is logged");
    assert_eq!((&off["enforce"], off.get("tier_after")), (&json!("off"), None));
    let off_ran = ran(3).expect("what the record-only spawn ran on");
    assert_eq!((&off_ran["ran_tier"], off_ran.get("took_effect")), (&json!("haiku"), None));
    assert!(agent(4).is_none() && ran(4).is_none(), "the engine was down: nothing to log");
    assert!(agent(5).is_none() && ran(5).is_none(), "paused: nothing logged");
    assert_eq!(agent(6).expect("low confidence is logged")["kept"], "low_confidence");
    assert_eq!(agent(7).expect("the fork is logged")["kept"], "fork");
    assert!(agent(8).is_none() && agent(9).is_none(), "the broken binary logged nothing");
    // One agent entry per spawn, naming the hook that acted.
    let via = if modules { "agent_spawn" } else { "pre_tool_use" };
    let agents: Vec<&Value> = log.iter().filter(|e| e["source"] == "agent").collect();
    assert_eq!(agents.len(), 6, "{version}: {agents:?}");
    assert!(agents.iter().all(|e| e["via"] == via), "{version}: not all via {via}: {agents:?}");
    let ids: std::collections::BTreeSet<&str> = agents.iter().filter_map(|e| e["tool_use_id"].as_str()).collect();
    assert_eq!(ids.len(), agents.len(), "{version}: a spawn logged twice");

    let result = events.iter().find(|e| e["type"] == "result").expect("a result event");
    assert_eq!(result["result"], FINAL, "{result}");
}
