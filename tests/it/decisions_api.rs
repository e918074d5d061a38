//! OpenAI's Decisions API both ways, with real third-party code: the official `openai` Python SDK
//! (3.51.0, in the venv `scripts/test` names in `SYSTEM1_TEST_DECISION_SDKS`) calling
//! `client.decisions.create` against `system1 serve` (the local engine with the real
//! all-MiniLM-L6-v2, and the jevcompat mock behind it); the `decisions` provider against that
//! server (the two sides of one codec); and the chain `local` then a decisions engine, where taught
//! questions never leave the process.

use serde_json::{Value, json};

use crate::serve::{Server, local_then_mock};
use crate::support::fake_http::{FakeServer, Reply, Request};
use crate::support::{self, TestEnv, stderr, stdout};

fn sdk_python() -> Option<String> {
    support::test_dep(
        "the openai and google-genai SDK clients",
        "SYSTEM1_TEST_DECISION_SDKS",
        ".test-deps/decision-sdks/bin/python",
    )
    .map(|p| p.to_string_lossy().to_string())
}

const KEY: &str = "a-long-random-key-0123456789";

/// The SDK client script against `base_url`: its JSON summary.
fn openai_client(python: &str, base_url: &str, key: &str, mode: &str) -> Value {
    let script = format!("{}/tests/it/support/openai_decisions_client.py", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(python)
        .args([&script, base_url, key, mode])
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("run the openai SDK client");
    assert!(out.status.success(), "the SDK client failed:\n{}\n{}", stdout(&out), stderr(&out));
    serde_json::from_str(stdout(&out).trim()).expect("one JSON line")
}

fn keyed_server(env: &TestEnv) -> Server {
    let key = env.root.join("serve.key");
    support::write(&key, &format!("{KEY}\n"));
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    Server::start(env, &["--api-key-file", key.to_str().unwrap()])
}

#[test]
fn the_openai_sdk_asks_system1_serve_and_gets_typed_answers_and_typed_errors() {
    let Some(python) = sdk_python() else { return };
    let Some(mock) = crate::engines_systemone::Mock::start(&[]) else { return };
    let Some(env) = local_then_mock(&mock) else { return };
    let server = keyed_server(&env);
    let out = openai_client(&python, &format!("{}/v1", server.url()), KEY, "full");
    let answers = out["answers"].as_array().expect("answers");
    let classes: Vec<&str> = answers.iter().map(|a| a["class"].as_str().unwrap_or("")).collect();
    assert_eq!(
        classes,
        ["AnswerAnswerResourcePredicate", "AnswerAnswerResourceChoice", "AnswerAnswerResourceScore"],
        "{out}"
    );
    assert_eq!(answers[0]["name"], "refund");
    let p = answers[0]["probability"].as_f64().expect("a probability");
    assert!((0.0..=1.0).contains(&p), "{out}");
    let choice = &answers[1];
    assert_eq!(choice["choice"], "billing", "the local engine reads the ticket: {out}");
    let values: Vec<&Value> = choice["probabilities"].as_array().unwrap().iter().map(|p| &p["value"]).collect();
    assert_eq!(values, [&json!("billing"), &json!("engineering"), &json!(false)], "a boolean stays a boolean");
    let sum: f64 = choice["probabilities"].as_array().unwrap().iter().map(|p| p["probability"].as_f64().unwrap()).sum();
    assert!((sum - 1.0).abs() < 0.01, "{out}");
    let levels: Vec<&Value> = answers[2]["probabilities"].as_array().unwrap().iter().map(|p| &p["value"]).collect();
    assert_eq!(levels, [&json!(0), &json!(1), &json!(2)]);
    assert_eq!(out["model"], "system1");
    assert!(out["usage"]["input_tokens"].as_u64().unwrap() > 10, "{out}");
    // The free yes/no question went to the mock, the choice and the score stayed in the process.
    assert_eq!(mock.decisions(), 1, "one request to the engine behind local");

    assert_eq!(
        (out["invalid"]["class"].as_str(), out["invalid"]["status"].as_u64()),
        (Some("UnprocessableEntityError"), Some(422))
    );
    assert!(out["invalid"]["body"]["message"].as_str().unwrap_or("").contains("questions[0].choices"), "{out}");
    assert_eq!(out["unknown_model"]["class"], "NotFoundError", "{out}");
    assert_eq!(out["unknown_model"]["body"]["code"], "model_not_found", "{out}");
    assert_eq!(
        (out["wrong_key"]["class"].as_str(), out["wrong_key"]["status"].as_u64()),
        (Some("AuthenticationError"), Some(401))
    );
}

#[test]
fn a_question_no_engine_answers_is_refused_alone() {
    let Some(python) = sdk_python() else { return };
    let Some(dir) = crate::local_engine::model_dir() else { return };
    let env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\ntimeout_s = 120\n[providers.local]\nmodel_dir = {dir:?}\n"
    ));
    let server = Server::start(&env, &[]);
    let out = openai_client(&python, &format!("{}/v1", server.url()), "unused", "refusal");
    let answers = out["answers"].as_array().expect("answers");
    // The local engine has no head for a free yes/no question: that one is refused, not the request.
    assert_eq!(answers[0], json!({"type": "refusal", "name": "refund", "class": "AnswerAnswerResourceRefusal"}));
    assert_eq!(
        (answers[1]["type"].as_str(), answers[1]["choice"].as_str()),
        (Some("choice"), Some("billing")),
        "{out}"
    );
}

/// The decisions provider against `system1 serve`: what one side writes the other reads.
#[test]
fn the_decisions_provider_reads_what_system1_serve_writes() {
    let Some(mock) = crate::engines_systemone::Mock::start(&[]) else { return };
    let Some(env) = local_then_mock(&mock) else { return };
    let server = keyed_server(&env);
    let mut client = TestEnv::new();
    client.write_config(&format!(
        "[gateway]\nprovider = \"decisions\"\ntimeout_s = 120\n[providers.decisions]\nendpoint = \"{}/v1\"\nmodel = \"system1\"\n",
        server.url()
    ));
    client.set_env("SYSTEM1_DECISIONS_API_KEY", KEY);
    let ticket = &json!({"ticket": "I was charged twice for my March invoice and want the money back."}).to_string();
    let out = client.run(
        &[
            "decide",
            "--json",
            "-q",
            "Which team should handle this ticket?",
            "-o",
            "billing",
            "-o",
            "engineering",
            "--context",
            ticket,
        ],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(
        (v["status"].as_str(), v["decision"].as_str(), v["provider"].as_str()),
        (Some("decided"), Some("billing"), Some("decisions")),
        "{v}"
    );
    let out =
        client.run(&["decide", "--json", "-q", "Is the customer asking for money back?", "--context", ticket], "");
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(v["provider"], "decisions", "{v}");
    assert!(["decided", "abstained"].contains(&v["status"].as_str().unwrap_or("")), "{v}");
    assert_eq!(mock.decisions(), 1, "the yes/no went through serve's chain to the mock");
}

/// The chain `local` then a decisions engine: the routing features (taught) are answered in the
/// process and the fake never sees them; a free yes/no question goes to the fake; `attempts` lists
/// both.
#[test]
fn taught_questions_stay_local_and_free_ones_go_to_the_decisions_engine() {
    let Some(dir) = crate::local_engine::model_dir() else { return };
    let fake = FakeServer::start(|r: &Request| {
        let questions = r.json()["questions"].as_array().cloned().unwrap_or_default();
        let answers: Vec<Value> =
            questions.iter().map(|q| json!({"type": "predicate", "name": q["name"], "probability": 0.9})).collect();
        Reply::json(
            200,
            &json!({"model": "gpt-6-luna", "answers": answers, "usage": {"input_tokens": 1, "output_tokens": 0}}),
        )
    });
    let env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\nfallback = [\"decisions\"]\ntimeout_s = 120\n\
         [providers.local]\nmodel_dir = {dir:?}\n[providers.decisions]\nendpoint = \"{}/v1\"\n\
         [routing]\nenabled = true\nbudget_ms = 60000\n",
        fake.url()
    ));
    let out = env.run(
        &["route", "--prompt", "Explain how the retry loop in the HTTP client decides when to give up", "--json"],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        fake.requests().is_empty(),
        "the routing features are taught: none left the process: {:?}",
        fake.requests()
    );
    let out = env.run(
        &[
            "decide",
            "--json",
            "-q",
            "Is this code thread-safe?",
            "--context",
            r#"{"code": "static mut COUNTER: u32 = 0;"}"#,
        ],
        "",
    );
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!((v["decision"].as_str(), v["provider"].as_str()), (Some("yes"), Some("decisions")), "{v}");
    let tried: Vec<(&str, &str)> = v["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["provider"].as_str().unwrap_or(""), a["outcome"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(tried.iter().map(|t| t.0).collect::<Vec<_>>(), ["local", "decisions"], "{v}");
    let seen = fake.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].json()["questions"][0]["instructions"], "Is this code thread-safe?");
}
