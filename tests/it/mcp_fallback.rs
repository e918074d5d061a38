//! The provider chain through the real server: fallback on each failure kind (error, timeout,
//! malformed, a provider's own option limit) with every try in `attempts`; never after an
//! abstention; the per-attempt timeout cut off on the connection against a loopback engine that
//! accepts and never answers; health probes in parallel, bounded by the timeout. The chain mixes
//! the mock with the Laya adapter, whose engine is a loopback fake speaking laya-serve's format.

use std::time::Instant;

use crate::support;
use crate::support::fake_http::{FakeServer, Reply, Request, free_port};
use crate::support::fake_laya::healthy;
use crate::support::{CUT_OFF, McpClient, TestEnv};
use serde_json::{Value, json};

/// A URL where nothing listens: connections are refused.
fn refused_url() -> String {
    let port = free_port();
    format!("http://127.0.0.1:{port}")
}

fn env(provider: &str, fallback: &str, laya_url: &str, extra: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"{provider}\"\nfallback = [\"{fallback}\"]\ntimeout_s = 0.5\n\
         [providers.laya]\nendpoint = \"{laya_url}\"\n{extra}"
    ));
    env
}

fn server(env: &TestEnv) -> McpClient {
    let mut c = env.mcp();
    c.initialize("2025-11-25");
    c
}

/// The attempts as (provider, outcome) pairs.
fn tried(s: &Value) -> Vec<(String, String)> {
    s["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| (a["provider"].as_str().unwrap_or("").to_string(), a["outcome"].as_str().unwrap_or("").to_string()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(p, o)| (p.to_string(), o.to_string())).collect()
}

#[test]
fn an_engine_that_is_down_falls_back_to_the_next() {
    let env = env("laya", "mock", &refused_url(), "");
    let mut c = server(&env);
    let s = c.call("system1_decide", json!({"question": "Ship it?"}));
    assert_eq!(
        (s["status"].as_str(), s["decision"].as_str(), s["provider"].as_str()),
        (Some("decided"), Some("yes"), Some("mock")),
        "{s}"
    );
    assert_eq!(tried(&s), pairs(&[("laya", "error"), ("mock", "ok")]));
    assert!(s["attempts"][0]["detail"].as_str().is_some_and(|d| d.contains("refused")), "{s}");
    let h = c.call("system1_health", json!({}));
    assert_eq!(h["status"], "degraded", "primary down, fallback up: {h}");
    let roles: Vec<(&str, &str, bool)> = h["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .map(|p| {
            (p["name"].as_str().unwrap_or(""), p["role"].as_str().unwrap_or(""), p["ok"].as_bool().unwrap_or(true))
        })
        .collect();
    assert_eq!(roles, [("laya", "primary", false), ("mock", "fallback", true)]);
}

#[test]
fn an_engine_that_accepts_and_never_answers_is_cut_off_at_the_timeout() {
    let hangs = FakeServer::start(|_: &Request| Reply::hang());
    let env = env("laya", "mock", &hangs.url(), "");
    let mut c = server(&env);
    let started = Instant::now();
    let s = c.call("system1_decide", json!({"question": "Ship it?"}));
    let took = started.elapsed();
    assert_eq!(tried(&s), pairs(&[("laya", "timeout"), ("mock", "ok")]), "{s}");
    assert_eq!(s["status"], "decided");
    let cut = s["attempts"][0]["latency_ms"].as_f64().expect("latency");
    // Not before timeout_s = 0.5 (load can only make it later), and not after the fake's 60 s hang.
    assert!(cut >= 450.0 && cut < CUT_OFF.as_secs_f64() * 1e3, "the attempt was cut off at timeout_s: {cut} ms");
    assert!(took < CUT_OFF, "the decision took {took:?}");
    assert_eq!(hangs.requests_to("/v1/systemone").len(), 1, "the engine was asked once");

    // Health too: the probe of a hanging engine is bounded by the timeout, and runs beside the others.
    let started = Instant::now();
    let h = c.call("system1_health", json!({}));
    assert!(started.elapsed() < CUT_OFF, "health took {:?}", started.elapsed());
    assert_eq!((h["status"].as_str(), h["providers"][0]["ok"].as_bool()), (Some("degraded"), Some(false)), "{h}");
}

#[test]
fn a_malformed_answer_falls_back() {
    let garbage = FakeServer::start(|r: &Request| match r.path.as_str() {
        "/v1/systemone" => Reply::json(200, &json!({"answers": "not an object"})),
        _ => Reply::text(200, "<html>not json</html>"),
    });
    let env = env("laya", "mock", &garbage.url(), "");
    let s = server(&env).call("system1_decide", json!({"question": "Ship it?"}));
    assert_eq!(tried(&s), pairs(&[("laya", "malformed"), ("mock", "ok")]), "{s}");
    assert_eq!(s["provider"], "mock");
}

#[test]
fn each_failure_of_the_primary_hands_over_to_the_fallback() {
    let laya = FakeServer::start(healthy);
    for (fail, outcome) in [("error", "error"), ("timeout", "timeout"), ("malformed", "malformed")] {
        let env = env("mock", "laya", &laya.url(), &format!("[providers.mock]\nfail = \"{fail}\"\n"));
        let s = server(&env).call("system1_decide", json!({"question": "Which?", "options": ["a", "b", "c"]}));
        assert_eq!(tried(&s), pairs(&[("mock", outcome), ("laya", "ok")]), "{fail}: {s}");
        assert_eq!(
            (s["status"].as_str(), s["decision"].as_str(), s["provider"].as_str()),
            (Some("decided"), Some("b"), Some("laya"))
        );
        assert_eq!(s["error"], Value::Null);
    }
}

#[test]
fn with_elimination_rounds_off_a_providers_option_limit_hands_over_to_a_fallback_that_takes_more() {
    let laya = FakeServer::start(healthy);
    let mut env = env("mock", "laya", &laya.url(), "[providers.mock]\nmax_options = 3\n");
    env.set_env("SYSTEM1_TOURNAMENT", "false");
    let mut c = server(&env);
    let s = c.call("system1_decide", json!({"question": "Which?", "options": ["a", "b", "c", "d"]}));
    assert_eq!(tried(&s), pairs(&[("mock", "passed"), ("laya", "ok")]), "{s}");
    assert!(s["attempts"][0]["detail"].as_str().is_some_and(|d| d.contains("limit of 3")));
    assert_eq!(s["decision"], "b");
    // Within the limit, the primary answers and the fallback is never asked.
    let before = laya.requests_to("/v1/systemone").len();
    let s = c.call("system1_decide", json!({"question": "Which?", "options": ["a", "b", "c"]}));
    assert_eq!(tried(&s), pairs(&[("mock", "ok")]));
    assert_eq!(laya.requests_to("/v1/systemone").len(), before);
}

#[test]
fn abstention_never_falls_back() {
    let laya = FakeServer::start(healthy);
    for mock in ["fail = \"abstain\"", "confidence = 0.55"] {
        let env = env("mock", "laya", &laya.url(), &format!("[providers.mock]\n{mock}\n"));
        let s = server(&env).call("system1_decide", json!({"question": "Ship it?"}));
        assert_eq!(s["status"], "abstained", "{mock}: {s}");
        assert_eq!(tried(&s).len(), 1, "{mock}: {s}");
        assert_eq!(s["provider"], "mock");
    }
    assert!(laya.requests_to("/v1/systemone").is_empty(), "the fallback was never asked");
}

#[test]
fn when_every_provider_fails_the_last_failure_is_the_error() {
    let env = env("mock", "laya", &refused_url(), "[providers.mock]\nfail = \"malformed\"\n");
    let s = server(&env).call("system1_decide", json!({"question": "Ship it?"}));
    assert_eq!(tried(&s), pairs(&[("mock", "malformed"), ("laya", "error")]), "{s}");
    assert_eq!((s["status"].as_str(), s["error"]["code"].as_str()), (Some("error"), Some("provider_error")));
    assert!(s["error"]["message"].as_str().is_some_and(|m| m.starts_with("laya: ")), "{s}");
    // The message ends with the fix for a refused connection, the one doctor gives.
    let message = s["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("; fix: start the laya engine, or check [providers.laya] endpoint"), "{s}");
    assert_eq!(s["decision"], Value::Null);
    assert_eq!(s["provider"], Value::Null);
}

/// No fit is shipped for Laya (none was measured on an engine that runs here), so its answers go
/// out as it gave them; a local fit in the install dir applies through the real binary.
#[test]
fn laya_is_uncalibrated_until_a_local_fit_applies() {
    let laya = FakeServer::start(healthy);
    let question = "Is this shell command destructive?";
    let env = env("laya", "mock", &laya.url(), "");
    // The fake answers "no" at 0.8.
    let s = server(&env).call("system1_decide", json!({"question": question}));
    assert_eq!((s["decision"].as_str(), s["calibrated"].as_bool()), (Some("no"), Some(false)), "{s}");
    assert_eq!(s["confidence"].as_f64(), Some(0.8), "{s}");

    let fits = json!({"format": "system1-calibration", "version": 1, "fits": [
        {"provider": "laya", "model": "typed-decisions", "question": question, "temperature": 2.0}]});
    support::write(&env.install_dir.join("calibration.json"), &fits.to_string());
    let local = 0.8f64.sqrt() / (0.8f64.sqrt() + 0.2f64.sqrt());
    let s = server(&env).call("system1_decide", json!({"question": question}));
    assert_eq!((s["decision"].as_str(), s["calibrated"].as_bool()), (Some("no"), Some(true)), "{s}");
    assert!((s["confidence"].as_f64().expect("confidence") - local).abs() < 1e-5, "the local fit applied: {s}");
    // Another question has no fit: uncalibrated.
    let s = server(&env).call("system1_decide", json!({"question": "Something else?"}));
    assert_eq!((s["calibrated"].as_bool(), s["confidence"].as_f64()), (Some(false), Some(0.8)), "{s}");
}
