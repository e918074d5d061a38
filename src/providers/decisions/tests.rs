//! The decisions adapter against a loopback fake that replays each answer shape the `openai` SDK
//! types, and each way a reply can be wrong.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::providers::Question;
use crate::providers::fake_http::{FakeServer, Reply, Request};

const T: Duration = Duration::from_secs(3);

fn built(section: &str, toml_text: &str) -> (Decisions, Vec<String>) {
    let table: toml::Table = toml_text.parse().expect("toml");
    let s = Settings::new(section, table, BTreeMap::new());
    let p = Decisions::new(&s);
    s.finish();
    (p, s.take_errors())
}

fn request() -> EngineRequest {
    EngineRequest {
        context: Some(json!({"text": "The build ran out of memory.", "descriptions": {"infra": "servers"}})),
        questions: vec![
            Question {
                key: "oom".into(),
                text: "Was it out of memory?".into(),
                options: vec!["yes".into(), "no".into()],
            },
            Question { key: "team".into(), text: "Which team?".into(), options: vec!["infra".into(), "app".into()] },
        ],
    }
}

/// A fake that answers every request with `answers`.
fn replaying(answers: Value) -> (FakeServer, Decisions) {
    let server = FakeServer::start(move |_: &Request| {
        Reply::json(
            200,
            &json!({"model": "gpt-6-luna", "answers": answers, "usage": {"input_tokens": 5, "output_tokens": 0}}),
        )
    });
    let (p, errors) =
        built("providers.decisions", &format!("endpoint = \"{}/v1\"\napi_key = \"sk-test\"\n", server.url()));
    assert!(errors.is_empty(), "{errors:?}");
    (server, p)
}

fn predicate(p: Value) -> Value {
    json!({"type": "predicate", "name": "oom", "probability": p})
}

fn choice(pick: &str, infra: Value, app: Value) -> Value {
    json!({"type": "choice", "name": "team", "choice": pick, "confidence": 0.1,
           "probabilities": [{"value": "infra", "probability": infra}, {"value": "app", "probability": app}]})
}

#[test]
fn defaults_and_an_instance_takes_its_name_and_key_variable() {
    let (p, errors) = built("providers.decisions", "");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!((p.name(), p.model().as_str(), p.capabilities().max_options), ("decisions", "gpt-6-luna", 255));
    assert_eq!(p.base(), "http://127.0.0.1:8000/v1", "nothing leaves the machine by default");
    let (p, errors) = built("providers.luna", "kind = \"decisions\"\ntimeout_s = 5\n");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        (p.name(), p.key_var().as_str(), p.timeout()),
        ("luna", "SYSTEM1_LUNA_API_KEY", Some(Duration::from_secs(5)))
    );
    let (_, errors) = built("providers.decisions", "endpoint = \"https://api.openai.com/v1\"\n");
    assert!(errors.iter().any(|e| e.contains("allow_remote")), "a hosted engine is opted into: {errors:?}");
    let remote = "endpoint = \"http://10.1.2.3:8000/v1\"\nallow_remote = true\napi_key = \"sk-secret\"\n";
    let (_, errors) = built("providers.decisions", remote);
    assert!(errors.iter().any(|e| e.contains("never sent over plain http://")), "{errors:?}");
    assert!(!errors.concat().contains("sk-secret"), "the key is never printed");
    let (_, errors) = built("providers.decisions", &remote.replace("http://", "https://"));
    assert!(errors.is_empty(), "{errors:?}");
    let (_, errors) = built("providers.decisions", "max_options = 256\n");
    assert!(errors.iter().any(|e| e.contains("max_options")), "{errors:?}");
}

#[test]
fn every_question_goes_in_one_request_and_the_probabilities_are_what_is_used() {
    let (server, p) = replaying(json!([predicate(json!(0.25)), choice("infra", json!(0.7), json!(0.3))]));
    let out = p.decide(&request(), T).expect("answers");
    assert_eq!(
        (out[0].decision(), out[0].confidence()),
        (Some("no"), Some(0.75)),
        "a probability of 0.25 is no at 0.75"
    );
    assert_eq!((out[1].decision(), out[1].confidence()), (Some("infra"), Some(0.7)), "the probability, not confidence");
    let seen = server.requests();
    assert_eq!(seen.len(), 1, "one request");
    assert_eq!((seen[0].path.as_str(), seen[0].header("authorization")), ("/v1/decisions", Some("Bearer sk-test")));
    assert_eq!(
        seen[0].json(),
        json!({"model": "gpt-6-luna",
               "input": r#"{"text":"The build ran out of memory.","descriptions":{"infra":"servers"}}"#,
               "questions": [
                   {"type": "predicate", "instructions": "Was it out of memory?", "name": "oom"},
                   {"type": "choice", "instructions": "Which team?", "name": "team",
                    "choices": [{"value": "infra", "description": "servers"}, {"value": "app"}]}]})
    );
}

#[test]
fn a_refusal_or_a_missing_answer_passes_that_question_on_and_keeps_the_rest() {
    let (_s, p) = replaying(json!([{"type": "refusal", "name": "oom"}, choice("app", json!(0.4), json!(0.6))]));
    let out = p.decide(&request(), T).expect("answers");
    assert!(
        matches!(&out[0], EngineAnswer::Passed { cause: PassCause::Refused, reason } if reason.contains("refused"))
    );
    assert_eq!(out[1].decision(), Some("app"));
    let (_s, p) = replaying(json!([choice("app", json!(0.4), json!(0.6))]));
    let out = p.decide(&request(), T).expect("answers");
    assert!(matches!(&out[0], EngineAnswer::Passed { cause: PassCause::LeftOut, .. }), "{out:?}");
    assert_eq!(out[1].decision(), Some("app"));
}

#[test]
fn a_request_refused_for_one_question_passes_that_one_on_and_asks_the_others_again() {
    // As SGLang refuses a label that is not one token: a 400 for the whole request, naming the question.
    let server = FakeServer::start(|r: &Request| {
        let body = r.json();
        let questions = body["questions"].as_array().cloned().unwrap_or_default();
        match questions.iter().position(|q| q["type"] == "choice") {
            Some(i) => Reply::json(
                400,
                &json!({"error": {"message": "label 'infra' is not a single token", "type": "invalid_request_error",
                                  "param": format!("questions[{i}].choices"), "code": null}}),
            ),
            None => Reply::json(200, &json!({"model": "m", "answers": [predicate(json!(0.9))]})),
        }
    });
    let (p, _) = built("providers.decisions", &format!("endpoint = \"{}\"\n", server.url()));
    let out = p.decide(&request(), T).expect("answers");
    assert_eq!(out[0].decision(), Some("yes"), "{out:?}");
    assert!(
        matches!(&out[1], EngineAnswer::Passed { cause: PassCause::Refused, reason }
            if reason.contains("HTTP 400: label 'infra' is not a single token")),
        "{out:?}"
    );
    let asked: Vec<usize> =
        server.requests().iter().map(|r| r.json()["questions"].as_array().map_or(0, Vec::len)).collect();
    assert_eq!(asked, [2, 1], "the other question asked again alone");

    // A refusal that names no question, or one that was not asked, fails the whole request.
    for param in [json!("input"), json!("questions[7]"), json!(null)] {
        let server = FakeServer::start(move |_: &Request| {
            Reply::json(
                400,
                &json!({"error": {"message": "bad", "type": "invalid_request_error", "param": param, "code": null}}),
            )
        });
        let (p, _) = built("providers.decisions", &format!("endpoint = \"{}\"\n", server.url()));
        let f = p.decide(&request(), T).expect_err("the request failed");
        assert_eq!(f.cause, Cause::HttpStatus(400), "{f:?}");
        assert_eq!(server.requests().len(), 1);
    }
}

#[test]
fn each_corruption_is_malformed_and_says_what() {
    let cases: Vec<(Value, &str)> = vec![
        (json!([predicate(json!(0.5)), choice("infra", json!(0.7), json!(0.7))]), "sum to"),
        (
            json!([predicate(json!(0.5)), {"type": "choice", "name": "team", "choice": "infra", "confidence": 0.5,
                   "probabilities": [{"value": "infra", "probability": 0.5}, {"value": "ops", "probability": 0.5}]}]),
            "not an option",
        ),
        (json!([predicate(json!(0.5)), choice("ops", json!(0.5), json!(0.5))]), "not one of the choices"),
        (json!([predicate(json!(0.5)), choice("app", json!(0.9), json!(0.1))]), "not the most probable"),
        (json!([predicate(json!(1.3)), choice("app", json!(0.1), json!(0.9))]), "outside [0, 1]"),
        (json!([predicate(json!("0.5")), choice("app", json!(0.1), json!(0.9))]), "not a number"),
        (json!([choice("app", json!(0.1), json!(0.9)), predicate(json!(0.5))]), "not asked there"),
        (json!([{"type": "choice", "name": "oom"}, choice("app", json!(0.1), json!(0.9))]), "says type"),
    ];
    for (answers, words) in cases {
        let (_s, p) = replaying(answers.clone());
        let f = p.decide(&request(), T).expect_err("malformed");
        assert_eq!(f.cause, Cause::Malformed, "{answers}: {f:?}");
        assert!(f.detail().contains(words), "{answers}: {}", f.detail());
    }
    for (body, words) in
        [(r#"{"answers": [{"type": "predicate", "probability": NaN}]}"#, "NaN"), ("<html>busy</html>", "not JSON")]
    {
        let server = FakeServer::start(move |_: &Request| Reply::new(200, "application/json", body));
        let (p, _) = built("providers.decisions", &format!("endpoint = \"{}\"\n", server.url()));
        let f = p.decide(&request(), T).expect_err("malformed");
        assert_eq!(f.cause, Cause::Malformed);
        assert!(f.detail().contains(words), "{}", f.detail());
    }
}

#[test]
fn errors_get_their_causes_and_fixes() {
    let server = FakeServer::start(|r: &Request| match r.header("authorization") {
        None => Reply::json(
            401,
            &json!({"error": {"message": "You didn't provide an API key.", "type": "invalid_request_error", "code": null}}),
        ),
        Some(_) => Reply::json(
            404,
            &json!({"error": {"message": "The model `gpt-7` does not exist", "type": "invalid_request_error", "param": "model", "code": "model_not_found"}}),
        ),
    });
    let (p, _) = built("providers.decisions", &format!("endpoint = \"{}\"\n", server.url()));
    let f = p.decide(&request(), T).expect_err("401");
    assert_eq!(f.cause, Cause::Unauthorised);
    assert!(
        f.detail().contains("SYSTEM1_DECISIONS_API_KEY") && f.detail().contains("didn't provide"),
        "{}",
        f.detail()
    );
    let (p, _) =
        built("providers.decisions", &format!("endpoint = \"{}\"\nmodel = \"gpt-7\"\napi_key = \"k\"\n", server.url()));
    let f = p.decide(&request(), T).expect_err("404");
    assert_eq!(f.cause, Cause::UnknownModel, "{f:?}");
    assert!(p.fix(&f).action.contains("model"), "{}", p.fix(&f).action);
}

#[test]
fn an_unknown_model_is_read_from_the_error_s_typed_fields() {
    let cause_of = |body: Value| {
        let server = FakeServer::start(move |_: &Request| Reply::json(404, &body));
        let (p, _) = built("providers.decisions", &format!("endpoint = \"{}\"\n", server.url()));
        p.decide(&request(), T).expect_err("404").cause
    };
    // vLLM's shape: no OpenAI code (its `code` is the status), the type says what is missing.
    let vllm = json!({"error": {"message": "The model `x` does not exist.", "type": "NotFoundError", "param": "model", "code": 404}});
    assert_eq!(cause_of(vllm), Cause::UnknownModel);
    // Words alone say nothing: a server without the route is not one without the model.
    let words = json!({"error": {"message": "model route not found", "type": "invalid_request_error"}});
    assert_eq!(cause_of(words), Cause::HttpStatus(404));
}

#[test]
fn the_probe_reads_the_model_list() {
    let server = FakeServer::start(|_: &Request| {
        Reply::json(200, &json!({"object": "list", "data": [{"id": "gpt-6-luna", "object": "model"}]}))
    });
    let (p, _) = built("providers.decisions", &format!("endpoint = \"{}/v1\"\n", server.url()));
    assert!(p.health(T).ok(), "{:?}", p.health(T));
    assert_eq!(server.paths()[0], "/v1/models");
    let (p, _) = built("providers.decisions", &format!("endpoint = \"{}/v1\"\nmodel = \"other\"\n", server.url()));
    assert_eq!(p.health(T).failure().map(|f| f.cause), Some(Cause::UnknownModel));
}
