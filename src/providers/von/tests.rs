//! The von adapter against a loopback fake that answers in von 1.3.7's wire format.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::providers::Question;
use crate::providers::fake_http::{FakeServer, Reply, Request};

const T: Duration = Duration::from_secs(3);

fn von(server: &FakeServer, extra: &str) -> Von {
    let table: toml::Table = format!("endpoint = \"{}\"\n{extra}", server.url()).parse().expect("toml");
    let s = Settings::new("providers.von", table, BTreeMap::new());
    let v = Von::new(&s);
    s.finish();
    assert!(s.take_errors().is_empty());
    v
}

fn q(key: &str, text: &str, options: &[&str]) -> Question {
    Question { key: key.into(), text: text.into(), options: options.iter().map(|s| s.to_string()).collect() }
}

/// von's answer: choices get the last option at 0.8 (as in the captured triage), nouls the given raw P.
fn von_answer(body: &Value, raw: f64) -> Value {
    let mut answers = serde_json::Map::new();
    for (id, question) in body["questions"].as_object().expect("questions") {
        let a = if question["type"] == "noul" {
            let banded = if raw >= 0.5 { 0.8 + 0.1 * (raw - 0.5) } else { 0.2 - 0.1 * (0.5 - raw) };
            json!({"type": "noul", "noul": (banded * 1e4_f64).round() / 1e4, "noul_raw": raw})
        } else {
            let labels: Vec<&String> = question["criteria"].as_object().expect("criteria object").keys().collect();
            let n = labels.len();
            let rest = 0.2 / (n - 1) as f64;
            let probs: serde_json::Map<String, Value> = labels
                .iter()
                .enumerate()
                .map(|(i, l)| (l.to_string(), json!(if i == n - 1 { 0.8 } else { (rest * 1e4).round() / 1e4 })))
                .collect();
            json!({"type": "choice", "choice": labels[n - 1], "probabilities": probs, "confidence": 0.7})
        };
        answers.insert(id.clone(), a);
    }
    json!({"model": "von-1.3.0", "answers": answers, "usage": {"input_tokens": 163, "output_tokens": 3}, "truncation": null})
}

fn serving(raw: f64) -> FakeServer {
    FakeServer::start(move |r: &Request| Reply::json(200, &von_answer(&r.json(), raw)))
}

#[test]
fn all_questions_go_in_one_request_and_map_back() {
    let server = serving(0.3574);
    let v = von(&server, "");
    let request = EngineRequest {
        context: Some(json!("Hi, we were billed twice for March.")),
        questions: vec![
            q("department", "Which department should handle this?", &["billing", "technical", "other"]),
            q("churn_risk", "Does the user threaten to cancel or leave?", &["yes", "no"]),
        ],
    };
    let out = v.decide(&request, T).expect("answers");
    assert_eq!(server.requests().len(), 1);
    let sent = server.requests()[0].json();
    assert_eq!(sent["model"], "von-1.3");
    assert_eq!(sent["state"], "Hi, we were billed twice for March.");
    assert_eq!(
        sent["questions"]["department"],
        json!({"type": "choice", "instructions": "Which department should handle this?",
               "criteria": {"billing": null, "technical": null, "other": null}})
    );
    assert_eq!(
        sent["questions"]["churn_risk"],
        json!({"type": "noul", "instructions": "Does the user threaten to cancel or leave?"})
    );
    assert_eq!(out[0].decision(), Some("other"));
    assert_eq!(out[0].confidence(), Some(0.8), "the option's probability, not von's margin (0.7)");
    assert_eq!(out[0].rationale(), Some("von von-1.3: billing=0.10, technical=0.10, other=0.80"));
    // noul_raw 0.3574, not the banded 0.1857
    assert_eq!(out[1].decision(), Some("no"));
    assert_eq!(serde_json::to_value(out[1].probabilities()).ok(), Some(json!({"yes": 0.3574, "no": 0.6426})));
    assert_eq!(out[1].confidence(), Some(0.6426));
}

#[test]
fn yes_no_can_be_asked_as_a_two_option_choice() {
    let server = serving(0.5);
    let v = von(&server, "yes_no = \"choice\"");
    let out = v
        .decide(&EngineRequest { context: None, questions: vec![q("d", "Greeting?", &["yes", "no"])] }, T)
        .expect("ok");
    let sent = server.requests()[0].json();
    assert_eq!(sent["questions"]["d"]["type"], "choice");
    assert_eq!(sent["questions"]["d"]["criteria"], json!({"yes": null, "no": null}));
    assert_eq!(out[0].decision(), Some("no"));
}

#[test]
fn a_banded_noul_alone_is_not_trusted() {
    let server = FakeServer::start(|_r: &Request| {
        Reply::json(
            200,
            &json!({"model": "von-1.3.0", "answers": {"d": {"type": "noul", "noul": 0.8041}},
            "usage": {"input_tokens": 69, "output_tokens": 1}, "truncation": null}),
        )
    });
    let err = von(&server, "")
        .decide(&EngineRequest { context: None, questions: vec![q("d", "Greeting?", &["yes", "no"])] }, T)
        .unwrap_err();
    assert!(matches!(&err, Failure { cause: Cause::Malformed, detail: d } if d.contains("banded")), "{err:?}");
}

#[test]
fn a_422_about_weights_says_the_model_failed_to_load() {
    let server = FakeServer::start(|_r: &Request| {
        Reply::json(
            422,
            &json!({"detail": "Failed to load Option-Marker decision weights: could not find local '/tmp/checkpoints/von-1.2/option_marker.pt'"}),
        )
    });
    let err = von(&server, "")
        .decide(&EngineRequest { context: None, questions: vec![q("d", "Ok?", &["yes", "no"])] }, T)
        .unwrap_err();
    assert!(
        matches!(&err, Failure { cause: Cause::ModelBroken, detail: d } if d.starts_with("von failed to load its model") && d.contains("option_marker.pt")),
        "{err:?}"
    );
    let server = FakeServer::start(|_r: &Request| {
        Reply::json(422, &json!({"detail": [{"type": "missing", "loc": ["body", "state"], "msg": "Field required"}]}))
    });
    let err = von(&server, "")
        .decide(&EngineRequest { context: None, questions: vec![q("d", "Ok?", &["yes", "no"])] }, T)
        .unwrap_err();
    assert_eq!(err, Failure::new(Cause::HttpStatus(422), "von: HTTP 422: body.state: Field required"));
}

#[test]
fn a_401_names_the_key_variable() {
    let server =
        FakeServer::start(|_r: &Request| Reply::json(401, &json!({"detail": "Missing or invalid Bearer token"})));
    let err = von(&server, "")
        .decide(&EngineRequest { context: None, questions: vec![q("d", "Ok?", &["yes", "no"])] }, T)
        .unwrap_err();
    assert!(
        matches!(&err, Failure { cause: Cause::Unauthorised, detail: d } if d.contains("missing") && d.contains("SYSTEM1_VON_API_KEY")),
        "{err:?}"
    );
    assert_eq!(server.requests()[0].header("authorization"), None);
    let err = von(&server, "api_key = \"k\"")
        .decide(&EngineRequest { context: None, questions: vec![q("d", "Ok?", &["yes", "no"])] }, T)
        .unwrap_err();
    assert!(matches!(&err, Failure { cause: Cause::Unauthorised, detail: d } if d.contains("wrong")), "{err:?}");
    assert_eq!(server.requests()[1].header("authorization"), Some("Bearer k"));
}

#[test]
fn option_lists_too_long_for_the_window_are_refused_before_sending() {
    let server = serving(0.5);
    let v = von(&server, "");
    assert_eq!(v.capabilities().max_options, 256);
    let long: Vec<String> = (0..200).map(|i| format!("{i} {}", "x".repeat(150))).collect();
    let refs: Vec<&str> = long.iter().map(String::as_str).collect();
    let err = v.decide(&EngineRequest { context: None, questions: vec![q("d", "Which?", &refs)] }, T).unwrap_err();
    assert!(
        matches!(&err, Failure { cause: Cause::OverLimit, detail: d } if d.contains("8192-token window")),
        "{err:?}"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn truncation_is_reported_and_a_hang_is_cut_off() {
    let server = FakeServer::start(|r: &Request| {
        let mut a = von_answer(&r.json(), 0.5896);
        a["truncation"] =
            json!({"state_tokens": 27000, "kept_tokens": 8176, "strategy": "middle", "questions_affected": 1});
        Reply::json(200, &a)
    });
    let out = von(&server, "")
        .decide(&EngineRequest { context: None, questions: vec![q("d", "Ok?", &["yes", "no"])] }, T)
        .expect("ok");
    assert_eq!(out[0].detail(), Some("von cut the state from 27000 to 8176 tokens (middle)"));

    let server = FakeServer::start(|_r: &Request| Reply::hang());
    let started = Instant::now();
    let err = von(&server, "")
        .decide(
            &EngineRequest { context: None, questions: vec![q("d", "Ok?", &["yes", "no"])] },
            Duration::from_millis(300),
        )
        .unwrap_err();
    assert!(err.cause == Cause::Timeout);
    // Generous: cut off at the timeout, not after the fake's 60 s hang.
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}

#[test]
fn health_reads_the_static_status() {
    let server = FakeServer::start(|r: &Request| {
        assert_eq!(r.path, "/health");
        Reply::json(
            200,
            &json!({"status": "ok", "service": "von-decision-server", "version": "1.3.7", "engine": "von-1.3",
            "homage": "John von Neumann & Ludwig von Mises"}),
        )
    });
    let p = von(&server, "").health(T);
    assert!(p.ok());
    assert!(p.detail().unwrap().contains("von 1.3.7"));
}

#[test]
fn each_cause_has_its_own_fix() {
    let server = serving(0.5);
    let v = von(&server, "");
    let causes = [
        Cause::Timeout,
        Cause::Refused,
        Cause::Unauthorised,
        Cause::HttpStatus(422),
        Cause::ModelBroken,
        Cause::HttpStatus(500),
    ];
    let fixes = crate::providers::failure::distinct_fixes(&v, &causes);
    assert!(fixes[2].contains("SYSTEM1_VON_API_KEY"), "{}", fixes[2]);
    assert!(fixes[3].contains("von 1.3.7"), "{}", fixes[3]);
    assert!(fixes[4].contains("checkpoint von is started with"), "{}", fixes[4]);
}
