//! A real llama.cpp server: the one in the PyPI wheel xllamacpp 2026.10.11549 (`scripts/test`
//! installs it with gguf 0.19.0 and names that venv's Python in `SYSTEM1_TEST_XLLAMACPP_PYTHON`),
//! run on 127.0.0.1 on a tiny GGUF that [support/xllamacpp_server.py](support/xllamacpp_server.py)
//! writes. The model is a plain one, with no decision metadata, which is what a user gets who starts
//! llama-server on an ordinary GGUF: the server is up and lists it, and its `/v1/systemone` answers
//! 501 "This model is not a decision model". The systemone provider says so, with a fix that names
//! a decision model, and the chain goes on past it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::support::{self, TestEnv};

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        // Closing its stdin ends it; kill it in case it hangs.
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// The server on a plain GGUF in `dir`; `None` when xllamacpp is not installed (a loud skip;
    /// under CI a failure).
    fn plain(dir: &std::path::Path) -> Option<Server> {
        let python = support::test_dep(
            "the xllamacpp server",
            "SYSTEM1_TEST_XLLAMACPP_PYTHON",
            ".test-deps/xllamacpp-2026.10.11549/bin/python",
        )?;
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/xllamacpp_server.py");
        let mut child = Command::new(python)
            .arg(script)
            .arg(dir)
            .arg("plain")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("server.log")).expect("log file"))
            .spawn()
            .expect("start the xllamacpp server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("its address");
        let url = line.trim().to_string();
        let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
        assert!(url.starts_with("http://127.0.0.1:"), "no address from the server: {url:?}\n{log}");
        Some(Server { child, url })
    }
}

const CHOICE: &[&str] = &[
    "-q",
    "Which team owns this?",
    "-o",
    "infra",
    "-o",
    "app",
    "--context",
    r#"{"text": "The build ran out of memory."}"#,
];

#[test]
fn a_plain_model_on_llama_server_is_named_as_not_a_decision_model_with_the_fix() {
    let env = TestEnv::new();
    let Some(server) = Server::plain(&env.root) else { return };
    let mut env = env;
    env.write_config("[gateway]\nprovider = \"systemone\"\ntimeout_s = 30\n");
    env.set_env("SYSTEM1_SYSTEMONE_ENDPOINT", &server.url);
    let (v, _) = env.decide_json(CHOICE);
    assert_eq!(v["status"], "error", "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("HTTP 501: This model is not a decision model"), "{v}");
    let fix = message.split("; fix: ").nth(1).unwrap_or_else(|| panic!("no fix: {v}"));
    assert!(fix.contains("not a decision model") && fix.contains("decision-model GGUF"), "{fix}");

    // With the mock after it, the chain goes on: the failed attempt, then the mock's answer.
    env.write_config("[gateway]\nprovider = \"systemone\"\nfallback = [\"mock\"]\ntimeout_s = 30\n");
    let (v, code) = env.decide_json(CHOICE);
    assert_eq!((code, &v["provider"]), (0, &Value::from("mock")), "{v}");
    assert_eq!(
        (&v["attempts"][0]["provider"], &v["attempts"][0]["outcome"]),
        (&"systemone".into(), &"error".into()),
        "{v}"
    );
}
