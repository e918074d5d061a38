//! Claude Code's own `CLAUDE_CODE_SUBAGENT_MODEL` (with and without
//! `CLAUDE_CODE_SUBAGENT_MODEL_FORCE`), end to end with the real CLI in every version of
//! `claude_cli::VERSIONS`, offline against the fake Anthropic API. Three `claude -p` sessions per
//! version, the plugin's hooks from this checkout with `[routing] enforce = "set"`: the variable
//! unset, set, and set with the force flag. In each the fake model makes three Agent calls: one
//! naming `haiku`, one of a project agent whose file says `model: fable` naming none, and one of
//! that agent naming `haiku`. The models the subagents' requests used show which of the
//! variable, the call's `model` and the agent file's `model:` wins (docs/routing.md#claude-codes-own-setting),
//! and the hook's answers and the routing log what the agent hook did under the variable.

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
const PROMPT: &str = "E2E-SUBMODEL-MAIN: spawn the three subagents the script asks for";
const FINAL: &str = "E2E-SUBMODEL-FINAL";
const LIMIT: Duration = Duration::from_secs(120);

/// The project agent, with a model of its own that nothing else names.
const AGENT_FILE: &str = "---\nname: deep\ndescription: An E2E test agent with its own model\nmodel: fable\n---\n\
                          You are the E2E test agent. Answer E2E-SUBAGENT-DONE.\n";

/// One Agent call: its `subagent_type` and `model`.
const CALLS: [(&str, Option<&str>); 3] = [("general-purpose", Some("haiku")), ("deep", None), ("deep", Some("haiku"))];

/// How the session's environment sets the variable.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Var {
    Unset,
    Set,
    Forced,
}

fn id(n: usize) -> String {
    format!("toolu_submodel_{n}")
}

fn brief(n: usize) -> String {
    format!("E2E-SUBMODEL-{n}: read the files under src and report every function longer than fifty lines")
}

#[test]
fn subagent_model_variable_with_claude_code_2_1_197() {
    for var in [Var::Unset, Var::Set, Var::Forced] {
        session(claude_cli::PINNED, var);
    }
}

#[test]
fn subagent_model_variable_with_claude_code_2_1_332() {
    for var in [Var::Unset, Var::Set, Var::Forced] {
        session(claude_cli::NEWEST, var);
    }
}

/// The tier the subagent of each call ran on, as `version` decides it under `var`: what the
/// sessions below observed.
fn expected(version: &str, var: Var) -> [&'static str; 3] {
    match (version, var) {
        // The call's model wins over the agent file's; with neither, the agent file's.
        (_, Var::Unset) => ["haiku", "fable", "haiku"],
        // 2.1.332 takes the variable as a default: the call's model and the agent file's win.
        (claude_cli::NEWEST, Var::Set) => ["haiku", "fable", "haiku"],
        // Forced (and on 2.1.197 always), the variable wins over both.
        _ => ["sonnet", "sonnet", "sonnet"],
    }
}

fn session(version: &str, var: Var) {
    let Some(claude) = claude_cli::find(&format!("e2e_subagent_model {version}"), version) else { return };
    let env = Arc::new(TestEnv::new());
    let project = env.root.join("project");
    write(&project.join(".claude/agents/deep.md"), AGENT_FILE);
    support::copy_executable(Path::new(support::BIN), &env.install_dir.join("bin/system1"));
    // The mock's answers give every brief the default tier, sonnet: a rewrite would show as sonnet.
    env.write_config(&format!(
        "[gateway]\nprovider = \"mock\"\n[providers.mock]\nanswers = {{ design = \"no\", review = \"no\", specified = \"no\" }}\n\
         [routing]\nenabled = true\nenforce = \"set\"\nlog_dirs = [{:?}]\n",
        project.display().to_string()
    ));

    let api = FakeAnthropic::start();
    api.script(move |req| {
        if is_subagent(req) {
            return vec![Block::text("E2E-SUBAGENT-DONE")];
        }
        if !texts(req).iter().any(|t| t.contains("E2E-SUBMODEL-MAIN")) {
            return vec![Block::text("ok")];
        }
        let n = (0..CALLS.len()).filter(|n| tool_result(req, &id(*n)).is_some()).count();
        let Some((subagent_type, model)) = CALLS.get(n) else { return vec![Block::text(FINAL)] };
        let mut input = json!({"description": format!("call {n}"), "prompt": brief(n), "subagent_type": subagent_type});
        if let Some(m) = model {
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
    // The sonnet alias: a tier neither the calls nor the agent file name, nor the main loop runs on.
    match var {
        Var::Unset => {}
        Var::Set => {
            cmd.env("CLAUDE_CODE_SUBAGENT_MODEL", "sonnet");
        }
        Var::Forced => {
            cmd.env("CLAUDE_CODE_SUBAGENT_MODEL", "sonnet").env("CLAUDE_CODE_SUBAGENT_MODEL_FORCE", "1");
        }
    }
    // Without the variable the hook would rewrite every call to sonnet: leave it record-only there,
    // so the session shows Claude Code's own order of the call's model and the agent file's.
    if var == Var::Unset {
        env.write_config(&format!(
            "[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\nenforce = \"off\"\nlog_dirs = [{:?}]\n",
            project.display().to_string()
        ));
    }
    cmd.current_dir(&project);
    let out = claude_cli::run_within(cmd, LIMIT);
    let case = format!("{version}, {var:?}");
    assert!(out.status.success(), "{case}: claude -p failed: {}\n{}", stdout(&out), support::stderr(&out));
    let events: Vec<Value> = stdout(&out).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let requests = api.requests();

    let ran: Vec<Vec<String>> = (0..CALLS.len())
        .map(|n| {
            requests
                .iter()
                .filter(|r| is_subagent(r) && texts(r).iter().any(|t| t.contains(&format!("E2E-SUBMODEL-{n}:"))))
                .filter_map(|r| r["model"].as_str().map(String::from))
                .collect()
        })
        .collect();
    eprintln!("{case}: subagents ran on {ran:?}");
    for (n, tier) in expected(version, var).iter().enumerate() {
        assert!(!ran[n].is_empty(), "{case}, call {n}: no subagent request reached the API");
        assert!(
            ran[n].iter().all(|m| m.contains(tier)),
            "{case}, call {n} {:?}: ran on {:?}, not {tier}",
            CALLS[n],
            ran[n]
        );
    }

    // Under the variable the agent hook rewrites nothing, and logs why.
    let answered: Vec<&str> = hook_responses(&events, "PreToolUse")
        .into_iter()
        .filter(|h| h["hook_name"] == "PreToolUse:Agent")
        .filter_map(|h| h["stdout"].as_str())
        .filter(|o| !o.trim().is_empty())
        .collect();
    assert_eq!(answered, Vec::<&str>::new(), "{case}: the hook must not rewrite");
    let log: Vec<Value> = std::fs::read_to_string(env.install_dir.join("logs/routing.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("whole JSON lines"))
        .collect();
    for n in 0..CALLS.len() {
        let agent = log
            .iter()
            .find(|e| e["source"] == "agent" && e["tool_use_id"] == id(n))
            .unwrap_or_else(|| panic!("{case}: no agent entry for call {n}: {log:?}"));
        let want_kept = if var == Var::Unset { Value::Null } else { json!("subagent_model_env") };
        assert_eq!(agent.get("kept").cloned().unwrap_or(Value::Null), want_kept, "{case}: {agent}");
        assert!(agent.get("tier_after").is_none(), "{case}: {agent}");
        let spawn = log.iter().find(|e| e["source"] == "spawn" && e["tool_use_id"] == id(n));
        if let Some(s) = spawn {
            assert!(s.get("took_effect").is_none(), "{case}: no rewrite, nothing to take effect: {s}");
        }
    }
    let result = events.iter().find(|e| e["type"] == "result").expect("a result event");
    assert_eq!(result["result"], FINAL, "{case}: {result}");
}
