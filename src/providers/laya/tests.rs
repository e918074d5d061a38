//! The Laya adapter against a loopback fake that answers in laya-serve 0.4.15's wire format
//! (field names, status codes and error bodies as captured from the real server).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::providers::Question;
use crate::providers::answers::non_latin_share;
use crate::providers::fake_http::{FakeServer, Reply, Request};

pub fn settings(toml_text: &str) -> Settings {
    let table: toml::Table = toml_text.parse().expect("test TOML");
    Settings::new("providers.laya", table, BTreeMap::new())
}

fn laya(server: &FakeServer, extra: &str) -> Laya {
    let s = settings(&format!("endpoint = \"{}\"\n{extra}", server.url()));
    let l = Laya::new(&s);
    s.finish();
    assert!(s.take_errors().is_empty());
    l
}

fn q(key: &str, text: &str, options: &[&str]) -> Question {
    Question { key: key.into(), text: text.into(), options: options.iter().map(|s| s.to_string()).collect() }
}

fn req(context: Option<Value>, questions: Vec<Question>) -> EngineRequest {
    EngineRequest { context, questions }
}

const T: Duration = Duration::from_secs(3);

/// A laya-serve 0.4.15 answer to `body`: the first option gets `top`, the rest share the remainder;
/// `routed` is the checkpoint reported in `routing.model` (None: a strict server without routing).
pub fn laya_answer(body: &Value, top: f64, routed: Option<&str>) -> Value {
    let mut answers = serde_json::Map::new();
    for (id, question) in body["questions"].as_object().expect("questions object") {
        let labels: Vec<String> =
            question["criteria"].as_object().expect("criteria as an object").keys().cloned().collect();
        let rest = (1.0 - top) / (labels.len() - 1) as f64;
        let probs: serde_json::Map<String, Value> = labels
            .iter()
            .enumerate()
            .map(|(i, l)| (l.clone(), json!(((if i == 0 { top } else { rest }) * 1e4).round() / 1e4)))
            .collect();
        let mut a = json!({"type": "choice", "choice": labels[0], "probabilities": probs, "confidence": 0.2781});
        if routed.is_some() {
            a["answer_confidence"] = json!(top);
            a["action"] = json!({"act_probability": 0.4802});
            a["x_jev_confidence"] = json!(0.6);
        }
        answers.insert(id.clone(), a);
    }
    let mut resp = json!({"model": "laya-rl-agent", "answers": answers,
        "usage": {"input_tokens": 71, "output_tokens": 0}});
    if let Some(m) = routed {
        resp["usage"]["state_tokens"] = json!(11);
        resp["routing"] = json!({"model": m, "repo": format!("convaiinnovations/laya/{m}"),
            "reason": format!("explicit model='{m}'"), "detection": null, "workflow": null});
    }
    resp
}

fn serving(routed: &'static str, top: f64) -> FakeServer {
    FakeServer::start(move |r: &Request| Reply::json(200, &laya_answer(&r.json(), top, Some(routed))))
}

#[test]
fn maps_a_question_to_a_choice_and_back() {
    let server = serving("typed-decisions", 0.52);
    let l = laya(&server, "");
    let ctx = json!({"pipeline": "build 412 failed twice"});
    let out = l
        .decide(
            &req(Some(ctx.clone()), vec![q("decision", "What next?", &["block the merge", "rerun the pipeline"])]),
            T,
        )
        .expect("answer");
    let sent = server.requests_to("/v1/systemone")[0].json();
    assert_eq!(sent["state"], ctx);
    assert_eq!(sent["model"], "typed-decisions");
    assert_eq!(
        sent["questions"]["decision"],
        json!({"type": "choice", "instructions": "What next?",
               "criteria": {"block the merge": null, "rerun the pipeline": null}})
    );
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].decision(), Some("block the merge"));
    assert_eq!(out[0].confidence(), Some(0.52), "answer_confidence, not the entropy confidence");
    assert_eq!(
        serde_json::to_value(out[0].probabilities()).ok(),
        Some(json!({"block the merge": 0.52, "rerun the pipeline": 0.48}))
    );
    assert_eq!(out[0].rationale(), Some("laya typed-decisions: block the merge=0.52, rerun the pipeline=0.48"));
}

#[test]
fn yes_no_is_a_two_option_choice_and_the_question_is_the_state_without_context() {
    let server = serving("typed-decisions", 0.7);
    let l = laya(&server, "");
    l.decide(&req(None, vec![q("decision", "Is `rm -rf /` destructive?", &["yes", "no"])]), T).expect("answer");
    let sent = server.requests()[0].json();
    assert_eq!(sent["questions"]["decision"]["type"], "choice");
    assert_eq!(sent["questions"]["decision"]["criteria"], json!({"yes": null, "no": null}));
    assert_eq!(sent["state"], "Is `rm -rf /` destructive?");
}

#[test]
fn several_questions_go_in_one_request_and_come_back_in_order() {
    let server = serving("typed-decisions", 0.8);
    let l = laya(&server, "");
    let features = ["read_only", "design", "review", "specified"];
    let qs = features.iter().map(|f| q(f, &format!("Is it {f}?"), &["yes", "no"])).collect();
    let out = l.decide(&req(Some(json!({"prompt": "fix the typo"})), qs), T).expect("answers");
    assert_eq!(server.requests().len(), 1, "one request for four questions");
    let sent = server.requests()[0].json();
    assert_eq!(sent["questions"].as_object().unwrap().keys().collect::<Vec<_>>(), features.to_vec());
    assert_eq!(out.len(), 4);
    assert!(out.iter().all(|a| a.decision() == Some("yes") && a.confidence() == Some(0.8)));
}

#[test]
fn an_answer_from_another_checkpoint_is_malformed() {
    let server = serving("english", 0.9);
    let l = laya(&server, "");
    let err = l.decide(&req(None, vec![q("decision", "Ok?", &["yes", "no"])]), T).unwrap_err();
    assert!(
        matches!(&err, Failure { cause: Cause::Malformed, detail: d } if d.contains("\"english\"") && d.contains("typed-decisions")),
        "{err:?}"
    );
}

#[test]
fn aliases_are_compared_by_their_canonical_checkpoint() {
    let server = serving("typed-decisions", 0.9);
    let l = laya(&server, "model = \"Typed\"");
    let out = l.decide(&req(None, vec![q("decision", "Ok?", &["yes", "no"])]), T).expect("same checkpoint");
    assert_eq!(server.requests()[0].json()["model"], "Typed", "the configured name is sent as is");
    assert_eq!(l.model(), "typed-decisions", "calibration sees the canonical name");
    assert!(out[0].rationale().unwrap().starts_with("laya typed-decisions:"));
    assert_eq!(canonical("laya"), Some("english"));
    assert_eq!(canonical("ML"), Some("multilingual"));
    assert_eq!(canonical("convaiinnovations/laya"), None, "the bare hub id is no built-in name: a pin of its own");
}

#[test]
fn a_strict_server_without_routing_is_accepted_only_for_a_builtin_pin() {
    let server = FakeServer::start(|r: &Request| Reply::json(200, &laya_answer(&r.json(), 0.75, None)));
    let l = laya(&server, "");
    let out = l.decide(&req(None, vec![q("decision", "Ok?", &["yes", "no"])]), T).expect("builtin pin");
    assert_eq!(out[0].confidence(), Some(0.75), "max probability when answer_confidence is absent");
    assert!(out[0].detail().unwrap().contains("no routing"));
    let custom = laya(&server, "model = \"my-finetune\"");
    let err = custom.decide(&req(None, vec![q("decision", "Ok?", &["yes", "no"])]), T).unwrap_err();
    assert!(
        matches!(&err, Failure { cause: Cause::Malformed, detail: d } if d.contains("cannot be confirmed")),
        "{err:?}"
    );
}

#[test]
fn more_options_than_the_limit_are_refused_before_any_request() {
    let server = serving("typed-decisions", 0.5);
    let l = laya(&server, "");
    assert_eq!(l.capabilities().max_options, 20);
    let many: Vec<String> = (0..21).map(|i| format!("option {i}")).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let err = l.decide(&req(None, vec![q("decision", "Which?", &refs)]), T).unwrap_err();
    assert!(
        matches!(&err, Failure { cause: Cause::OverLimit, detail: d } if d.contains("21 options exceed the limit of 20")),
        "{err:?}"
    );
    assert!(server.requests().is_empty(), "nothing was sent");
    let wider = laya(&server, "max_options = 30");
    assert_eq!(wider.capabilities().max_options, 30);
    wider.decide(&req(None, vec![q("decision", "Which?", &refs)]), T).expect("within a raised limit");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn non_latin_text_is_passed_on_without_calling_the_engine() {
    let server = serving("typed-decisions", 0.9);
    let l = laya(&server, "");
    let out = l
        .decide(
            &req(
                Some(json!({"prompt": "修复登录页面上的错误并添加测试"})),
                vec![q("decision", "Read only?", &["yes", "no"])],
            ),
            T,
        )
        .expect("passed on");
    assert!(matches!(out[0], EngineAnswer::Passed { .. }));
    assert!(out[0].rationale().unwrap().contains("not Latin script"));
    assert!(server.requests().is_empty());
    // Latin-script languages other than English are sent.
    l.decide(
        &req(
            Some(json!("Correggi l'errore nella pagina di accesso, perché è urgente")),
            vec![q("d", "Ok?", &["yes", "no"])],
        ),
        T,
    )
    .expect("Italian is fine");
    assert_eq!(server.requests().len(), 1);
    // Only the question that is mostly non-Latin is passed on; the others are asked.
    let out = l
        .decide(
            &req(
                Some(json!("fix the login page")),
                vec![q("a", "Это только чтение?", &["да", "нет"]), q("b", "Is it read only?", &["yes", "no"])],
            ),
            T,
        )
        .expect("mixed");
    assert!(matches!(out[0], EngineAnswer::Passed { .. }));
    assert_eq!(out[1].decision(), Some("yes"));
    let sent = server.requests()[1].json();
    assert!(sent["questions"].get("a").is_none() && sent["questions"].get("b").is_some());
    assert!(non_latin_share(&["abc", "дд"]) > 0.39 && non_latin_share(&["àéîõü ß"]) == 0.0);
}

#[test]
fn the_multilingual_checkpoint_reads_non_latin_text() {
    let server = serving("multilingual", 0.9);
    let l = laya(&server, "model = \"multilingual\"");
    let out = l
        .decide(&req(Some(json!("修复登录页面上的错误")), vec![q("d", "Read only?", &["yes", "no"])]), T)
        .expect("sent");
    assert_eq!(out[0].decision(), Some("yes"));
}

#[test]
fn the_bearer_header_is_sent_only_when_the_key_is_set() {
    let server = serving("typed-decisions", 0.9);
    laya(&server, "").decide(&req(None, vec![q("d", "Ok?", &["yes", "no"])]), T).expect("no key");
    laya(&server, "api_key = \"sekret\"").decide(&req(None, vec![q("d", "Ok?", &["yes", "no"])]), T).expect("key");
    let r = server.requests();
    assert_eq!(r[0].header("authorization"), None);
    assert_eq!(r[1].header("authorization"), Some("Bearer sekret"));
}

#[test]
fn a_401_says_whether_the_key_is_missing_or_wrong() {
    let server =
        FakeServer::start(|_r: &Request| Reply::json(401, &json!({"detail": "invalid or missing bearer token"})));
    let err = laya(&server, "").decide(&req(None, vec![q("d", "Ok?", &["yes", "no"])]), T).unwrap_err();
    assert!(
        matches!(&err, Failure { cause: Cause::Unauthorised, detail: d } if d.contains("missing") && d.contains("SYSTEM1_LAYA_API_KEY")),
        "{err:?}"
    );
    let err =
        laya(&server, "api_key = \"nope\"").decide(&req(None, vec![q("d", "Ok?", &["yes", "no"])]), T).unwrap_err();
    assert!(matches!(&err, Failure { cause: Cause::Unauthorised, detail: d } if d.contains("wrong")), "{err:?}");
}

#[test]
fn a_remote_endpoint_is_a_config_error_unless_allowed() {
    let s = settings("endpoint = \"http://10.20.30.40:8765\"");
    Laya::new(&s);
    let errors = s.take_errors();
    assert!(errors.iter().any(|e| e.contains("providers.laya.endpoint") && e.contains("allow_remote")), "{errors:?}");
    let s = settings("endpoint = \"http://10.20.30.40:8765\"\nallow_remote = true");
    Laya::new(&s);
    s.finish();
    assert!(s.take_errors().is_empty());
}

#[test]
fn every_error_status_is_a_provider_error_with_the_engines_detail() {
    for (status, detail) in [
        (400, "'state' is required"),
        (404, "Not Found"),
        (413, "too many choice options for 'big' (101 > 100)"),
        (422, "question 'q': unknown type 'decision'; use one of ['choice', 'noul', 'score']"),
        (500, "inference failed"),
    ] {
        let server = FakeServer::start(move |_r: &Request| Reply::json(status, &json!({"detail": detail})));
        let err = laya(&server, "").decide(&req(None, vec![q("d", "Ok?", &["yes", "no"])]), T).unwrap_err();
        assert_eq!(err, Failure::new(Cause::HttpStatus(status), format!("laya: HTTP {status}: {detail}")));
    }
}

#[test]
fn a_busy_server_is_retried_once_only_when_the_wait_fits_in_the_timeout() {
    let busy = |after: &str| {
        Reply::json(503, &json!({"detail": "server busy, try again later"})).with_header("retry-after", after)
    };
    // A wait of 30 s does not fit in 0.8 s: the adapter answers at once (10 s is generous for that).
    let server = FakeServer::start(move |_r: &Request| busy("30"));
    let started = Instant::now();
    let err = laya(&server, "")
        .decide(&req(None, vec![q("d", "Ok?", &["yes", "no"])]), Duration::from_millis(800))
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10), "did not sleep the 30 s: {:?}", started.elapsed());
    assert_eq!(
        err,
        Failure::new(Cause::HttpStatus(503), "laya: HTTP 503: server busy, try again later (retry after 30 s)")
    );
    assert_eq!(server.requests().len(), 1);

    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let server = FakeServer::start(move |r: &Request| {
        if c.fetch_add(1, Ordering::SeqCst) == 0 {
            busy("1")
        } else {
            Reply::json(200, &laya_answer(&r.json(), 0.9, Some("typed-decisions")))
        }
    });
    let out = laya(&server, "").decide(&req(None, vec![q("d", "Ok?", &["yes", "no"])]), T).expect("second try");
    assert_eq!(out[0].decision(), Some("yes"));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn a_server_that_never_answers_is_cut_off_at_the_timeout() {
    let server = FakeServer::start(|_r: &Request| Reply::hang());
    let started = Instant::now();
    let err = laya(&server, "")
        .decide(&req(None, vec![q("d", "Ok?", &["yes", "no"])]), Duration::from_millis(300))
        .unwrap_err();
    let took = started.elapsed();
    assert!(err.cause == Cause::Timeout, "{err:?}");
    // Not before the timeout (load only makes it later), and not after the fake's 60 s hang.
    assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn broken_answers_are_malformed() {
    let server = FakeServer::start(|_r: &Request| Reply::text(200, "<html>proxy page</html>"));
    let err = laya(&server, "").decide(&req(None, vec![q("d", "Ok?", &["yes", "no"])]), T).unwrap_err();
    assert!(err.cause == Cause::Malformed, "{err:?}");
    let server = FakeServer::start(|_r: &Request| {
        Reply::json(200, &json!({"model": "laya-rl-agent", "answers": {}, "routing": {"model": "typed-decisions"}}))
    });
    let err = laya(&server, "").decide(&req(None, vec![q("d", "Ok?", &["yes", "no"])]), T).unwrap_err();
    assert!(
        matches!(&err, Failure { cause: Cause::Malformed, detail: d } if d.contains("no answer for question \"d\"")),
        "{err:?}"
    );
}

fn health_server(body: Value) -> FakeServer {
    FakeServer::start(move |r: &Request| {
        if r.path == "/health" { Reply::json(200, &body) } else { Reply::json(404, &json!({"detail": "Not Found"})) }
    })
}

#[test]
fn health_warns_when_the_pinned_checkpoint_is_not_loaded() {
    let loaded = health_server(json!({"status": "ok", "loaded": ["english", "multilingual", "typed-decisions"],
        "device": "cpu", "device_is_preference": false,
        "checkpoint_devices": {"english": "cpu", "multilingual": "cpu", "typed-decisions": "cuda:0"}}));
    let p = laya(&loaded, "").health(T);
    assert!(p.ok());
    assert!(p.detail().unwrap().contains("typed-decisions is loaded on cuda:0"), "{p:?}");

    let nothing = health_server(json!({"status": "ok", "loaded": [], "device": "cpu", "device_is_preference": true}));
    let p = laya(&nothing, "").health(T);
    assert!(p.ok());
    let d = p.detail().unwrap();
    assert!(d.starts_with("warning:") && d.contains("typed-decisions is not loaded") && d.contains("slow"), "{d}");

    let withheld = health_server(json!({"status": "ok"}));
    let p = laya(&withheld, "").health(T);
    assert!(p.ok() && p.detail().unwrap().contains("SYSTEM1_LAYA_API_KEY"));
    assert_eq!(withheld.requests()[0].header("authorization"), None);
}

#[test]
fn health_of_an_unreachable_server_says_why() {
    let port = crate::providers::fake_http::free_port();
    let s = settings(&format!("endpoint = \"http://127.0.0.1:{port}\""));
    let p = Laya::new(&s).health(T);
    assert!(!p.ok());
    assert!(p.detail().unwrap().contains("connection refused"));
}

#[test]
fn health_recognises_the_deprecated_server() {
    let old = FakeServer::start(|r: &Request| {
        if r.path == "/healthz" {
            Reply::json(200, &json!({"status": "ok"}))
        } else {
            Reply::json(404, &json!({"detail": "Not Found"}))
        }
    });
    let p = laya(&old, "model = \"laya\"").health(T);
    assert!(p.ok() && p.detail().unwrap().contains("0.2.1"));
}

#[test]
fn each_cause_has_its_own_fix() {
    let server = FakeServer::start(|_r: &Request| Reply::json(500, &json!({})));
    let l = laya(&server, "");
    let causes = [
        Cause::Timeout,
        Cause::Refused,
        Cause::Unreachable,
        Cause::Unauthorised,
        Cause::UnknownModel,
        Cause::HttpStatus(422),
        Cause::HttpStatus(501),
        Cause::HttpStatus(500),
    ];
    let fixes = crate::providers::failure::distinct_fixes(&l, &causes);
    assert!(fixes[3].contains("SYSTEM1_LAYA_API_KEY"), "{}", fixes[3]);
    assert!(fixes[4].contains("[providers.laya] model"), "{}", fixes[4]);
    assert!(fixes[5].contains("laya-serve 0.4.15"), "{}", fixes[5]);
    assert!(fixes[6].contains("laya's routes"), "{}", fixes[6]);
    assert!(fixes[7].contains("for Laya, often its checkpoint"), "{}", fixes[7]);
}

#[test]
fn a_refusal_is_read_into_its_cause_and_the_fix_follows_the_cause_not_the_words() {
    for (status, detail, cause) in [
        (422, "unknown model './x'; choose one of ['english']", Cause::UnknownModel),
        (422, "question 'q': unknown type 'decision'", Cause::HttpStatus(422)),
        (401, "missing key", Cause::Unauthorised),
        (501, "Not Implemented", Cause::HttpStatus(501)),
        (500, "inference failed", Cause::HttpStatus(500)),
    ] {
        let server = FakeServer::start(move |_r: &Request| Reply::json(status, &json!({"detail": detail})));
        let l = laya(&server, "");
        let err = l.decide(&req(None, vec![q("d", "Ok?", &["yes", "no"])]), T).unwrap_err();
        assert_eq!(err.cause, cause, "HTTP {status}: {err:?}");
        // The adapter may word its detail otherwise tomorrow: the fix stays the same.
        let reworded = Failure::new(err.cause, "something else entirely");
        assert_eq!(l.fix(&err), l.fix(&reworded), "HTTP {status}");
    }
    // laya-serve 0.2.1 names the field it refuses: `model` is a checkpoint it does not have, another
    // field is another invalid request, whatever the message says.
    for (field, cause) in [("model", Cause::UnknownModel), ("questions", Cause::HttpStatus(422))] {
        let body =
            json!({"error": {"message": "unknown model 'typed-decisions'; expected a Jev model name", "field": field}});
        let server = FakeServer::start(move |_r: &Request| Reply::json(422, &body));
        let err = laya(&server, "").decide(&req(None, vec![q("d", "Ok?", &["yes", "no"])]), T).unwrap_err();
        assert_eq!(err.cause, cause, "field {field}: {err:?}");
    }
}
