//! The report's decisions by engine: counted from what System-1 records of each decision (the
//! decision tally of `system1 decide` and `system1_decide`, the hooks' routing log), old files
//! included, with what went to a hosted engine priced at its published price. The hosted engine
//! is Gemini's API as a fake behind a TLS front, reached through the proxy `HTTPS_PROXY` names
//! (support/tls.rs): its host is not this machine's, so what is sent to it counts as sent out.

use serde_json::{Value, json};

use crate::support::fake_http::{FakeServer, Reply, Request};
use crate::support::tls::{Authority, ConnectProxy};
use crate::support::{TestEnv, stderr, stdout};

const GEMINI_HOST: &str = "generativelanguage.googleapis.com";

/// Gemini's decisions route: yes to every yes/no question.
fn gemini() -> FakeServer {
    FakeServer::start(|r: &Request| {
        let body = r.json();
        let answers: serde_json::Map<String, Value> = body["questions"]
            .as_object()
            .map(|q| q.keys().map(|id| (id.clone(), json!({"type": "noul", "noul": 0.9}))).collect())
            .unwrap_or_default();
        Reply::json(200, &json!({"answers": answers}))
    })
}

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn report_counts_each_engines_decisions_and_prices_what_went_to_a_hosted_one() {
    let fake = gemini();
    let authority = Authority::new(&[GEMINI_HOST]);
    let front = authority.front(format!("127.0.0.1:{}", fake.port));
    let proxy = ConnectProxy::start(front);
    let mut env = TestEnv::new();
    let ca = authority.write_ca(&env.root);
    env.set_env("SSL_CERT_FILE", ca.to_str().unwrap());
    let via = format!("http://127.0.0.1:{}", proxy.port);
    for var in ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"] {
        env.set_env(var, &via);
    }
    env.set_env("SYSTEM1_GEMINI_API_KEY", "k-gemini");

    // One decision on the mock, two on Gemini (allowed to leave the machine; its key is set, so its
    // table is read either way).
    let gemini_table = "\n[providers.gemini]\nallow_remote = true\n";
    env.write_config(&format!("[gateway]\nprovider = \"mock\"\n{gemini_table}"));
    let question = "Is the build green?";
    let o = env.run(&["decide", "--question", question, "--json"], "");
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    env.write_config(&format!("[gateway]\nprovider = \"gemini\"\n{gemini_table}"));
    for _ in 0..2 {
        let o = env.run(&["decide", "--question", question, "--json"], "");
        let resp: Value = serde_json::from_slice(&o.stdout).expect("JSON");
        assert_eq!((resp["status"].as_str(), resp["provider"].as_str()), (Some("decided"), Some("gemini")), "{resp}");
    }
    assert_eq!(fake.requests().len(), 2, "both went through the proxy to the fake");
    assert!(proxy.asked().iter().all(|l| l.starts_with(&format!("CONNECT {GEMINI_HOST}:443"))), "{:?}", proxy.asked());

    // The tally keeps what was sent, typed: the question and its two options, at 4 characters a token.
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let tally = std::fs::read_to_string(env.install_dir.join(format!("logs/decisions-{today}.jsonl"))).unwrap();
    let lines: Vec<Value> = tally.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let per_decision = (question.chars().count() + "yes".len() + 1 + "no".len() + 1).div_ceil(4) as u64;
    assert!(lines[0].get("sent").is_none(), "nothing left the machine for the mock: {}", lines[0]);
    assert_eq!(lines[1]["sent"], json!([{"provider": "gemini", "host": GEMINI_HOST, "input_tokens": per_decision}]));
    // An older version's tally (no `sent`) and routing log (no `sent`), and a hook's record that sent
    // to Gemini, as this version writes it.
    write(
        &env.install_dir.join("logs/decisions-2026-11-02.jsonl"),
        "{\"latency_ms\":3.0,\"provider\":\"laya\",\"status\":\"decided\",\"time\":\"2026-11-02T09:00:00.000Z\"}\n\
         {\"latency_ms\":1.0,\"provider\":null,\"status\":\"error\",\"time\":\"2026-11-02T09:01:00.000Z\"}\n",
    );
    let log = env.install_dir.join("logs/routing.jsonl");
    write(
        &log,
        &format!(
            "{}\n{}\n",
            r#"{"id":"p1","time":"2026-11-02T10:41:30.123Z","source":"prompt","prompt":"x","decision":"haiku","hinted":false,"provider":"laya","model":"m","latency_ms":12.3}"#,
            json!({"id": "p2", "time": chrono::Utc::now().to_rfc3339(), "source": "skill", "prompt": "y",
                   "decision": "review", "hinted": true, "provider": "gemini", "model": "gemini-decision-1",
                   "latency_ms": 150.0, "sent": [{"provider": "gemini", "host": GEMINI_HOST, "input_tokens": 1000}]})
        ),
    );
    let projects = env.root.join("projects");
    std::fs::create_dir_all(&projects).unwrap();
    let dir = projects.to_str().unwrap();

    let o = env.run(&["report", "--dir", dir, "--json", "--timezone", "UTC"], "");
    assert!(o.status.success(), "{}", stderr(&o));
    let report: Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    let engines = &report["engines"];
    let row = |name: &str| {
        engines["engines"].as_array().unwrap().iter().find(|r| r["provider"] == name).cloned().unwrap_or(Value::Null)
    };
    let tokens = 2 * per_decision + 1000;
    let usd = tokens as f64 * 0.10 / 1e6;
    let g = row("gemini");
    assert_eq!((g["hooks"].as_u64(), g["tools"].as_u64(), g["decisions"].as_u64()), (Some(1), Some(2), Some(3)), "{g}");
    assert_eq!(g["hosted"]["hosts"], json!([GEMINI_HOST]));
    assert_eq!((g["hosted"]["decisions_sent"].as_u64(), g["hosted"]["input_tokens"].as_u64()), (Some(3), Some(tokens)));
    assert!((g["hosted"]["usd"].as_f64().unwrap() - usd).abs() < 1e-12, "{g}");
    assert_eq!(g["hosted"]["usd_per_million_input_tokens"], 0.1);
    assert!((engines["hosted_usd"].as_f64().unwrap() - usd).abs() < 1e-12, "{engines}");
    let laya = row("laya");
    assert_eq!((laya["hooks"].as_u64(), laya["tools"].as_u64()), (Some(1), Some(1)), "old files count: {laya}");
    assert!(laya.get("hosted").is_none() && row("mock")["tools"] == 1, "{engines}");
    assert_eq!(engines["engines"][0]["provider"], "gemini", "most decisions first");

    // Today only: the old day's tally and record are out of scope.
    let o = env.run(&["report", "--dir", dir, "--json", "--days", "1", "--timezone", "UTC"], "");
    let report: Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    let names: Vec<&str> =
        report["engines"]["engines"].as_array().unwrap().iter().filter_map(|r| r["provider"].as_str()).collect();
    assert_eq!(names, ["gemini", "mock"], "{}", report["engines"]);

    // The text and the HTML page say the same for people.
    let html = env.root.join("report.html");
    let o = env.run(&["report", "--dir", dir, "--timezone", "UTC", "--html", html.to_str().unwrap()], "");
    let text = stdout(&o);
    assert!(text.contains("Decisions by engine"), "{text}");
    let hosted = text.lines().find(|l| l.contains("gemini is hosted at")).unwrap_or_else(|| panic!("{text}"));
    assert!(hosted.contains("left this machine") && hosted.contains("$0.10 per million input tokens"), "{hosted}");
    assert!(text.contains(&format!("hosted engines cost ${usd:.4}")), "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h2>Decisions by engine</h2>") && page.contains("/engines/engines/0/hosted/usd"), "{page}");
}

#[test]
fn decisions_answered_through_system1_serve_are_counted_with_the_tools() {
    let env = TestEnv::with_mock("");
    let server = crate::serve::Server::start(&env, &[]);
    let (status, v) = server.post(&crate::serve::mixed());
    assert_eq!(status, 200, "{v}");
    let openai = json!({"model": "system1", "input": "Refund, please.", "questions": [
        {"type": "predicate", "name": "refund", "instructions": "Does the customer want a refund?"}]});
    let (status, v) = server.request("POST", "/v1/decisions", &[], openai.to_string().as_bytes());
    assert_eq!(status, 200, "{v}");
    // Requests refused before any engine is asked are not decisions.
    let (status, v) = server.post(&json!({"model": "gpt-9", "state": "x", "questions": {"q": {"type": "noul"}}}));
    assert_eq!(status, 404, "{v}");
    let (status, v) = server.request("POST", "/v1/decisions", &[], b"{\"input\": 3}");
    assert_eq!(status, 422, "{v}");
    let (exit, log) = server.terminate();
    assert!(exit.success(), "{log}");

    let projects = env.root.join("projects");
    std::fs::create_dir_all(&projects).unwrap();
    let o = env.run(&["report", "--dir", projects.to_str().unwrap(), "--json", "--timezone", "UTC"], "");
    assert!(o.status.success(), "{}", stderr(&o));
    let report: Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    let rows = report["engines"]["engines"].as_array().expect("engine rows");
    let counts: Vec<(&str, u64, u64)> = rows
        .iter()
        .map(|r| {
            (r["provider"].as_str().unwrap_or(""), r["hooks"].as_u64().unwrap_or(0), r["tools"].as_u64().unwrap_or(0))
        })
        .collect();
    assert_eq!(counts, [("mock", 0, 2)], "one decision a request, from either route: {}", report["engines"]);
    let o = env.run(&["toggle", "status", "--json"], "");
    let status: Value = serde_json::from_slice(&o.stdout).expect("JSON status");
    assert_eq!(status["decisions_today"]["by_status"], json!({"decided": 2}), "{status}");
}
