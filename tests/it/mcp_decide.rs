//! `system1_decide`, `system1_health` and `system1_capabilities` through the real server: every
//! validation rule and error code of schema "1", yes/no, abstention, each failure kind with its
//! attempt, provider limits, pause, broken configs, environment overrides and calibration.

use std::time::Instant;

use crate::support::{CUT_OFF, TestEnv, write};
use serde_json::{Value, json};

const NEWEST: &str = "2025-11-25";

/// One tool call on a fresh server in `env`; returns the whole `result` (isError, structuredContent).
fn call_result(env: &TestEnv, tool: &str, args: Value) -> Value {
    let mut c = env.mcp();
    c.initialize(NEWEST);
    let reply = c.request("tools/call", json!({"name": tool, "arguments": args}));
    let result = reply.get("result").unwrap_or_else(|| panic!("not a tool result: {reply}")).clone();
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().expect("text")).expect("JSON text");
    assert_eq!(text, result["structuredContent"], "the text mirrors the structured result");
    result
}

fn decide(env: &TestEnv, args: Value) -> Value {
    let r = call_result(env, "system1_decide", args);
    let s = r["structuredContent"].clone();
    assert_eq!(r["isError"], s["status"] == "error", "isError matches status: {s}");
    assert_every_response_field(&s);
    s
}

fn health(env: &TestEnv) -> Value {
    call_result(env, "system1_health", json!({}))["structuredContent"].clone()
}

fn assert_every_response_field(s: &Value) {
    for key in [
        "schema_version",
        "request_id",
        "status",
        "decision",
        "confidence",
        "probabilities",
        "calibrated",
        "rationale",
        "provider",
        "latency_ms",
        "attempts",
        "error",
    ] {
        assert!(s.get(key).is_some(), "response field {key} missing: {s}");
    }
    assert_eq!(s["schema_version"], "1");
    assert!(s["latency_ms"].as_f64().is_some_and(|l| l >= 0.0));
    for a in s["attempts"].as_array().expect("attempts") {
        for key in ["provider", "outcome", "latency_ms", "detail"] {
            assert!(a.get(key).is_some(), "attempt field {key} missing: {a}");
        }
    }
}

fn error_code(s: &Value) -> &str {
    assert_eq!(s["status"], "error", "{s}");
    assert_eq!(s["decision"], Value::Null);
    s["error"]["code"].as_str().expect("error code")
}

#[test]
fn a_decision_has_every_field_of_schema_1() {
    let env = TestEnv::with_mock("");
    let s = decide(
        &env,
        json!({"question": "Which colour?", "options": ["red", "green", "blue"], "request_id": "req-1",
                                "context": {"theme": "dark"}, "schema_version": "1"}),
    );
    assert_eq!(s["status"], "decided");
    assert_eq!(s["decision"], "red");
    assert_eq!(s["confidence"], 0.9);
    assert_eq!(s["probabilities"], json!({"red": 0.9, "green": 0.05, "blue": 0.05}));
    assert_eq!(s["calibrated"], false);
    assert_eq!(s["provider"], "mock");
    assert_eq!(s["request_id"], "req-1");
    assert_eq!(s["error"], Value::Null);
    assert!(s["rationale"].as_str().is_some_and(|r| r.contains("red=0.90")), "{s}");
    let attempts = s["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0]["provider"], "mock");
    assert_eq!(attempts[0]["outcome"], "ok");
    assert_eq!(attempts[0]["detail"], Value::Null);
    // A generated request id when none is sent, unique per call.
    let a = decide(&env, json!({"question": "q?"}));
    let b = decide(&env, json!({"question": "q?"}));
    assert!(a["request_id"].as_str().is_some_and(|r| !r.is_empty()));
    assert_ne!(a["request_id"], b["request_id"]);
}

#[test]
fn without_options_the_question_is_answered_yes_or_no() {
    let env = TestEnv::with_mock("");
    let s = decide(&env, json!({"question": "Is the build green?"}));
    assert_eq!(s["decision"], "yes");
    assert_eq!(s["probabilities"], json!({"yes": 0.9, "no": 0.1}));
    let env = TestEnv::with_mock("[providers.mock]\nanswer = \"no\"\nconfidence = 0.75\n");
    let s = decide(&env, json!({"question": "Is the build green?", "options": null}));
    assert_eq!((s["decision"].as_str(), s["confidence"].as_f64()), (Some("no"), Some(0.75)));
}

#[test]
fn every_validation_rule_is_an_invalid_request_before_any_provider_runs() {
    // A provider that would fail loudly if it were asked.
    let env = TestEnv::with_mock("[providers.mock]\nfail = \"error\"\n");
    let many: Vec<String> = (0..257).map(|i| format!("o{i}")).collect();
    let cases = [
        (json!({}), "question is required"),
        (json!({"question": null}), "question is required"),
        (json!({"question": ""}), "must not be empty"),
        (json!({"question": "   "}), "must not be empty"),
        (json!({"question": 42}), "question must be a string"),
        (json!({"question": ["q"]}), "question must be a string"),
        (json!({"question": "x".repeat(8001)}), "8000"),
        (json!({"question": "q", "options": ["only"]}), "2 to 256"),
        (json!({"question": "q", "options": []}), "2 to 256"),
        (json!({"question": "q", "options": many}), "2 to 256"),
        (json!({"question": "q", "options": ["a", "a"]}), "duplicate"),
        (json!({"question": "q", "options": ["a", ""]}), "must not be empty"),
        (json!({"question": "q", "options": ["a", " "]}), "must not be empty"),
        (json!({"question": "q", "options": ["a", 2]}), "must be a string"),
        (json!({"question": "q", "options": ["a", "b".repeat(501)]}), "500"),
        (json!({"question": "q", "options": "a,b"}), "list"),
        (json!({"question": "q", "context": "dark"}), "context must be an object"),
        (json!({"question": "q", "context": [1]}), "context must be an object"),
        (json!({"question": "q", "min_confidence": 1.01}), "min_confidence"),
        (json!({"question": "q", "min_confidence": -0.1}), "min_confidence"),
        (json!({"question": "q", "min_confidence": "0.5"}), "min_confidence"),
        (json!({"question": "q", "request_id": ""}), "request_id"),
        (json!({"question": "q", "request_id": "r".repeat(129)}), "request_id"),
        (json!({"question": "q", "request_id": 5}), "request_id"),
        (json!({"question": "q", "schema_version": "2"}), "schema_version"),
        (json!({"question": "q", "schema_version": 1}), "schema_version"),
        (json!({"question": "q", "verbose": true}), "unknown field(s): verbose"),
        (json!({"question": "q", "Question": "q"}), "unknown field(s): Question"),
    ];
    let mut c = env.mcp();
    c.initialize(NEWEST);
    for (args, expected) in cases {
        let reply = c.request("tools/call", json!({"name": "system1_decide", "arguments": args}));
        assert_eq!(reply["result"]["isError"], true, "{args}");
        let s = &reply["result"]["structuredContent"];
        assert_every_response_field(s);
        assert_eq!(error_code(s), "invalid_request", "{args}: {s}");
        let message = s["error"]["message"].as_str().expect("message");
        assert!(message.contains(expected), "{args}: {message:?} should mention {expected:?}");
        assert_eq!(s["attempts"], json!([]), "no provider ran for {args}");
        assert_eq!(s["provider"], Value::Null);
    }
    // Limits are counted in characters: 8000 two-byte characters are fine, as are 256 options.
    let ok = TestEnv::with_mock("");
    let max: Vec<String> = (0..256).map(|i| format!("o{i}")).collect();
    assert_eq!(decide(&ok, json!({"question": "é".repeat(8000), "options": max}))["status"], "decided");
    assert_eq!(decide(&ok, json!({"question": "q", "request_id": "r".repeat(128)}))["request_id"], "r".repeat(128));
    // A valid request id is echoed even when the rest is invalid.
    let s = decide(&ok, json!({"question": "", "request_id": "keep-me"}));
    assert_eq!((error_code(&s), s["request_id"].as_str()), ("invalid_request", Some("keep-me")));
}

#[test]
fn each_failure_kind_has_its_code_and_its_attempt() {
    for (fail, outcome, code) in [
        ("error", "error", "provider_error"),
        ("timeout", "timeout", "provider_timeout"),
        ("malformed", "malformed", "malformed_response"),
    ] {
        let env = TestEnv::with_mock(&format!("timeout_s = 0.3\n[providers.mock]\nfail = \"{fail}\"\n"));
        let s = decide(&env, json!({"question": "q?"}));
        assert_eq!(error_code(&s), code, "{fail}: {s}");
        assert!(s["error"]["message"].as_str().is_some_and(|m| m.starts_with("mock: ")), "{s}");
        let attempts = s["attempts"].as_array().expect("attempts");
        assert_eq!(attempts.len(), 1);
        assert_eq!(attempts[0]["outcome"], outcome);
        assert!(attempts[0]["detail"].as_str().is_some_and(|d| !d.is_empty()));
        if fail == "timeout" {
            let ms = attempts[0]["latency_ms"].as_f64().expect("latency");
            assert!(ms >= 290.0, "cut off at the timeout, not before: {ms}");
        }
    }
}

#[test]
fn answers_are_validated_by_the_gateway() {
    for (mock, why) in [
        // A decision outside the options.
        ("answer = \"maybe\"", "not one of the options"),
        // Probabilities over other options than those asked.
        ("probabilities = { yes = 0.5, maybe = 0.5 }", "not an option"),
        // Probabilities that miss an option.
        ("answer = \"yes\"\nprobabilities = { yes = 1.0 }", "cover"),
        // A confidence outside [0, 1].
        ("probabilities = { yes = 1.5, no = -0.5 }", "[0, 1]"),
    ] {
        let env = TestEnv::with_mock(&format!("[providers.mock]\n{mock}\n"));
        let s = decide(&env, json!({"question": "q?"}));
        assert_eq!(error_code(&s), "malformed_response", "{mock}: {s}");
        assert_eq!(s["attempts"][0]["outcome"], "malformed");
        assert!(s["attempts"][0]["detail"].as_str().is_some_and(|d| d.contains(why)), "{mock}: {s}");
    }
}

#[test]
fn above_a_providers_own_option_limit_elimination_rounds_or_with_them_off_a_provider_error() {
    // The mock picks the first option it is shown: a of (a, b), c of (c, d), then a of (a, c).
    let env = TestEnv::with_mock("[providers.mock]\nmax_options = 3\n");
    let s = decide(&env, json!({"question": "q?", "options": ["a", "b", "c", "d"]}));
    assert_eq!(s["status"], "decided", "{s}");
    assert_eq!(s["decision"], "a");
    // The final's 0.9 and 0.1 over the two finalists; b and d were eliminated.
    assert_eq!(s["probabilities"], json!({"a": 0.9, "b": 0.0, "c": 0.1, "d": 0.0}));
    assert_eq!(
        s["attempts"][0]["detail"],
        "elimination: 4 options in 1 round (4 options in 2 groups of 2); final over 2 finalists: a, c; 2 engine requests in all"
    );
    let off = TestEnv::with_mock("tournament = false\n[providers.mock]\nmax_options = 3\n");
    let s = decide(&off, json!({"question": "q?", "options": ["a", "b", "c", "d"]}));
    assert_eq!((&s["status"], &s["error"]), (&json!("abstained"), &Value::Null), "{s}");
    assert_eq!(s["attempts"][0]["outcome"], "passed");
    assert!(s["attempts"][0]["detail"].as_str().is_some_and(|d| d.contains("limit of 3")), "{s}");
    assert_eq!(decide(&off, json!({"question": "q?", "options": ["a", "b", "c"]}))["status"], "decided");
    let caps = call_result(&off, "system1_capabilities", json!({}))["structuredContent"].clone();
    assert_eq!(caps["providers"]["mock"]["max_options"], 3);
    assert_eq!(caps["tournament"], false);
    assert_eq!(call_result(&env, "system1_capabilities", json!({}))["structuredContent"]["tournament"], true);
}

#[test]
fn below_the_threshold_the_gateway_abstains() {
    let env = TestEnv::with_mock("min_confidence = 0.95\n[providers.mock]\nconfidence = 0.9\n");
    let s = decide(&env, json!({"question": "q?"}));
    assert_eq!(s["status"], "abstained", "{s}");
    assert_eq!(s["decision"], Value::Null);
    assert_eq!(s["error"], Value::Null);
    assert_eq!(s["confidence"], 0.9, "the confidence is still reported");
    assert!(s["rationale"].as_str().is_some_and(|r| r.contains("below the threshold 0.95")), "{s}");
    assert_eq!(s["attempts"].as_array().map(Vec::len), Some(1), "no fallback after abstention");
    assert_eq!(s["attempts"][0]["outcome"], "ok");
    // The request's own threshold overrides the config, both ways.
    assert_eq!(decide(&env, json!({"question": "q?", "min_confidence": 0.5}))["status"], "decided");
    let strict = TestEnv::with_mock("");
    assert_eq!(decide(&strict, json!({"question": "q?", "min_confidence": 0.91}))["status"], "abstained");
    assert_eq!(decide(&strict, json!({"question": "q?", "min_confidence": 0.9}))["status"], "decided");
}

#[test]
fn when_the_provider_abstains_the_gateway_abstains() {
    let env = TestEnv::with_mock("[providers.mock]\nfail = \"abstain\"\n");
    let s = decide(&env, json!({"question": "q?", "min_confidence": 0.0}));
    assert_eq!(s["status"], "abstained");
    assert_eq!(s["decision"], Value::Null);
    assert_eq!(s["error"], Value::Null);
    assert_eq!(s["provider"], "mock");
    assert!(s["rationale"].as_str().is_some_and(|r| r.contains("abstain")), "{s}");
    let attempts = s["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0]["outcome"], "abstained");
}

#[test]
fn paused_means_abstain_with_a_rationale_and_health_paused() {
    let env = TestEnv::with_mock("");
    let pause = env.install_dir.join("paused");
    write(&pause, "paused\n");
    let mut c = env.mcp();
    c.initialize(NEWEST);
    let s = c.call("system1_decide", json!({"question": "q?"}));
    assert_eq!(s["status"], "abstained");
    assert_eq!(s["decision"], Value::Null);
    assert_eq!(s["attempts"], json!([]), "no engine is asked while paused");
    assert!(s["rationale"].as_str().is_some_and(|r| r.contains("paused")), "{s}");
    let h = c.call("system1_health", json!({}));
    assert_eq!((h["status"].as_str(), h["paused"].as_bool()), (Some("paused"), Some(true)), "{h}");
    // Resuming takes effect on the next call, with no restart.
    std::fs::remove_file(&pause).expect("resume");
    assert_eq!(c.call("system1_decide", json!({"question": "q?"}))["status"], "decided");
    assert_eq!(c.call("system1_health", json!({}))["status"], "ok");
}

#[test]
fn health_is_down_or_degraded_by_the_probes() {
    let env = TestEnv::with_mock("[providers.mock]\ndown = true\n");
    let h = health(&env);
    assert_eq!(h["status"], "down");
    assert_eq!(h["providers"][0]["ok"], false);
    assert!(h["providers"][0]["detail"].as_str().is_some_and(|d| d.contains("down")));
}

#[test]
fn a_broken_config_never_stops_the_server() {
    for (config, names) in [
        ("[gateway]\nprovider = \"mock\"\ntimeout_s = \"soon\"\n", "gateway.timeout_s"),
        ("[gateway]\nprovider = \"mock\"\nmin_confidence = 2\n", "gateway.min_confidence"),
        ("[gateway]\nprovider = \"mock\"\ncolour = \"red\"\n", "gateway.colour"),
        ("[gateway]\nprovider = \"nope\"\n", "gateway.provider"),
        ("[gateway]\nprovider = \"mock\"\n[providers.mock]\nfail = \"sometimes\"\n", "providers.mock.fail"),
        ("[gateway]\nprovider = \"mock\"\n[providers.mock]\nspeed = 3\n", "providers.mock.speed"),
        ("[gateway\nprovider = \"mock\"\n", "not valid TOML"),
    ] {
        let env = TestEnv::new();
        env.write_config(config);
        let h = health(&env);
        assert_eq!(h["status"], "down", "{config}: {h}");
        let errors = h["config_errors"].as_array().expect("config_errors");
        assert!(errors.iter().any(|e| e.as_str().is_some_and(|e| e.contains(names))), "{config}: {errors:?}");
        assert_eq!(h["config_file"], env.config.display().to_string());
        let s = decide(&env, json!({"question": "q?"}));
        assert_eq!(error_code(&s), "config_error", "{config}: {s}");
        assert!(s["error"]["message"].as_str().is_some_and(|m| m.contains(names)), "{config}: {s}");
        assert_eq!(s["attempts"], json!([]));
        let caps = call_result(&env, "system1_capabilities", json!({}))["structuredContent"].clone();
        assert!(caps["config_errors"].as_array().is_some_and(|e| !e.is_empty()));
    }
}

#[test]
fn an_api_key_in_the_config_file_is_a_config_error() {
    let env = TestEnv::with_mock("[providers.mock]\napi_key = \"sk-secret\"\n");
    let s = decide(&env, json!({"question": "q?"}));
    assert_eq!(error_code(&s), "config_error");
    let message = s["error"]["message"].as_str().expect("message");
    assert!(message.contains("providers.mock.api_key") && message.contains("SYSTEM1_MOCK_API_KEY"), "{message}");
    assert!(!message.contains("sk-secret"), "the secret is never repeated");
    assert_eq!(health(&env)["status"], "down");
}

#[test]
fn environment_variables_override_the_file() {
    // No config file at all: the environment alone picks the mock.
    let mut env = TestEnv::new();
    env.set_env("SYSTEM1_PROVIDER", "mock");
    assert_eq!(health(&env)["status"], "ok");
    assert_eq!(health(&env)["config_file"], Value::Null, "no file was read");

    let mut env = TestEnv::with_mock("min_confidence = 0.1\n[providers.mock]\nanswer = \"yes\"\n");
    env.set_env("SYSTEM1_MIN_CONFIDENCE", "0.95");
    env.set_env("SYSTEM1_MOCK_ANSWER", "no");
    let s = decide(&env, json!({"question": "q?"}));
    assert_eq!(s["status"], "abstained", "SYSTEM1_MIN_CONFIDENCE wins over the file: {s}");
    let s = decide(&env, json!({"question": "q?", "min_confidence": 0.0}));
    assert_eq!(s["decision"], "no", "SYSTEM1_MOCK_ANSWER wins over the file");

    let mut env = TestEnv::with_mock("timeout_s = 30\n");
    env.set_env("SYSTEM1_TIMEOUT_S", "0.2");
    env.set_env("SYSTEM1_MOCK_FAIL", "timeout");
    let started = Instant::now();
    let s = decide(&env, json!({"question": "q?"}));
    assert_eq!(error_code(&s), "provider_timeout");
    assert!(started.elapsed() < CUT_OFF, "the 30 s of the file did not apply");
    let caps = call_result(&env, "system1_capabilities", json!({}))["structuredContent"].clone();
    assert_eq!(caps["timeout_s"], 0.2);

    // A bad value from the environment is a config error naming the variable.
    let mut env = TestEnv::with_mock("");
    env.set_env("SYSTEM1_FALLBACK", "mock,nope");
    env.set_env("SYSTEM1_MOCK_CONFIDENCE", "high");
    let errors = health(&env)["config_errors"].clone();
    let all = errors.to_string();
    assert!(all.contains("SYSTEM1_MOCK_CONFIDENCE"), "{all}");
    assert!(all.contains("gateway.fallback (from SYSTEM1_FALLBACK): unknown provider"), "{all}");
}

/// Writes a local calibration file (the install dir's `calibration.json`).
fn local_fits(env: &TestEnv, fits: Value) {
    let file = json!({"format": "system1-calibration", "version": 1, "fits": fits});
    write(&env.install_dir.join("calibration.json"), &file.to_string());
}

#[test]
fn a_local_fit_for_the_question_calibrates_without_changing_the_winner() {
    let env = TestEnv::with_mock("[providers.mock]\nprobabilities = { yes = 0.7, no = 0.3 }\n");
    local_fits(
        &env,
        json!([
            {"provider": "mock", "model": "mock", "question": "Ship it?", "temperature": 0.5, "n": 40},
            {"provider": "mock", "model": "mock", "options": 2, "temperature": 5.0},
            {"provider": "mock", "model": "other-checkpoint", "question": "Deploy?", "temperature": 0.1}
        ]),
    );
    // The question fit (T = 0.5 squares and renormalises: 0.49 / 0.58).
    let s = decide(&env, json!({"question": "  Ship it? "}));
    assert_eq!((s["status"].as_str(), s["decision"].as_str()), (Some("decided"), Some("yes")), "{s}");
    assert_eq!(s["calibrated"], true);
    let p = 0.49 / 0.58;
    assert!((s["confidence"].as_f64().expect("confidence") - p).abs() < 1e-5, "{s}");
    assert!((s["probabilities"]["no"].as_f64().expect("no") - (1.0 - p)).abs() < 1e-5);
    // Another question falls back to the fit for two options (T = 5 softens), and the softer
    // confidence now falls below the threshold: the winner is the same, the gateway abstains.
    let s = decide(&env, json!({"question": "Other?"}));
    assert_eq!((s["status"].as_str(), s["calibrated"].as_bool()), (Some("abstained"), Some(true)), "{s}");
    let soft = 0.7f64.powf(0.2) / (0.7f64.powf(0.2) + 0.3f64.powf(0.2));
    assert!((s["confidence"].as_f64().expect("confidence") - soft).abs() < 1e-5, "{s}");
    assert!(s["probabilities"]["yes"].as_f64() > s["probabilities"]["no"].as_f64());
    // The fit for another model is ignored; three options have no fit at all.
    let env2 = TestEnv::with_mock("[providers.mock]\nmodel = \"other-checkpoint\"\n");
    local_fits(&env2, json!([{"provider": "mock", "model": "mock", "question": "Deploy?", "temperature": 0.1}]));
    let s = decide(&env2, json!({"question": "Deploy?"}));
    assert_eq!((s["calibrated"].as_bool(), s["confidence"].as_f64()), (Some(false), Some(0.9)), "{s}");
    let env3 = TestEnv::with_mock("");
    local_fits(&env3, json!([{"provider": "mock", "model": "mock", "options": 2, "temperature": 5.0}]));
    let s = decide(&env3, json!({"question": "Which?", "options": ["a", "b", "c"]}));
    assert_eq!((s["calibrated"].as_bool(), s["confidence"].as_f64()), (Some(false), Some(0.9)), "{s}");
    assert_eq!(decide(&env3, json!({"question": "Which?", "options": ["a", "b"]}))["calibrated"], true);
}

#[test]
fn capabilities_list_local_fits_before_the_shipped_ones() {
    let env = TestEnv::with_mock("");
    local_fits(
        &env,
        json!([{"provider": "local", "model": "all-MiniLM-L6-v2", "question": "design", "temperature": 0.5}]),
    );
    let caps = call_result(&env, "system1_capabilities", json!({}))["structuredContent"].clone();
    let fits = caps["calibration_fits"].as_array().expect("fits");
    let design: Vec<&Value> = fits.iter().filter(|f| f["question"] == "design").collect();
    assert_eq!(design.len(), 2, "{fits:?}");
    assert_eq!((design[0]["origin"].as_str(), design[0]["temperature"].as_f64()), (Some("local"), Some(0.5)));
    let shipped: Value = serde_json::from_str(include_str!("../../calibration/calibration.json")).unwrap();
    let shipped_t =
        shipped["fits"].as_array().unwrap().iter().find(|f| f["question"] == "design").unwrap()["temperature"].as_f64();
    assert_eq!((design[1]["origin"].as_str(), design[1]["temperature"].as_f64()), (Some("shipped"), shipped_t));
    assert!(fits.iter().all(|f| f["provider"] != "laya"), "no borrowed Laya fit ships: {fits:?}");
}

#[test]
fn a_broken_local_calibration_file_is_reported_and_the_shipped_fits_still_apply() {
    let env = TestEnv::with_mock("");
    write(&env.install_dir.join("calibration.json"), "{not json");
    let caps = call_result(&env, "system1_capabilities", json!({}))["structuredContent"].clone();
    let errors = caps["calibration_errors"].as_array().expect("calibration_errors");
    assert!(errors.iter().any(|e| e.as_str().is_some_and(|e| e.contains("calibration.json"))), "{errors:?}");
    assert!(caps["calibration_fits"].as_array().is_some_and(|f| f.iter().all(|f| f["origin"] == "shipped")));
    assert_eq!(decide(&env, json!({"question": "q?"}))["status"], "decided");
}
