//! `system1 engine install decider` through the binary, with no network: a stand-in for the Hugging
//! Face hub serves a decision GGUF that [support/xllamacpp_server.py](support/xllamacpp_server.py)
//! writes (real GGUF structure, a decision type and a "systemone" template as llama.cpp reads them,
//! tiny random weights), pinned for the test by its own SHA-256 and size (`--gguf ... --sha256
//! --size`); a stand-in package index serves the real xllamacpp 2026.10.11549 wheel (`scripts/test`
//! downloads it and names its folder in `SYSTEM1_TEST_XLLAMACPP_WHEEL_DIR`). The install makes the
//! venv, starts llama.cpp's real server on 127.0.0.1, times it and puts it behind the local engine:
//! the local engine answers the taught question, the server the free yes/no and the choice. A
//! tampered file, a dripping hub and a plain (non-decision) GGUF are each refused, naming why,
//! with nothing installed; a decision server already answering is used instead of installing one.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::fake_http::{FakeServer, Reply};
use crate::support::{self, TestEnv, stderr, stdout};

const REVISION: &str = "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed";
const REPO: &str = "test-org/Tiny-Decision-GGUF";

fn python() -> Option<PathBuf> {
    support::test_dep(
        "the decision server install",
        "SYSTEM1_TEST_XLLAMACPP_PYTHON",
        ".test-deps/xllamacpp-2026.10.11549/bin/python",
    )
}

fn wheel() -> Option<PathBuf> {
    let dir = support::test_dep(
        "the decision server install",
        "SYSTEM1_TEST_XLLAMACPP_WHEEL_DIR",
        ".test-deps/xllamacpp-wheel",
    )?;
    let found = std::fs::read_dir(&dir).ok()?.flatten().map(|e| e.path()).find(|p| {
        p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("xllamacpp-") && n.ends_with(".whl"))
    });
    if found.is_none() {
        support::missing_test_dep("no xllamacpp wheel: run scripts/test", "no xllamacpp wheel; run scripts/test");
    }
    found
}

/// A GGUF of `kind` (`decision` or `plain`) written into `dir`: its bytes and SHA-256.
fn gguf(python: &Path, dir: &Path, kind: &str) -> (Vec<u8>, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/xllamacpp_server.py");
    let mut cmd = std::process::Command::new(python);
    support::sandbox(&mut cmd, &support::shared_home());
    let status = cmd.arg(script).arg(dir).arg(format!("write-{kind}")).status().expect("run python");
    assert!(status.success(), "writing the {kind} GGUF");
    let bytes = std::fs::read(dir.join(format!("{kind}.gguf"))).expect("the GGUF");
    (bytes.clone(), sha256(&bytes))
}

fn sha256(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// A hub serving `bytes` as `file` of the test repository at the pinned revision.
fn hub(file: &str, reply: Reply) -> FakeServer {
    let path = format!("/{REPO}/resolve/{REVISION}/{file}");
    FakeServer::start(move |r| if r.path == path { reply.clone() } else { Reply::text(404, "Entry not found") })
}

/// A PEP 503 index serving the xllamacpp wheel.
fn index(wheel: PathBuf) -> FakeServer {
    let name = wheel.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
    let bytes = std::fs::read(&wheel).expect("the wheel");
    let page = format!(
        "<!DOCTYPE html><html><body><a href=\"/files/{name}#sha256={}\">{name}</a></body></html>",
        sha256(&bytes)
    );
    FakeServer::start(move |r| match r.path.trim_end_matches('/') {
        "/simple/xllamacpp" => Reply::new(200, "text/html", page.clone()),
        p if p == format!("/files/{name}") => Reply::new(200, "application/octet-stream", bytes.clone()),
        _ => Reply::text(404, "not found"),
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// Stops the decision server a test started, however the test ends.
struct Stopper<'a>(&'a TestEnv);

impl Drop for Stopper<'_> {
    fn drop(&mut self) {
        let _ = self.0.run(&["engine", "stop", "decider"], "");
    }
}

fn pin_args(file: &str, sha: &str, size: usize) -> Vec<String> {
    ["engine", "install", "decider", "--gguf"]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("{REPO}/{file}@{REVISION}"), "--sha256".into(), sha.into(), "--size".into(), size.to_string()])
        .collect()
}

fn run_install(env: &TestEnv, args: &[String]) -> std::process::Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.run(&args, "")
}

#[test]
fn a_decision_gguf_is_installed_served_timed_and_put_behind_the_local_engine() {
    let (Some(python), Some(wheel)) = (python(), wheel()) else { return };
    let Some(local) = crate::local_engine::model_dir() else { return };
    let mut env = TestEnv::new();
    let (bytes, sha) = gguf(&python, &env.root, "decision");
    let size = bytes.len();
    let hub = hub("decision.gguf", Reply::new(200, "application/octet-stream", bytes));
    let index = index(wheel);
    let port = free_port();
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\ntimeout_s = 30\n[providers.local]\nmodel_dir = {local:?}\n\
         [providers.decider]\nkind = \"systemone\"\nendpoint = \"http://127.0.0.1:{port}\"\n"
    ));
    env.set_env("HF_ENDPOINT", &format!("http://127.0.0.1:{}", hub.port));
    env.set_env("SYSTEM1_PYPI_ENDPOINT", &format!("http://127.0.0.1:{}", index.port));
    let _stop = Stopper(&env);
    let out = run_install(&env, &pin_args("decision.gguf", &sha, size));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{said}");
    for line in [
        "decider: installed decision (0.3 MB, revision 5eed5eed5eed)",
        "decider: installed xllamacpp==2026.10.11549 from http://127.0.0.1:",
        "decider: started the decision server on 127.0.0.1:",
        "decider: answered a routing-sized decision (4 questions) in ",
        "the chain is now local → decider",
        "[providers.local] choices = \"taught\"",
        "decider: the routing hook uses it too: ",
    ] {
        assert!(said.contains(line), "no {line:?} in:\n{said}");
    }
    let config = std::fs::read_to_string(&env.config).unwrap();
    let doc: toml::Table = config.parse().unwrap();
    assert_eq!(doc["gateway"]["fallback"].as_array().map(Vec::len), Some(1), "{config}");
    assert_eq!(doc["gateway"]["fallback"][0].as_str(), Some("decider"), "{config}");
    assert!(doc["providers"]["decider"]["latency_ms"].as_integer().is_some_and(|ms| ms >= 1), "{config}");
    assert_eq!(doc["providers"]["decider"]["model"].as_str(), Some("decision"), "{config}");
    assert_eq!(doc["providers"]["local"]["model_dir"].as_str(), Some(local.as_str()), "the rest is kept");

    // The taught questions (the routing features): local, in-process. A free yes/no and a choice:
    // the server, after local passed them on; the attempts show both.
    let out =
        env.run(&["route", "--prompt", "Find every call to parse_legacy_header and list the files", "--json"], "");
    let r: Value = serde_json::from_str(&stdout(&out)).expect("route JSON");
    assert_eq!(r["routing"]["provider"], "local", "{r}");
    let context = r#"{"text": "Delete the stale build artifacts in target/."}"#;
    let (v, _) = env.decide_json(&["-q", "Is the build broken?", "--context", context, "--min-confidence", "0"]);
    assert_eq!((&v["status"], &v["provider"]), (&"decided".into(), &"decider".into()), "{v}");
    assert_eq!((&v["attempts"][0]["provider"], &v["attempts"][0]["outcome"]), (&"local".into(), &"passed".into()));
    assert_eq!((&v["attempts"][1]["provider"], &v["attempts"][1]["outcome"]), (&"decider".into(), &"ok".into()));
    let (v, _) = env.decide_json(&[
        "-q",
        "Which team owns this?",
        "-o",
        "infra",
        "-o",
        "app",
        "--context",
        context,
        "--min-confidence",
        "0",
    ]);
    assert_eq!((&v["status"], &v["provider"]), (&"decided".into(), &"decider".into()), "{v}");
    assert!(["infra", "app"].contains(&v["decision"].as_str().unwrap_or_default()), "{v}");

    let status = stdout(&env.run(&["engine", "status"], ""));
    assert!(status.contains("decider:\n  installed:  yes"), "{status}");
    assert!(status.contains(&format!("listening:  yes (127.0.0.1:{port})")), "{status}");
    assert!(status.contains("free yes/no questions go to decider"), "{status}");
    assert!(status.contains("choices go to decider"), "{status}");

    // `study` measures it on a shipped set, as any engine of the chain.
    let out = env.run(&["study", "--providers", "decider", "--set", "destructive", "--json"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let study: Value = serde_json::from_str(&stdout(&out)).expect("study JSON");
    let measured = &study["engines"][0];
    assert_eq!((&measured["provider"], &measured["sets"][0]["failed"]), (&"decider".into(), &0.into()), "{study}");
    assert_eq!(measured["sets"][0]["questions"][0]["answered"], 173, "every item of the set answered: {study}");

    // Installed again: the model is there (checksums verified), nothing downloaded twice.
    let downloads = hub.requests().len();
    let out = run_install(&env, &pin_args("decision.gguf", &sha, size));
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("is already installed in"), "{}", stdout(&out));
    assert!(stdout(&out).contains("the chain has decider already"), "{}", stdout(&out));
    assert_eq!(hub.requests().len(), downloads);
}

/// Offline: `--from` a folder that holds the GGUF and the xllamacpp wheel installs both with no hub
/// and no package index (both pointed at a port where nothing listens), and the server answers.
#[test]
fn from_a_folder_with_the_gguf_and_the_wheel_installs_with_no_network() {
    let (Some(python), Some(wheel)) = (python(), wheel()) else { return };
    let mut env = TestEnv::new();
    let from = env.root.join("from");
    std::fs::create_dir_all(&from).unwrap();
    let (bytes, sha) = gguf(&python, &from, "decision");
    std::fs::copy(&wheel, from.join(wheel.file_name().unwrap())).unwrap();
    let port = free_port();
    env.write_config(&format!(
        "[gateway]\nprovider = \"mock\"\ntimeout_s = 30\n[providers.decider]\nkind = \"systemone\"\n\
         endpoint = \"http://127.0.0.1:{port}\"\n"
    ));
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    env.set_env("HF_ENDPOINT", &nowhere);
    env.set_env("SYSTEM1_PYPI_ENDPOINT", &nowhere);
    env.set_env("PIP_INDEX_URL", &nowhere);
    let _stop = Stopper(&env);
    let mut args = pin_args("decision.gguf", &sha, bytes.len());
    args.extend(["--from".to_string(), from.display().to_string()]);
    let out = run_install(&env, &args);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{said}");
    assert!(said.contains(&format!("installed xllamacpp==2026.10.11549 from {}", from.display())), "{said}");
    assert!(said.contains("the chain is now mock → decider"), "local is not in the chain: it goes last: {said}");
    let (v, _) = env.decide_json(&["-q", "Is it?", "--min-confidence", "0"]);
    assert_eq!(v["provider"], "mock", "the mock answers first: {v}");
    let out = env.run(&["engine", "status", "decider", "--json"], "");
    let status: Value = serde_json::from_str(&stdout(&out)).expect("status JSON");
    assert_eq!((&status[0]["installed"], &status[0]["listening"]), (&true.into(), &true.into()), "{status}");
}

/// Nothing of an engine is left where the install refused.
fn nothing_installed(env: &TestEnv) {
    let dir = env.install_dir.join("engines/decider");
    assert!(!dir.join("venv").exists() && !dir.join("model.txt").exists(), "a venv or a model pointer was made");
    let models: Vec<_> = std::fs::read_dir(dir.join("models")).into_iter().flatten().flatten().collect();
    assert!(models.is_empty(), "left in models/: {models:?}");
}

#[test]
fn a_tampered_a_dripping_and_a_plain_gguf_are_refused_and_nothing_is_installed() {
    let Some(python) = python() else { return };
    let scratch = TestEnv::new();
    let (bytes, sha) = gguf(&python, &scratch.root, "decision");
    let size = bytes.len();

    // One byte changed: the SHA-256 differs from the pin.
    let mut tampered = bytes.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 0xff;
    let server = hub("decision.gguf", Reply::new(200, "application/octet-stream", tampered));
    let mut env = TestEnv::new();
    env.set_env("HF_ENDPOINT", &format!("http://127.0.0.1:{}", server.port));
    let out = run_install(&env, &pin_args("decision.gguf", &sha, size));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("expected {sha} (a changed or corrupted file); nothing was installed")), "{err}");
    assert!(err.contains("engine install decider --from FILE"), "the offline way is named: {err}");
    nothing_installed(&env);

    // A hub that sends a little and then nothing: stalled after a second.
    let server = hub("decision.gguf", Reply::new(200, "application/octet-stream", bytes.clone()).stall_after(1000));
    let mut env = TestEnv::new();
    env.set_env("HF_ENDPOINT", &format!("http://127.0.0.1:{}", server.port));
    env.set_env("SYSTEM1_DOWNLOAD_STALL_SECS", "1");
    let out = run_install(&env, &pin_args("decision.gguf", &sha, size));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("the server sent nothing for 1 s after 1000 of"), "{err}");
    nothing_installed(&env);

    // A plain model, pinned by its own checksum: it downloads whole, and is refused by what it is.
    let (plain, plain_sha) = gguf(&python, &scratch.root, "plain");
    let server = hub("plain.gguf", Reply::new(200, "application/octet-stream", plain.clone()));
    let mut env = TestEnv::new();
    env.set_env("HF_ENDPOINT", &format!("http://127.0.0.1:{}", server.port));
    let out = run_install(&env, &pin_args("plain.gguf", &plain_sha, plain.len()));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("plain.gguf is not a decision model: it is a plain modern-bert model"), "{err}");
    assert!(err.contains("HTTP 501"), "{err}");
    nothing_installed(&env);

    // The same plain file given with --from: refused the same way, before a venv is made.
    let from = scratch.root.join("plain.gguf");
    let mut args = pin_args("plain.gguf", &plain_sha, plain.len());
    args.extend(["--from".to_string(), from.display().to_string()]);
    let env = TestEnv::new();
    let out = run_install(&env, &args);
    assert!(stderr(&out).contains("is not a decision model"), "{}", stderr(&out));
    nothing_installed(&env);
}

/// A decision server already answering at [providers.systemone]'s endpoint (here jevcompat's
/// reference server) is used: nothing is installed, and the chain gets it behind the local engine.
#[test]
fn a_decision_server_already_answering_is_used_instead_of_installing_one() {
    let Some(mock) = crate::engines_systemone::Mock::start(&[]) else { return };
    let mut env = TestEnv::new();
    env.write_config("[gateway]\nprovider = \"local\"\nfallback = [\"mock\"]\n");
    env.set_env("SYSTEM1_SYSTEMONE_ENDPOINT", &mock.url());
    let out = env.run(&["engine", "install", "decider"], "");
    let said = stdout(&out);
    assert!(out.status.success(), "{said}{}", stderr(&out));
    assert!(said.contains("already answers decisions on this machine: nothing was installed"), "{said}");
    assert!(said.contains("the chain is now local → systemone → mock"), "{said}");
    assert!(!env.install_dir.join("engines/decider").exists(), "nothing installed");
    let doc: toml::Table = std::fs::read_to_string(&env.config).unwrap().parse().unwrap();
    assert_eq!(doc["providers"]["systemone"]["endpoint"].as_str(), Some(mock.url().as_str()));
    assert!(doc["providers"]["systemone"].get("kind").is_none(), "the built-in provider names no kind");
}

/// Ollama with a decision model, at the address `[providers.ollama] endpoint` names, is used:
/// nothing is installed, and the systemone provider is pointed at it with that model. Ollama
/// cannot run here: a stand-in speaks its `/api/tags` and `/api/show` and answers System One
/// decisions; of its two models only the one whose capabilities include `decision` is taken.
#[test]
fn ollama_with_a_decision_model_is_used_instead_of_installing_one() {
    let ollama = FakeServer::start(|r| match r.path.as_str() {
        "/api/tags" => {
            Reply::json(200, &serde_json::json!({"models": [{"name": "llama3.2:3b"}, {"name": "d1-omni:600m"}]}))
        }
        "/api/show" => {
            let capabilities = if r.json()["model"] == "d1-omni:600m" {
                serde_json::json!(["decision"])
            } else {
                serde_json::json!(["completion", "tools"])
            };
            Reply::json(200, &serde_json::json!({"capabilities": capabilities}))
        }
        "/v1/systemone" if r.json()["model"] == "d1-omni:600m" => {
            let body = r.json();
            let answers: serde_json::Map<String, Value> = body["questions"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(id, _)| (id.clone(), serde_json::json!({"type": "noul", "noul": 0.9})))
                .collect();
            Reply::json(200, &serde_json::json!({"model": "d1-omni:600m", "answers": answers}))
        }
        _ => Reply::json(404, &serde_json::json!({"error": "not found"})),
    });
    let mut env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\nfallback = [\"mock\"]\n[providers.ollama]\nendpoint = \"{}\"\n",
        ollama.url()
    ));
    // Nothing answers at the systemone provider's own address.
    env.set_env("SYSTEM1_SYSTEMONE_ENDPOINT", &format!("http://127.0.0.1:{}", crate::support::fake_http::free_port()));
    let out = env.run(&["engine", "install", "decider"], "");
    let said = stdout(&out);
    assert!(out.status.success(), "{said}{}", stderr(&out));
    assert!(said.contains("Ollama, with d1-omni:600m"), "{said}");
    assert!(said.contains("already answers decisions on this machine: nothing was installed"), "{said}");
    assert!(said.contains("the chain is now local → systemone → mock"), "{said}");
    assert!(!env.install_dir.join("engines/decider").exists(), "nothing installed");
    let doc: toml::Table = std::fs::read_to_string(&env.config).unwrap().parse().unwrap();
    assert_eq!(doc["providers"]["systemone"]["endpoint"].as_str(), Some(ollama.url().as_str()));
    assert_eq!(doc["providers"]["systemone"]["model"].as_str(), Some("d1-omni:600m"));
    let shown: Vec<String> = ollama.requests_to("/api/show").iter().map(|r| r.json()["model"].to_string()).collect();
    assert_eq!(shown, ["\"llama3.2:3b\"", "\"d1-omni:600m\""], "each pulled model's capabilities were read");
    let asked = ollama.requests_to("/v1/systemone");
    assert_eq!(asked.len(), 1, "one canned question, to the decision model only");
    assert_eq!(asked[0].json()["model"], "d1-omni:600m");
}
