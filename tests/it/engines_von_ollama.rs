//! Von and Ollama through the real binary, each against a loopback fake in its wire format.

use crate::support;
use crate::support::fake_http::{FakeServer, Reply, Request};
use crate::support::{TestEnv, stdout};
use serde_json::json;

#[test]
fn von_answers_yes_no_from_noul_raw() {
    let server = FakeServer::start(|r: &Request| {
        let body = r.json();
        assert_eq!(body["questions"]["decision"]["type"], "noul");
        Reply::json(
            200,
            &json!({"model": "von-1.3.0",
            "answers": {"decision": {"type": "noul", "noul": 0.8086, "noul_raw": 0.5858}},
            "usage": {"input_tokens": 69, "output_tokens": 1}, "truncation": null}),
        )
    });
    let mut env = TestEnv::new();
    env.set_env("SYSTEM1_PROVIDER", "von");
    env.set_env("SYSTEM1_VON_ENDPOINT", &server.url());
    let (v, code) =
        env.decide_json(&["-q", "Does the command delete data?", "--context", r#"{"command": "rm -rf /srv"}"#]);
    // 0.5858 is below the default threshold: the banded 0.8086 would have passed it.
    assert_eq!(code, 4, "{v}");
    assert_eq!(v["status"], "abstained");
    assert_eq!(v["confidence"], 0.5858);
    assert_eq!(v["probabilities"], json!({"yes": 0.5858, "no": 0.4142}));
    let (v, code) = env.decide_json(&["-q", "Does the command delete data?", "--min-confidence", "0.5"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["decision"], "yes");
    assert_eq!(v["provider"], "von");
}

#[test]
fn ollama_decides_from_first_token_logprobs() {
    let server = FakeServer::start(|r: &Request| match r.path.as_str() {
        "/api/show" => Reply::json(200, &json!({"capabilities": ["completion"]})),
        "/api/chat" => Reply::json(
            200,
            &json!({"model": "qwen3:4b", "message": {"role": "assistant", "content": "B"},
            "done": true, "done_reason": "length", "prompt_eval_count": 40, "eval_count": 1,
            "logprobs": [{"token": "B", "logprob": -0.1, "top_logprobs": [
                {"token": "B", "logprob": -0.1}, {"token": "A", "logprob": -2.5}, {"token": "Sure", "logprob": -4.0}]}]}),
        ),
        _ => Reply::json(404, &json!({"error": "not found"})),
    });
    let mut env = TestEnv::new();
    env.set_env("SYSTEM1_PROVIDER", "ollama");
    env.set_env("SYSTEM1_OLLAMA_ENDPOINT", &server.url());
    env.set_env("SYSTEM1_OLLAMA_MODEL", "qwen3:4b");
    let (v, code) = env.decide_json(&["-q", "Which team?", "-o", "infra", "-o", "app"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["decision"], "app");
    assert_eq!(v["provider"], "ollama");
    assert!(v["rationale"].as_str().unwrap().starts_with("ollama qwen3:4b: infra=0.08, app=0.92"), "{v}");
}

#[test]
fn the_example_config_with_every_engine_section_is_valid() {
    let env = TestEnv::new();
    env.write_config(include_str!("../../config.example.toml"));
    let out = env.run(&["config", "check"], "");
    assert!(out.status.success(), "{}{}", stdout(&out), support::stderr(&out));
}
