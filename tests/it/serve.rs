//! `system1 serve` over real HTTP on 127.0.0.1: the System One API's routes and error shapes, the
//! local engine with the real all-MiniLM-L6-v2, the conformance suite `jevcompat test` and the
//! official `typesafe-sdk` against it (both from PyPI, installed by `scripts/test`), and hostile
//! clients (an oversized body, a slow one, 500 at once, malformed requests, wrong keys, SIGTERM
//! with requests in flight).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{self, TestEnv};

/// A running `system1 serve` on a free port; killed when dropped.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) addr: String,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
}

impl Server {
    pub(crate) fn start(env: &TestEnv, extra: &[&str]) -> Server {
        let mut args = vec!["serve", "--port", "0"];
        args.extend_from_slice(extra);
        let mut child = env
            .command(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn system1 serve");
        let stderr = support::drain(child.stderr.take());
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("the listening line");
        let addr = line.trim().rsplit("http://").next().unwrap_or("").to_string();
        assert!(addr.starts_with("127.0.0.1:"), "the first stdout line names the address: {line:?}");
        Server { child, addr, stderr: Some(stderr) }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub(crate) fn post(&self, body: &Value) -> (u16, Value) {
        self.request("POST", "/v1/systemone", &[], body.to_string().as_bytes())
    }

    pub(crate) fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, Value) {
        let (status, _, body) = raw(&self.addr, &request_bytes(method, path, headers, body));
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    /// SIGTERM, then the exit status and everything the server logged.
    pub(crate) fn terminate(mut self) -> (std::process::ExitStatus, String) {
        let ok = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().expect("kill");
        assert!(ok.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s;
            }
            assert!(Instant::now() < deadline, "system1 serve did not stop within 30 s of SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        };
        let log = self.stderr.take().map(|h| h.join().unwrap_or_default()).unwrap_or_default();
        let log = String::from_utf8_lossy(&log).to_string();
        (status, log)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn request_bytes(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\n", body.len());
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    out
}

/// Sends `bytes`, reads the whole response (the server closes after it): status, head, body.
pub(crate) fn raw(addr: &str, bytes: &[u8]) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    // The server may answer (413) before it has read everything: a failed write is not a failure.
    let _ = s.write_all(bytes);
    read_response(&mut s)
}

pub(crate) fn read_response(s: &mut TcpStream) -> (u16, String, Vec<u8>) {
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    let split = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or_else(|| {
        panic!("no complete response: {:?}", String::from_utf8_lossy(&all));
    });
    let head = String::from_utf8_lossy(&all[..split]).to_string();
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head, all[split + 4..].to_vec())
}

const TICKET: &str =
    "Hi, I was charged twice for my March invoice and the refund I was promised still has not arrived.";

pub(crate) fn mixed() -> Value {
    json!({"model": "jev-latest", "state": TICKET, "x_trace": 1, "questions": {
        "refund": {"type": "noul", "instructions": "Is the customer asking for money back?"},
        "team": {"type": "choice", "instructions": "Which team?",
                 "criteria": {"Billing": "Payments, invoices, refunds", "Technical": null, "Sales": ["pricing", "upgrades"]}},
        "anger": {"type": "score", "instructions": {"scale": "frustration"}, "criteria": ["Calm", "Frustrated", "Very angry"]}}})
}

fn assert_reference_confidence(answer: &Value) {
    let probs: Vec<f64> = answer["probabilities"].as_object().unwrap().values().map(|v| v.as_f64().unwrap()).collect();
    let n = probs.len() as f64;
    let top = probs.iter().copied().fold(0.0, f64::max);
    let c = answer["confidence"].as_f64().unwrap();
    if answer["type"] == "choice" {
        assert!((c - (top - 1.0 / n) / (1.0 - 1.0 / n)).abs() < 1e-3, "{answer}");
    } else {
        let mode = probs.iter().position(|p| *p == top).unwrap();
        let centre = (n - 1.0) / 2.0;
        let uniform: f64 = (0..probs.len()).map(|i| (i as f64 - centre).abs()).sum::<f64>() / n;
        let spread: f64 = probs.iter().enumerate().map(|(i, p)| p * (i as f64 - mode as f64).abs()).sum();
        assert!((c - (1.0 - spread / uniform).max(0.0)).abs() < 1e-3, "{answer}");
        let expectation: f64 = probs.iter().enumerate().map(|(i, p)| i as f64 * p).sum();
        assert!((answer["score"].as_f64().unwrap() - expectation).abs() < 1e-3, "{answer}");
    }
    assert!((probs.iter().sum::<f64>() - 1.0).abs() < 0.01, "{answer}");
}

#[test]
fn every_route_and_error_shape_over_the_mock_engine() {
    let env = TestEnv::with_mock("[providers.mock]\nconfidence = 0.7\n");
    let server = Server::start(&env, &[]);

    let (status, v) = server.post(&mixed());
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["model"], "system1");
    assert_eq!(v["answers"].as_object().unwrap().keys().collect::<Vec<_>>(), ["refund", "team", "anger"]);
    // The mock picks the first option at 0.7: yes, Billing, Calm.
    assert_eq!(v["answers"]["refund"], json!({"type": "noul", "noul": 0.7}));
    assert_eq!(v["answers"]["team"]["choice"], "Billing");
    assert_eq!(v["answers"]["team"]["probabilities"], json!({"Billing": 0.7, "Technical": 0.15, "Sales": 0.15}));
    assert_eq!(v["answers"]["anger"]["legend"], json!({"0": "Calm", "1": "Frustrated", "2": "Very angry"}));
    assert_reference_confidence(&v["answers"]["team"]);
    assert_reference_confidence(&v["answers"]["anger"]);
    assert!(v["usage"]["input_tokens"].as_u64().unwrap() > 20, "{v}");
    assert_eq!(v["usage"]["output_tokens"], 3);
    assert_eq!(v["x_provider"], "mock");

    let (status, v) = server.request("GET", "/v1/models", &[], b"");
    assert_eq!(status, 200);
    let names: Vec<&str> = v["models"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["system1", "jev-latest"]);
    assert!(v["models"][0]["description"].as_str().unwrap().contains("mock"), "{v}");
    let (status, v) = server.request("GET", "/health", &[], b"");
    assert_eq!((status, v["status"].as_str()), (200, Some("ok")), "{v}");
    assert_eq!(v["providers"][0]["name"], "mock");

    // Validation: 422 with detail[], each naming where in the body.
    let (status, v) = server.request("POST", "/v1/systemone", &[], b"{\"state\": ");
    assert_eq!((status, v["detail"][0]["type"].as_str()), (422, Some("json_invalid")), "{v}");
    assert_eq!(v["detail"][0]["loc"][0], "body");
    let (status, v) = server.post(&json!({"questions": {"q": {"type": "boolean"}}}));
    assert_eq!(status, 422, "{v}");
    let locs: Vec<Value> = v["detail"].as_array().unwrap().iter().map(|d| d["loc"].clone()).collect();
    assert_eq!(locs, [json!(["body", "state"]), json!(["body", "questions", "q", "type"])]);
    let (status, v) =
        server.post(&json!({"state": "x", "questions": {"s": {"type": "score", "criteria": {"0": "a"}}}}));
    assert_eq!(status, 422, "a map-form score is refused: {v}");
    // Other errors: detail.error_type and detail.message.
    let (status, v) = server.post(&json!({"model": "gpt-9", "state": "x", "questions": {"q": {"type": "noul"}}}));
    assert_eq!((status, v["detail"]["error_type"].as_str()), (404, Some("api_usage_error")), "{v}");
    assert!(v["detail"]["message"].as_str().unwrap().starts_with("Unknown model: gpt-9"), "{v}");
    let (status, v) = server.request("GET", "/v1/systemone", &[], b"");
    assert_eq!((status, v["detail"]["error_type"].as_str()), (405, Some("api_usage_error")), "{v}");
    let (status, v) = server.request("GET", "/nowhere", &[], b"");
    assert_eq!((status, v["detail"]["error_type"].as_str()), (404, Some("not_found")), "{v}");
    // Without a key configured, a client's Authorization header is accepted, not checked.
    let (status, _) = server.request(
        "POST",
        "/v1/systemone",
        &[("Authorization", "Bearer anything")],
        mixed().to_string().as_bytes(),
    );
    assert_eq!(status, 200);
    let (status, _) = server.post(&json!({"state": "x", "questions": {"q": {"type": "noul"}}}));
    assert_eq!(status, 200);

    let (exit, log) = server.terminate();
    assert!(exit.success(), "SIGTERM ends the server with 0: {exit:?}\n{log}");
    let requests = log.lines().filter(|l| l.contains(" INFO [s1-")).count();
    assert_eq!(requests, 11, "one log line per request:\n{log}");
    assert!(log.contains("POST /v1/systemone 200 in"), "{log}");
    assert!(log.contains("3 questions via mock") && log.contains("1 question via mock"), "{log}");
    assert!(log.contains("stopped after 11 requests"), "{log}");
}

#[test]
fn an_engine_failure_is_an_error_shape_never_a_made_up_answer() {
    for (fail, status, error_type) in
        [("abstain", 400, "unanswerable_question"), ("error", 502, "engine_error"), ("malformed", 502, "engine_error")]
    {
        let env = TestEnv::with_mock(&format!("[providers.mock]\nfail = {fail:?}\n"));
        let server = Server::start(&env, &[]);
        let (got, v) = server.post(&mixed());
        assert_eq!((got, v["detail"]["error_type"].as_str()), (status, Some(error_type)), "{fail}: {v}");
        assert!(v.get("answers").is_none());
    }
    let env = TestEnv::new();
    env.write_config("[gateway]\nprovider = \"mock\"\ntimeout_s = 0.2\n[providers.mock]\ndelay_ms = 60000\n");
    let server = Server::start(&env, &[]);
    let started = Instant::now();
    let (got, v) = server.post(&mixed());
    assert_eq!((got, v["detail"]["error_type"].as_str()), (504, Some("timeout")), "{v}");
    assert!(started.elapsed() < support::CUT_OFF, "the gateway's deadline holds");
}

#[test]
fn the_local_engine_answers_choices_and_scores_and_names_what_it_cannot() {
    let Some(dir) = crate::local_engine::model_dir() else { return };
    let env = TestEnv::new();
    // A loaded machine can take seconds over the first request (the model's first pages): the
    // answers are under test here, not the time limit.
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\ntimeout_s = 120\n[providers.local]\nmodel_dir = {dir:?}\n"
    ));
    let server = Server::start(&env, &[]);
    let mut both = mixed();
    both["questions"].as_object_mut().unwrap().remove("refund");
    let (status, v) = server.post(&both);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["answers"]["team"]["choice"], "Billing", "a double charge and a refund are billing's: {v}");
    assert_reference_confidence(&v["answers"]["team"]);
    assert_reference_confidence(&v["answers"]["anger"]);
    assert_eq!(v["x_engine_model"], "all-MiniLM-L6-v2");
    assert!(v["answers"]["team"].get("x_probabilities_estimated").is_none(), "the engine's own probabilities: {v}");
    // What the local engine does not answer: a free yes/no (noul) question. It gets the API's
    // error shape, and so does a request that holds one beside questions it does answer.
    for body in [json!({"state": TICKET, "questions": {"refund": mixed()["questions"]["refund"]}}), mixed()] {
        let (status, v) = server.post(&body);
        assert_eq!((status, v["detail"]["error_type"].as_str()), (400, Some("unanswerable_question")), "{v}");
        let msg = v["detail"]["message"].as_str().unwrap();
        assert!(msg.contains("\"refund\" (noul)") && msg.contains("no trained head"), "{msg}");
    }
}

fn jevcompat() -> Option<PathBuf> {
    support::test_dep("jevcompat", "SYSTEM1_TEST_JEVCOMPAT", ".test-deps/jevcompat-0.1.1/bin/jevcompat")
}

/// `jevcompat test` against `url`; its JSON report.
fn conformance(bin: &std::path::Path, url: &str, extra: &[&str], scratch: &std::path::Path) -> Value {
    let report = scratch.join(format!("jevcompat-{}.json", extra.len()));
    let mut cmd = Command::new(bin);
    support::sandbox(&mut cmd, scratch);
    let out = cmd
        .args(["test", url, "--json", report.to_str().unwrap()])
        .args(extra)
        .current_dir(scratch)
        .output()
        .expect("run jevcompat");
    let text = std::fs::read_to_string(&report)
        .unwrap_or_else(|_| panic!("no report: {}{}", support::stdout(&out), support::stderr(&out)));
    serde_json::from_str(&text).unwrap()
}

fn results(report: &Value) -> Vec<(String, String, String)> {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().into(),
                r["level"].as_str().unwrap().into(),
                r["status"].as_str().unwrap().into(),
            )
        })
        .collect()
}

/// An environment whose chain is the local engine with the real all-MiniLM-L6-v2, then `mock` as
/// a `systemone` engine for what local passes on; `None` when either is not installed.
pub(crate) fn local_then_mock(mock: &crate::engines_systemone::Mock) -> Option<TestEnv> {
    let dir = crate::local_engine::model_dir()?;
    let mut env = TestEnv::new();
    // A loaded machine can take seconds over a request: the answers are under test, not the time.
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\nfallback = [\"systemone\"]\ntimeout_s = 120\n\
         [providers.local]\nmodel_dir = {dir:?}\n"
    ));
    env.set_env("SYSTEM1_SYSTEMONE_ENDPOINT", &mock.url());
    Some(env)
}

fn questions_of(request: &Value) -> Vec<(String, String)> {
    request["questions"]
        .as_object()
        .map(|qs| qs.iter().map(|(id, q)| (id.clone(), q["type"].as_str().unwrap_or("").to_string())).collect())
        .unwrap_or_default()
}

/// jevcompat's case whose text is mostly not Latin script (Korean): the local engine's English
/// model passes it on.
const NON_LATIN_CASE: &str = "unicode";

#[test]
fn jevcompat_finds_local_then_a_system_one_server_conformant_and_local_alone_refusing_only_what_it_cannot() {
    let Some(bin) = jevcompat() else { return };
    let Some(mock) = crate::engines_systemone::Mock::start(&[]) else { return };
    let Some(env) = local_then_mock(&mock) else { return };
    let server = Server::start(&env, &[]);
    let report = conformance(&bin, &server.url(), &[], &env.root);
    let r = results(&report);
    let failed: Vec<&(String, String, String)> = r.iter().filter(|(_, _, s)| s == "fail").collect();
    assert!(failed.is_empty(), "every requirement that is tested passes: {failed:?}\n{}", report["summary"]);
    let s = &report["summary"];
    assert_eq!(s["MUST"]["failed"], 0);
    assert_eq!(s["MUST"]["passed"], 32, "all but auth.bearer, which needs a key: {s}");
    assert!(s["SHOULD"]["passed"].as_u64().unwrap() >= 12, "{s}");
    assert!(r.contains(&("dropin.sdk-python".into(), "MUST".into(), "pass".into())), "{r:?}");

    // Both engines answered: local what it reads (choices and scores over English text), the mock
    // only what local passed on (the nouls, and the non-Latin text), one request for each request
    // that held any.
    let exchanges = report["exchanges"].as_array().unwrap();
    let answered: Vec<&Value> =
        exchanges.iter().filter(|e| e["status"] == 200 && e["path"] == "/v1/systemone").collect();
    let provider = |e: &Value| -> String {
        let body: Value = serde_json::from_str(e["response"].as_str().unwrap_or("")).unwrap_or(Value::Null);
        body["x_provider"].as_str().unwrap_or("").to_string()
    };
    for e in &answered {
        if questions_of(&e["request"]).iter().all(|(_, t)| t == "noul") {
            let case = &e["case"];
            assert_eq!(provider(e), "systemone", "{case}: the mock answers what local passed on: {}", e["response"]);
        }
    }
    let passed_on = answered
        .iter()
        .filter(|e| questions_of(&e["request"]).iter().any(|(_, t)| t == "noul") || e["case"] == NON_LATIN_CASE)
        .count();
    assert_eq!(mock.decisions(), passed_on, "one request to the mock for each request local passed questions of on");
    drop(server);

    // With a key: the auth checks too.
    let key = env.root.join("serve.key");
    support::write(&key, "a-long-random-key-0123456789\n");
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let keyed = Server::start(&env, &["--api-key-file", key.to_str().unwrap()]);
    let with_key = conformance(&bin, &keyed.url(), &["--key", "a-long-random-key-0123456789"], &env.root);
    let rk = results(&with_key);
    for id in ["auth.bearer", "auth.missing", "auth.invalid", "dropin.sdk-python"] {
        assert!(rk.iter().any(|(i, _, s)| i == id && s == "pass"), "{id}: {rk:?}");
    }
    assert_eq!(with_key["summary"]["MUST"]["failed"], 0, "{}", with_key["summary"]);
    // Between the two runs every MUST passed (auth.ignored-when-off is what the first one checks).
    let must_passed: std::collections::BTreeSet<&String> =
        r.iter().chain(&rk).filter(|(_, l, s)| l == "MUST" && s == "pass").map(|(i, _, _)| i).collect();
    assert_eq!(must_passed.len(), 33, "{must_passed:?}");
    drop(keyed);

    // The local engine alone. jevcompat stops at its first request, a noul, refused with the
    // API's error shape, so each request it made above is sent again here: what local does not
    // answer is refused (400 unanswerable_question, naming the question and why), the rest is
    // answered as before. What it does not answer: free yes/no (noul) questions, for which it has
    // no trained head, and text that is mostly not Latin script.
    let alone = TestEnv::new();
    alone.write_config(&std::fs::read_to_string(&env.config).unwrap().replace("fallback = [\"systemone\"]\n", ""));
    let local = Server::start(&alone, &[]);
    let first = conformance(&bin, &local.url(), &[], &alone.root);
    assert_eq!(first["summary"]["verdict"], "not tested", "{}", first["summary"]);
    assert_eq!(first["exchanges"][0]["status"], 400);
    assert!(first["exchanges"][0]["response"].as_str().unwrap().contains("\"error_type\":\"unanswerable_question\""));
    let (mut refused, mut answered_alone) = (std::collections::BTreeSet::new(), 0);
    for e in answered.iter().filter(|e| e["via"] == "http") {
        let case = e["case"].as_str().unwrap();
        let questions = questions_of(&e["request"]);
        let (status, v) = local.post(&e["request"]);
        let nouls: Vec<&(String, String)> = questions.iter().filter(|(_, t)| t == "noul").collect();
        if nouls.is_empty() && case != NON_LATIN_CASE {
            assert_eq!(status, 200, "{case}: {v}");
            assert_eq!(v["answers"].as_object().unwrap().len(), questions.len(), "{case}: {v}");
            answered_alone += 1;
            continue;
        }
        assert_eq!((status, v["detail"]["error_type"].as_str()), (400, Some("unanswerable_question")), "{case}: {v}");
        assert!(v.get("answers").is_none(), "{case}: never a made-up answer: {v}");
        let msg = v["detail"]["message"].as_str().unwrap();
        let why = if case == NON_LATIN_CASE {
            assert!(msg.contains("are not Latin script") && msg.contains("max_non_latin"), "{case}: {msg}");
            "non-Latin text"
        } else {
            // The first noul of the request is named.
            assert!(msg.starts_with(&format!("question {:?} (noul): ", nouls[0].0)), "{case}: {msg}");
            assert!(msg.contains("no trained head"), "{case}: {msg}");
            "noul"
        };
        refused.insert(why);
    }
    assert_eq!(refused.into_iter().collect::<Vec<_>>(), ["non-Latin text", "noul"], "the only refusals");
    assert!(answered_alone >= 15, "choices and scores over English text are answered ({answered_alone})");
}

/// The official `typesafe-sdk` (the version jevcompat pins, installed beside it) pointed at `url`
/// by `TYPESAFE_BASE_URL`: its noul, choice and score answers.
fn sdk_answers(jevcompat: &std::path::Path, url: &str) -> Value {
    let python = jevcompat.parent().unwrap().join("python");
    let script = r#"
import json
from typesafe_sdk import Choice, Noul, Score, TypeSafeClient
with TypeSafeClient(api_key="unused") as client:
    r = client.system_one(state="I was charged twice; refund me.", questions={
        "refund": Noul(instructions="Does the customer want money back?"),
        "team": Choice(instructions="Which team?", criteria={"Billing": "invoices", "Technical": None}),
        "anger": Score(instructions="How angry?", criteria=["Calm", "Angry", "Furious"]),
    })
print(json.dumps({"noul": r.nouls["refund"].noul, "choice": r.choices["team"].choice,
                  "score": r.scores["anger"].score}))
"#;
    let mut cmd = Command::new(&python);
    support::sandbox(&mut cmd, &support::shared_home());
    let out = cmd
        .args(["-c", script])
        .env("TYPESAFE_BASE_URL", url)
        .env_remove("TYPESAFE_API_KEY")
        .output()
        .expect("run python");
    assert!(out.status.success(), "{}", support::stderr(&out));
    serde_json::from_str(support::stdout(&out).trim()).unwrap()
}

#[test]
fn the_official_sdk_gets_noul_choice_and_score_answers_through_its_base_url() {
    let Some(bin) = jevcompat() else { return };
    let env = TestEnv::with_mock("[providers.mock]\nconfidence = 0.8\n");
    let server = Server::start(&env, &[]);
    let v = sdk_answers(&bin, &server.url());
    assert_eq!(v["choice"], "Billing", "{v}");
    assert_eq!(v["noul"], 0.8, "{v}");
    // Calm at 0.8, the others at 0.1 each: 0.1 + 0.2.
    assert!((v["score"].as_f64().unwrap() - 0.3).abs() < 1e-6, "{v}");
    drop(server);

    // Through local then a System One server: local answers the choice and the score, the mock
    // the noul local passes on, and the SDK reads one response of both.
    let Some(mock) = crate::engines_systemone::Mock::start(&[]) else { return };
    let Some(env) = local_then_mock(&mock) else { return };
    let server = Server::start(&env, &[]);
    let v = sdk_answers(&bin, &server.url());
    assert_eq!(v["choice"], "Billing", "a double charge is billing's: {v}");
    let noul = v["noul"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&noul), "{v}");
    assert!((0.0..=2.0).contains(&v["score"].as_f64().unwrap()), "{v}");
    assert_eq!(mock.decisions(), 1, "only the noul went to the mock");
    let (exit, log) = server.terminate();
    assert!(exit.success());
    assert!(log.contains("3 questions via local"), "{log}");
}

#[test]
fn hostile_clients_get_an_answer_and_never_take_the_server_down() {
    let env = TestEnv::with_mock("");
    let server = Server::start(&env, &["--workers", "2", "--queue", "8"]);
    // 1 MiB + 1: 413, with the error shape; exactly 1 MiB is read (and is not JSON: 422).
    let big = vec![b' '; (1 << 20) + 1];
    let (status, _, body) = raw(&server.addr, &request_bytes("POST", "/v1/systemone", &[], &big));
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!((status, v["detail"]["error_type"].as_str()), (413, Some("request_too_large")), "{v}");
    let (status, _) = server.request("POST", "/v1/systemone", &[], &big[1..]);
    assert_eq!(status, 422);
    // Not HTTP at all, a bad Content-Length, a truncated body: 400, never 5xx.
    for bytes in [
        &b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n"[..],
        b"POST /v1/systemone HTTP/1.1\r\nContent-Length: nope\r\n\r\n",
        b"POST /v1/systemone HTTP/1.1\r\nContent-Length: 50\r\n\r\n{\"state\"",
    ] {
        let mut s = TcpStream::connect(&server.addr).unwrap();
        s.write_all(bytes).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let (status, _, _) = read_response(&mut s);
        assert_eq!(status, 400, "{:?}", String::from_utf8_lossy(bytes));
    }
    // Malformed JSON in every way: 422 each, with detail[].
    for body in [
        "",
        "null",
        "[]",
        "{\"state\": \"x\", \"questions\": []}",
        "{\"state\": \"x\", \"questions\": {\"q\": 3}}",
        "\u{feff}{}",
    ] {
        let (status, v) = server.request("POST", "/v1/systemone", &[], body.as_bytes());
        assert_eq!(status, 422, "{body:?}: {v}");
        assert!(v["detail"][0]["msg"].is_string(), "{body:?}: {v}");
    }
    // A chunked body is read (through the same limits).
    let body = mixed().to_string();
    let chunked = format!(
        "POST /v1/systemone HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{}\r\n{:x}\r\n{}\r\n0\r\n\r\n",
        10,
        &body[..10],
        body.len() - 10,
        &body[10..]
    );
    assert_eq!(raw(&server.addr, chunked.as_bytes()).0, 200);

    // A slowloris client holds a worker only until the read deadline: it is answered 408, and
    // the server answers others meanwhile (the other worker) and after.
    let slow: Vec<_> = (0..2)
        .map(|_| {
            let addr = server.addr.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(&addr).unwrap();
                s.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
                let started = Instant::now();
                let mut answer = Vec::new();
                for b in b"POST /v1/systemone HTTP/1.1\r\nHost: slow\r\nX-Drip: ".iter().cycle() {
                    if s.write_all(&[*b]).is_err() || started.elapsed() > Duration::from_secs(60) {
                        break;
                    }
                    let mut buf = [0u8; 4096];
                    if let Ok(n) = s.read(&mut buf)
                        && n > 0
                    {
                        answer.extend_from_slice(&buf[..n]);
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(300));
                }
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let _ = s.read_to_end(&mut answer);
                (String::from_utf8_lossy(&answer).to_string(), started.elapsed())
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let (status, _) = server.post(&mixed());
    assert_eq!(status, 200, "a request behind two slow clients is served once they are cut off");
    for t in slow {
        let (answer, took) = t.join().unwrap();
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
        assert!(took < Duration::from_secs(40), "cut off at the read deadline (10 s), not after {took:?}");
    }

    // 500 connections at once, each with a whole request: each is answered, 200 or 503 with
    // Retry-After (2 workers and a queue of 8 take only so many); none is reset or left hanging.
    let request = request_bytes("POST", "/v1/systemone", &[], mixed().to_string().as_bytes());
    let mut conns = Vec::new();
    for _ in 0..500 {
        let mut s = TcpStream::connect(&server.addr).unwrap();
        let _ = s.write_all(&request);
        conns.push(s);
    }
    let (mut ok, mut busy) = (0, 0);
    for mut s in conns {
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let (status, head, _) = read_response(&mut s);
        match status {
            200 => ok += 1,
            503 => {
                assert!(head.to_ascii_lowercase().contains("retry-after: 1"), "{head}");
                busy += 1
            }
            other => panic!("status {other}: {head}"),
        }
    }
    assert_eq!(ok + busy, 500);
    assert!(ok >= 10, "the workers and the queue were used: {ok} answered, {busy} busy");
    assert_eq!(server.post(&mixed()).0, 200, "still serving");
    let (exit, _) = server.terminate();
    assert!(exit.success());
}

#[test]
fn a_key_is_needed_off_loopback_and_a_wrong_one_is_refused_alike_every_time() {
    let env = TestEnv::with_mock("");
    let out = env.run(&["serve", "--host", "0.0.0.0", "--port", "0"], "");
    assert_eq!(out.status.code(), Some(2), "{}", support::stderr(&out));
    assert!(support::stderr(&out).contains("no API key is set"), "{}", support::stderr(&out));

    let key = "k3y-0123456789abcdef0123456789abcdef";
    let file = env.root.join("key");
    support::write(&file, key);
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    env.write_config(&format!(
        "[gateway]\nprovider = \"mock\"\n[serve]\napi_key_file = {:?}\n",
        file.to_str().unwrap()
    ));
    let server = Server::start(&env, &[]);
    let body = mixed().to_string();
    let auth = format!("Bearer {key}");
    assert_eq!(server.request("POST", "/v1/systemone", &[("Authorization", &auth)], body.as_bytes()).0, 200);
    let (status, v) = server.request("POST", "/v1/systemone", &[], body.as_bytes());
    assert_eq!((status, v["detail"]["error_type"].as_str()), (401, Some("authentication_error")), "{v}");
    assert_eq!(server.request("GET", "/v1/models", &[], b"").0, 401, "every route needs the key");

    // 1,000 wrong guesses, interleaved: half share all but the key's last character, half share
    // nothing. All are refused, and the two halves take the same time (the key's digest is what
    // is compared, in constant time): their medians are within a factor the network noise of a
    // loaded machine stays inside.
    let near = format!("Bearer {}X", &key[..key.len() - 1]);
    let far = "Bearer ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ".to_string();
    let (mut t_near, mut t_far) = (Vec::new(), Vec::new());
    for i in 0..1000 {
        let guess = if i % 2 == 0 { &near } else { &far };
        let started = Instant::now();
        let (status, _) = server.request("POST", "/v1/systemone", &[("Authorization", guess)], body.as_bytes());
        let took = started.elapsed();
        assert_eq!(status, 401);
        if i % 2 == 0 { t_near.push(took) } else { t_far.push(took) }
    }
    t_near.sort();
    t_far.sort();
    let (a, b) = (t_near[250].as_secs_f64(), t_far[250].as_secs_f64());
    assert!(a / b < 2.0 && b / a < 2.0, "medians {a} and {b}");
}

#[test]
fn sigterm_finishes_the_requests_in_flight_then_exits_0() {
    let env = TestEnv::with_mock("[providers.mock]\ndelay_ms = 1500\n");
    let server = Server::start(&env, &[]);
    let (tx, rx) = channel();
    for _ in 0..3 {
        let (addr, tx) = (server.addr.clone(), tx.clone());
        std::thread::spawn(move || {
            let r = raw(&addr, &request_bytes("POST", "/v1/systemone", &[], mixed().to_string().as_bytes()));
            tx.send(r.0).unwrap();
        });
    }
    // The three are taken by workers at once (8 idle ones), then the mock holds them 1.5 s.
    std::thread::sleep(Duration::from_millis(500));
    let addr = server.addr.clone();
    let (exit, log) = server.terminate();
    assert!(exit.success(), "{exit:?}\n{log}");
    let statuses: Vec<u16> = (0..3).map(|_| rx.recv_timeout(Duration::from_secs(30)).unwrap()).collect();
    assert_eq!(statuses, [200, 200, 200], "{log}");
    assert!(log.contains("stopped after 3 requests"), "{log}");
    assert!(TcpStream::connect(&addr).is_err(), "no longer listening");
}

#[test]
fn doctor_checks_a_configured_server() {
    let env = TestEnv::with_mock("");
    let out = env.run(&["doctor"], "");
    let text = support::stdout(&out);
    assert!(!text.contains("system1 serve") && !text.contains("[serve]"), "no [serve] table, no check: {text}");

    let server = Server::start(&env, &[]);
    let port = server.addr.rsplit(':').next().unwrap().to_string();
    env.write_config(&format!("[gateway]\nprovider = \"mock\"\n[serve]\nport = {port}\n"));
    let text = support::stdout(&env.run(&["doctor"], ""));
    assert!(text.contains(&format!("ok    system1 serve answers on http://127.0.0.1:{port} (health ok)")), "{text}");
    let (exit, _) = server.terminate();
    assert!(exit.success());
    let text = support::stdout(&env.run(&["doctor"], ""));
    assert!(
        text.contains(&format!("warn  [serve] is configured, but nothing answers on http://127.0.0.1:{port}")),
        "{text}"
    );
    assert!(text.contains("fix: start it: `") && text.contains(" serve`"), "{text}");

    // Something else on that port: named as such.
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = other.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in other.incoming().flatten() {
            let mut s = s;
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi");
        }
    });
    env.write_config(&format!("[gateway]\nprovider = \"mock\"\n[serve]\nport = {port}\n"));
    let out = env.run(&["doctor"], "");
    let text = support::stdout(&out);
    assert!(
        text.contains(&format!(
            "FAIL  something other than system1 serve answers on http://127.0.0.1:{port} (HTTP 200)"
        )),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn at_login_writes_an_entry_for_each_platform_and_uninstall_removes_it() {
    let mut env = TestEnv::with_mock("");
    let bin = env.root.join("fakebin");
    let calls = env.root.join("systemctl.log");
    support::write_executable(&bin.join("systemctl"), &format!("#!/bin/sh\necho \"$*\" >> {}\n", calls.display()));
    env.set_env("PATH", bin.to_str().unwrap());
    let out = env.run(&["serve", "--at-login", "on", "--platform", "linux"], "");
    assert_eq!(out.status.code(), Some(1), "nothing installed to start yet");
    assert!(support::stderr(&out).contains("install"), "{}", support::stderr(&out));
    let installed = env.install_dir.join("bin/system1");
    support::write_executable(&installed, "#!/bin/sh\n");

    let unit = env.home.join(".config/systemd/user/system1-serve.service");
    let out = env.run(&["serve", "--at-login", "on", "--platform", "linux"], "");
    assert!(out.status.success(), "{}", support::stderr(&out));
    let text = std::fs::read_to_string(&unit).unwrap();
    assert!(text.contains(&format!("ExecStart=\"{}\" serve\n", installed.display())), "{text}");
    assert!(text.contains("WantedBy=default.target"), "{text}");
    assert_eq!(std::fs::read_to_string(&calls).unwrap(), "--user daemon-reload\n--user enable system1-serve.service\n");

    let out = env.run(&["serve", "--at-login", "on", "--platform", "macos"], "");
    assert!(out.status.success(), "{}", support::stderr(&out));
    let plist = std::fs::read_to_string(env.home.join("Library/LaunchAgents/com.system1.serve.plist")).unwrap();
    assert!(
        plist.contains(&format!("<string>{}</string>\n    <string>serve</string>", installed.display())),
        "{plist}"
    );
    let out = env.run(&["serve", "--at-login", "on", "--platform", "windows"], "");
    assert!(out.status.success(), "{}", support::stderr(&out));
    let cmd = std::fs::read_to_string(
        env.home.join("AppData/Roaming/Microsoft/Windows/Start Menu/Programs/Startup/system1-serve.cmd"),
    )
    .unwrap();
    assert!(cmd.contains(&format!("\"{}\" serve\r\n", installed.display())), "{cmd}");

    let out = env.run(&["serve", "--at-login", "off", "--platform", "macos"], "");
    assert!(out.status.success(), "{}", support::stderr(&out));
    assert!(!env.home.join("Library/LaunchAgents/com.system1.serve.plist").exists());

    // uninstall takes the Linux entry out with the binary.
    let out = env.run(&["uninstall"], "");
    assert!(out.status.success(), "{}{}", support::stdout(&out), support::stderr(&out));
    assert!(support::stdout(&out).contains("system1 serve start at login: removed"), "{}", support::stdout(&out));
    assert!(!unit.exists());
    assert!(std::fs::read_to_string(&calls).unwrap().contains("--user disable system1-serve.service"));
}
