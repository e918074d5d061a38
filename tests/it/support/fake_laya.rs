//! laya-serve on the loopback fake: its answer format (`POST /v1/systemone`) and health, for
//! tests whose subject is the gateway or the server rather than the Laya adapter (that one has
//! its own captured answers in `engines_laya` and `src/providers/laya/tests.rs`).

#![allow(dead_code)]

use serde_json::{Value, json};

use super::fake_http::{Reply, Request};

/// laya-serve's answer to `body`: the second option of each question at 0.8.
fn laya_answer(body: &Value) -> Value {
    let mut answers = serde_json::Map::new();
    for (id, q) in body["questions"].as_object().expect("questions") {
        // laya-serve takes the criteria as a list of labels or as an object keyed by label.
        let labels: Vec<&str> = match &q["criteria"] {
            Value::Object(m) => m.keys().map(String::as_str).collect(),
            other => other.as_array().expect("criteria").iter().filter_map(Value::as_str).collect(),
        };
        let rest = 0.2 / (labels.len() - 1) as f64;
        let probs: serde_json::Map<String, Value> =
            labels.iter().enumerate().map(|(i, l)| (l.to_string(), json!(if i == 1 { 0.8 } else { rest }))).collect();
        answers.insert(
            id.clone(),
            json!({"type": "choice", "choice": labels[1], "probabilities": probs, "confidence": 0.3, "answer_confidence": 0.8}),
        );
    }
    json!({"model": "laya-rl-agent", "answers": answers,
           "routing": {"model": "typed-decisions", "reason": "explicit model='typed-decisions'"}})
}

pub fn healthy(r: &Request) -> Reply {
    match r.path.as_str() {
        "/health" => Reply::json(200, &json!({"status": "ok", "loaded": ["typed-decisions"]})),
        "/v1/systemone" => Reply::json(200, &laya_answer(&r.json())),
        _ => Reply::json(404, &json!({"detail": "Not Found"})),
    }
}
