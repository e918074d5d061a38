//! The Ollama adapter against a loopback fake replaying a synthesized exchange in the shapes Ollama
//! documents for /api/chat, /api/show, /api/tags and /api/version.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::providers::fake_http::{FakeServer, Reply, Request};

const T: Duration = Duration::from_secs(3);

fn ollama(server: &FakeServer, extra: &str) -> Ollama {
    let table: toml::Table =
        format!("endpoint = \"{}\"\nmodel = \"qwen3:4b\"\n{extra}", server.url()).parse().expect("toml");
    let s = Settings::new("providers.ollama", table, BTreeMap::new());
    let o = Ollama::new(&s);
    s.finish();
    assert!(s.take_errors().is_empty());
    o
}

fn q(key: &str, text: &str, options: &[&str]) -> Question {
    Question { key: key.into(), text: text.into(), options: options.iter().map(|s| s.to_string()).collect() }
}

fn chat_reply(top: Value) -> Reply {
    Reply::json(
        200,
        &json!({"model": "qwen3:4b", "created_at": "2026-11-30T09:30:00.123456789Z",
        "message": {"role": "assistant", "content": "A"}, "done": true, "done_reason": "length",
        "total_duration": 412345678, "load_duration": 12345678, "prompt_eval_count": 96,
        "prompt_eval_duration": 301234567, "eval_count": 1, "eval_duration": 23456789,
        "logprobs": [{"token": "A", "logprob": -0.0619, "bytes": [65], "top_logprobs": top}]}),
    )
}

fn letters() -> Value {
    json!([{"token": "A", "logprob": -0.0619, "bytes": [65]}, {"token": "C", "logprob": -3.0, "bytes": [67]},
           {"token": "B", "logprob": -4.8, "bytes": [66]}, {"token": " A", "logprob": -7.0, "bytes": [32, 65]},
           {"token": "The", "logprob": -8.5, "bytes": [84, 104, 101]}])
}

fn show(thinking: bool) -> Reply {
    let caps = if thinking { json!(["completion", "tools", "thinking"]) } else { json!(["completion"]) };
    Reply::json(
        200,
        &json!({"details": {"family": "qwen3"}, "model_info": {"general.architecture": "qwen3",
        "qwen3.context_length": 40960}, "capabilities": caps}),
    )
}

fn fake(thinking: bool, top: Value) -> FakeServer {
    FakeServer::start(move |r: &Request| match r.path.as_str() {
        "/api/show" => show(thinking),
        "/api/chat" => chat_reply(top.clone()),
        _ => Reply::json(404, &json!({"error": "not found"})),
    })
}

#[test]
fn the_synthesized_pair_gives_the_expected_probabilities() {
    let server = fake(true, letters());
    let o = ollama(&server, "");
    let request = EngineRequest {
        context: Some(json!("Hi, we were billed twice for March...")),
        questions: vec![q("department", "Which department should handle this?", &["billing", "technical", "other"])],
    };
    let out = o.decide(&request, T).expect("answer");
    assert_eq!(out[0].decision(), Some("billing"));
    assert_eq!(
        serde_json::to_value(out[0].probabilities()).ok(),
        Some(json!({"billing": 0.9419, "technical": 0.0082, "other": 0.0498}))
    );
    assert_eq!(out[0].confidence(), Some(0.9419));
    assert_eq!(out[0].detail(), Some("label coverage 0.9989"));
    let sent = server.requests_to("/api/chat")[0].json();
    assert_eq!(sent["model"], "qwen3:4b");
    assert_eq!(sent["stream"], false);
    assert_eq!(sent["think"], false, "the model lists `thinking`");
    assert_eq!(sent["logprobs"], true);
    assert_eq!(sent["top_logprobs"], 20);
    assert_eq!(sent["options"], json!({"temperature": 0, "num_predict": 1, "seed": 0}));
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": "You are a classifier. Reply with one letter only."})
    );
    assert_eq!(
        sent["messages"][1]["content"],
        "Text: Hi, we were billed twice for March...\nQuestion: Which department should handle this?\nA) billing\nB) technical\nC) other\nAnswer with A, B or C."
    );
}

#[test]
fn yes_no_reads_the_yes_and_no_tokens() {
    let server = fake(false, json!([{"token": "yes", "logprob": -0.2231}, {"token": " No", "logprob": -1.6094}]));
    let o = ollama(&server, "");
    let out = o
        .decide(&EngineRequest { context: None, questions: vec![q("d", "Is it raining?", &["yes", "no"])] }, T)
        .expect("ok");
    assert_eq!(out[0].decision(), Some("yes"));
    assert_eq!(serde_json::to_value(out[0].probabilities()).ok(), Some(json!({"yes": 0.8, "no": 0.2})));
    let sent = server.requests_to("/api/chat")[0].json();
    assert!(sent.get("think").is_none(), "no `think` for a model without the capability");
    assert_eq!(sent["messages"][1]["content"], "Question: Is it raining?\nAnswer with yes or no.");
}

#[test]
fn low_coverage_abstains() {
    let server = fake(
        false,
        json!([{"token": "The", "logprob": -0.3}, {"token": "**", "logprob": -1.5}, {"token": "A", "logprob": -2.0}]),
    );
    let out = ollama(&server, "")
        .decide(&EngineRequest { context: None, questions: vec![q("d", "Which?", &["a", "b"])] }, T)
        .expect("abstains");
    assert!(matches!(out[0], EngineAnswer::Abstained { .. }));
    assert_eq!(out[0].detail(), Some("label coverage 0.1353"));
    assert!(out[0].rationale().unwrap().contains("\"The\""));
}

#[test]
fn one_call_per_question_and_the_show_lookup_is_kept() {
    let server = fake(true, letters());
    let o = ollama(&server, "");
    let request = EngineRequest {
        context: Some(json!({"prompt": "refactor the parser"})),
        questions: vec![q("a", "First?", &["x", "y"]), q("b", "Second?", &["x", "y", "z"])],
    };
    assert!(!o.capabilities().one_pass);
    o.decide(&request, T).expect("answers");
    o.decide(&request, T).expect("answers");
    assert_eq!(server.requests_to("/api/chat").len(), 4);
    assert_eq!(server.requests_to("/api/show").len(), 1);
    assert!(
        server.requests_to("/api/chat")[0].json()["messages"][1]["content"]
            .as_str()
            .unwrap()
            .starts_with("Text: {\"prompt\":\"refactor the parser\"}\n")
    );
}

#[test]
fn an_old_server_without_logprobs_fails_clearly() {
    let server = FakeServer::start(|r: &Request| match r.path.as_str() {
        "/api/show" => show(false),
        _ => Reply::json(
            200,
            &json!({"model": "qwen3:4b", "message": {"role": "assistant", "content": "A"}, "done": true}),
        ),
    });
    let err = ollama(&server, "")
        .decide(&EngineRequest { context: None, questions: vec![q("d", "?", &["a", "b"])] }, T)
        .unwrap_err();
    assert!(matches!(&err, Failure { cause: Cause::EngineTooOld, detail: d } if d.contains("0.12.11")), "{err:?}");
}

#[test]
fn limits_errors_and_timeouts() {
    let server = fake(false, letters());
    let o = ollama(&server, "");
    assert_eq!(o.capabilities().max_options, 20);
    let many: Vec<String> = (0..21).map(|i| format!("o{i}")).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let err = o.decide(&EngineRequest { context: None, questions: vec![q("d", "?", &refs)] }, T).unwrap_err();
    assert!(matches!(&err, Failure { cause: Cause::OverLimit, detail: d } if d.contains("21 options")));
    assert!(server.requests().is_empty());

    // Ollama's 404 for a model it does not have is a model to pull, not a missing route: its list
    // of pulled models says so, not the words.
    let refusing = |listed: &'static str, error: &'static str| {
        FakeServer::start(move |r: &Request| match r.path.as_str() {
            "/api/tags" => Reply::json(200, &json!({"models": [{"name": listed, "model": listed}]})),
            _ => Reply::json(404, &json!({"error": error})),
        })
    };
    let decide = |server: &FakeServer| {
        ollama(server, "").decide(&EngineRequest { context: None, questions: vec![q("d", "?", &["a", "b"])] }, T)
    };
    let missing = refusing("llama3:latest", "model \"qwen3:4b\" not found, try pulling it first");
    assert_eq!(
        decide(&missing).unwrap_err(),
        Failure::new(Cause::ModelMissing, "ollama: HTTP 404: model \"qwen3:4b\" not found, try pulling it first")
    );
    let reworded = refusing("llama3:latest", "no such thing");
    assert_eq!(decide(&reworded).unwrap_err().cause, Cause::ModelMissing, "the words do not matter");
    let pulled = refusing("qwen3:4b", "model \"qwen3:4b\" not found, try pulling it first");
    assert_eq!(decide(&pulled).unwrap_err().cause, Cause::HttpStatus(404), "listed: the words are not the cause");
    let not_ollama = FakeServer::start(|_r: &Request| Reply::json(404, &json!({"error": "model not found"})));
    assert_eq!(decide(&not_ollama).unwrap_err().cause, Cause::HttpStatus(404), "no list: a status");

    let slow = FakeServer::start(|r: &Request| if r.path == "/api/show" { show(false) } else { Reply::hang() });
    let started = Instant::now();
    let err = ollama(&slow, "")
        .decide(&EngineRequest { context: None, questions: vec![q("d", "?", &["a", "b"])] }, Duration::from_millis(300))
        .unwrap_err();
    assert!(err.cause == Cause::Timeout, "{err:?}");
    // Generous: cut off at the timeout, not after the fake's 60 s hang.
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}

#[test]
fn health_needs_the_model_listed_and_a_recent_server() {
    let tags = json!({"models": [{"name": "qwen3:4b", "model": "qwen3:4b", "size": 2497293918_u64,
        "details": {"format": "gguf", "family": "qwen3", "parameter_size": "4.0B", "quantization_level": "Q4_K_M"}}]});
    let server = |version: &'static str, tags: Value| {
        FakeServer::start(move |r: &Request| match r.path.as_str() {
            "/api/tags" => Reply::json(200, &tags),
            "/api/version" => Reply::json(200, &json!({"version": version})),
            _ => Reply::json(404, &json!({"error": "not found"})),
        })
    };
    let good = server("0.12.11", tags.clone());
    let p = ollama(&good, "").health(T);
    assert!(p.ok(), "{p:?}");
    assert!(p.detail().unwrap().contains("ollama 0.12.11"));
    let p = ollama(&good, "").health(T);
    assert!(p.ok());

    let other = server("0.13.0", json!({"models": [{"name": "llama3:latest", "model": "llama3:latest"}]}));
    let p = ollama(&other, "").health(T);
    assert!(!p.ok() && p.detail().unwrap().contains("ollama pull qwen3:4b"));
    let table: toml::Table = format!("endpoint = \"{}\"\nmodel = \"llama3\"", other.url()).parse().unwrap();
    assert!(
        Ollama::new(&Settings::new("providers.ollama", table, BTreeMap::new())).health(T).ok(),
        "llama3 means llama3:latest"
    );

    let old = server("0.11.4", tags);
    let p = ollama(&old, "").health(T);
    assert!(!p.ok() && p.detail().unwrap().contains("too old"));
    assert!(at_least("0.13.0-rc1", [0, 12, 11]) && !at_least("0.12.10", [0, 12, 11]));
}

#[test]
fn each_cause_has_its_own_fix() {
    let server = FakeServer::start(|_r: &Request| Reply::json(500, &json!({})));
    let o = ollama(&server, "");
    let causes = [Cause::Timeout, Cause::Refused, Cause::EngineTooOld, Cause::ModelMissing, Cause::HttpStatus(500)];
    let fixes = crate::providers::failure::distinct_fixes(&o, &causes);
    assert!(fixes[1].contains("Ollama"), "{}", fixes[1]);
    assert!(fixes[2].contains("0.12.11"), "{}", fixes[2]);
    assert_eq!(fixes[3], "pull the model: `ollama pull qwen3:4b`");
}

#[test]
fn a_probe_that_fails_gives_the_cause_its_fix_is_chosen_by() {
    // Up, but the model is not pulled: the fix is the pull, whatever the probe's words.
    let server = FakeServer::start(|r: &Request| match r.path.as_str() {
        "/api/tags" => Reply::json(200, &json!({"models": [{"name": "other:1b"}]})),
        _ => Reply::json(200, &json!({"version": "0.12.11"})),
    });
    let o = ollama(&server, "");
    let Probe::Down(failure) = o.health(T) else { panic!("the model is not there") };
    assert_eq!(failure.cause, Cause::ModelMissing);
    assert_eq!(o.fix(&Failure::new(failure.cause, "")).action, "pull the model: `ollama pull qwen3:4b`");
    // Too old.
    let server = FakeServer::start(|r: &Request| match r.path.as_str() {
        "/api/tags" => Reply::json(200, &json!({"models": [{"name": "qwen3:4b"}]})),
        _ => Reply::json(200, &json!({"version": "0.11.0"})),
    });
    assert_eq!(ollama(&server, "").health(T).failure().map(|f| f.cause), Some(Cause::EngineTooOld));
}
