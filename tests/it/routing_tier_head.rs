//! `[routing] tier_head`: the local engine's direct tier head as the rule's first step, through the
//! built binary on the real all-MiniLM-L6-v2 and its shipped heads (`route` and the prompt hook),
//! the head left out for any other engine, and the config's checks of the two keys.

use serde_json::{Value, json};

use crate::local_engine::model_dir;
use crate::support::{TestEnv, stderr, stdout};

/// A design task the shipped tier head reads as opus, surely (0.70 with the shipped heads).
const DESIGN: &str =
    "Design a multi-tenant billing schema for the invoicing service with per-tenant isolation and plans";

fn local_env(dir: &str, routing: &str) -> TestEnv {
    let env = TestEnv::new();
    // The budget at its maximum: a loaded machine must not turn a slow answer into none.
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\n[providers.local]\nmodel_dir = {dir:?}\n[routing]\nenabled = true\nhint = true\nbudget_ms = 60000\n{routing}\n"
    ));
    env
}

fn route_json(env: &TestEnv, prompt: &str) -> Value {
    let out = env.run(&["route", "--prompt", prompt, "--cwd", env.home.to_str().unwrap(), "--json"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)))
}

#[test]
fn the_tier_head_decides_where_it_is_sure_and_route_says_so() {
    let Some(dir) = model_dir() else { return };
    let mut env = local_env(&dir, "tier_head = true\ntier_head_min_confidence = 0.6");
    let repo = env.root.join("work/repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    env.write_config(&format!(
        "{}log_dirs = [{:?}]\n",
        std::fs::read_to_string(&env.config).unwrap(),
        repo.display().to_string()
    ));
    let v = route_json(&env, DESIGN);
    let r = &v["routing"];
    assert_eq!(r["tier_head"]["tier"], "opus", "{v}");
    let sure = r["tier_head"]["confidence"].as_f64().unwrap_or(0.0);
    assert!((0.6..=1.0).contains(&sure), "{v}");
    assert_eq!((&r["tier"], &r["rule"]), (&json!("opus"), &json!("head")), "{v}");
    assert_eq!(r["decided_by"], json!([]), "no feature decided: {v}");
    assert_eq!(v["routing_hint"]["given"], true, "{v}");
    let out = env.run(&["route", "--prompt", DESIGN, "--cwd", env.home.to_str().unwrap()], "");
    let text = stdout(&out);
    assert!(text.contains(&format!("tier head: opus {sure:.2}\n")), "{text}");
    assert!(
        text.contains(&format!("tier: opus (tier head: {sure:.2} sure, at least tier_head_min_confidence 0.60)\n")),
        "{text}"
    );
    assert!(text.contains("decided by: the tier head\n"), "{text}");

    // The prompt hook acts on the same record: the hint, and the log's rule "head".
    let payload = json!({"session_id": "s", "transcript_path": "/dev/null", "cwd": repo, "prompt_id": "p",
        "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": DESIGN});
    let out = env.run(&["hook", "prompt"], &payload.to_string());
    assert!(stdout(&out).contains("use model \\\"opus\\\""), "{}: {}", stdout(&out), stderr(&out));
    let log = std::fs::read_to_string(env.install_dir.join("logs/routing.jsonl")).expect("logged");
    let entry: Value = serde_json::from_str(log.lines().next().unwrap_or_default()).expect("a JSON line");
    assert_eq!((&entry["rule"], &entry["rule_tier"], &entry["hinted"]), (&json!("head"), &json!("opus"), &json!(true)));

    // Below the bar the rule decides, and route still shows the head's answer.
    env.set_env("SYSTEM1_ROUTING_TIER_HEAD_MIN_CONFIDENCE", "0.99");
    let v = route_json(&env, DESIGN);
    assert_eq!(v["routing"]["tier_head"]["tier"], "opus", "{v}");
    assert_eq!((&v["routing"]["rule"], &v["routing"]["decided_by"]), (&json!(1), &json!(["design"])), "{v}");

    // Off (the default), the head is not asked at all.
    env.set_env("SYSTEM1_ROUTING_TIER_HEAD", "false");
    let v = route_json(&env, DESIGN);
    assert_eq!(v["routing"]["tier_head"], Value::Null, "{v}");
    assert_eq!(v["routing"]["rule"], 1, "{v}");
    let out = env.run(&["route", "--prompt", DESIGN, "--cwd", env.home.to_str().unwrap()], "");
    assert!(!stdout(&out).contains("tier head"), "{}", stdout(&out));
}

#[test]
fn another_engine_gets_no_tier_questions() {
    // The mock answers anything, sure: were the tier questions asked, a head would decide.
    let env = TestEnv::with_mock(
        "[routing]\nenabled = true\nhint = true\ntier_head = true\ntier_head_min_confidence = 0.0\n[providers.mock]\nanswer = \"yes\"\n",
    );
    let v = route_json(&env, DESIGN);
    assert_eq!(v["routing"]["tier_head"], Value::Null, "{v}");
    assert_eq!((&v["routing"]["tier"], &v["routing"]["rule"]), (&json!("opus"), &json!(1)), "{v}");
}

#[test]
fn config_check_names_a_bad_tier_head_key() {
    let env = TestEnv::with_mock("[routing]\ntier_head = \"yes\"\ntier_head_min_confidence = 1.5\n");
    let out = env.run(&["config", "check"], "");
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    let errors = stderr(&out);
    for key in ["routing.tier_head ", "routing.tier_head_min_confidence"] {
        assert!(errors.contains(key), "{key} missing from {errors}");
    }
    let env = TestEnv::with_mock("[routing]\ntier_head = true\ntier_head_min_confidence = 0.7\n");
    let out = env.run(&["config", "show"], "");
    let show = stdout(&out);
    assert!(show.lines().any(|l| l.starts_with("routing.tier_head = true")), "{show}");
    assert!(show.lines().any(|l| l.starts_with("routing.tier_head_min_confidence = 0.7")), "{show}");
}

#[test]
fn a_local_model_without_tier_heads_asks_no_one_the_tier() {
    let Some(dir) = model_dir() else { return };
    let Some(mock) = crate::engines_systemone::Mock::start(&[]) else { return };
    // The model under another name, with the four feature heads fitted for it and no tier heads.
    let shipped: Value =
        serde_json::from_str(include_str!("../../calibration/local-heads.json")).expect("the shipped heads");
    let mut heads: Vec<Value> = shipped["heads"]
        .as_array()
        .expect("heads")
        .iter()
        .filter(|h| {
            ["read_only", "design", "review", "specified"].contains(&h["question"].as_str().unwrap_or_default())
        })
        .cloned()
        .collect();
    assert_eq!(heads.len(), 4);
    for h in &mut heads {
        h["model"] = json!("my-minilm");
    }
    let mut env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\nfallback = [\"systemone\"]\ntimeout_s = 30\n[providers.local]\nmodel = \"my-minilm\"\n\
         model_dir = {dir:?}\n[routing]\nenabled = true\nhint = true\nbudget_ms = 60000\ntier_head = true\n\
         tier_head_min_confidence = 0.0\n"
    ));
    std::fs::create_dir_all(&env.install_dir).unwrap();
    let file = json!({"format": "system1-local-heads", "version": 1, "heads": heads});
    std::fs::write(env.install_dir.join("local-heads.json"), file.to_string()).unwrap();
    env.set_env("SYSTEM1_SYSTEMONE_ENDPOINT", &mock.url());
    let v = route_json(&env, DESIGN);
    // The features are the local engine's; the tier questions were never put, so the mock saw nothing.
    assert_eq!(v["routing"]["provider"], "local", "{v}");
    assert_eq!(v["routing"]["tier_head"], Value::Null, "{v}");
    assert_eq!((&v["routing"]["tier"], &v["routing"]["rule"]), (&json!("opus"), &json!(1)), "{v}");
    assert_eq!(mock.decisions(), 0, "the tier questions went to the fallback: {v}");
}
