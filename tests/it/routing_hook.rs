//! The prompt hook, the agent hook and `system1 route`, through the built binary with hook JSON on
//! stdin and the mock engine (its per-question `answers`, `confidence`, `fail` and `delay_ms`
//! drive every case; a local calibration fit lowers one feature's confidence).

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{CUT_OFF, TestEnv, lower_design_confidence, stderr, stdout, write};
use serde_json::{Value, json};

/// Ten words and more, read-only and fully specified with the default mock answers below.
const TASK: &str = "Read src/main.rs and explain how the command line arguments are parsed and dispatched";

/// The mock answers yes to read_only and specified, no to design and review: the default rule
/// gives haiku (rule 3).
const HAIKU_ANSWERS: &str = "answers = { design = \"no\", review = \"no\" }";

fn env_with(routing: &str, mock: &str) -> TestEnv {
    TestEnv::with_mock(&format!("[routing]\nenabled = true\n{routing}\n[providers.mock]\n{mock}\n"))
}

fn hook(env: &TestEnv, event: &str, payload: &Value) -> Output {
    let out = env.run(&["hook", event], &payload.to_string());
    assert!(out.status.success(), "hook exit {:?}: {}", out.status, stderr(&out));
    assert_eq!(stderr(&out), "", "a hook keeps stderr quiet");
    out
}

fn prompt_payload(prompt: &str, cwd: &Path) -> Value {
    json!({"session_id": "sess-1", "transcript_path": "/dev/null", "cwd": cwd, "prompt_id": "p1",
           "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": prompt})
}

/// The additionalContext the hook printed, or `None` when stdout is empty.
fn context(out: &Output) -> Option<String> {
    let text = stdout(out);
    if text.is_empty() {
        return None;
    }
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("stdout is not JSON: {text:?}: {e}"));
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "UserPromptSubmit");
    Some(v["hookSpecificOutput"]["additionalContext"].as_str().expect("additionalContext").to_string())
}

fn log_path(env: &TestEnv) -> PathBuf {
    env.install_dir.join("logs/routing.jsonl")
}

fn log_entries(env: &TestEnv) -> Vec<Value> {
    match std::fs::read_to_string(log_path(env)) {
        Ok(text) => text.lines().map(|l| serde_json::from_str(l).expect("whole JSON line")).collect(),
        Err(_) => Vec::new(),
    }
}

fn repo(env: &TestEnv) -> PathBuf {
    let r = env.root.join("work/repo");
    std::fs::create_dir_all(r.join(".git")).unwrap();
    std::fs::create_dir_all(r.join("src/deep")).unwrap();
    r
}

fn logging_to(r: &Path) -> String {
    format!("log_dirs = [{:?}]", r.display().to_string())
}

#[test]
fn hint_names_the_rule_tier_when_every_feature_clears_the_threshold() {
    let env = env_with("hint = true", HAIKU_ANSWERS);
    let ctx = context(&hook(&env, "prompt", &prompt_payload(TASK, &env.home))).expect("a hint");
    assert!(ctx.starts_with("System-1 routing hint:"), "{ctx}");
    assert!(ctx.contains("model \"haiku\""), "{ctx}");
    assert_eq!(ctx.lines().count(), 1);
    assert!(log_entries(&env).is_empty(), "cwd is not in log_dirs: nothing logged");

    let env = env_with("hint = true", "answers = { design = \"yes\" }");
    let ctx = context(&hook(&env, "prompt", &prompt_payload(TASK, &env.home))).expect("a hint");
    assert!(ctx.contains("model \"opus\""), "{ctx}");
}

#[test]
fn no_hint_unless_every_feature_clears_the_threshold() {
    let r;
    let env = {
        let e = TestEnv::new();
        r = repo(&e);
        e.write_config(&format!(
            "[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\nhint = true\nmin_confidence = 0.6\n{}\n[providers.mock]\n{HAIKU_ANSWERS}\n",
            logging_to(&r)
        ));
        e
    };
    lower_design_confidence(&env);
    let out = hook(&env, "prompt", &prompt_payload(TASK, &r));
    assert_eq!(context(&out), None, "design at 0.555 is below 0.6");
    let entries = log_entries(&env);
    assert_eq!(entries.len(), 1, "logged even without a hint");
    let e = &entries[0];
    assert_eq!(e["hinted"], false);
    assert!((e["features"]["design"]["confidence"].as_f64().unwrap() - 0.5545).abs() < 0.01, "{e}");
    assert_eq!(e["features"]["read_only"]["confidence"], 0.9);
    assert_eq!(e["rule_tier"], "haiku");

    // The same answers clear a lower bar.
    let mut env = env;
    env.set_env("SYSTEM1_ROUTING_MIN_CONFIDENCE", "0.55");
    let ctx = context(&hook(&env, "prompt", &prompt_payload(TASK, &r))).expect("hint at 0.55");
    assert!(ctx.contains("model \"haiku\""));
    assert_eq!(log_entries(&env)[1]["hinted"], true);
}

#[test]
fn an_unsure_feature_no_deciding_rule_reads_does_not_silence_the_hint() {
    // Every answer yes: rule 1 (design) matches, and design alone decides the tier.
    let env = env_with("hint = true", "answer = \"yes\"");
    // read_only's answer made unsure (0.55), as "design a billing schema" had it at 0.58.
    write(
        &env.install_dir.join("calibration.json"),
        r#"{"format": "system1-calibration", "version": 1,
            "fits": [{"provider": "mock", "model": "mock", "question": "read_only", "temperature": 10.0}]}"#,
    );
    let ctx = context(&hook(&env, "prompt", &prompt_payload(TASK, &env.home))).expect("design decided");
    assert!(ctx.contains("model \"opus\""), "{ctx}");
    let v = route_json(&env, TASK, &env.home);
    assert_eq!(v["routing"]["decided_by"], json!(["design"]), "{v}");
    assert_eq!(v["routing_hint"]["given"], true, "{v}");
    let out = env.run(&["route", "--prompt", TASK, "--cwd", env.home.to_str().unwrap()], "");
    assert!(stdout(&out).contains("decided by: design\n"), "{}", stdout(&out));

    // The same unsure answer where it decides: design no, so rule 3 (read_only and specified) is
    // read, and the hint is withheld because of read_only.
    env.write_config(&format!(
        "[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\nhint = true\n[providers.mock]\n{HAIKU_ANSWERS}\n"
    ));
    let v = route_json(&env, TASK, &env.home);
    assert_eq!(v["routing"]["decided_by"], json!(["read_only", "design", "review", "specified"]), "{v}");
    assert!(v["routing_hint"]["because"].as_str().unwrap().contains("read_only confidence 0.55"), "{v}");
}

fn assert_silent(env: &TestEnv, payload: &Value, case: &str) {
    let out = hook(env, "prompt", payload);
    assert_eq!(stdout(&out), "", "{case}: the hook must print nothing");
}

#[test]
fn silent_cases() {
    let cwd = PathBuf::from("/");
    // Every case below would give a hint if it were not for the one thing it changes.
    let base = env_with("hint = true", HAIKU_ANSWERS);
    assert!(context(&hook(&base, "prompt", &prompt_payload(TASK, &cwd))).is_some(), "the baseline hints");

    for (case, mock) in [
        ("abstains", "fail = \"abstain\""),
        ("fails", "fail = \"error\""),
        ("answers malformed", "fail = \"malformed\""),
        ("times out", "fail = \"timeout\""),
    ] {
        let env = env_with("hint = true\nbudget_ms = 200", &format!("{HAIKU_ANSWERS}\n{mock}"));
        assert_silent(&env, &prompt_payload(TASK, &cwd), case);
    }
    let env = env_with("hint = true", HAIKU_ANSWERS);
    for (case, prompt) in [
        ("slash command", "/compact keep the routing notes and the test plan for later, thanks a lot"),
        ("plugin slash command", "/system1:toggle off"),
        ("short prompt", "Plan is ok, implement"),
        ("nine words", "one two three four five six seven eight nine"),
        (
            "agent hand-back",
            "<agent-message from=\"worker\">I read every file and the parser is fine, nothing to fix</agent-message>",
        ),
        (
            "task notification",
            "<task-notification><task-id>a1</task-id><status>completed</status><summary>done with the whole job</summary></task-notification>",
        ),
    ] {
        assert_silent(&env, &prompt_payload(prompt, &cwd), case);
    }
    assert_silent(&env, &json!({"cwd": "/"}), "no prompt field");
    for garbage in ["not json", "[1,2]", ""] {
        let out = env.run(&["hook", "prompt"], garbage);
        assert!(out.status.success());
        assert_eq!(stdout(&out), "", "input {garbage:?}");
    }

    // Paused.
    write(&env.install_dir.join("paused"), "paused\n");
    assert_silent(&env, &prompt_payload(TASK, &cwd), "paused");
    std::fs::remove_file(env.install_dir.join("paused")).unwrap();
    assert!(context(&hook(&env, "prompt", &prompt_payload(TASK, &cwd))).is_some(), "resumed");

    // Routing off; hints off.
    let env = TestEnv::with_mock(&format!("[routing]\nhint = true\n[providers.mock]\n{HAIKU_ANSWERS}\n"));
    assert_silent(&env, &prompt_payload(TASK, &cwd), "routing off");
    let env = env_with("hint = false", HAIKU_ANSWERS);
    assert_silent(&env, &prompt_payload(TASK, &cwd), "hint = false");

    // Config errors: a bad rule, a broken file, a provider setting the engine rejects.
    for (case, routing) in [
        ("unknown feature", "hint = true\nrules = [{ when = { vibes = true }, tier = \"opus\" }]"),
        ("unknown tier", "hint = true\nrules = [{ when = { design = true }, tier = \"gpt-5\" }]"),
        ("bad default tier", "hint = true\ndefault_tier = \"large\""),
    ] {
        let env = env_with(routing, HAIKU_ANSWERS);
        assert_silent(&env, &prompt_payload(TASK, &cwd), case);
    }
    let env = env_with("hint = true", &format!("{HAIKU_ANSWERS}\nfail = \"sometimes\""));
    assert_silent(&env, &prompt_payload(TASK, &cwd), "bad provider setting");
    let env = TestEnv::new();
    env.write_config("[routing\nenabled = true\nhint = true\n");
    assert_silent(&env, &prompt_payload(TASK, &cwd), "broken TOML");
}

#[test]
fn engine_not_installed_is_silent() {
    // The configured primary engine is one this build cannot run, or whose server is absent.
    let env = TestEnv::new();
    env.write_config("[gateway]\nprovider = \"von\"\n[routing]\nenabled = true\nhint = true\n[providers.von]\nendpoint = \"http://127.0.0.1:9\"\n");
    assert_silent(&env, &prompt_payload(TASK, Path::new("/")), "engine not installed");
}

#[test]
fn rules_first_match_wins_and_default_applies() {
    let env = TestEnv::new();
    let r = repo(&env);
    let config = |rules: &str, answers: &str| {
        format!(
            "[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\nhint = true\n{}\ndefault_tier = \"opus\"\n{rules}\n[providers.mock]\nanswers = {answers}\n",
            logging_to(&r)
        )
    };
    // read_only and specified are both yes: the earlier rule wins even though the later one is narrower.
    env.write_config(&config(
        "rules = [{ when = { read_only = true }, tier = \"sonnet\" }, { when = { read_only = true, specified = true }, tier = \"haiku\" }]",
        "{ design = \"no\", review = \"no\" }",
    ));
    let ctx = context(&hook(&env, "prompt", &prompt_payload(TASK, &r))).unwrap();
    assert!(ctx.contains("model \"sonnet\""), "{ctx}");
    // A rule on `false` answers.
    env.write_config(&config(
        "rules = [{ when = { design = false, review = false, read_only = false }, tier = \"haiku\" }]",
        "{ design = \"no\", review = \"no\", read_only = \"no\" }",
    ));
    let ctx = context(&hook(&env, "prompt", &prompt_payload(TASK, &r))).unwrap();
    assert!(ctx.contains("model \"haiku\""), "{ctx}");
    // No rule matches: the default tier.
    env.write_config(&config("rules = [{ when = { review = true }, tier = \"haiku\" }]", "{ review = \"no\" }"));
    let ctx = context(&hook(&env, "prompt", &prompt_payload(TASK, &r))).unwrap();
    assert!(ctx.contains("model \"opus\""), "{ctx}");
    let rules: Vec<Value> = log_entries(&env).iter().map(|e| e["rule"].clone()).collect();
    assert_eq!(rules, vec![json!(1), json!(1), json!("default")]);

    // The shipped rule, with all four answers no: sonnet by default.
    let env = env_with("hint = true", "answer = \"no\"");
    let ctx = context(&hook(&env, "prompt", &prompt_payload(TASK, Path::new("/")))).unwrap();
    assert!(ctx.contains("model \"sonnet\""), "{ctx}");
    let env = env_with("hint = true", "answers = { review = \"yes\", design = \"no\" }");
    let ctx = context(&hook(&env, "prompt", &prompt_payload(TASK, Path::new("/")))).unwrap();
    assert!(ctx.contains("model \"opus\""), "{ctx}");
}

#[test]
fn log_opt_in_inside_outside_and_through_symlinks() {
    let env = TestEnv::new();
    let r = repo(&env);
    let outside = env.root.join("work/repo-other");
    std::fs::create_dir_all(&outside).unwrap();
    env.write_config(&format!(
        "[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\n{}\n[providers.mock]\n{HAIKU_ANSWERS}\n",
        logging_to(&r)
    ));
    // hint = false: log only, nothing printed.
    assert_eq!(stdout(&hook(&env, "prompt", &prompt_payload(TASK, &r))), "");
    assert_eq!(log_entries(&env).len(), 1, "the repo itself");
    hook(&env, "prompt", &prompt_payload(TASK, &r.join("src/deep")));
    assert_eq!(log_entries(&env).len(), 2, "a folder inside");
    hook(&env, "prompt", &prompt_payload(TASK, &outside));
    hook(&env, "prompt", &prompt_payload(TASK, &env.root.join("work")));
    assert_eq!(log_entries(&env).len(), 2, "outside, and a sibling sharing the prefix, stay out");

    #[cfg(unix)]
    {
        use std::os::unix::fs::{PermissionsExt, symlink};
        assert_eq!(std::fs::metadata(log_path(&env)).unwrap().permissions().mode() & 0o777, 0o600);
        // A symlink into the repo is inside it.
        let link = env.root.join("link-to-src");
        symlink(r.join("src"), &link).unwrap();
        hook(&env, "prompt", &prompt_payload(TASK, &link));
        assert_eq!(log_entries(&env).len(), 3, "through a symlink");
        // A symlink out of the repo is not.
        let escape = r.join("escape");
        symlink(&outside, &escape).unwrap();
        hook(&env, "prompt", &prompt_payload(TASK, &escape));
        assert_eq!(log_entries(&env).len(), 3, "a symlink leading outside");
        // log_dirs itself named through a symlink, and with `~`.
        let home_link = env.home.join("code");
        symlink(&r, &home_link).unwrap();
        env.write_config(&format!(
            "[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\nlog_dirs = [\"~/code/\"]\n[providers.mock]\n{HAIKU_ANSWERS}\n"
        ));
        hook(&env, "prompt", &prompt_payload(TASK, &r.join("src")));
        assert_eq!(log_entries(&env).len(), 4, "~ expanded, symlinked log_dirs entry resolved");
    }

    let e = &log_entries(&env)[0];
    let id = e["id"].as_str().unwrap();
    assert!(!id.is_empty());
    assert_eq!(e["source"], "prompt");
    assert_eq!(e["session_id"], "sess-1");
    assert_eq!(e["prompt"], TASK);
    assert_eq!(e["repo"], std::fs::canonicalize(&r).unwrap().display().to_string());
    assert_eq!(e["cwd"], r.display().to_string());
    assert!(chrono_like(e["time"].as_str().unwrap()), "{}", e["time"]);
    for f in ["read_only", "design", "review", "specified"] {
        assert!(e["features"][f]["answer"].is_boolean(), "{e}");
        assert_eq!(e["features"][f]["confidence"], 0.9);
    }
    assert_eq!(e["rule_tier"], "haiku");
    assert_eq!(e["decision"], "haiku");
    assert_eq!(e["rule"], 3);
    assert_eq!(e["hinted"], false);
    assert_eq!(e["provider"], "mock");
    assert_eq!(e["model"], "mock");
    assert!(e["latency_ms"].as_f64().unwrap() >= 0.0);
    let ids: std::collections::HashSet<String> =
        log_entries(&env).iter().map(|e| e["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids.len(), log_entries(&env).len(), "ids are unique");
}

fn chrono_like(t: &str) -> bool {
    t.len() >= 20 && t.ends_with('Z') && t.as_bytes()[10] == b'T'
}

fn agent_payload(cwd: &Path, model: Option<&str>, n: usize) -> Value {
    let mut input = json!({"description": format!("survey {n}"), "subagent_type": "general-purpose",
        "prompt": "Find every caller of parse_rules in src and list them with file and line"});
    if let Some(m) = model {
        input["model"] = json!(m);
    }
    json!({"session_id": "sess-2", "transcript_path": "/dev/null", "cwd": cwd, "hook_event_name": "PreToolUse",
           "tool_name": "Agent", "tool_input": input, "tool_use_id": format!("toolu_{n}")})
}

#[test]
fn agent_hook_prints_nothing_and_logs_the_spawn() {
    let env = TestEnv::new();
    let r = repo(&env);
    env.write_config(&format!(
        "[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\nhint = true\n{}\n[providers.mock]\n{HAIKU_ANSWERS}\n",
        logging_to(&r)
    ));
    let out = hook(&env, "agent", &agent_payload(&r, Some("opus"), 1));
    assert_eq!(stdout(&out), "");
    hook(&env, "agent", &agent_payload(&r, None, 2));
    let entries = log_entries(&env);
    assert_eq!(entries.len(), 2);
    let e = &entries[0];
    assert_eq!(e["source"], "agent");
    assert_eq!(e["chosen"], "opus");
    assert_eq!(e["subagent_type"], "general-purpose");
    assert_eq!(e["tool_use_id"], "toolu_1");
    assert_eq!(e["description"], "survey 1");
    assert_eq!(e["prompt"], "Find every caller of parse_rules in src and list them with file and line");
    assert_eq!(e["rule_tier"], "haiku");
    assert_eq!(e["rule"], 3);
    assert_eq!(e["hinted"], false);
    assert_eq!(e["features"]["specified"]["answer"], true);
    assert_eq!(entries[1]["chosen"], Value::Null);

    // Outside log_dirs, paused, or routing off: nothing is recorded, nothing printed.
    assert_eq!(stdout(&hook(&env, "agent", &agent_payload(&env.home, Some("haiku"), 3))), "");
    write(&env.install_dir.join("paused"), "");
    assert_eq!(stdout(&hook(&env, "agent", &agent_payload(&r, Some("haiku"), 4))), "");
    std::fs::remove_file(env.install_dir.join("paused")).unwrap();
    let mut off = TestEnv::new();
    off.write_config(&format!("[gateway]\nprovider = \"mock\"\n[routing]\n{}\n", logging_to(&r)));
    off.set_env("SYSTEM1_INSTALL_DIR", env.install_dir.to_str().unwrap());
    assert_eq!(stdout(&hook(&off, "agent", &agent_payload(&r, Some("haiku"), 5))), "");
    assert_eq!(log_entries(&env).len(), 2);
}

#[test]
fn fifty_concurrent_agent_hooks_append_fifty_whole_lines() {
    let env = TestEnv::new();
    let r = repo(&env);
    env.write_config(&format!(
        "[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\n{}\n[providers.mock]\n{HAIKU_ANSWERS}\n",
        logging_to(&r)
    ));
    let children: Vec<_> = (0..50)
        .map(|n| {
            let mut child = env
                .command(&["hook", "agent"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            use std::io::Write;
            child.stdin.take().unwrap().write_all(agent_payload(&r, Some("sonnet"), n).to_string().as_bytes()).unwrap();
            child
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success());
        assert!(out.stdout.is_empty());
    }
    let text = std::fs::read_to_string(log_path(&env)).unwrap();
    assert!(text.ends_with('\n'));
    let ids: std::collections::HashSet<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("a whole JSON line")["tool_use_id"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(text.lines().count(), 50);
    assert_eq!(ids.len(), 50, "every spawn logged once");
}

fn route_json(env: &TestEnv, prompt: &str, cwd: &Path) -> Value {
    let out = env.run(&["route", "--prompt", prompt, "--cwd", cwd.to_str().unwrap(), "--json"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)))
}

#[test]
fn route_explains_what_the_hook_would_do() {
    let env = env_with("hint = true", HAIKU_ANSWERS);
    lower_design_confidence(&env);
    let v = route_json(&env, TASK, &env.home);
    assert_eq!(v["silent_because"], Value::Null);
    assert_eq!(v["routing"]["tier"], "haiku");
    assert_eq!(v["routing"]["rule"], 3);
    assert_eq!(v["routing"]["rule_text"], "read_only and specified");
    assert_eq!(v["routing"]["features"]["read_only"]["confidence"], 0.9);
    assert_eq!(v["routing"]["features"]["design"]["calibrated"], true);
    assert_eq!(v["routing_hint"]["given"], false);
    assert!(v["routing_hint"]["because"].as_str().unwrap().contains("design confidence 0.55"), "{v}");
    assert_eq!(v["logged"], false);
    assert!(v["elapsed_ms"].as_f64().unwrap() > 0.0);

    // A short prompt: the hook is silent, and route says so while still showing the features.
    let v = route_json(&env, "fix it", &env.home);
    assert!(v["silent_because"].as_str().unwrap().contains("2 words"), "{v}");
    assert_eq!(v["routing"]["tier"], "haiku");

    // Human output names the tier, the rule and why there is no hint.
    let out = env.run(&["route", "--prompt", TASK, "--cwd", env.home.to_str().unwrap()], "");
    let text = stdout(&out);
    crate::support::snapshots(&env).bind(|| {
        insta::assert_snapshot!(text, @r"
        features (mock mock, [TIME] ms):
          read_only  yes       0.90 (uncalibrated)
          design     no        0.55 (calibrated)
          review     no        0.90 (uncalibrated)
          specified  yes       0.90 (uncalibrated)
        tier: haiku (rule 3: read_only and specified)
        decided by: read_only, design, review, specified
        routing hint: none (design confidence 0.55 is below [routing] min_confidence 0.60)
        skills: 0 candidates
        skill pick: none (no skills to choose from)
        skill hint: none (the skill picker is off ([skills] enabled = false))
        log: not logged (cwd is outside [routing] log_dirs)
        time: [TIME] ms
        ")
    });
    assert!(log_entries(&env).is_empty(), "route never writes the log");
}

#[test]
fn route_says_logged_only_when_the_hook_would_write_an_entry() {
    let env = env_with("", HAIKU_ANSWERS);
    let r = repo(&env);
    let config = |mock: &str| {
        format!(
            "[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\n{}\n[providers.mock]\n{mock}\n",
            logging_to(&r)
        )
    };
    env.write_config(&config(HAIKU_ANSWERS));
    let v = route_json(&env, TASK, &r);
    assert_eq!(v["logged"], true, "{v}");
    // The engine fails: the hook writes no entry, so route must not say it would.
    env.write_config(&config(&format!("{HAIKU_ANSWERS}\nfail = \"error\"")));
    let failing = &env;
    let v = route_json(failing, TASK, &r);
    assert_eq!(v["logged"], false, "{v}");
    assert_eq!(v["log_dir"], std::fs::canonicalize(&r).unwrap().display().to_string());
    let out = failing.run(&["route", "--prompt", TASK, "--cwd", r.to_str().unwrap()], "");
    crate::support::snapshots(failing).bind(|| {
        insta::assert_snapshot!(stdout(&out), @r"
        features: no answer (mock: configured to fail)
        routing hint: none (no engine answer: mock: configured to fail)
        skills: 0 candidates
        skill pick: none (no skills to choose from)
        skill hint: none (the skill picker is off ([skills] enabled = false))
        log: not logged (the engine gave nothing to log), though inside [ROOT]/work/repo
        time: [TIME] ms
        ")
    });
    assert!(log_entries(failing).is_empty(), "route never writes the log");
}

#[test]
fn bad_rules_are_named_by_route() {
    let env = env_with("hint = true\nrules = [{ when = { vibes = true }, tier = \"opus\" }]", HAIKU_ANSWERS);
    let v = route_json(&env, TASK, &env.home);
    let why = v["silent_because"].as_str().unwrap();
    assert!(why.contains("config error") && why.contains("unknown feature \"vibes\""), "{why}");
    assert_eq!(v["routing_hint"]["given"], false);

    // A provider setting the engine rejects is a config error too.
    let env = env_with("hint = true", &format!("{HAIKU_ANSWERS}\nfail = \"sometimes\""));
    let v = route_json(&env, TASK, &env.home);
    assert!(v["silent_because"].as_str().unwrap().contains("providers.mock.fail"), "{v}");
    assert_eq!(v["routing_hint"]["given"], false);
}

#[test]
fn route_names_the_gate_of_a_hook_with_nothing_to_hint_set_or_log() {
    // An engine that takes a minute: the hooks, which have nothing to hint, set or log, never ask it.
    let mut env = env_with("hint = false\nbudget_ms = 60000", &format!("{HAIKU_ANSWERS}\ndelay_ms = 60000"));
    env.set_env("SYSTEM1_TIMEOUT_S", "60");
    let started = std::time::Instant::now();
    assert_silent(&env, &prompt_payload(TASK, &env.home), "no hint and no log");
    assert_eq!(stdout(&hook(&env, "agent", &agent_payload(&env.home, None, 1))), "", "enforce off, no log");
    assert!(started.elapsed() < CUT_OFF, "a hook asked the engine");

    // route says which gate the hooks stop at, and still shows what they would have asked.
    let env = env_with("hint = false", HAIKU_ANSWERS);
    let v = route_json(&env, TASK, &env.home);
    assert_eq!(v["silent_because"], "nothing to hint and nothing to log (cwd is outside [routing] log_dirs)");
    assert_eq!(v["routing"]["tier"], "haiku");
    assert_eq!(v["routing_hint"]["because"], "hints are off ([routing] hint = false): log only", "its own reason");
    let out = env.run(&["route", "--json", "--brief", TASK, "--cwd", env.home.to_str().unwrap()], "");
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    assert_eq!(
        v["silent_because"],
        "nothing enforcement could change, and nothing to log (cwd is outside [routing] log_dirs)"
    );
    assert_eq!(v["unchanged_because"], "record only ([routing] enforce = \"off\")");
}

#[test]
fn a_hook_silenced_by_a_config_error_says_why_in_log_file() {
    for (case, routing, mock) in [
        (
            "the config file",
            "hint = true\nenforce = \"set\"\nrules = [{ when = { vibes = true }, tier = \"opus\" }]",
            HAIKU_ANSWERS.to_string(),
        ),
        ("a provider's settings", "hint = true\nenforce = \"set\"", format!("{HAIKU_ANSWERS}\nfail = \"sometimes\"")),
    ] {
        let env = env_with(routing, &mock);
        let log = env.root.join("system1.log");
        let config = std::fs::read_to_string(&env.config).unwrap();
        env.write_config(
            &config.replace("[gateway]\n", &format!("[gateway]\nlog_file = {:?}\n", log.display().to_string())),
        );
        assert_silent(&env, &prompt_payload(TASK, &env.home), case);
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(text.contains("prompt: no hint: config error: "), "{case}: {text}");
        let spawn = agent_payload(&env.home, None, 1);
        assert_eq!(stdout(&hook(&env, "agent", &spawn)), "", "{case}");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(text.contains("agent: the spawn passes as it is: config error: "), "{case}: {text}");
    }
}

#[test]
fn budget_caps_an_engine_that_never_answers() {
    // The engine takes 60 s and the per-attempt timeout is 60 s too, so only the 300 ms budget can
    // make the hook return (silent) well before the engine would answer.
    let mut env = env_with("hint = true\nbudget_ms = 300", &format!("{HAIKU_ANSWERS}\ndelay_ms = 60000"));
    env.set_env("SYSTEM1_TIMEOUT_S", "60");
    let started = std::time::Instant::now();
    assert_silent(&env, &prompt_payload(TASK, Path::new("/")), "engine slower than the budget");
    assert!(started.elapsed() < CUT_OFF, "the budget cut the wait: {:?}", started.elapsed());
}

/// docs/tools.md gives the hint's length as the hook writes it: one line whose length runs from the
/// shortest tier's to the longest's.
#[test]
fn the_hint_is_as_long_as_docs_tools_says() {
    let mut lengths = Vec::new();
    for (mock, tier) in
        [(HAIKU_ANSWERS, "haiku"), ("answer = \"no\"", "sonnet"), ("answers = { design = \"yes\" }", "opus")]
    {
        let env = env_with("hint = true", mock);
        let ctx = context(&hook(&env, "prompt", &prompt_payload(TASK, &env.home))).expect("a hint");
        assert!(ctx.contains(&format!("model \"{tier}\"")), "{ctx}");
        assert_eq!(ctx.lines().count(), 1, "{ctx}");
        lengths.push(ctx.chars().count());
    }
    let (min, max) = (lengths.iter().min().unwrap(), lengths.iter().max().unwrap());
    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/tools.md")).unwrap();
    let said = format!("one line of {min} to {max} characters");
    assert!(docs.split_whitespace().collect::<Vec<_>>().join(" ").contains(&said), "docs/tools.md: {said:?}");
}
