//! `[routing] enforce` through the built binary: the agent hook (PreToolUse) with hook JSON on stdin
//! and the mock engine, and the spawned hook (PostToolUse) that records what the spawn ran on. The
//! mock's per-feature `answers` pick the rule's tier: haiku (read-only and specified) or sonnet (no
//! rule matches).

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{TestEnv, lower_design_confidence, stderr, stdout, write};
use serde_json::{Value, json};

/// A brief of more than ten words.
const BRIEF: &str = "Find every caller of parse_rules in src and list them with file and line";
/// The default rule gives haiku (rule 3: read-only and specified).
const HAIKU: &str = "answers = { design = \"no\", review = \"no\" }";
/// No rule matches: the default tier, sonnet.
const SONNET: &str = "answers = { design = \"no\", review = \"no\", specified = \"no\" }";

struct Case {
    env: TestEnv,
    repo: PathBuf,
}

/// A scratch environment with routing on, `enforce`, the mock answering `mock`, and a repo in `log_dirs`.
fn case(enforce: &str, mock: &str) -> Case {
    case_with(enforce, "", mock)
}

/// `case` with more `[routing]` keys.
fn case_with(enforce: &str, routing: &str, mock: &str) -> Case {
    let env = TestEnv::new();
    let repo = env.root.join("work/repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    env.write_config(&format!(
        "[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\nenforce = \"{enforce}\"\nlog_dirs = [{:?}]\n{routing}\n\
         [providers.mock]\n{mock}\n",
        repo.display().to_string()
    ));
    Case { env, repo }
}

/// The PreToolUse input Claude Code sends, as text: `tool_input` is written out by hand, so that
/// the test can tell whether the hook copied it byte for byte.
fn pre_payload(cwd: &Path, tool_input: &str, id: &str) -> String {
    format!(
        r#"{{"session_id":"sess","transcript_path":"/dev/null","cwd":{},"prompt_id":"p","permission_mode":"default","effort":{{"level":"high"}},"hook_event_name":"PreToolUse","tool_name":"Agent","tool_input":{tool_input},"tool_use_id":"{id}"}}"#,
        json!(cwd)
    )
}

fn input(model: Option<&str>, subagent_type: &str, brief: &str) -> String {
    let model = model.map(|m| format!(r#","model":"{m}""#)).unwrap_or_default();
    format!(r#"{{"description":"survey","prompt":{},"subagent_type":"{subagent_type}"{model}}}"#, json!(brief))
}

fn hook(env: &TestEnv, event: &str, stdin: &str) -> Output {
    let out = env.run(&["hook", event], stdin);
    assert!(out.status.success(), "hook exit {:?}: {}", out.status, stderr(&out));
    assert_eq!(stderr(&out), "", "a hook keeps stderr quiet");
    out
}

/// The `updatedInput` text the hook printed, or `None` when it printed nothing.
fn updated(out: &Output) -> Option<String> {
    let text = stdout(out);
    if text.is_empty() {
        return None;
    }
    let prefix = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":"#;
    let rest = text.trim_end().strip_prefix(prefix).unwrap_or_else(|| panic!("not an updatedInput answer: {text}"));
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(v["hookSpecificOutput"].as_object().unwrap().len(), 2, "no permission decision, nothing else: {text}");
    Some(rest.strip_suffix("}}").expect("the object closes").to_string())
}

fn entries(env: &TestEnv) -> Vec<Value> {
    match std::fs::read_to_string(env.install_dir.join("logs/routing.jsonl")) {
        Ok(text) => text.lines().map(|l| serde_json::from_str(l).expect("whole JSON line")).collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn each_mode_sets_only_what_it_says_and_copies_the_rest_byte_for_byte() {
    // fill: no model → the rule's tier; a model given stays.
    let c = case("fill", HAIKU);
    let raw = input(None, "general-purpose", BRIEF);
    let got = updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "t1"))).expect("a rewrite");
    assert_eq!(got, format!(r#"{},"model":"haiku"}}"#, raw.strip_suffix('}').unwrap()));
    let out = hook(&c.env, "agent", &pre_payload(&c.repo, &input(Some("opus"), "general-purpose", BRIEF), "t2"));
    assert_eq!(updated(&out), None, "fill leaves a given model");
    let log = entries(&c.env);
    assert_eq!(
        (&log[0]["enforce"], &log[0]["tier_after"], log[0].get("tier_before"), log[0].get("kept")),
        (&json!("fill"), &json!("haiku"), None, None)
    );
    assert_eq!(
        (&log[1]["tier_before"], log[1].get("tier_after"), &log[1]["kept"]),
        (&json!("opus"), None, &json!("model_given"))
    );

    // raise: haiku → sonnet; opus stays above sonnet.
    let c = case("raise", SONNET);
    let raw = input(Some("haiku"), "general-purpose", BRIEF);
    let got = updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "t3"))).expect("raised");
    assert_eq!(got, raw.replace(r#""model":"haiku""#, r#""model":"sonnet""#));
    let out = hook(&c.env, "agent", &pre_payload(&c.repo, &input(Some("opus"), "general-purpose", BRIEF), "t4"));
    assert_eq!(updated(&out), None, "raise never lowers");
    let log = entries(&c.env);
    assert_eq!((&log[0]["tier_before"], &log[0]["tier_after"]), (&json!("haiku"), &json!("sonnet")));
    assert_eq!(log[1]["kept"], "above_rule");

    // set: opus → sonnet, and members Claude Code does not send today pass untouched, in order.
    let c = case("set", SONNET);
    let raw = format!(
        r#"{{"description":"d","prompt":{},"model":"opus","subagent_type":"Explore","run_in_background":true,"x_new":{{"n":1.50,"big":123456789012345678901234567890,"s":"\u00e9\"}}"}}}}"#,
        json!(BRIEF)
    );
    let got = updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "t5"))).expect("lowered");
    assert_eq!(got, raw.replace(r#""model":"opus""#, r#""model":"sonnet""#));
    assert_eq!(entries(&c.env)[0]["tier_after"], "sonnet");

    // The environment names the mode too.
    let mut c = case("off", HAIKU);
    let raw = input(None, "general-purpose", BRIEF);
    assert_eq!(updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "t6"))), None, "off: record only");
    assert_eq!((&entries(&c.env)[0]["enforce"], entries(&c.env)[0].get("kept")), (&json!("off"), None));
    c.env.set_env("SYSTEM1_ROUTING_ENFORCE", "fill");
    assert!(updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "t7"))).is_some());
}

#[test]
fn enforcement_needs_no_log_and_asks_no_engine_when_nothing_can_change() {
    // An engine that takes a minute, and a minute of budget and timeout to wait for it.
    let mut c = case_with("fill", "budget_ms = 60000", &format!("{HAIKU}\ndelay_ms = 60000"));
    c.env.set_env("SYSTEM1_TIMEOUT_S", "60");
    // Outside log_dirs and naming a model: fill can change nothing, so the hook does not ask the engine.
    let started = std::time::Instant::now();
    let out = hook(&c.env, "agent", &pre_payload(&c.env.home, &input(Some("haiku"), "general-purpose", BRIEF), "t1"));
    assert_eq!(updated(&out), None);
    assert!(started.elapsed() < crate::support::CUT_OFF, "the engine was asked");

    let c = case("fill", HAIKU);
    let out = hook(&c.env, "agent", &pre_payload(&c.env.home, &input(None, "general-purpose", BRIEF), "t2"));
    assert!(updated(&out).is_some(), "a rewrite outside log_dirs");
    assert!(entries(&c.env).is_empty(), "but no log entry");
}

#[test]
fn every_other_case_passes_the_call_exactly_as_claude_made_it() {
    let raw = input(Some("opus"), "general-purpose", BRIEF);
    // Each would be lowered to sonnet if it were not for the one thing it changes.
    let base = case("set", SONNET);
    assert!(
        updated(&hook(&base.env, "agent", &pre_payload(&base.repo, &raw, "t0"))).is_some(),
        "the baseline rewrites"
    );

    let mocks = [
        ("engine error", "fail = \"error\""),
        ("engine abstains", "fail = \"abstain\""),
        ("malformed answer", "fail = \"malformed\""),
        ("timeout", "fail = \"timeout\""),
        ("slower than the budget", "delay_ms = 60000"),
    ];
    for (what, mock) in mocks {
        let mut c = case_with("set", "budget_ms = 300", &format!("{SONNET}\n{mock}"));
        c.env.set_env("SYSTEM1_TIMEOUT_S", "60");
        let started = std::time::Instant::now();
        assert_eq!(updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "t1"))), None, "{what}");
        assert!(started.elapsed() < crate::support::CUT_OFF, "{what}: the budget holds");
    }

    let c = case("set", SONNET);
    lower_design_confidence(&c.env);
    assert_eq!(updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "t2"))), None, "low confidence");
    assert_eq!(entries(&c.env)[0]["kept"], "low_confidence");

    let c = case("set", SONNET);
    let fork = input(Some("opus"), "fork", BRIEF);
    assert_eq!(updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &fork, "t3"))), None, "a fork");
    let short = input(Some("opus"), "general-purpose", "Fix the typo in README");
    assert_eq!(updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &short, "t4"))), None, "a short brief");
    let inherit = input(Some("inherit"), "general-purpose", BRIEF);
    assert_eq!(updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &inherit, "t5"))), None, "no tier named");
    let kept: Vec<Value> = entries(&c.env).iter().map(|e| e["kept"].clone()).collect();
    assert_eq!(kept, [json!("fork"), json!("short_brief"), json!("not_a_tier")]);

    write(&c.env.install_dir.join("paused"), "");
    assert_eq!(updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "t6"))), None, "paused");
    std::fs::remove_file(c.env.install_dir.join("paused")).unwrap();

    let mut other_tool = pre_payload(&c.repo, &raw, "t7");
    other_tool = other_tool.replace(r#""tool_name":"Agent""#, r#""tool_name":"Bash""#);
    assert_eq!(updated(&hook(&c.env, "agent", &other_tool)), None, "not a spawn");
    let task = pre_payload(&c.repo, &raw, "t8").replace(r#""tool_name":"Agent""#, r#""tool_name":"Task""#);
    assert!(updated(&hook(&c.env, "agent", &task)).is_some(), "Task is the Agent tool's old name");

    for (what, config) in [
        ("a bad mode", "[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\nenforce = \"always\"\n"),
        ("routing off", "[gateway]\nprovider = \"mock\"\n[routing]\nenforce = \"set\"\n"),
        (
            "a broken provider setting",
            "[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\nenforce = \"set\"\n[providers.mock]\nfail = \"sometimes\"\n",
        ),
    ] {
        let env = TestEnv::new();
        env.write_config(config);
        assert_eq!(updated(&hook(&env, "agent", &pre_payload(&env.home, &raw, "t9"))), None, "{what}");
    }
    let env = TestEnv::with_mock("[routing]\nenabled = true\nenforce = \"set\"\n");
    for junk in [
        "",
        "not json",
        "[]",
        r#"{"tool_name":"Agent","tool_input":"x"}"#,
        r#"{"tool_name":"Agent","tool_input":{"model":"opus"}}"#,
    ] {
        assert_eq!(stdout(&hook(&env, "agent", junk)), "", "{junk:?}");
    }
}

fn post_payload(cwd: &Path, id: &str, model: &str, resolved: Option<&str>) -> String {
    let mut response = json!({"status": "completed", "agentId": "a1", "content": [{"type": "text", "text": "done"}]});
    if let Some(r) = resolved {
        response["resolvedModel"] = json!(r);
    }
    json!({"session_id": "sess", "transcript_path": "/dev/null", "cwd": cwd, "hook_event_name": "PostToolUse",
           "tool_name": "Agent", "tool_input": {"description": "survey", "prompt": BRIEF, "model": model},
           "tool_response": response, "tool_use_id": id, "duration_ms": 40})
    .to_string()
}

#[test]
fn the_spawned_hook_records_whether_a_rewrite_took_effect() {
    let c = case("raise", SONNET);
    let raised = input(Some("haiku"), "general-purpose", BRIEF);
    hook(&c.env, "agent", &pre_payload(&c.repo, &raised, "t1"));
    hook(&c.env, "agent", &pre_payload(&c.repo, &raised, "t2"));
    hook(&c.env, "agent", &pre_payload(&c.repo, &input(Some("opus"), "general-purpose", BRIEF), "t3"));
    for (id, resolved) in
        [("t1", "claude-sonnet-5-5"), ("t2", "claude-haiku-4-5-20251001"), ("t3", "claude-opus-4-8[1m]")]
    {
        let out = hook(&c.env, "spawned", &post_payload(&c.repo, id, "sonnet", Some(resolved)));
        assert_eq!(stdout(&out), "", "the spawned hook prints nothing");
    }
    // No agent entry to complete, no resolved model, outside log_dirs: nothing.
    hook(&c.env, "spawned", &post_payload(&c.repo, "t9", "sonnet", Some("claude-sonnet-5")));
    hook(&c.env, "spawned", &post_payload(&c.repo, "t1", "sonnet", None));
    hook(&c.env, "spawned", &post_payload(&c.env.home, "t1", "sonnet", Some("claude-sonnet-5")));

    let spawns: Vec<Value> = entries(&c.env).into_iter().filter(|e| e["source"] == "spawn").collect();
    assert_eq!(spawns.len(), 3, "{spawns:?}");
    let repo = std::fs::canonicalize(&c.repo).unwrap().display().to_string();
    assert_eq!(
        (&spawns[0]["tool_use_id"], &spawns[0]["resolved_model"], &spawns[0]["ran_tier"], &spawns[0]["took_effect"]),
        (&json!("t1"), &json!("claude-sonnet-5-5"), &json!("sonnet"), &json!(true))
    );
    assert_eq!((&spawns[0]["session_id"], &spawns[0]["repo"]), (&json!("sess"), &json!(repo)));
    assert!(spawns[0].get("prompt").is_none(), "the brief is in the agent entry only");
    assert_eq!((&spawns[1]["ran_tier"], &spawns[1]["took_effect"]), (&json!("haiku"), &json!(false)), "ignored");
    assert_eq!((&spawns[2]["ran_tier"], spawns[2].get("took_effect")), (&json!("opus"), None), "nothing was set");

    // Paused: nothing recorded.
    write(&c.env.install_dir.join("paused"), "");
    hook(&c.env, "spawned", &post_payload(&c.repo, "t1", "sonnet", Some("claude-sonnet-5")));
    assert_eq!(entries(&c.env).iter().filter(|e| e["source"] == "spawn").count(), 3);
}

fn route_brief(env: &TestEnv, args: &[&str]) -> Value {
    let mut full = vec!["route", "--json", "--brief", BRIEF];
    full.extend_from_slice(args);
    let out = env.run(&full, "");
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)))
}

#[test]
fn route_brief_shows_what_enforcement_would_do() {
    let c = case("raise", SONNET);
    let cwd = c.repo.display().to_string();
    let r = route_brief(&c.env, &["--model", "haiku", "--cwd", &cwd]);
    assert_eq!(
        (&r["enforce"], &r["routing"]["tier"], &r["set_tier"], &r["rewrites"]),
        (&json!("raise"), &json!("sonnet"), &json!("sonnet"), &json!(true))
    );
    assert_eq!((&r["tier_before"], &r["logged"]), (&json!("haiku"), &json!(true)));
    let r = route_brief(&c.env, &["--model", "opus", "--cwd", &cwd]);
    assert_eq!((&r["set_tier"], &r["kept"], &r["rewrites"]), (&Value::Null, &json!("above_rule"), &json!(false)));
    assert!(r["unchanged_because"].as_str().unwrap().contains("only set lowers"), "{r}");
    let r = route_brief(&c.env, &["--subagent-type", "fork"]);
    assert_eq!(r["kept"], "fork");
    assert!(entries(&c.env).is_empty(), "route never writes the log");

    // Paused: the hook would do nothing, and route says so while still showing the features.
    write(&c.env.install_dir.join("paused"), "");
    let r = route_brief(&c.env, &["--model", "haiku"]);
    assert!(r["silent_because"].as_str().unwrap().contains("paused"), "{r}");
    assert_eq!((&r["routing"]["tier"], &r["rewrites"]), (&json!("sonnet"), &json!(false)));
    let text = stdout(&c.env.run(&["route", "--brief", BRIEF, "--model", "haiku"], ""));
    crate::support::snapshots(&c.env).bind(|| {
        insta::assert_snapshot!(text, @r#"
        hook: does nothing (System-1 is paused (`[BIN] toggle on` resumes it)); what it would ask anyway:
        features (mock mock, [TIME] ms):
          read_only  yes       0.90 (uncalibrated)
          design     no        0.90 (uncalibrated)
          review     no        0.90 (uncalibrated)
          specified  no        0.90 (uncalibrated)
        tier: sonnet (default: no rule matched)
        decided by: design, review, specified
        enforce: raise (a spawn that names no model, or one below the rule's tier, gets the rule's tier)
        spawn: model "haiku" would become model "sonnet", but the hook does nothing (above)
        set by: the plugin's module at agent.spawn in Claude Code 2.1.287 and later (modules are on by default there), else the PreToolUse hook on the Agent call
        log: not logged (cwd is outside [routing] log_dirs)
        time: [TIME] ms
        "#)
    });
    std::fs::remove_file(c.env.install_dir.join("paused")).unwrap();
    let text = stdout(&c.env.run(&["route", "--brief", BRIEF, "--model", "haiku"], ""));
    crate::support::snapshots(&c.env).bind(|| {
        insta::assert_snapshot!(text, @r#"
        features (mock mock, [TIME] ms):
          read_only  yes       0.90 (uncalibrated)
          design     no        0.90 (uncalibrated)
          review     no        0.90 (uncalibrated)
          specified  no        0.90 (uncalibrated)
        tier: sonnet (default: no rule matched)
        decided by: design, review, specified
        enforce: raise (a spawn that names no model, or one below the rule's tier, gets the rule's tier)
        spawn: model "haiku" → model "sonnet" (the hook rewrites the call's model, nothing else)
        set by: the plugin's module at agent.spawn in Claude Code 2.1.287 and later (modules are on by default there), else the PreToolUse hook on the Agent call
        log: not logged (cwd is outside [routing] log_dirs)
        time: [TIME] ms
        "#)
    });

    let out = c.env.run(&["route", "--model", "haiku", "--prompt", BRIEF], "");
    assert_eq!(out.status.code(), Some(2), "--model goes with --brief only");

    // Inside a session where the module acts (a Bash call of Claude Code's), route says so.
    assert_eq!(route_brief(&c.env, &[])["mechanism"], Value::Null);
    let mut c = c;
    c.env.set_env("SYSTEM1_SPAWN_MODULE", "sess");
    assert_eq!(route_brief(&c.env, &[])["mechanism"], "agent_spawn");
    let text = stdout(&c.env.run(&["route", "--brief", BRIEF], ""));
    assert!(
        text.contains("set by: the plugin's module at agent.spawn, which acts in this Claude Code session"),
        "{text}"
    );
}

/// The doctor's lines that mention enforcement, with their fix lines.
fn doctor_enforce(env: &TestEnv) -> String {
    let text = stdout(&env.run(&["doctor"], ""));
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.contains("enforce") && !l.trim_start().starts_with("fix:") {
            out.push(l.to_string());
            if let Some(fix) = lines.get(i + 1).filter(|f| f.trim_start().starts_with("fix:")) {
                out.push(fix.to_string());
            }
        }
    }
    out.join("\n")
}

#[test]
fn toggle_status_and_doctor_show_the_mode_and_doctor_warns_of_rewrites_that_did_not_take() {
    let c = case("raise", SONNET);
    let pinned = crate::support::snapshots(&c.env);
    let status = stdout(&c.env.run(&["toggle", "status"], ""));
    pinned.bind(|| insta::assert_snapshot!("enforce_raise_toggle_status", status));
    // No rewrite yet.
    pinned.bind(|| insta::assert_snapshot!("enforce_raise_doctor", doctor_enforce(&c.env)));

    // Three rewrites: two ran on the tier set, the latest did not.
    let raised = input(Some("haiku"), "general-purpose", BRIEF);
    for (id, ran) in [("t1", "claude-sonnet-5"), ("t2", "claude-sonnet-5"), ("t3", "claude-haiku-4-5-20251001")] {
        hook(&c.env, "agent", &pre_payload(&c.repo, &raised, id));
        hook(&c.env, "spawned", &post_payload(&c.repo, id, "sonnet", Some(ran)));
    }
    pinned.bind(|| insta::assert_snapshot!("enforce_raise_doctor_a_rewrite_not_taken", doctor_enforce(&c.env)));

    // One rewrite, taken: singular.
    let taken = case("set", SONNET);
    hook(&taken.env, "agent", &pre_payload(&taken.repo, &input(Some("opus"), "general-purpose", BRIEF), "t1"));
    hook(&taken.env, "spawned", &post_payload(&taken.repo, "t1", "sonnet", Some("claude-sonnet-5-5")));
    let doctor = doctor_enforce(&taken.env);
    crate::support::snapshots(&taken.env)
        .bind(|| insta::assert_snapshot!("enforce_set_doctor_the_rewrite_taken", doctor));

    write(&c.env.install_dir.join("paused"), "");
    let status = stdout(&c.env.run(&["toggle", "status"], ""));
    pinned.bind(|| insta::assert_snapshot!("enforce_raise_toggle_status_paused", status));

    let off = TestEnv::with_mock("[routing]\nenforce = \"fill\"\n");
    let doctor = doctor_enforce(&off);
    crate::support::snapshots(&off).bind(|| insta::assert_snapshot!("enforce_fill_doctor_routing_off", doctor));
    let none = TestEnv::with_mock("");
    let status = stdout(&none.run(&["toggle", "status"], ""));
    crate::support::snapshots(&none).bind(|| insta::assert_snapshot!("enforce_off_toggle_status", status));
}

#[test]
fn claude_codes_own_subagent_model_means_no_rewrite() {
    let mut c = case("set", SONNET);
    let cwd = c.repo.display().to_string();
    let raw = input(Some("opus"), "general-purpose", BRIEF);
    // Without the variable, the call is lowered to sonnet.
    assert!(updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "v0"))).is_some());
    c.env.set_env("CLAUDE_CODE_SUBAGENT_MODEL", "haiku");
    let out = hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "v1"));
    assert_eq!(stdout(&out), "", "no rewrite under Claude Code's own setting");
    let logged = entries(&c.env);
    let e = logged.iter().find(|e| e["tool_use_id"] == "v1").expect("still logged");
    assert_eq!(
        (&e["kept"], e.get("tier_after"), &e["rule_tier"]),
        (&json!("subagent_model_env"), None, &json!("sonnet"))
    );
    let r = route_brief(&c.env, &["--model", "opus", "--cwd", &cwd]);
    assert_eq!((&r["rewrites"], &r["kept"]), (&json!(false), &json!("subagent_model_env")), "{r}");
    let why = r["unchanged_because"].as_str().unwrap();
    assert!(why.contains("CLAUDE_CODE_SUBAGENT_MODEL=haiku is set: Claude Code 2.1.197 lets it decide"), "{why}");
    c.env.set_env("CLAUDE_CODE_SUBAGENT_MODEL_FORCE", "1");
    let r = route_brief(&c.env, &["--model", "opus", "--cwd", &cwd]);
    let why = r["unchanged_because"].as_str().unwrap();
    assert!(why.contains("with CLAUDE_CODE_SUBAGENT_MODEL_FORCE is set: Claude Code's own setting decides"), "{why}");
    // doctor says so.
    let text = stdout(&c.env.run(&["doctor"], ""));
    assert!(
        text.contains(
            "CLAUDE_CODE_SUBAGENT_MODEL=haiku with CLAUDE_CODE_SUBAGENT_MODEL_FORCE is set in this environment"
        ),
        "{text}"
    );
    assert!(text.contains("enforce set rewrites no spawn"), "{text}");
}

/// The module's call at `agent.spawn` (`hook agent-spawn`, the PreToolUse input built from the
/// spawn) answers `{"model": tier}` and logs `via: agent_spawn`; in the session the module named in
/// `SYSTEM1_SPAWN_MODULE`, the PreToolUse hook prints and logs nothing, so a spawn is routed once.
#[test]
fn the_module_sets_the_model_and_the_pre_tool_use_hook_steps_aside_in_its_session() {
    let mut c = case("set", SONNET);
    let doctor = |env: &TestEnv| {
        let text = stdout(&env.run(&["doctor"], ""));
        text.lines()
            .find(|l| l.contains("spawns are routed") || l.contains("no spawn logged"))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        doctor(&c.env).contains(
            "ok    no spawn logged yet: Claude Code 2.1.287 and later route spawns through the plugin's module"
        ),
        "{}",
        doctor(&c.env)
    );
    let raw = input(Some("haiku"), "general-purpose", BRIEF);
    let out = hook(&c.env, "agent-spawn", &pre_payload(&c.repo, &raw, "m1"));
    assert_eq!(stdout(&out).trim_end(), r#"{"model":"sonnet"}"#);
    // Nothing to change: silence, and the reason logged.
    let out =
        hook(&c.env, "agent-spawn", &pre_payload(&c.repo, &input(Some("sonnet"), "general-purpose", BRIEF), "m2"));
    assert_eq!(stdout(&out), "");
    let log = entries(&c.env);
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!((&log[0]["via"], &log[0]["tier_after"]), (&json!("agent_spawn"), &json!("sonnet")));
    assert_eq!((&log[1]["via"], &log[1]["kept"]), (&json!("agent_spawn"), &json!("at_tier")));
    assert!(
        doctor(&c.env).contains("ok    spawns are routed by the plugin's module at agent.spawn, the latest at "),
        "{}",
        doctor(&c.env)
    );

    // Another session's marker changes nothing: the PreToolUse hook rewrites and logs.
    c.env.set_env("SYSTEM1_SPAWN_MODULE", "another-session");
    let got = updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "p1"))).expect("a rewrite");
    assert_eq!(got, raw.replace(r#""model":"haiku""#, r#""model":"sonnet""#));
    assert_eq!(entries(&c.env)[2]["via"], "pre_tool_use");
    assert!(
        doctor(&c.env).contains("ok    spawns are routed by the PreToolUse hook, the latest at "),
        "{}",
        doctor(&c.env)
    );
    // Its own session's: silent, nothing logged.
    c.env.set_env("SYSTEM1_SPAWN_MODULE", "sess");
    let out = hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "p2"));
    assert_eq!(stdout(&out), "", "the module acts in this session");
    assert_eq!(entries(&c.env).len(), 3, "one entry per spawn");
}

/// Where the module acts, the PreToolUse hook steps aside before it reads the config: the config's
/// `log_file`, which loading it opens (creating the file), is never touched in that session.
#[test]
fn the_pre_tool_use_hook_steps_aside_before_it_loads_the_config() {
    let mut c = case_with("set", "", SONNET);
    let log_file = c.env.root.join("hook-log/system1.log");
    let config = std::fs::read_to_string(&c.env.config).unwrap();
    c.env.write_config(&config.replacen("[gateway]\n", &format!("[gateway]\nlog_file = {:?}\n", log_file), 1));
    let raw = input(Some("haiku"), "general-purpose", BRIEF);
    c.env.set_env("SYSTEM1_SPAWN_MODULE", "sess");
    assert_eq!(stdout(&hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "p1"))), "");
    assert!(!log_file.exists(), "the config was loaded: its log_file was opened");
    assert!(entries(&c.env).is_empty());
    // In another session the same hook loads the config (opening its log file) and rewrites.
    c.env.set_env("SYSTEM1_SPAWN_MODULE", "another-session");
    assert!(updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "p2"))).is_some());
    assert!(log_file.is_file(), "loading the config opens its log_file");
}

/// Under `CLAUDE_CODE_SUBAGENT_NO_SMALL_MODELS` the session refuses sonnet and haiku to subagents:
/// no rewrite (either hook) and no hint to them, logged as `no_small_models_env`;
/// a rule tier of opus is still set.
#[test]
fn no_small_models_means_no_rewrite_or_hint_to_a_refused_tier() {
    let mut c = case("set", SONNET);
    c.env.write_config(&format!(
        "[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\nhint = true\nenforce = \"set\"\nlog_dirs = [{:?}]\n\
         [providers.mock]\n{SONNET}\n",
        c.repo.display().to_string()
    ));
    let raw = input(Some("haiku"), "general-purpose", BRIEF);
    let prompt = serde_json::json!({"session_id": "sess", "transcript_path": "/dev/null", "cwd": c.repo,
        "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": BRIEF})
    .to_string();
    // Without the variable: a hint to sonnet, and the rewrite.
    assert!(stdout(&hook(&c.env, "prompt", &prompt)).contains("use model \\\"sonnet\\\""));
    assert!(updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "n0"))).is_some());
    c.env.set_env("CLAUDE_CODE_SUBAGENT_NO_SMALL_MODELS", "1");
    assert_eq!(stdout(&hook(&c.env, "prompt", &prompt)), "", "no hint to a refused tier");
    assert_eq!(stdout(&hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "n1"))), "");
    assert_eq!(stdout(&hook(&c.env, "agent-spawn", &pre_payload(&c.repo, &raw, "n2"))), "");
    let log = entries(&c.env);
    for id in ["n1", "n2"] {
        let e = log.iter().find(|e| e["tool_use_id"] == id).expect("still logged");
        assert_eq!(
            (&e["kept"], e.get("tier_after"), &e["rule_tier"]),
            (&json!("no_small_models_env"), None, &json!("sonnet"))
        );
    }
    let prompts: Vec<&Value> = log.iter().filter(|e| e["source"] == "prompt").collect();
    assert_eq!((&prompts[0]["hinted"], &prompts[1]["hinted"]), (&json!(true), &json!(false)));
    let r = route_brief(&c.env, &["--model", "haiku"]);
    assert_eq!((&r["rewrites"], &r["kept"]), (&json!(false), &json!("no_small_models_env")), "{r}");

    // "0" is off; an opus rule tier is still set.
    c.env.set_env("CLAUDE_CODE_SUBAGENT_NO_SMALL_MODELS", "0");
    assert!(updated(&hook(&c.env, "agent", &pre_payload(&c.repo, &raw, "n3"))).is_some());
    c.env.set_env("CLAUDE_CODE_SUBAGENT_NO_SMALL_MODELS", "true");
    let opus = case("raise", "answers = { design = \"yes\" }");
    let mut opus = opus;
    opus.env.set_env("CLAUDE_CODE_SUBAGENT_NO_SMALL_MODELS", "1");
    let got = updated(&hook(&opus.env, "agent", &pre_payload(&opus.repo, &raw, "n4"))).expect("raised to opus");
    assert!(got.contains(r#""model":"opus""#), "{got}");
}
