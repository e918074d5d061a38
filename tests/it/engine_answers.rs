//! Engines that answer wrongly, through the real binary: the gateway judges every answer. A
//! `choice` that is not an option is `malformed_response`, never turned into the most probable
//! option; a Laya answer whose `answer_confidence` contradicts its own probabilities is malformed;
//! and a Laya model name other than `""` or `"auto"` is a pin, so an answer from another
//! checkpoint is malformed. Each engine is a loopback fake in its wire format.

use crate::support::TestEnv;
use crate::support::fake_http::{FakeServer, Reply, Request};
use serde_json::{Value, json};

/// A laya-serve 0.4.15 answer: every question gets `choice`, `probabilities` over its options in
/// order and `answer_confidence`, from checkpoint `routed`.
fn laya_reply(body: &Value, choice: &str, probs: &[f64], answer_confidence: f64, routed: &str) -> Value {
    let mut answers = serde_json::Map::new();
    for (id, q) in body["questions"].as_object().expect("questions") {
        let labels: Vec<&str> = q["criteria"].as_object().expect("criteria").keys().map(String::as_str).collect();
        let p: serde_json::Map<String, Value> =
            labels.iter().zip(probs).map(|(l, p)| (l.to_string(), json!(p))).collect();
        answers.insert(
            id.clone(),
            json!({"type": "choice", "choice": choice, "probabilities": p, "confidence": 0.3,
                   "answer_confidence": answer_confidence, "action": {"act_probability": 0.5}}),
        );
    }
    json!({"model": "laya-rl-agent", "answers": answers, "usage": {"input_tokens": 40, "output_tokens": 0},
           "routing": {"model": routed, "reason": "test", "detection": null, "workflow": null}})
}

fn laya(choice: &'static str, probs: &'static [f64], answer_confidence: f64, routed: &'static str) -> FakeServer {
    FakeServer::start(move |r: &Request| {
        Reply::json(200, &laya_reply(&r.json(), choice, probs, answer_confidence, routed))
    })
}

fn env_with(provider: &str, url: &str, model: Option<&str>) -> TestEnv {
    let mut env = TestEnv::new();
    env.set_env("SYSTEM1_PROVIDER", provider);
    env.set_env(&format!("SYSTEM1_{}_ENDPOINT", provider.to_ascii_uppercase()), url);
    if let Some(m) = model {
        env.set_env(&format!("SYSTEM1_{}_MODEL", provider.to_ascii_uppercase()), m);
    }
    env
}

/// `decide` on hold|go: the response, after checking it is a malformed_response naming `what`.
fn assert_malformed(env: &TestEnv, what: &str) -> Value {
    let (v, code) = env.decide_json(&["-q", "Merge now?", "-o", "hold", "-o", "go", "--min-confidence", "0"]);
    assert_eq!(v["status"], "error", "{v}");
    assert_ne!(code, 0);
    assert_eq!(v["error"]["code"], "malformed_response", "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains(what), "{v}");
    assert_eq!(v["decision"], Value::Null);
    v
}

#[test]
fn a_laya_choice_that_is_not_an_option_is_malformed() {
    let engine = laya("banana", &[0.3, 0.7], 0.7, "typed-decisions");
    let v = assert_malformed(&env_with("laya", &engine.url(), None), "\"banana\" is not one of the options");
    assert_eq!(v["attempts"][0]["outcome"], "malformed", "{v}");
}

#[test]
fn a_von_choice_that_is_not_an_option_is_malformed() {
    let engine = FakeServer::start(|_: &Request| {
        Reply::json(
            200,
            &json!({"model": "von-1.3.0", "answers": {"decision": {"type": "choice", "choice": "banana",
                    "probabilities": {"hold": 0.3, "go": 0.7}, "confidence": 0.4}},
                    "usage": {"input_tokens": 50, "output_tokens": 1}, "truncation": null}),
        )
    });
    assert_malformed(&env_with("von", &engine.url(), None), "\"banana\" is not one of the options");
}

#[test]
fn laya_answer_confidence_must_agree_with_its_probabilities() {
    // "hold" at 0.99 beside hold = 0.1: the numbers contradict each other.
    let engine = laya("hold", &[0.1, 0.9], 0.99, "typed-decisions");
    assert_malformed(&env_with("laya", &engine.url(), None), "contradict each other");
    // answer_confidence is the top probability, whatever the choice.
    let engine = laya("go", &[0.1, 0.9], 0.99, "typed-decisions");
    assert_malformed(&env_with("laya", &engine.url(), None), "answer_confidence 0.99");
    // And the choice is the most probable option.
    let engine = laya("hold", &[0.1, 0.9], 0.1, "typed-decisions");
    assert_malformed(&env_with("laya", &engine.url(), None), "below its most probable option");
    // Consistent numbers are decided, with answer_confidence as the confidence.
    let engine = laya("go", &[0.1, 0.9], 0.9, "typed-decisions");
    let (v, code) = env_with("laya", &engine.url(), None).decide_json(&["-q", "Merge now?", "-o", "hold", "-o", "go"]);
    assert_eq!((code, &v["decision"], &v["confidence"]), (0, &json!("go"), &json!(0.9)), "{v}");
}

#[test]
fn only_an_empty_or_auto_laya_model_asks_laya_to_route() {
    // laya-serve 0.4.15 auto-routes a name it does not know, jev-latest among them, and answers from
    // whatever checkpoint it picked: for a pinned name that is malformed.
    let engine = laya("go", &[0.2, 0.8], 0.8, "english");
    for pin in ["jev-latest", "convaiinnovations/laya", "my-finetune"] {
        let env = env_with("laya", &engine.url(), Some(pin));
        assert_malformed(&env, "is pinned");
    }
    for auto in ["", "auto"] {
        let (v, code) =
            env_with("laya", &engine.url(), Some(auto)).decide_json(&["-q", "Merge now?", "-o", "hold", "-o", "go"]);
        assert_eq!(code, 0, "{auto:?}: {v}");
        assert_eq!(v["decision"], "go");
        assert!(v["rationale"].as_str().unwrap().starts_with("laya english:"), "{v}");
    }
}
