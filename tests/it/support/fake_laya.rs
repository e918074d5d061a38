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

/// laya-serve 0.4.15's answer to `body` from a weight per option: `weigh(instructions, labels)`
/// gives one weight per label, in the order the labels were sent, and each probability is its
/// weight over their sum, rounded to 4 decimals as Laya rounds. The shape (`choice`,
/// `probabilities`, the entropy `confidence`, `answer_confidence`, `routing`) is laya-serve's.
pub fn weighed(body: &Value, weigh: &dyn Fn(&str, &[&str]) -> Vec<f64>) -> Value {
    let mut answers = serde_json::Map::new();
    for (id, q) in body["questions"].as_object().expect("questions") {
        let labels: Vec<&str> =
            q["criteria"].as_object().expect("criteria object").keys().map(String::as_str).collect();
        let weights = weigh(q["instructions"].as_str().unwrap_or(""), &labels);
        let sum: f64 = weights.iter().sum();
        let p: Vec<f64> = weights.iter().map(|w| w / sum).collect();
        let best = (0..p.len()).fold(0, |b, i| if p[i] > p[b] { i } else { b });
        let entropy: f64 = p.iter().filter(|x| **x > 0.0).map(|x| -x * x.ln()).sum();
        let round4 = |x: f64| (x * 1e4).round() / 1e4;
        let probs: serde_json::Map<String, Value> =
            labels.iter().zip(&p).map(|(l, x)| (l.to_string(), json!(round4(*x)))).collect();
        answers.insert(
            id.clone(),
            json!({"type": "choice", "choice": labels[best], "probabilities": probs,
                   "confidence": round4(1.0 - entropy / (labels.len() as f64).ln()), "answer_confidence": round4(p[best]),
                   "action": {"act_probability": 0.5}, "x_jev_confidence": 0.0}),
        );
    }
    json!({"model": "laya-rl-agent", "answers": answers,
           "usage": {"input_tokens": 40, "output_tokens": 0, "state_tokens": 9, "state_tokens_dropped": 0,
                     "truncated": false, "truncated_questions": []},
           "routing": {"model": "typed-decisions", "repo": "convaiinnovations/laya/typed-decisions",
                       "reason": "explicit model='typed-decisions'", "detection": null, "workflow": null}})
}

/// A laya-serve fake answering every decision through `weigh` (see [`weighed`]).
pub fn weighing(weigh: impl Fn(&str, &[&str]) -> Vec<f64> + Send + Sync + 'static) -> super::fake_http::FakeServer {
    super::fake_http::FakeServer::start(move |r: &Request| match r.path.as_str() {
        "/health" => Reply::json(200, &json!({"status": "ok", "loaded": ["typed-decisions"]})),
        "/v1/systemone" => Reply::json(200, &weighed(&r.json(), &weigh)),
        _ => Reply::json(404, &json!({"detail": "Not Found"})),
    })
}
