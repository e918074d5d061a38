//! What a new user met in the first hour (issue 40), each through the binary: numbers that must
//! agree wherever they are shown, a taught question asked without its context, `doctor` on a
//! machine without Claude Code.

use serde_json::json;

use crate::local_engine::model_dir;
use crate::support::{TestEnv, stderr, stdout, write};

/// A calibrated answer's rationale quotes the engine's own numbers and then the ones the answer
/// carries, so `yes=0.70` never stands alone beside a confidence of 0.8448.
#[test]
fn a_calibrated_rationale_states_the_numbers_the_answer_carries() {
    let env = TestEnv::with_mock("[providers.mock]\nprobabilities = { yes = 0.7, no = 0.3 }\n");
    let file = json!({"format": "system1-calibration", "version": 1,
                      "fits": [{"provider": "mock", "model": "mock", "question": "Ship it?", "temperature": 0.5, "n": 40}]});
    write(&env.install_dir.join("calibration.json"), &file.to_string());
    let (v, code) = env.decide_json(&["-q", "Ship it?"]);
    assert_eq!((code, v["calibrated"].as_bool()), (0, Some(true)), "{v}");
    let confidence = v["confidence"].as_f64().unwrap();
    let rationale = v["rationale"].as_str().unwrap();
    assert!(rationale.contains("yes=0.70"), "the engine's own numbers: {v}");
    assert!(rationale.ends_with(&format!("; calibrated: yes={confidence:.2}, no=0.16")), "{v}");
    // Below the threshold, the abstention quotes both too.
    let (v, code) = env.decide_json(&["-q", "Ship it?", "--min-confidence", "0.9"]);
    assert_eq!(code, 4, "{v}");
    let why = v["rationale"].as_str().unwrap();
    assert!(
        why.starts_with("confidence 0.84 is below the threshold 0.90 (") && why.contains("calibrated: yes=0.84"),
        "{v}"
    );
}

/// A confidence just under the threshold is shown with the digits that tell them apart, never as
/// "0.60 is below the threshold 0.60".
#[test]
fn a_confidence_just_under_the_threshold_is_shown_below_it() {
    let env = TestEnv::with_mock("[providers.mock]\nprobabilities = { yes = 0.5996, no = 0.4004 }\n");
    let (v, code) = env.decide_json(&["-q", "Ship it?", "--min-confidence", "0.6"]);
    assert_eq!(code, 4, "{v}");
    let why = v["rationale"].as_str().unwrap();
    assert!(why.starts_with("confidence 0.5996 is below the threshold 0.6000 ("), "{v}");
}

/// The shipped head for "Is this shell command destructive?" learned from `{"command": ...}`
/// contexts: asked with no command at all it abstains and says what to pass, instead of reading
/// the question's own words as a command.
#[test]
fn a_taught_question_without_its_context_abstains_and_says_what_to_pass() {
    let Some(dir) = model_dir() else { return };
    let env = local_env(&dir);
    let q = "Is this shell command destructive?";
    let (v, code) = env.decide_json(&["-q", q]);
    assert_eq!((code, v["status"].as_str()), (4, Some("abstained")), "{v}");
    let why = v["rationale"].as_str().unwrap();
    assert!(
        why.contains(r#"taught on a context with "command", and the request has no context"#)
            && why.contains(r#""context": {"command": "..."}"#),
        "{v}"
    );
    let (v, code) = env.decide_json(&["-q", q, "--context", r#"{"cwd": "/srv"}"#]);
    assert_eq!(code, 4, "{v}");
    assert!(v["rationale"].as_str().unwrap().contains(r#"the request lacks "command""#), "{v}");
    // With the command it answers.
    let (v, code) = env.decide_json(&["-q", q, "--context", r#"{"command": "rm -rf /var/lib/postgresql"}"#]);
    assert_eq!((code, v["decision"].as_str()), (0, Some("yes")), "{v}");
}

/// Without Claude Code on the machine (no `claude` on PATH, no ~/.claude, no .claude.json) there is
/// no registration to check: doctor says so and does not fail for it.
#[test]
fn doctor_without_claude_code_does_not_fail_for_the_registration() {
    let mut env = TestEnv::with_mock("");
    let empty = env.root.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    env.set_env("PATH", empty.to_str().unwrap());
    let out = env.run(&["install", "--no-register"], "");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let _ = std::fs::remove_dir_all(&env.claude_dir);
    let _ = std::fs::remove_file(env.claude_dir.join(".claude.json"));
    let out = env.run(&["doctor"], "");
    let text = stdout(&out);
    assert!(text.contains("ok    Claude Code is not installed here"), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("FAIL")), "{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
}

/// A paused System-1's rationale reaches every MCP client and the command line: it names the
/// command that resumes, runnable as printed, not Claude Code's slash command.
#[test]
fn the_paused_rationale_names_a_command_any_client_can_run() {
    let env = TestEnv::with_mock("");
    assert!(env.run(&["toggle", "off"], "").status.success());
    let (v, code) = env.decide_json(&["-q", "Ship it?"]);
    assert_eq!(code, 4, "{v}");
    let why = v["rationale"].as_str().unwrap();
    assert!(why.contains("system1 toggle on` resumes it") && !why.contains("/system1:"), "{v}");
}

/// The mock engine's health and abstentions reach every MCP and HTTP client: they say how to set
/// up a real engine with commands, not with Claude Code's slash command.
#[test]
fn the_mock_engines_words_name_commands_any_client_can_run() {
    let env = TestEnv::with_mock("");
    let mut server = env.mcp();
    server.initialize("2025-11-25");
    let health = server.call("system1_health", json!({}));
    let detail = health["providers"][0]["detail"].as_str().unwrap().to_string();
    server.close();
    assert!(detail.contains("system1 engine install local`") && !detail.contains("/system1:"), "{health}");
    let env = TestEnv::with_mock("[providers.mock]\nfail = \"abstain\"\n");
    let (v, code) = env.decide_json(&["-q", "Ship it?"]);
    assert_eq!(code, 4, "{v}");
    let why = v["rationale"].as_str().unwrap();
    assert!(why.contains("system1 engine install local`") && !why.contains("/system1:"), "{v}");
}

/// `system1 serve --port 0` in `env`: the child, its address, and its stderr being read.
fn serve(env: &TestEnv) -> (std::process::Child, String, std::thread::JoinHandle<Vec<u8>>) {
    use std::io::BufRead;
    let mut child = env
        .command(&["serve", "--port", "0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let log = crate::support::drain(child.stderr.take());
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.trim().rsplit("http://").next().unwrap().to_string();
    (child, addr, log)
}

/// POSTs `body` to `/v1/systemone`; the whole HTTP answer as text.
fn post(addr: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /v1/systemone HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    reply
}

/// Stops the server; what it logged.
fn stop(mut child: std::process::Child, log: std::thread::JoinHandle<Vec<u8>>) -> String {
    std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    child.wait().unwrap();
    String::from_utf8_lossy(&log.join().unwrap()).to_string()
}

fn local_env(dir: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write_config(&format!("[gateway]\nprovider = \"local\"\n[providers.local]\nmodel_dir = {dir:?}\n"));
    env
}

/// `system1 serve` on the local engine, asked a yes/no (noul) question it has no head for: the 400
/// names no slash command (its clients are not Claude Code), and the log line does not read
/// "via :" for the engine that did not answer.
#[test]
fn serve_refusing_an_unanswerable_question_speaks_to_any_client_and_logs_who_answered() {
    let Some(dir) = model_dir() else { return };
    let env = local_env(&dir);
    let (child, addr, log) = serve(&env);
    let body = json!({"state": "I was charged twice for one order",
                      "questions": {"refund": {"type": "noul", "instructions": "Is the customer asking for money back?"}}});
    let reply = post(&addr, &body.to_string());
    assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
    assert!(reply.contains("no trained head") && !reply.contains("/system1:"), "{reply}");
    let log = stop(child, log);
    assert!(log.contains("1 question (no engine answered): question \"refund\" (noul)"), "{log}");
    assert!(!log.contains("via :"), "{log}");
}

/// docs/serve.md's first request, sent to `system1 serve` on the default engine (the local one),
/// is answered (it was a 400: it held a noul the local engine has no head for), and the answer the
/// page shows next is the one it gives.
#[test]
fn the_first_request_in_the_serve_docs_gets_the_answer_shown() {
    let Some(dir) = model_dir() else { return };
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/serve.md")).unwrap();
    let blocks: Vec<&str> = page.split("```json\n").skip(1).map(|b| b.split("```").next().unwrap()).collect();
    let (request, shown) = (blocks[0], blocks[1]);
    let shown: serde_json::Value = serde_json::from_str(shown).unwrap();
    let env = local_env(&dir);
    let (child, addr, log) = serve(&env);
    let reply = post(&addr, request);
    stop(child, log);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let got: serde_json::Value = serde_json::from_str(reply.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(got["answers"]["team"]["choice"], shown["answers"]["team"]["choice"], "{got}");
    for (q, key) in [("team", "confidence"), ("anger", "score"), ("anger", "confidence")] {
        let (a, b) = (got["answers"][q][key].as_f64().unwrap(), shown["answers"][q][key].as_f64().unwrap());
        assert!((a - b).abs() < 0.01, "{q}.{key}: {a} served, {b} on the page");
    }
    assert_eq!((got["x_provider"].as_str(), &got["usage"]), (Some("local"), &shown["usage"]), "{got}");
}

/// `command` for `env`'s scratch environment, but running `program` (another way to the binary).
fn command_as(env: &TestEnv, program: &std::path::Path, args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    let scratch = env.command(&[]);
    for (k, v) in scratch.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd
}

/// On a terminal the download draws a progress line; when the hub then fails, the next message
/// starts a line of its own instead of running on after the meter. Run under a pseudo-terminal
/// (Python's pty module), where stderr is a terminal as a user's is.
#[test]
fn a_failed_download_leaves_no_progress_line_dangling() {
    let python = std::env::var("SYSTEM1_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let hub = crate::support::fake_http::FakeServer::start(|_| crate::support::fake_http::Reply::text(503, "down"));
    let mut env = TestEnv::new();
    env.set_env("HF_ENDPOINT", &hub.url());
    env.set_env("SYSTEM1_PYPI_ENDPOINT", &format!("http://127.0.0.1:{}", crate::support::fake_http::free_port()));
    let script = r#"
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    out += data
os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
"#;
    let mut cmd = command_as(&env, std::path::Path::new(&python), &["-c", script, crate::support::BIN]);
    cmd.args(["engine", "install", "local"]);
    let out = cmd.output().expect("run under a pty");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let at = text.find("local: the hub did not give the model").unwrap_or_else(|| panic!("{text:?}"));
    assert!(text[..at].contains(" MB"), "the meter was drawn on the terminal: {text:?}");
    assert!(text[..at].ends_with('\n'), "the message starts its own line: {text:?}");
}

/// A message's command names the binary by the path it was run by (a link to a build, say), not
/// the path the link resolves to, which the user never typed.
#[test]
fn a_printed_command_names_the_binary_as_it_was_run() {
    let env = TestEnv::with_mock("");
    let link = env.root.join("my build/system1");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(crate::support::BIN, &link).unwrap();
    assert!(command_as(&env, &link, &["toggle", "off"]).output().unwrap().status.success());
    let out = command_as(&env, &link, &["decide", "--json", "-q", "Ship it?"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let why = v["rationale"].as_str().unwrap();
    assert!(why.contains(&format!("`'{}' toggle on` resumes it", link.display())), "{v}");
    assert!(!why.contains("/debug/system1"), "not the path the link resolves to: {v}");
}
