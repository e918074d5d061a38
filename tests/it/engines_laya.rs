//! The Laya adapter through the real binary (`system1 decide`, `system1 mcp`), with the engine
//! replaced by a loopback fake that speaks laya-serve 0.4.15's wire format.

use std::time::Instant;

use crate::support::fake_http::{FakeServer, Reply, Request};
use crate::support::{CUT_OFF, TestEnv};
use serde_json::{Value, json};

/// laya-serve's answer to `body`: the first option of each question at `top`.
fn laya_answer(body: &Value, top: f64, routed: &str) -> Value {
    let mut answers = serde_json::Map::new();
    for (id, q) in body["questions"].as_object().expect("questions") {
        let labels: Vec<&str> =
            q["criteria"].as_object().expect("criteria object").keys().map(String::as_str).collect();
        let rest = (1.0 - top) / (labels.len() - 1) as f64;
        let probs: serde_json::Map<String, Value> = labels
            .iter()
            .enumerate()
            .map(|(i, l)| (l.to_string(), json!(((if i == 0 { top } else { rest }) * 1e4).round() / 1e4)))
            .collect();
        answers.insert(
            id.clone(),
            json!({"type": "choice", "choice": labels[0], "probabilities": probs, "confidence": 0.1,
                   "answer_confidence": top, "action": {"act_probability": 0.5}, "x_jev_confidence": 0.2}),
        );
    }
    json!({"model": "laya-rl-agent", "answers": answers,
           "usage": {"input_tokens": 40, "output_tokens": 0, "state_tokens": 9, "state_tokens_dropped": 0,
                     "truncated": false, "truncated_questions": []},
           "routing": {"model": routed, "repo": "convaiinnovations/laya/typed-decisions",
                       "reason": "explicit model='typed-decisions'", "detection": null, "workflow": null}})
}

fn laya_fake(top: f64) -> FakeServer {
    FakeServer::start(move |r: &Request| match r.path.as_str() {
        "/health" => Reply::json(
            200,
            &json!({"status": "ok", "loaded": ["typed-decisions"], "device": "cpu",
            "device_is_preference": false, "checkpoint_devices": {"typed-decisions": "cpu"}}),
        ),
        "/v1/systemone" => Reply::json(200, &laya_answer(&r.json(), top, "typed-decisions")),
        _ => Reply::json(404, &json!({"detail": "Not Found"})),
    })
}

/// A scratch env using laya at `url`, with an unreachable proxy in every proxy variable.
fn env_for(url: &str) -> TestEnv {
    let mut env = TestEnv::new();
    env.set_env("SYSTEM1_LAYA_ENDPOINT", url);
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"] {
        env.set_env(var, "http://127.0.0.1:9"); // the discard port: nothing listens there
    }
    env
}

#[test]
fn decide_through_the_binary_ignores_a_dead_proxy_for_loopback() {
    let server = laya_fake(0.83);
    let env = env_for(&server.url());
    let (v, code) = env.decide_json(&["-q", "Which?", "-o", "block the merge", "-o", "rerun the pipeline"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["status"], "decided");
    assert_eq!(v["provider"], "laya");
    assert_eq!(v["decision"], "block the merge");
    assert_eq!(v["rationale"], "laya typed-decisions: block the merge=0.83, rerun the pipeline=0.17");
    let sent = server.requests_to("/v1/systemone");
    assert_eq!(sent.len(), 1, "reached the fake directly, not the proxy");
    assert_eq!(sent[0].json()["model"], "typed-decisions");
    assert_eq!(sent[0].header("authorization"), None);
}

#[test]
fn the_api_key_comes_from_the_environment() {
    let server = laya_fake(0.9);
    let mut env = env_for(&server.url());
    env.set_env("SYSTEM1_LAYA_API_KEY", "sekret");
    let (v, code) = env.decide_json(&["-q", "Ship it?"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(server.requests_to("/v1/systemone")[0].header("authorization"), Some("Bearer sekret"));
}

/// The key in a file only its owner can read, named by `api_key_file`: it reaches the engine, and a
/// file others can read is a config error that names the fix, with no key sent.
#[cfg(unix)]
#[test]
fn the_api_key_can_come_from_a_file_only_you_can_read() {
    use std::os::unix::fs::PermissionsExt;
    let server = laya_fake(0.9);
    let env = env_for(&server.url());
    let key = env.home.join(".config/system1/laya.key");
    crate::support::write(&key, "sekret-from-file\n");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    env.write_config("[providers.laya]\napi_key_file = \"~/.config/system1/laya.key\"\n");
    let (v, code) = env.decide_json(&["-q", "Ship it?"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(server.requests_to("/v1/systemone")[0].header("authorization"), Some("Bearer sekret-from-file"));
    let show = crate::support::stdout(&env.run(&["config", "show"], ""));
    let line = show.lines().find(|l| l.starts_with("providers.laya.api_key = ")).expect("api_key listed");
    assert!(line.contains("\"<set>\"") && line.ends_with(&format!("# key file {}", key.display())), "{line}");
    assert!(!show.contains("sekret-from-file"), "{show}");

    server.clear();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let (v, code) = env.decide_json(&["-q", "Ship it?"]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(v["error"]["code"], "config_error");
    let message = v["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("(mode 0644); make it yours alone: chmod 600 "), "{message}");
    assert!(server.requests_to("/v1/systemone").is_empty(), "no engine is asked with a broken config");
}

#[test]
fn an_engine_that_never_answers_is_cut_off_at_the_timeout() {
    let server = FakeServer::start(|_r: &Request| Reply::hang());
    let mut env = env_for(&server.url());
    env.set_env("SYSTEM1_TIMEOUT_S", "0.4");
    let started = Instant::now();
    let (v, code) = env.decide_json(&["-q", "Ship it?"]);
    assert_eq!(code, 1);
    assert_eq!(v["error"]["code"], "provider_timeout", "{v}");
    assert!(started.elapsed() < CUT_OFF, "cut off at 0.4 s, not after the fake's 60 s: {:?}", started.elapsed());
}

#[test]
fn a_remote_endpoint_is_a_config_error() {
    let env = env_for("http://203.0.113.7:8765");
    let (v, code) = env.decide_json(&["-q", "Ship it?"]);
    assert_eq!(code, 3);
    assert_eq!(v["error"]["code"], "config_error");
    assert!(v["error"]["message"].as_str().unwrap().contains("allow_remote"), "{v}");
}

#[test]
fn mcp_decides_reports_health_and_the_option_limit() {
    let server = laya_fake(0.9);
    let env = env_for(&server.url());
    let mut mcp = env.mcp();
    mcp.initialize("2025-06-18");
    let r = mcp.call("system1_decide", json!({"question": "Destructive?", "context": {"command": "rm -rf build"}}));
    assert_eq!(r["status"], "decided", "{r}");
    assert_eq!(r["decision"], "yes");
    let sent = server.requests_to("/v1/systemone");
    assert_eq!(sent[0].json()["state"], json!({"command": "rm -rf build"}));

    let h = mcp.call("system1_health", json!({}));
    assert_eq!(h["status"], "ok", "{h}");
    assert!(h["providers"][0]["detail"].as_str().unwrap().contains("typed-decisions is loaded"), "{h}");

    let caps = mcp.call("system1_capabilities", json!({}));
    assert_eq!(caps["providers"]["laya"]["max_options"], 20);
    assert_eq!(caps["providers"]["laya"]["model"], "typed-decisions");

    // 21 options over Laya's 20: a round of two groups (11 and 10) in one request, then the final
    // over their winners (the fake picks the first option shown: o0 and o11).
    let many: Vec<String> = (0..21).map(|i| format!("o{i}")).collect();
    let r = mcp.call("system1_decide", json!({"question": "Which?", "options": many}));
    assert_eq!(r["status"], "decided", "{r}");
    assert_eq!(r["decision"], "o0");
    let sent = server.requests_to("/v1/systemone");
    assert_eq!(sent.len(), 3, "one request before, then two for 21 options");
    let sizes = |b: &Value| -> Vec<usize> {
        b["questions"].as_object().unwrap().values().map(|q| q["criteria"].as_object().unwrap().len()).collect()
    };
    assert_eq!(sizes(&sent[1].json()), [11, 10]);
    assert_eq!(sent[2].json()["questions"]["decision"]["criteria"], json!({"o0": null, "o11": null}));
    assert_eq!(sent[1].json()["state"], "Which?", "the question once, however many groups ask it");
    mcp.close();

    // With the rounds off, nothing is sent: Laya passes the question on (a fallback could take
    // it); with none, the decision abstains and says why.
    let mut env = env_for(&server.url());
    env.set_env("SYSTEM1_TOURNAMENT", "false");
    let mut mcp = env.mcp();
    mcp.initialize("2025-06-18");
    let r = mcp.call("system1_decide", json!({"question": "Which?", "options": many}));
    assert_eq!((&r["status"], &r["error"]), (&json!("abstained"), &json!(null)), "{r}");
    assert_eq!(r["attempts"][0]["outcome"], "passed", "{r}");
    assert!(r["rationale"].as_str().is_some_and(|w| w.contains("21 options exceed")), "{r}");
    assert_eq!(server.requests_to("/v1/systemone").len(), 3, "nothing sent for 21 options");
    mcp.close();
}
