//! The real laya-serve 0.4.15 (`laya[serve]` from PyPI) on tiny random-weight checkpoints
//! (`support/laya_tiny_checkpoints.py`), both installed by `scripts/test`: elimination rounds,
//! option stability, the routing features and the skill picker through the binary. The answers
//! mean nothing; what is asserted is what is real: the server takes every request the gateway
//! builds (its validation, its caps of 64 questions and 512 options), its answers have the shape
//! the adapter reads, and how many engine requests each decision takes.
//!
//! One server serves every test of the run, started by the first that needs it and stopped when
//! the test process ends. Each test talks to it through its own loopback proxy, which counts the
//! requests of that test alone and keeps the server's replies.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::support::fake_http::{FakeServer, Reply, Request, free_port};
use crate::support::{TestEnv, stderr, stdout, write};
use serde_json::{Value, json};

/// The running server: its port, and the pipe whose end (when this process exits) stops it.
struct Server {
    port: u16,
    _lifeline: Mutex<ChildStdin>,
}

static SERVER: OnceLock<Option<Server>> = OnceLock::new();

/// laya-serve and the checkpoints from `scripts/test`; required in CI unless
/// `SYSTEM1_TEST_SKIP_LAYA_0415` is set, otherwise their absence skips the test loudly.
fn installed(test: &str) -> Option<(PathBuf, PathBuf)> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    match (var("SYSTEM1_TEST_LAYA_0415"), var("SYSTEM1_TEST_LAYA_0415_CHECKPOINTS")) {
        (Some(bin), Some(ckpt)) if bin.exists() && ckpt.join("typed-decisions").is_dir() => Some((bin, ckpt)),
        _ => {
            assert!(
                std::env::var_os("CI").is_none() || std::env::var_os("SYSTEM1_TEST_SKIP_LAYA_0415").is_some(),
                "the real laya-serve 0.4.15 is missing (SYSTEM1_TEST_LAYA_0415, SYSTEM1_TEST_LAYA_0415_CHECKPOINTS): run scripts/test"
            );
            eprintln!(
                "SKIPPED {test}: the real laya-serve 0.4.15 is not installed (SYSTEM1_TEST_LAYA_0415); scripts/test installs it"
            );
            None
        }
    }
}

/// Starts laya-serve on a free loopback port behind a shell that stops it when its input closes,
/// which happens when this process ends, however it ends. Waits for `GET /health`.
fn start(bin: PathBuf, ckpt: PathBuf) -> Server {
    let port = free_port();
    let dir = |name: &str| ckpt.join(name).to_string_lossy().to_string();
    let models = json!({"english": dir("english"), "multilingual": dir("multilingual"), "typed-decisions": dir("typed-decisions")});
    let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("laya-serve-0.4.15-{}.log", std::process::id()));
    let mut cmd = Command::new("sh");
    crate::support::sandbox(&mut cmd, &crate::support::shared_home());
    let mut child = cmd
        .args(["-c", "\"$0\" </dev/null >\"$1\" 2>&1 & pid=$!; exec 2>/dev/null; read _; kill $pid; wait $pid"])
        .arg(&bin)
        .arg(&log)
        .env("LAYA_HOST", "127.0.0.1")
        .env("LAYA_PORT", port.to_string())
        .env("LAYA_THREADS", "1")
        .env("LAYA_MODELS", "typed-decisions")
        .env("LAYA_EXTRA_MODELS", models.to_string())
        .env("HF_HUB_OFFLINE", "1")
        .stdin(Stdio::piped())
        .spawn()
        .expect("start laya-serve 0.4.15");
    let lifeline = child.stdin.take().expect("the server's input");
    // The child is reaped by nobody when the process ends first; the shell exits then as well.
    std::mem::forget(child);
    let deadline = Instant::now() + Duration::from_secs(180);
    while Instant::now() < deadline {
        if get(port, "/health").is_some_and(|(status, _)| status == 200) {
            return Server { port, _lifeline: Mutex::new(lifeline) };
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("laya-serve 0.4.15 did not answer /health within 180 s; its log: {}", log.display());
}

fn server(test: &str) -> Option<&'static Server> {
    let (bin, ckpt) = installed(test)?;
    SERVER.get_or_init(|| Some(start(bin, ckpt))).as_ref()
}

/// One HTTP/1.1 exchange with the server, closed after it: the status and the body.
fn exchange(port: u16, head: &str, body: &[u8]) -> Option<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(120))).ok()?;
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(body).ok()?;
    let mut reader = BufReader::new(s);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let status = line.split_whitespace().nth(1)?.parse().ok()?;
    let mut length = None;
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        if line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().ok();
        }
    }
    let mut out = Vec::new();
    match length {
        Some(n) => {
            out.resize(n, 0);
            reader.read_exact(&mut out).ok()?;
        }
        None => {
            reader.read_to_end(&mut out).ok()?;
        }
    }
    Some((status, out))
}

fn get(port: u16, path: &str) -> Option<(u16, Vec<u8>)> {
    exchange(port, &format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"), b"")
}

/// A loopback proxy to the real server for one test: it records every request and reply.
struct Proxy {
    fake: FakeServer,
    replies: Arc<Mutex<Vec<Value>>>,
}

impl Proxy {
    fn new(server: &Server) -> Proxy {
        let port = server.port;
        let replies = Arc::new(Mutex::new(Vec::new()));
        let kept = replies.clone();
        let fake = FakeServer::start(move |r: &Request| {
            let mut head = format!("{} {} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n", r.method, r.path);
            for (k, v) in &r.headers {
                if !["host", "connection", "content-length"].contains(&k.as_str()) {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
            }
            head.push_str(&format!("content-length: {}\r\n\r\n", r.body.len()));
            let Some((status, body)) = exchange(port, &head, r.body.as_bytes()) else {
                return Reply::text(502, "the real laya-serve did not answer");
            };
            if r.path == "/v1/systemone" {
                kept.lock().unwrap().push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            }
            Reply::new(status, "application/json", body)
        });
        Proxy { fake, replies }
    }

    /// The bodies of the decisions asked, in order.
    fn asked(&self) -> Vec<Value> {
        self.fake.requests_to("/v1/systemone").iter().map(Request::json).collect()
    }

    fn replies(&self) -> Vec<Value> {
        self.replies.lock().unwrap().clone()
    }

    fn env(&self, gateway: &str) -> TestEnv {
        let mut env = TestEnv::new();
        env.write_config(&format!("[gateway]\nprovider = \"laya\"\ntimeout_s = 60\n{gateway}\n"));
        env.set_env("SYSTEM1_LAYA_ENDPOINT", &self.fake.url());
        env
    }
}

/// The options of each question of an engine request, in the order they were sent.
fn orders(body: &Value) -> Vec<Vec<String>> {
    body["questions"]
        .as_object()
        .expect("questions")
        .values()
        .map(|q| q["criteria"].as_object().expect("criteria").keys().cloned().collect())
        .collect()
}

fn sizes(body: &Value) -> Vec<usize> {
    orders(body).iter().map(Vec::len).collect()
}

fn options(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("intent-{i}")).collect()
}

/// Every answer of a laya reply has the shape the adapter reads, over the options asked.
fn assert_laya_answers(asked: &Value, reply: &Value) {
    assert_eq!(reply["model"], "laya-rl-agent", "{reply}");
    assert_eq!(reply["routing"]["model"], "typed-decisions", "{reply}");
    for (id, q) in asked["questions"].as_object().expect("questions") {
        let a = &reply["answers"][id];
        assert_eq!(a["type"], "choice", "{id}: {a}");
        let labels: Vec<&String> = q["criteria"].as_object().unwrap().keys().collect();
        let probs: Vec<&String> = a["probabilities"].as_object().expect("probabilities").keys().collect();
        assert_eq!(probs, labels, "{id}: probabilities over the options, in the order sent");
        assert!(labels.iter().any(|l| a["choice"] == l.as_str()), "{id}: the choice is an option: {a}");
        assert!(a["answer_confidence"].as_f64().is_some_and(|c| (0.0..=1.0).contains(&c)), "{id}: {a}");
    }
}

fn decide(env: &TestEnv, question: &str, opts: &[String]) -> Value {
    let mut args = vec!["decide", "--json", "-q", question, "--min-confidence", "0"];
    for o in opts {
        args.extend(["-o", o.as_str()]);
    }
    let out = env.run(&args, "");
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)))
}

#[test]
fn at_the_limit_one_request_above_it_one_per_round_plus_the_final() {
    let Some(server) = server("at_the_limit_one_request_above_it_one_per_round_plus_the_final") else { return };
    let proxy = Proxy::new(server);
    let env = proxy.env("");
    for (n, requests, first) in [
        (20, 1, vec![20]),
        (40, 2, vec![20, 20]),
        (200, 2, vec![20; 10]),
        (256, 2, [vec![20; 9], vec![19; 4]].concat()),
    ] {
        let before = proxy.asked().len();
        let v = decide(&env, "Which intent does this message have?", &options(n));
        assert_eq!(v["status"], "decided", "{n}: {v}");
        assert_eq!(v["provider"], "laya");
        let asked = &proxy.asked()[before..];
        assert_eq!(asked.len(), requests, "{n} options: engine requests");
        assert_eq!(sizes(&asked[0]), first, "{n} options: the first request");
        let replies = proxy.replies();
        for (body, reply) in asked.iter().zip(&replies[before..]) {
            assert_laya_answers(body, reply);
            assert_eq!(body["model"], "typed-decisions");
            assert_eq!(body["state"], "Which intent does this message have?", "the question once");
        }
        let p = v["probabilities"].as_object().expect("probabilities");
        assert_eq!(p.len(), n, "every option listed");
        let sum: f64 = p.values().filter_map(Value::as_f64).sum();
        assert!((sum - 1.0).abs() < 0.02, "{n}: sums to {sum}");
        if n > 20 {
            // The finalists are the options of the last request; every other option is at 0.
            let finalists = &orders(&asked[requests - 1])[0];
            assert_eq!(finalists.len(), first.len());
            assert!(p.iter().filter(|(o, _)| !finalists.contains(o)).all(|(_, x)| x == 0.0), "{n}: {v}");
            let detail = v["attempts"][0]["detail"].as_str().expect("detail");
            assert!(detail.starts_with(&format!("elimination: {n} options in 1 round")), "{detail}");
            assert!(detail.ends_with(&format!("{} in all", "2 engine requests")), "{detail}");
        } else {
            assert_eq!(v["attempts"][0]["detail"], Value::Null);
        }
    }
}

#[test]
fn stability_goes_in_the_same_request_in_the_orders_the_server_was_sent() {
    let Some(server) = server("stability_goes_in_the_same_request_in_the_orders_the_server_was_sent") else { return };
    let proxy = Proxy::new(server);
    let fast = proxy.env("stability = \"fast\"\nmin_stability = 0");
    let v = decide(&fast, "Which team owns this?", &options(5));
    assert_eq!(v["status"], "decided", "{v}");
    let s = v["stability"].as_f64().expect("stability");
    assert!(s == 0.0 || s == 1.0, "one variant: it agrees or not: {v}");
    assert!(v["soft_stability"].as_f64().is_some_and(|x| (0.0..=1.0).contains(&x)), "{v}");
    let asked = proxy.asked();
    assert_eq!(asked.len(), 1, "the reversed question rides along");
    let sent = orders(&asked[0]);
    assert_eq!(sent[0], options(5));
    assert_eq!(sent[1], options(5).into_iter().rev().collect::<Vec<_>>());
    assert_laya_answers(&asked[0], &proxy.replies()[0]);

    let full = proxy.env("stability = \"full\"\nmin_stability = 0");
    let v = decide(&full, "Which team owns this?", &options(5));
    let asked = proxy.asked();
    assert_eq!(asked.len(), 2, "one more request for one more decision");
    assert_eq!(sizes(&asked[1]), [5, 5, 5]);
    assert_laya_answers(&asked[1], &proxy.replies()[1]);
    let s = v["stability"].as_f64().expect("stability");
    assert!([0.0, 0.5, 1.0].contains(&s), "two variants: {v}");

    // With rounds: 40 options, the round, then the final and its reversal in one request.
    let v = decide(&fast, "Which intent?", &options(40));
    assert!(v["stability"].is_number(), "{v}");
    let asked = proxy.asked();
    assert_eq!(asked.len(), 4);
    assert_eq!(sizes(&asked[2]), [20, 20]);
    assert_eq!(sizes(&asked[3]), [2, 2]);
}

#[test]
fn routing_features_one_request_of_four_or_of_eight_with_stability() {
    let Some(server) = server("routing_features_one_request_of_four_or_of_eight_with_stability") else { return };
    let proxy = Proxy::new(server);
    let task = "Read src/main.rs and explain how the command line arguments are parsed and dispatched";
    for (stability, questions) in [("off", 4), ("fast", 8)] {
        let before = proxy.asked().len();
        let env = proxy.env(&format!("stability = \"{stability}\"\n[routing]\nenabled = true"));
        let out = env.run(&["route", "--prompt", task, "--cwd", "/", "--json"], "");
        assert!(out.status.success(), "{}", stderr(&out));
        let v: Value = serde_json::from_str(&stdout(&out)).expect("route JSON");
        assert_eq!(v["routing"]["features"].as_object().map(|f| f.len()), Some(4), "{v}");
        let asked = &proxy.asked()[before..];
        assert_eq!(asked.len(), 1, "{stability}: one engine request");
        assert_eq!(sizes(&asked[0]), vec![2; questions]);
        assert_eq!(asked[0]["state"], task);
        assert_laya_answers(&asked[0], &proxy.replies()[before]);
    }
}

#[test]
fn the_skill_picker_wakes_on_laya() {
    let Some(server) = server("the_skill_picker_wakes_on_laya") else { return };
    let proxy = Proxy::new(server);
    // The routing budget at its maximum: a loaded machine must not leave the picker no time.
    let env = proxy.env("[routing]\nenabled = true\nbudget_ms = 60000\n[skills]\nenabled = true");
    for i in 0..30 {
        let name = format!("skill-{i:02}");
        write(
            &env.claude_dir.join(format!("skills/{name}/SKILL.md")),
            &format!("---\nname: {name}\ndescription: does {i}\n---\n"),
        );
    }
    let out = env.run(
        &[
            "route",
            "--prompt",
            "Fill in the quarterly tax form and save it as PDF for the accountant",
            "--cwd",
            "/",
            "--json",
        ],
        "",
    );
    let v: Value = serde_json::from_str(&stdout(&out)).expect("route JSON");
    assert_eq!(v["skills"]["provider"], "laya", "{v}");
    assert!(v["skills"]["not_picked_because"].is_null(), "{v}");
    let asked = proxy.asked();
    // The features, then 31 options (30 skills and none): two groups, then the final.
    assert_eq!(asked.iter().map(sizes).collect::<Vec<_>>(), [vec![2; 4], vec![16, 15], vec![2]]);
    for (body, reply) in asked.iter().zip(proxy.replies()) {
        assert_laya_answers(body, &reply);
    }
}
