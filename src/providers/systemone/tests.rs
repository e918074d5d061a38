//! The systemone adapter's own rules, against a loopback fake (the real reference server, jevcompat
//! mock, is driven in tests/it/engines_systemone.rs).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::providers::Question;
use crate::providers::fake_http::{FakeServer, Reply, Request};

const T: Duration = Duration::from_secs(3);

fn settings(section: &str, toml_text: &str) -> Settings {
    let table: toml::Table = toml_text.parse().expect("toml");
    Settings::new(section, table, BTreeMap::new())
}

fn built(section: &str, toml_text: &str) -> (SystemOne, Vec<String>) {
    let s = settings(section, toml_text);
    let p = SystemOne::new(&s);
    s.finish();
    (p, s.take_errors())
}

fn yes_no(key: &str, text: &str) -> Question {
    Question { key: key.into(), text: text.into(), options: vec!["yes".into(), "no".into()] }
}

#[test]
fn defaults_and_an_instance_takes_its_name_and_key_variable() {
    let (p, errors) = built("providers.systemone", "");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!((p.name(), p.model().as_str(), p.capabilities().max_options), ("systemone", "jev-latest", 255));
    assert_eq!(p.timeout(), None);
    let (p, errors) = built("providers.hosted", "kind = \"systemone\"\ntimeout_s = 20\n");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!((p.name(), p.key_var().as_str()), ("hosted", "SYSTEM1_HOSTED_API_KEY"));
    assert_eq!(p.timeout(), Some(Duration::from_secs(20)));
    let (_, errors) = built("providers.systemone", "max_options = 256\n");
    assert!(errors.iter().any(|e| e.contains("max_options")), "the API's limit is 255: {errors:?}");
}

#[test]
fn a_key_never_goes_over_plain_http_to_another_machine() {
    let remote = "endpoint = \"http://10.1.2.3:8080\"\nallow_remote = true\napi_key = \"sk-x\"\n";
    let (_, errors) = built("providers.systemone", remote);
    assert_eq!(
        errors,
        [
            "providers.systemone: an API key is never sent over plain http:// to another machine; use an https:// endpoint"
        ]
    );
    assert!(!errors.concat().contains("sk-x"), "the key is never printed");
    let (_, errors) = built("providers.systemone", &remote.replace("http://", "https://"));
    assert!(errors.is_empty(), "{errors:?}");
    let (_, errors) = built("providers.systemone", "endpoint = \"http://10.1.2.3:8080\"\nallow_remote = true\n");
    assert!(errors.is_empty(), "without a key a team's server on plain http is fine: {errors:?}");
    let (_, errors) = built("providers.systemone", "endpoint = \"https://api.example.com\"\n");
    assert!(errors.iter().any(|e| e.contains("allow_remote")), "{errors:?}");
}

#[test]
fn all_questions_go_in_one_request_as_the_api_defines_them() {
    let server = FakeServer::start(|r: &Request| {
        let body = r.json();
        let mut answers = serde_json::Map::new();
        for (id, q) in body["questions"].as_object().expect("questions") {
            let a = if q["type"] == "noul" {
                json!({"type": "noul", "noul": 0.25})
            } else {
                json!({"type": "choice", "choice": "infra", "probabilities": {"infra": 0.7, "app": 0.3}, "confidence": 0.4})
            };
            answers.insert(id.clone(), a);
        }
        Reply::json(200, &json!({"model": "m", "answers": answers, "usage": {"input_tokens": 1, "output_tokens": 1}}))
    });
    let (p, errors) =
        built("providers.systemone", &format!("endpoint = \"{}\"\napi_key = \"sk-local\"\n", server.url()));
    assert!(errors.is_empty(), "{errors:?}");
    let request = EngineRequest {
        context: Some(json!({"text": "The build ran out of memory.", "descriptions": {"infra": "servers"}})),
        questions: vec![
            yes_no("oom", "Was it out of memory?"),
            Question { key: "team".into(), text: "Which team?".into(), options: vec!["infra".into(), "app".into()] },
        ],
    };
    let out = p.decide(&request, T).expect("answers");
    assert_eq!((out[0].decision(), out[0].confidence()), (Some("no"), Some(0.75)), "noul 0.25 is no at 0.75");
    assert_eq!((out[1].decision(), out[1].confidence()), (Some("infra"), Some(0.7)), "the probability, not confidence");
    let seen = server.requests();
    assert_eq!(seen.len(), 1, "one request");
    assert_eq!(seen[0].header("authorization"), Some("Bearer sk-local"));
    assert_eq!(
        seen[0].json(),
        json!({"state": {"text": "The build ran out of memory.", "descriptions": {"infra": "servers"}},
               "model": "jev-latest",
               "questions": {
                   "oom": {"type": "noul", "instructions": "Was it out of memory?"},
                   "team": {"type": "choice", "instructions": "Which team?", "criteria": {"infra": "servers", "app": null}}}})
    );
}

/// A server that serves no `noul` questions: a 422 naming each, as a validating server words it.
fn no_nouls(r: &Request) -> Reply {
    let body = r.json();
    let questions = body["questions"].as_object().cloned().unwrap_or_default();
    let nouls: Vec<&String> = questions.iter().filter(|(_, q)| q["type"] == "noul").map(|(id, _)| id).collect();
    if !nouls.is_empty() {
        let detail: Vec<Value> = nouls
            .iter()
            .map(|id| json!({"loc": ["body", "questions", id], "msg": "Input tag 'noul' found using 'type' does not match any of the expected tags: 'choice'", "type": "union_tag_invalid"}))
            .collect();
        return Reply::json(422, &json!({"detail": detail}));
    }
    let answers: serde_json::Map<String, Value> = questions
        .keys()
        .map(|id| {
            (id.clone(), json!({"type": "choice", "choice": "infra", "probabilities": {"infra": 0.7, "app": 0.3}}))
        })
        .collect();
    Reply::json(200, &json!({"model": "m", "answers": answers}))
}

#[test]
fn questions_a_422_refuses_pass_on_and_the_rest_are_asked_again() {
    let server = FakeServer::start(no_nouls);
    let (p, _) = built("providers.systemone", &format!("endpoint = \"{}\"\n", server.url()));
    let team = Question { key: "team".into(), text: "Which team?".into(), options: vec!["infra".into(), "app".into()] };
    let request = EngineRequest { context: None, questions: vec![yes_no("oom", "Out of memory?"), team.clone()] };
    let out = p.decide(&request, T).expect("answers");
    assert!(matches!(&out[0], EngineAnswer::Passed { cause: PassCause::Refused, .. }), "{out:?}");
    assert_eq!(
        out[0].rationale(),
        Some(
            "systemone refuses this question (HTTP 422: Input tag 'noul' found using 'type' does not match any of the \
             expected tags: 'choice')"
        ),
        "the server's own words, for people"
    );
    assert_eq!(out[1].decision(), Some("infra"));
    let seen = server.requests_to("/v1/systemone");
    assert_eq!(seen.len(), 2, "the choice asked again alone");
    assert_eq!(seen[1].json()["questions"].as_object().map(|q| q.len()), Some(1));
    // Every question refused: all passed on, one request.
    server.clear();
    let out = p.decide(&EngineRequest { context: None, questions: vec![yes_no("a", "A?"), yes_no("b", "B?")] }, T);
    assert!(out.as_ref().is_ok_and(|o| o.iter().all(|a| matches!(a, EngineAnswer::Passed { .. }))), "{out:?}");
    assert_eq!(server.requests_to("/v1/systemone").len(), 1);
    // A 422 about anything but the questions is the request's failure, as before.
    let other = FakeServer::start(|_: &Request| {
        Reply::json(422, &json!({"detail": [{"loc": ["body", "state"], "msg": "Field required", "type": "missing"}]}))
    });
    let (p, _) = built("providers.systemone", &format!("endpoint = \"{}\"\n", other.url()));
    let err = p.decide(&EngineRequest { context: None, questions: vec![team] }, T).unwrap_err();
    assert_eq!(err.cause, Cause::HttpStatus(422), "{err:?}");
}

#[test]
fn each_http_failure_says_what_it_is() {
    let answer = |status: u16, body: Value| {
        let server = FakeServer::start(move |r: &Request| {
            if r.path == "/v1/models" {
                Reply::json(200, &json!({"models": [{"name": "jev-latest"}, {"name": "kev-4b"}]}))
            } else {
                Reply::json(status, &body)
            }
        });
        let (p, _) = built("providers.systemone", &format!("endpoint = \"{}\"\nmodel = \"jev-9\"\n", server.url()));
        p.decide(&EngineRequest { context: None, questions: vec![yes_no("d", "Ok?")] }, T).unwrap_err()
    };
    let err = answer(401, json!({"detail": {"error_type": "authentication_error", "message": "no key"}}));
    assert_eq!(err.cause, Cause::Unauthorised);
    assert!(err.detail.contains("missing") && err.detail.contains("SYSTEM1_SYSTEMONE_API_KEY"), "{err:?}");
    let err = answer(400, json!({"detail": {"error_type": "api_usage_error", "message": "Unknown model: jev-9"}}));
    assert_eq!(err.cause, Cause::UnknownModel);
    assert!(err.detail.contains("no model \"jev-9\"; it offers: jev-latest, kev-4b"), "{err:?}");
    // A flat error (the reference server's `error-flat` fault) names no field: the model list,
    // which does not name jev-9, decides. The reference server's 404 `not_found` is typed the same
    // for a route and a model, so it reads as the route (its words stay in the detail).
    for (status, body, cause) in [
        (400, json!({"error": "Unknown model: jev-9"}), Cause::UnknownModel),
        (
            404,
            json!({"detail": {"error_type": "not_found", "message": "No route /v1/systemone"}}),
            Cause::HttpStatus(404),
        ),
        (
            404,
            json!({"detail": {"error_type": "not_found", "message": "Model not served: jev-9"}}),
            Cause::HttpStatus(404),
        ),
    ] {
        assert_eq!(answer(status, body.clone()).cause, cause, "{body}");
    }
    let err = answer(422, json!({"detail": [{"loc": ["body", "state"], "msg": "Field required", "type": "missing"}]}));
    assert_eq!(
        err,
        Failure::new(
            Cause::HttpStatus(422),
            "systemone: the server refused the request as invalid (HTTP 422: body.state: Field required)"
        )
    );
    let err = answer(503, json!({"detail": {"error_type": "overloaded_error", "message": "busy"}}));
    assert_eq!(err.cause, Cause::HttpStatus(503));
    assert!(err.detail.contains("the server failed"), "{err:?}");
}

#[test]
fn an_unknown_model_is_read_from_typed_fields_and_the_model_list_never_from_words() {
    let cause_of = |model: &str, status: u16, body: Value| {
        let server = FakeServer::start(move |r: &Request| {
            if r.path == "/v1/models" {
                Reply::json(200, &json!({"data": [{"id": "laya-typed"}, {"id": "julia-1"}]}))
            } else {
                Reply::json(status, &body)
            }
        });
        let config = format!("endpoint = \"{}\"\nmodel = \"{model}\"\n", server.url());
        let (p, _) = built("providers.systemone", &config);
        p.decide(&EngineRequest { context: None, questions: vec![yes_no("d", "Ok?")] }, T).unwrap_err().cause
    };
    // llama.cpp's router says it in words only, with a generic type: the list decides.
    let words = json!({"error": {"code": 400, "message": "model not found", "type": "invalid_request_error"}});
    assert_eq!(cause_of("julia-1", 400, words.clone()), Cause::HttpStatus(400), "listed: the words are not the cause");
    assert_eq!(cause_of("julia-2", 400, words), Cause::UnknownModel, "not listed");
    // A refusal that names another field is about that field, listed or not.
    let other = json!({"error": {"message": "model x: questions.d not found", "param": "questions.d"}});
    assert_eq!(cause_of("julia-2", 400, other), Cause::HttpStatus(400));
    // Typed fields say it whatever the list holds: vLLM's type, laya-serve 0.2.1's field.
    let vllm = json!({"error": {"message": "x", "type": "NotFoundError", "param": "model", "code": 404}});
    assert_eq!(cause_of("julia-1", 404, vllm), Cause::UnknownModel);
    let laya = json!({"error": {"message": "unknown model 'x'; expected a Jev model name", "field": "model"}});
    assert_eq!(cause_of("julia-1", 422, laya), Cause::UnknownModel);
    let system1_serve = json!({"detail": {"error_type": "api_usage_error", "message": "x"}});
    assert_eq!(cause_of("julia-1", 404, system1_serve), Cause::UnknownModel);
    // A 404 from an open server whose words say "model ... not found" is a route missing.
    let route = json!({"error": {"code": 404, "message": "model route not found", "type": "not_found_error"}});
    assert_eq!(cause_of("julia-2", 404, route), Cause::HttpStatus(404));
}

#[test]
fn each_kind_of_failure_has_its_own_fix() {
    let (p, _) = built("providers.hosted", "kind = \"systemone\"\n");
    let fixes = crate::providers::failure::distinct_fixes(
        &p,
        &[
            Cause::Unauthorised,
            Cause::UnknownModel,
            Cause::HttpStatus(422),
            Cause::HttpStatus(404),
            Cause::HttpStatus(503),
            Cause::Timeout,
            Cause::Malformed,
            Cause::Refused,
        ],
    );
    assert!(fixes[0].contains("SYSTEM1_HOSTED_API_KEY") && fixes[1].contains("[providers.hosted] model"), "{fixes:?}");
    assert!(fixes[6].contains("jevcompat test"), "{fixes:?}");
}

#[test]
fn gemini_and_openrouter_are_dialects_at_their_own_paths_with_their_own_keys() {
    let server = FakeServer::start(|r: &Request| {
        if r.path == "/v1/models" {
            return Reply::json(200, &json!({"models": [{"name": "models/gemini-decision-1"}]}));
        }
        if r.path == "/api/v1/models" {
            return Reply::json(200, &json!({"data": [{"id": "typesafe/jev-1.14"}]}));
        }
        let body = r.json();
        let ids: Vec<String> = body["questions"].as_object().map(|q| q.keys().cloned().collect()).unwrap_or_default();
        if body["input"] == "blocked" || body["state"] == "blocked" {
            return Reply::json(200, &json!({"prompt_feedback": {"block_reason": "safety"}}));
        }
        let answers: serde_json::Map<String, Value> = ids
            .iter()
            .map(|id| {
                let a = if body["questions"][id]["type"] == "noul" {
                    json!({"type": "noul", "noul": 0.9, "confidence": 0.9})
                } else {
                    json!({"type": "choice", "choice": "app", "probabilities": {"infra": 0.2, "app": 0.8}, "confidence": 0.8})
                };
                (id.clone(), a)
            })
            .collect();
        Reply::json(200, &json!({"answers": answers}))
    });
    let request = |state: &str| EngineRequest {
        context: Some(json!(state)),
        questions: vec![
            yes_no("oom", "Was it out of memory?"),
            Question { key: "team".into(), text: "Which team?".into(), options: vec!["infra".into(), "app".into()] },
        ],
    };
    let config = format!("endpoint = \"{}\"\napi_key = \"k-1\"\n", server.url());
    let dialect = |section: &str, d: &'static Dialect| {
        let s = settings(section, &config);
        let p = SystemOne::with_dialect(&s, d);
        s.finish();
        assert!(s.take_errors().is_empty());
        p
    };
    let gemini = dialect("providers.gemini", &GEMINI);
    let out = gemini.decide(&request("The build ran out of memory."), T).expect("answers");
    assert_eq!((out[0].decision(), out[1].decision()), (Some("yes"), Some("app")));
    let seen = server.requests();
    assert_eq!(seen[0].path, "/v1/decisions");
    assert_eq!((seen[0].header("x-goog-api-key"), seen[0].header("authorization")), (Some("k-1"), None));
    assert_eq!(seen[0].json()["model"], "models/gemini-decision-1");
    assert_eq!(
        seen[0].json()["questions"]["team"]["criteria"],
        json!({"infra": "", "app": ""}),
        "Gemini types them as text"
    );
    assert!(gemini.health(T).ok(), "{:?}", gemini.health(T));
    let out = gemini.decide(&request("blocked"), T).expect("passed on");
    assert!(
        matches!(&out[0], EngineAnswer::Passed { cause: PassCause::Refused, reason } if reason.contains("blocked the input (safety)")),
        "{out:?}"
    );
    server.clear();
    let openrouter = dialect("providers.openrouter", &OPENROUTER);
    openrouter.decide(&request("x"), T).expect("answers");
    let seen = server.requests();
    assert_eq!((seen[0].path.as_str(), seen[0].header("authorization")), ("/api/alpha/decisions", Some("Bearer k-1")));
    assert_eq!(seen[0].json()["model"], "typesafe/jev-1.14");
    assert!(openrouter.health(T).ok(), "{:?}", openrouter.health(T));
    // A hosted engine is never used unless the config says a remote one may be.
    let s = settings("providers.gemini", "");
    let _ = SystemOne::with_dialect(&s, &GEMINI);
    assert!(s.take_errors().iter().any(|e| e.contains("allow_remote")));
}
