//! The gemini provider against Google's own client: the official `google-genai` 3.3.0 SDK (in the
//! venv `scripts/test` names in `SYSTEM1_TEST_DECISION_SDKS`) takes a base URL, so its decisions
//! client is pointed at a fake Gemini server on the loopback, and the provider asks the same fake
//! the same question: the two requests must be the same (path, key header, body), and both must
//! read the fake's answer alike.

use serde_json::{Value, json};

use crate::support::fake_http::{FakeServer, Reply, Request};
use crate::support::{self, TestEnv, stderr, stdout};

const KEY: &str = "k-gemini-test";

/// A Gemini server that lists its decision model and answers every noul question 0.8.
fn fake() -> FakeServer {
    FakeServer::start(|r: &Request| {
        if r.method == "GET" {
            return Reply::json(200, &json!({"models": [{"name": "models/gemini-decision-1"}]}));
        }
        let body = r.json();
        let answers: serde_json::Map<String, Value> = body["questions"]
            .as_object()
            .map(|q| q.keys().map(|id| (id.clone(), json!({"type": "noul", "noul": 0.8, "confidence": 0.8}))).collect())
            .unwrap_or_default();
        Reply::json(200, &json!({"answers": answers, "usage": {"input_tokens": 12}}))
    })
}

#[test]
fn the_gemini_provider_asks_as_google_genai_does_and_reads_its_answers_alike() {
    let Some(python) = support::test_dep(
        "the openai and google-genai SDK clients",
        "SYSTEM1_TEST_DECISION_SDKS",
        ".test-deps/decision-sdks/bin/python",
    ) else {
        return;
    };
    let server = fake();
    let question = "Was the build out of memory?";
    let context = json!({"text": "The build ran out of memory while linking."});
    // The provider sends a context object as its JSON text: the SDK is given the same text.
    let input = context.to_string();

    let script = format!("{}/tests/it/support/genai_decisions_client.py", env!("CARGO_MANIFEST_DIR"));
    let mut sdk = std::process::Command::new(&python);
    sdk.args([&script, &server.url(), KEY, &input, question]);
    for var in ["GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"] {
        sdk.env_remove(var);
    }
    let out = sdk.output().expect("run the google-genai client");
    assert!(out.status.success(), "the SDK client failed:\n{}\n{}", stdout(&out), stderr(&out));
    let said: Value = serde_json::from_str(stdout(&out).trim()).expect("one JSON line");
    assert_eq!(said["models"], json!(["models/gemini-decision-1"]));
    assert_eq!(said["answers"]["decision"], json!({"type": "noul", "noul": 0.8, "confidence": 0.8}));
    let by_sdk = server.requests();
    server.clear();

    let mut env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"gemini\"\n\n[providers.gemini]\nendpoint = \"{}\"\n",
        server.url()
    ));
    env.set_env("SYSTEM1_GEMINI_API_KEY", KEY);
    let o = env.run(&["decide", "--question", question, "--context", &context.to_string(), "--json"], "");
    let resp: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}{}", stdout(&o), stderr(&o)));
    // noul 0.8 is yes at 0.8, as the SDK read it.
    assert_eq!((resp["decision"].as_str(), resp["confidence"].as_f64()), (Some("yes"), Some(0.8)), "{resp}");
    // doctor probes each engine's health: the provider lists the models.
    let _ = env.run(&["doctor"], "");
    let by_provider = server.requests();

    let pick = |reqs: &[Request], method: &str| -> Request {
        reqs.iter().find(|r| r.method == method).cloned().unwrap_or_else(|| panic!("no {method} in {reqs:?}"))
    };
    for method in ["GET", "POST"] {
        let (a, b) = (pick(&by_sdk, method), pick(&by_provider, method));
        assert_eq!(a.path, b.path, "{method}: the SDK's path against the provider's");
        assert_eq!((a.header("x-goog-api-key"), b.header("x-goog-api-key")), (Some(KEY), Some(KEY)), "{method}");
    }
    let (a, b) = (pick(&by_sdk, "POST"), pick(&by_provider, "POST"));
    assert_eq!(a.json(), b.json(), "the same request body");
    assert_eq!(b.json()["input"], json!(input));
}
