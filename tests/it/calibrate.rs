//! `system1 calibrate` and `system1 evaluate` through the real binary, with the mock engine (whose
//! per-question answers and fixed confidence make every figure computable by hand here).

use crate::support::fake_http;
use crate::support::{TestEnv, stderr, stdout, write};
use serde_json::{Value, json};

fn log_path(env: &TestEnv) -> std::path::PathBuf {
    env.install_dir.join("logs").join("routing.jsonl")
}

fn write_log(env: &TestEnv, entries: &[Value]) {
    write(&log_path(env), &entries.iter().map(|e| format!("{e}\n")).collect::<String>());
}

fn read_log(env: &TestEnv) -> Vec<Value> {
    std::fs::read_to_string(log_path(env)).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn json_out(env: &TestEnv, args: &[&str]) -> Value {
    let out = env.run(args, "");
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)))
}

const PROMPT: &str = "Refactor the order service so payment and shipping are separate modules with clear interfaces";

fn labels(ro: bool, de: bool, rv: bool, sp: bool) -> Value {
    json!({"read_only": ro, "design": de, "review": rv, "specified": sp})
}

#[test]
fn pending_then_label_through_the_log() {
    let env = TestEnv::with_mock("");
    write_log(
        &env,
        &[
            json!({"id": "p1", "source": "prompt", "prompt": PROMPT, "features": {"design": {"answer": true, "confidence": 0.8}}, "rule_tier": "opus"}),
            json!({"id": "a1", "source": "agent", "prompt": "brief", "tool_use_id": "t1", "outcome": "failed", "outcome_source": "auto", "outcome_doubtful": "same-role re-spawn", "labels": labels(false, false, false, true), "label_tier": "sonnet"}),
            json!({"id": "s1", "source": "skill", "prompt": PROMPT}),
        ],
    );
    let v = json_out(&env, &["calibrate", "pending"]);
    let ids: Vec<&str> = v["entries"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec!["p1", "a1"]);
    assert_eq!(v["entries"][0]["needs"], json!(["labels", "tier"]));
    assert_eq!(v["entries"][0]["prompt"], PROMPT);
    assert_eq!(v["entries"][1]["needs"], json!(["outcome"]));
    assert_eq!(v["tally"]["pending"], 2);

    let args = ["calibrate", "label", "--id", "p1", "--feature", "read_only=false", "--feature", "design=true"];
    let out = env.run(
        &[&args[..], &["--feature", "review=false", "--feature", "specified=false", "--tier", "opus"]].concat(),
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = env.run(&["calibrate", "label", "--id", "a1", "--outcome", "succeeded"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let log = read_log(&env);
    assert_eq!(log[0]["labels"], labels(false, true, false, false));
    assert_eq!((log[0]["label_tier"].as_str(), log[0]["labelled_by"].as_str()), (Some("opus"), Some("user")));
    assert_eq!((log[1]["outcome"].as_str(), log[1]["outcome_source"].as_str()), (Some("succeeded"), Some("user")));
    assert!(log[1].get("outcome_doubtful").is_none());
    assert_eq!(log[2], json!({"id": "s1", "source": "skill", "prompt": PROMPT}), "other entries untouched");
    assert_eq!(json_out(&env, &["calibrate", "pending"])["tally"]["pending"], 0);

    // Bad labels are usage errors and change nothing.
    let before = std::fs::read_to_string(log_path(&env)).unwrap();
    for bad in [
        vec!["calibrate", "label", "--id", "p1", "--feature", "vibes=true"],
        vec!["calibrate", "label", "--id", "p1", "--tier", "gpt"],
        vec!["calibrate", "label", "--id", "p1", "--outcome", "failed"],
        vec!["calibrate", "label", "--id", "nope", "--tier", "haiku"],
    ] {
        let out = env.run(&bad, "");
        assert!(!out.status.success(), "{bad:?} should fail");
        assert!(!stderr(&out).is_empty());
    }
    assert_eq!(std::fs::read_to_string(log_path(&env)).unwrap(), before);
}

/// The routing seed set, read here from the file (the set grows, so no count is written down here).
fn routing_seeds() -> Vec<Value> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/calibration/routing.jsonl")).unwrap();
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The seed set's share of prompts whose label for `feature` equals `answer`.
fn seed_share(feature: &str, answer: bool) -> f64 {
    let seeds = routing_seeds();
    seeds.iter().filter(|s| s["labels"][feature] == answer).count() as f64 / seeds.len() as f64
}

/// With one fixed confidence c and a share a of right answers, the NLL-optimal temperature solves
/// sigmoid(logit(c) / T) = a, so T = logit(c) / logit(a).
fn optimal_t(c: f64, a: f64) -> f64 {
    let logit = |p: f64| (p / (1.0 - p)).ln();
    logit(c) / logit(a)
}

const MOCK: &str = "[providers.mock]\nconfidence = 0.7\nanswers = { read_only = \"yes\", design = \"no\", review = \"no\", specified = \"yes\", decision = \"yes\" }\n";

#[test]
fn fit_on_the_seed_sets_matches_temperatures_computed_here() {
    let env = TestEnv::with_mock(MOCK);
    let svg = env.root.join("reliability.svg");
    let out = env.run(&["calibrate", "fit", "--apply", "--plot", svg.to_str().unwrap()], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let n = routing_seeds().len();
    assert!(text.contains(&format!("design  [mock/mock]  n={n} (0 log + {n} seed)")), "{text}");

    let cal: Value =
        serde_json::from_str(&std::fs::read_to_string(env.install_dir.join("calibration.json")).unwrap()).unwrap();
    assert_eq!(cal["format"], "system1-calibration");
    let t = |q: &str| {
        cal["fits"].as_array().unwrap().iter().find(|f| f["question"] == q).map(|f| f["temperature"].as_f64().unwrap())
    };
    // design: the mock says "no"; right on every prompt not labelled design.
    let want = optimal_t(0.7, seed_share("design", false));
    assert!((t("design").unwrap() - want).abs() < 1e-3, "{:?} vs {want}", t("design"));
    let want = optimal_t(0.7, seed_share("review", false));
    assert!((t("review").unwrap() - want).abs() < 1e-3);
    let fit = cal["fits"].as_array().unwrap().iter().find(|f| f["question"] == "design").unwrap();
    assert_eq!(fit["provider"], "mock");
    assert_eq!(fit["n"], n);
    // The option-count fallback is written too.
    assert!(cal["fits"].as_array().unwrap().iter().any(|f| f["options"] == 2 && f.get("question").is_none()));
    // No threshold makes every feature 85% right with these answers: the config is not touched.
    assert!(text.contains("no threshold up to 0.90"), "{text}");
    let cfg = std::fs::read_to_string(&env.config).unwrap();
    assert!(!cfg.contains("min_confidence"), "{cfg}");
    // Its answers are the same for every prompt, so no rule tells them apart: the learned rule is
    // the most common tier (sonnet, 43%), which beats the configured rule's haiku for all (28%).
    assert!(cfg.contains("\ndefault_tier = \"sonnet\"\nrules = []\n"), "{cfg}");
    let doc = std::fs::read_to_string(&svg).unwrap();
    assert!(doc.starts_with("<svg") && doc.contains("design") && doc.contains("circle"));

    // The gateway now uses the local fit: the destructive question comes back calibrated, at
    // sigmoid(logit(0.7) / T) with the T just written.
    let t_d = t("Is this shell command destructive?").unwrap();
    // (It abstains: the calibrated confidence is below the gateway's 0.6; exit code 4 says so.)
    let out = env.run(&["decide", "--question", "Is this shell command destructive?", "--json"], "");
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["calibrated"], true, "{v}");
    let want = 1.0 / (1.0 + (-(0.7f64 / 0.3).ln() / t_d).exp());
    assert!((v["confidence"].as_f64().unwrap() - want).abs() < 1e-5, "{v} vs {want}");
}

#[test]
fn fit_from_the_log_sets_the_threshold_and_keeps_the_config() {
    let env = TestEnv::new();
    env.write_config(&format!(
        "# my settings\n[gateway]\nprovider = \"mock\"\n\n[routing]\nenabled = true   # keep me\nmin_confidence = 0.6\nhint = false\n\n{MOCK}"
    ));
    // 20 labelled prompts; the mock is right on 18 of them for every feature.
    let entries: Vec<Value> = (0..20)
        .map(|i| {
            let right = i >= 2;
            json!({"id": format!("p{i}"), "source": "prompt", "prompt": format!("{PROMPT} number {i}"),
                   "labels": labels(right, !right, !right, right)})
        })
        .collect();
    write_log(&env, &entries);
    // Asking for 95% accuracy: impossible at 90% right, nothing changes.
    let out = env.run(&["calibrate", "fit", "--no-seeds", "--apply", "--target-accuracy", "0.95"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("min_confidence stays 0.60"), "{}", stdout(&out));
    assert!(std::fs::read_to_string(&env.config).unwrap().contains("min_confidence = 0.6\n"));
    // 85%: every feature is 90% right at any covered threshold, so the lowest, 0.50, is chosen.
    let svg = env.root.join("reliability.svg");
    let out = env.run(&["calibrate", "fit", "--no-seeds", "--apply", "--plot", svg.to_str().unwrap()], "");
    assert!(out.status.success(), "{}", stderr(&out));
    crate::support::snapshots(&env).bind(|| {
        insta::assert_snapshot!("calibrate_fit_log_only", stdout(&out));
        insta::assert_snapshot!("calibrate_reliability_svg", std::fs::read_to_string(&svg).unwrap());
    });
    let cfg = std::fs::read_to_string(&env.config).unwrap();
    assert!(cfg.contains("[routing]\nenabled = true   # keep me\nmin_confidence = 0.5\nhint = false\n"), "{cfg}");
    assert!(cfg.starts_with("# my settings\n"));
    let cal: Value =
        serde_json::from_str(&std::fs::read_to_string(env.install_dir.join("calibration.json")).unwrap()).unwrap();
    // 90% right at 0.7 wants T = 0.386, below the clamp: 0.5 is written, with the fitted value.
    let want = optimal_t(0.7, 0.9);
    assert!(want < 0.5);
    for f in ["read_only", "design", "review", "specified"] {
        let fit = cal["fits"].as_array().unwrap().iter().find(|x| x["question"] == f).unwrap();
        assert_eq!(fit["temperature"].as_f64(), Some(0.5), "{f}: {fit}");
        assert!((fit["clamped"].as_f64().unwrap() - want).abs() < 1e-3, "{f}: {fit}");
    }
    // The config still loads cleanly, with the new threshold.
    let out = env.run(&["config", "check"], "");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}

/// 20 log entries labelled with `tier`, each with four feature labels.
fn tiered_log(tier: &str) -> Vec<Value> {
    (0..20)
        .map(|i| {
            json!({"id": format!("t{i}"), "source": "prompt", "prompt": format!("{PROMPT} number {i}"),
                   "labels": labels(false, true, false, false), "label_tier": tier})
        })
        .collect()
}

const DESIGN_MOCK: &str = "[providers.mock]\nconfidence = 0.9\nanswers = { read_only = \"no\", design = \"yes\", review = \"no\", specified = \"no\" }\n";

#[test]
fn fit_applies_a_learned_rule_only_where_it_beats_the_configured_one() {
    // The mock says design to every prompt, so the configured rule says opus for each.
    let config = format!("[gateway]\nprovider = \"mock\"\n\n[routing]\nhint = false  # mine\n\n{DESIGN_MOCK}");

    // Every prompt labelled opus: the configured rule is right on all 20, and the learned one
    // (always opus) is only as good, so --apply leaves the rule alone.
    let env = TestEnv::new();
    env.write_config(&config);
    write_log(&env, &tiered_log("opus"));
    let out = env.run(&["calibrate", "fit", "--no-seeds", "--apply"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Routing rule learned from 20 labelled tiers, 10-fold cross-validated"), "{text}");
    assert!(
        text.contains("the configured rule                100.0%; hint on 100.0% of items, 100.0% agree"),
        "{text}"
    );
    assert!(text.contains("  default_tier = \"opus\"\n  rules = []\n"), "{text}");
    assert!(
        text.contains("It does not beat the configured rule on held-out items (100.0% against 100.0%), so --apply leaves [routing] rules as they are."),
        "{text}"
    );
    let cfg = std::fs::read_to_string(&env.config).unwrap();
    assert!(!cfg.contains("rules") && !cfg.contains("default_tier"), "{cfg}");

    // Every prompt labelled sonnet: the configured rule is never right, the learned one (no rule,
    // sonnet) always, so --apply writes it into [routing] as data, and the hook's rule follows it.
    let env = TestEnv::new();
    env.write_config(&config);
    write_log(&env, &tiered_log("sonnet"));
    let out = env.run(&["calibrate", "fit", "--no-seeds"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("the configured rule                0.0%; hint on 100.0% of items, 0.0% agree"), "{text}");
    assert!(
        text.contains("a rule learned from these labels   100.0%; hint on 100.0% of items, 100.0% agree"),
        "{text}"
    );
    assert!(!std::fs::read_to_string(&env.config).unwrap().contains("rules"), "nothing written without --apply");
    let out = env.run(&["calibrate", "fit", "--no-seeds", "--apply"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Wrote the learned rule to [routing] in "), "{}", stdout(&out));
    let cfg = std::fs::read_to_string(&env.config).unwrap();
    // Under the header (the threshold, also written, went there too), the user's line kept.
    assert!(cfg.contains("[routing]\n# Learned by `system1 calibrate fit`: "), "{cfg}");
    assert!(cfg.contains("\nmin_confidence = 0.5\nhint = false  # mine\n"), "{cfg}");
    assert!(
        cfg.contains("from 20 labelled tiers; 100.0% agreement held out, against 0.0% for the rule it replaced"),
        "{cfg}"
    );
    assert!(cfg.contains("\ndefault_tier = \"sonnet\"\nrules = []\n"), "{cfg}");
    let out = env.run(&["config", "check"], "");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let out = env.run(&["route", "--prompt", PROMPT], "");
    assert!(stdout(&out).contains("tier: sonnet (default"), "{}", stdout(&out));
    // Fitted again, the rule in force is the learned one: nothing more to write.
    let out = env.run(&["calibrate", "fit", "--no-seeds", "--apply"], "");
    assert!(stdout(&out).contains("It is the configured rule."), "{}", stdout(&out));
}

const EVAL_MOCK: &str = "[providers.mock]\nconfidence = 0.9\nanswers = { read_only = \"no\", design = \"yes\", review = \"no\", specified = \"no\" }\n";

fn spawn(id: &str, l: Value, outcome: &str, tier: &str) -> Value {
    json!({"id": id, "source": "agent", "prompt": format!("{PROMPT} ({id})"), "tool_use_id": format!("t-{id}"),
           "labels": l, "outcome": outcome, "outcome_tier": tier, "outcome_source": "auto"})
}

fn evaluate(env: &TestEnv, flags: &[&str]) -> Value {
    evaluate_with(env, "mock", flags)
}

fn evaluate_with(env: &TestEnv, provider: &str, flags: &[&str]) -> Value {
    json_out(env, &[&["evaluate", "--provider", provider, "--json"][..], flags].concat())
}

#[test]
fn evaluate_metrics_and_verdict_with_a_fake_engine() {
    let env = TestEnv::with_mock(EVAL_MOCK);
    // The engine always says design (rule: opus) at 0.9, which matches these labels.
    let design = labels(false, true, false, false);
    let mut log = vec![
        spawn("f1", design.clone(), "failed", "sonnet"),
        spawn("f2", design.clone(), "failed", "haiku"),
        spawn("f3", design.clone(), "failed", "sonnet"),
        spawn("s1", design.clone(), "succeeded", "opus"),
        json!({"id": "p0", "source": "prompt", "prompt": PROMPT}),
    ];
    write_log(&env, &log);
    let v = evaluate(&env, &["--min-failures", "3"]);
    assert_eq!(v["verdict"], "READY", "{v}");
    let r = &v["report"];
    assert_eq!(r["rows"], 4, "the unlabelled prompt is not evaluated");
    let design_f = r["features"].as_array().unwrap().iter().find(|f| f["feature"] == "design").unwrap();
    assert_eq!((design_f["accuracy"].as_f64(), design_f["accuracy_at_threshold"].as_f64()), (Some(1.0), Some(1.0)));
    assert_eq!(design_f["coverage_at_threshold"], 1.0);
    assert_eq!(r["rule_engine"]["safety"], 1.0);
    assert_eq!((r["rule_engine"]["agreement"].as_f64(), r["rule_engine"]["savings"].as_f64()), (Some(1.0), Some(0.0)));
    assert_eq!(v["bars"]["min_failures"], 3);
    // The failures bar: 3 labelled, 4 asked for.
    assert_eq!(evaluate(&env, &["--min-failures", "4"])["verdict"], "NOT READY");

    // A fourth failure that ran on opus: the rule's opus is not higher. Safety 3/4.
    log.push(spawn("f4", design.clone(), "failed", "opus"));
    write_log(&env, &log);
    let v = evaluate(&env, &["--min-failures", "3"]);
    assert_eq!(v["report"]["rule_engine"]["safety"], 0.75);
    assert_eq!(v["verdict"], "NOT READY");
    assert_eq!(evaluate(&env, &["--min-failures", "3", "--min-safety", "0.75"])["verdict"], "READY");

    // A prompt labelled not-design: design is 5 of 6 right (83.3%) at 0.9.
    log.push(json!({"id": "p1", "source": "prompt", "prompt": format!("{PROMPT} again"), "labels": labels(false, false, false, false)}));
    write_log(&env, &log);
    let v = evaluate(&env, &["--min-failures", "3", "--min-safety", "0.75"]);
    let design_f =
        v["report"]["features"].as_array().unwrap().iter().find(|f| f["feature"] == "design").unwrap().clone();
    assert!((design_f["accuracy_at_threshold"].as_f64().unwrap() - 5.0 / 6.0).abs() < 1e-12);
    assert_eq!(v["verdict"], "NOT READY");
    assert_eq!(
        evaluate(&env, &["--min-failures", "3", "--min-safety", "0.75", "--min-feature-accuracy", "0.83"])["verdict"],
        "READY"
    );

    // The text report names the bars as flags and the teacher's ceiling.
    let out = env.run(&["evaluate", "--provider", "mock"], "");
    let text = stdout(&out);
    assert!(text.contains("Verdict: NOT READY"), "{text}");
    assert!(text.contains("--min-feature-accuracy 0.85 --min-safety 0.95 --min-failures 30"), "{text}");
    assert!(text.contains("teacher labels (ceiling)"), "{text}");
}

/// Spawns with an outcome but no feature labels: the teacher-labels column says n/a, not `0/1 0.0%`
/// (which reads as "unsafe even on the teacher labels"), and the features say nothing was labelled.
#[test]
fn evaluate_says_n_a_where_nothing_was_labelled() {
    let env = TestEnv::with_mock(EVAL_MOCK);
    let bare = |id: &str, outcome: &str, tier: &str| {
        json!({"id": id, "source": "agent", "prompt": format!("{PROMPT} ({id})"), "tool_use_id": format!("t-{id}"),
               "outcome": outcome, "outcome_tier": tier, "outcome_source": "auto"})
    };
    write_log(&env, &[bare("f1", "failed", "sonnet"), bare("s1", "succeeded", "opus")]);
    let v = evaluate(&env, &[]);
    let t = &v["report"]["rule_teacher"];
    assert_eq!((t["failures"].as_u64(), t["successes"].as_u64(), t["safety"].is_null()), (Some(0), Some(0), true));
    // The engine's answers are judged: design at 0.9 picks opus, higher than sonnet; the same as opus.
    let e = &v["report"]["rule_engine"];
    assert_eq!((e["safety"].as_f64(), e["agreement"].as_f64()), (Some(1.0), Some(1.0)));
    let out = env.run(&["evaluate", "--provider", "mock"], "");
    let text = stdout(&out);
    let line = |start: &str| text.lines().find(|l| l.trim_start().starts_with(start)).unwrap_or_default().to_string();
    assert!(line("safety").ends_with("1/1 100.0%                      n/a"), "{text}");
    assert!(line("savings").ends_with("0/1 0.0%                      n/a"), "{text}");
    assert!(line("design").contains("n/a") && line("design").ends_with("nothing labelled"), "{text}");
    assert!(text.contains("no spawn with an outcome has all four feature labels"), "{text}");
    assert!(text.contains("design: no entry has a label for it"), "{text}");
    assert!(text.contains("1 failed spawn labelled, fewer than 30"), "one, and singular: {text}");
}

#[test]
fn evaluate_without_labels_or_engine_is_a_clear_error() {
    let env = TestEnv::with_mock(EVAL_MOCK);
    let out = env.run(&["evaluate", "--provider", "mock"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no routing-log entry"), "{}", stderr(&out));
    let out = env.run(&["evaluate", "--provider", "nonsense"], "");
    assert_eq!(out.status.code(), Some(2));
}

/// An engine that answers nothing is not judged NOT READY: evaluate exits 1, says the engine is
/// not answering, and gives the fix (here: Laya is not installed, so install and start it).
#[test]
fn evaluate_an_engine_that_is_not_answering_is_an_error_with_the_fix() {
    let env = TestEnv::new();
    env.write_config("[gateway]\nprovider = \"laya\"\n[providers.laya]\nendpoint = \"http://127.0.0.1:9\"\n");
    write_log(
        &env,
        &[json!({"id": "p1", "source": "prompt", "prompt": PROMPT, "labels": labels(false, true, false, false)})],
    );
    for args in [&["evaluate", "--provider", "laya"][..], &["evaluate", "--provider", "laya", "--json"]] {
        let out = env.run(args, "");
        let (text, err) = (stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(1), "{args:?}: {text}{err}");
        assert!(err.contains("laya is not answering, so nothing was evaluated"), "{err}");
        assert!(err.contains("engine install laya") && err.contains("engine start laya"), "{err}");
        assert!(!text.contains("NOT READY"), "{text}");
    }
}

/// A loopback laya-serve: design is "yes" at 0.9 when the text starts with "Design", else "no" at
/// 0.6; every other feature "yes" at 0.55.
fn laya_reply(body: &Value) -> Value {
    let state = body["state"].as_str().unwrap_or("");
    let mut answers = serde_json::Map::new();
    for (id, q) in body["questions"].as_object().expect("questions") {
        let labels: Vec<&str> = q["criteria"].as_object().expect("criteria").keys().map(String::as_str).collect();
        let (pick, p) = match id.as_str() {
            "design" if state.starts_with("Design") => ("yes", 0.9),
            "design" => ("no", 0.6),
            _ => ("yes", 0.55),
        };
        let probs: serde_json::Map<String, Value> =
            labels.iter().map(|l| (l.to_string(), json!(if *l == pick { p } else { 1.0 - p }))).collect();
        answers.insert(
            id.clone(),
            json!({"type": "choice", "choice": pick, "probabilities": probs, "answer_confidence": p}),
        );
    }
    json!({"model": "laya-rl-agent", "answers": answers,
           "routing": {"model": "typed-decisions", "repo": "convaiinnovations/laya/typed-decisions", "reason": "explicit"}})
}

#[test]
fn evaluate_against_a_laya_fake_uses_the_calibration_in_force() {
    let server = fake_http::FakeServer::start(|r: &fake_http::Request| match r.path.as_str() {
        "/v1/systemone" => fake_http::Reply::json(200, &laya_reply(&r.json())),
        _ => fake_http::Reply::json(200, &json!({"status": "ok"})),
    });
    let mut env = TestEnv::new();
    env.write_config("[gateway]\nprovider = \"laya\"\n[routing]\nmin_confidence = 0.7\n");
    env.set_env("SYSTEM1_LAYA_ENDPOINT", &server.url());
    let entry = |id: &str, prompt: &str, design: bool| json!({"id": id, "source": "prompt", "prompt": prompt, "labels": {"design": design}});
    write_log(
        &env,
        &[
            entry("a", "Design the cache layer for the API gateway, with eviction and warm-up", true),
            entry("b", "Design the retry queue for webhooks so deliveries survive restarts", true),
            entry("c", "Fix the login bug where an empty password is accepted when the server is slow", false),
            entry("d", "Rename the helper and then pick a data model for the new billing tables", true),
        ],
    );
    // A local fit for Laya's design, T = 0.31, applies: p becomes p^(1/T) / (p^(1/T) + (1-p)^(1/T)).
    let fit = json!({"format": "system1-calibration", "version": 1, "fits": [
        {"provider": "laya", "model": "typed-decisions", "question": "design", "temperature": 0.31}]});
    write(&env.install_dir.join("calibration.json"), &fit.to_string());
    let cal = |p: f64| {
        let b = 1.0 / 0.31;
        p.powf(b) / (p.powf(b) + (1.0 - p).powf(b))
    };
    assert!(cal(0.6) > 0.7 && cal(0.6) < 0.8, "0.6 calibrated clears 0.7, raw it would not");
    let v = evaluate_with(&env, "laya", &[]);
    let d = v["report"]["features"].as_array().unwrap().iter().find(|f| f["feature"] == "design").unwrap().clone();
    // a, b, c right; d wrong (the engine says no): 3/4.
    assert_eq!(d["accuracy"], 0.75);
    // P(yes): a, b cal(0.9); c, d 1 - cal(0.6). Positives a, b, d; negative c: a > c, b > c, d ties c.
    assert!((d["auroc"].as_f64().unwrap() - 2.5 / 3.0).abs() < 1e-12, "{d}");
    // All four calibrated confidences reach 0.7.
    assert_eq!((d["coverage_at_threshold"].as_f64(), d["accuracy_at_threshold"].as_f64()), (Some(1.0), Some(0.75)));
    assert_eq!(v["engine"], "laya/typed-decisions");
    // At 0.8 only the two confident design answers (both right) are left.
    env.write_config("[gateway]\nprovider = \"laya\"\n[routing]\nmin_confidence = 0.8\n");
    let v = evaluate_with(&env, "laya", &[]);
    let d = v["report"]["features"].as_array().unwrap().iter().find(|f| f["feature"] == "design").unwrap().clone();
    assert_eq!((d["coverage_at_threshold"].as_f64(), d["accuracy_at_threshold"].as_f64()), (Some(0.5), Some(1.0)));
    // Features without labels are reported as such, not as failures of the engine.
    let ro = v["report"]["features"].as_array().unwrap().iter().find(|f| f["feature"] == "read_only").unwrap().clone();
    assert_eq!((ro["labelled"].as_u64(), ro["accuracy"].is_null()), (Some(0), true));
}

#[test]
fn fit_with_the_engine_down_says_why_and_writes_nothing() {
    let env = TestEnv::with_mock("[providers.mock]\nfail = \"error\"\n");
    let out = env.run(&["calibrate", "fit", "--apply"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no labelled answers to fit on") && stderr(&out).contains("configured to fail"),
        "{}",
        stderr(&out)
    );
    assert!(!env.install_dir.join("calibration.json").exists());
}

/// An engine that does not answer any entry gets no verdict: evaluate exits 1 and says why and what
/// to do, with the fix its provider gives for the cause (here the mock's setting).
#[test]
fn evaluate_with_an_engine_that_is_down_gives_its_fix() {
    let env = TestEnv::with_mock("[providers.mock]\nfail = \"error\"\ndown = true\n");
    write_log(&env, &[spawn("f1", labels(false, true, false, false), "failed", "sonnet")]);
    let fix = "the mock engine is configured as down: remove `down = true` from [providers.mock]";
    for json in [false, true] {
        let args: &[&str] =
            if json { &["evaluate", "--provider", "mock", "--json"] } else { &["evaluate", "--provider", "mock"] };
        let out = env.run(args, "");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{}{err}", stdout(&out));
        assert!(err.contains("mock is not answering, so nothing was evaluated") && err.contains(fix), "{err}");
        assert!(!stdout(&out).contains("NOT READY"), "{}", stdout(&out));
    }

    // An engine that answers gives no such line.
    let env = TestEnv::with_mock(EVAL_MOCK);
    write_log(&env, &[spawn("f1", labels(false, true, false, false), "failed", "sonnet")]);
    assert!(evaluate(&env, &[])["engine_down"].is_null());
}

/// One labelled entry with one feature labelled: what `calibrate fit` counts (entries, answers,
/// bins) is said in the singular.
#[test]
fn fit_on_one_entry_says_its_counts_in_the_singular() {
    let env = TestEnv::with_mock(MOCK);
    write_log(
        &env,
        &[json!({"id": "p0", "source": "prompt", "prompt": format!("{PROMPT} once"), "labels": {"design": false}})],
    );
    let out = env.run(&["calibrate", "fit", "--no-seeds", "--apply"], "");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains("Fitted on 1 labelled log entry (1 answer)."), "{text}");
    assert!(text.contains("(1 equal-mass bin of 1 answer)"), "{text}");
}
