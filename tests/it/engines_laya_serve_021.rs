//! The Laya adapter against the real `laya-serve` 0.2.1 from PyPI (the deprecated package, whose
//! weight-free `fake` backend answers every choice with uniform probabilities). Its dialect differs
//! from laya 0.4.15's: `/healthz`, `{"error": {...}}` bodies, a fixed list of model names, and no
//! `routing` in answers. `scripts/test` installs it into `.test-deps/` and passes its path in
//! `SYSTEM1_TEST_LAYA_SERVE_021`.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::fake_http::free_port;
use crate::support::{TestEnv, stdout};
use serde_json::Value;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts laya-serve 0.2.1 on a free loopback port with an API key; None when it is not installed.
fn start(key: &str) -> Option<(Server, u16)> {
    let Some(bin) = std::env::var_os("SYSTEM1_TEST_LAYA_SERVE_021").filter(|v| !v.is_empty()) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "SYSTEM1_TEST_LAYA_SERVE_021 is not set: run the tests with scripts/test, which installs laya-serve 0.2.1"
        );
        eprintln!("SKIPPED: laya-serve 0.2.1 is not installed (SYSTEM1_TEST_LAYA_SERVE_021); run scripts/test");
        return None;
    };
    let port = free_port();
    let mut cmd = Command::new(bin);
    crate::support::sandbox(&mut cmd, &crate::support::shared_home());
    let child = cmd
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .env("LAYA_HOST", "127.0.0.1")
        .env("LAYA_SERVE_BACKEND", "fake")
        .env("LAYA_SERVE_API_KEY", key)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start laya-serve 0.2.1");
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "laya-serve 0.2.1 did not open its port");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some((server, port))
}

#[test]
fn the_adapter_speaks_to_the_real_laya_serve_0_2_1() {
    let Some((_server, port)) = start("sekret") else { return };
    let mut env = TestEnv::new();
    env.set_env("SYSTEM1_LAYA_ENDPOINT", &format!("http://127.0.0.1:{port}"));
    env.set_env("SYSTEM1_LAYA_MODEL", "laya");

    // Without the key: a 401 that says the key is missing.
    let (v, code) = env.decide_json(&["-q", "Is this a greeting?", "--context", r#"{"text": "hello"}"#]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["error"]["code"], "provider_error");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("missing") && msg.contains("Missing or invalid API key."), "{msg}");

    env.set_env("SYSTEM1_LAYA_API_KEY", "sekret");
    // The fake backend answers 0.5/0.5 with no routing: accepted for a built-in pin, below 0.6.
    let (v, code) = env.decide_json(&["-q", "Is this a greeting?", "--context", r#"{"text": "hello"}"#]);
    assert_eq!(code, 4, "{v}");
    assert_eq!(v["status"], "abstained");
    assert_eq!(v["confidence"], 0.5);
    assert!(v["attempts"][0]["detail"].as_str().unwrap().contains("no routing"), "{v}");
    let (v, code) =
        env.decide_json(&["-q", "Which team?", "-o", "infra", "-o", "app", "-o", "docs", "--min-confidence", "0.3"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["decision"], "infra", "the fake picks the first option");
    assert_eq!(v["rationale"], "laya english: infra=0.33, app=0.33, docs=0.33");

    // A checkpoint name 0.2.1 does not know: its 422 body in the error shape of that package.
    env.set_env("SYSTEM1_LAYA_MODEL", "typed-decisions");
    let (v, _) = env.decide_json(&["-q", "Ok?"]);
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("HTTP 422: unknown model 'typed-decisions'") && msg.contains("(model)"), "{msg}");

    // Health finds /healthz when /health is missing.
    let out = env.run(&["engine", "status", "laya", "--json"], "");
    let s: Value = serde_json::from_str(&stdout(&out)).expect("status JSON");
    assert_eq!(s[0]["healthy"], true, "{s}");
    assert!(s[0]["detail"].as_str().unwrap().contains("0.2.1"));
}
