//! The systemone provider against the real `jevcompat mock` 0.1.1 from PyPI (the System One API's
//! spec-exact reference server; `scripts/test` installs it and names it in
//! `SYSTEM1_TEST_JEVCOMPAT`): yes/no, choices, the routing features in one request, 255 options in
//! one request and 256 by rounds, a bearer key, the fallback from `local` to the mock, and each of
//! the mock's faults: those that corrupt an answer are never decided and name the broken rule,
//! those a client can live with still decide.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::support::{self, TestEnv, stderr, stdout};
use serde_json::Value;

/// A running `jevcompat mock`, its requests logged (`-v`) to a file.
pub(crate) struct Mock {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

impl Mock {
    /// Starts the mock on a free loopback port with `args` (`--fault X`, `--key K`); `None` when
    /// jevcompat is not installed (a loud skip; under CI a failure).
    pub(crate) fn start(args: &[&str]) -> Option<Mock> {
        let bin =
            support::test_dep("jevcompat mock", "SYSTEM1_TEST_JEVCOMPAT", ".test-deps/jevcompat-0.1.1/bin/jevcompat")?;
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("jevcompat-{}-{n}.log", std::process::id()));
        // Port 0: the mock takes a port no other test's mock can have picked too (a port found free
        // first could be taken by another mock meanwhile, and this one's requests answered by it).
        let mut cmd = Command::new(bin);
        crate::support::sandbox(&mut cmd, &crate::support::shared_home());
        let child = cmd
            .args(["mock", "--host", "127.0.0.1", "--port", "0", "-v"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start jevcompat mock");
        let mut mock = Mock { child, port: 0, log };
        let deadline = Instant::now() + Duration::from_secs(30);
        // It says where it listens: "jevcompat mock on http://127.0.0.1:PORT/v1/systemone".
        while mock.port == 0 {
            let text = std::fs::read_to_string(&mock.log).unwrap_or_default();
            mock.port = text
                .split("http://127.0.0.1:")
                .nth(1)
                .and_then(|rest| rest.split('/').next())
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            assert!(Instant::now() < deadline, "jevcompat mock did not say its port: {text}");
            std::thread::sleep(Duration::from_millis(50));
        }
        while TcpStream::connect(("127.0.0.1", mock.port)).is_err() {
            assert!(Instant::now() < deadline, "jevcompat mock did not open its port");
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(mock)
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// How many decisions (`POST /v1/systemone`) the mock has answered.
    pub(crate) fn decisions(&self) -> usize {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().filter(|l| l.contains("\"POST /v1/systemone ")).count()
    }

    /// An environment whose chain is this mock alone.
    fn env(&self) -> TestEnv {
        let mut env = TestEnv::new();
        env.write_config("[gateway]\nprovider = \"systemone\"\ntimeout_s = 30\n");
        env.set_env("SYSTEM1_SYSTEMONE_ENDPOINT", &self.url());
        env
    }
}

fn decide(env: &TestEnv, args: &[&str]) -> (Value, i32) {
    let mut all = vec!["decide", "--json"];
    if !args.contains(&"--min-confidence") {
        all.extend(["--min-confidence", "0"]);
    }
    all.extend(args);
    let out = env.run(&all, "");
    let v = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)));
    (v, out.status.code().unwrap_or(-1))
}

const YES_NO: &[&str] = &[
    "-q",
    "Is it safe to run the migration on Friday?",
    "--context",
    r#"{"text": "The migration rewrites the orders table."}"#,
];
const CHOICE: &[&str] = &[
    "-q",
    "Which team owns this?",
    "-o",
    "Infra",
    "-o",
    "App",
    "-o",
    "Café",
    "--context",
    r#"{"text": "The build failed with exit code 137."}"#,
];

#[test]
fn yes_no_and_choice_are_decided_from_the_probabilities() {
    let Some(mock) = Mock::start(&[]) else { return };
    let env = mock.env();
    let (v, code) = decide(&env, YES_NO);
    assert_eq!((code, &v["status"], &v["provider"]), (0, &Value::from("decided"), &Value::from("systemone")), "{v}");
    let (yes, no) = (v["probabilities"]["yes"].as_f64().unwrap(), v["probabilities"]["no"].as_f64().unwrap());
    assert!(((yes + no) - 1.0).abs() < 1e-3, "{v}");
    assert_eq!(v["decision"], if yes >= 0.5 { "yes" } else { "no" }, "{v}");
    assert_eq!(v["confidence"].as_f64(), Some(yes.max(no)), "the chosen answer's probability: {v}");

    let (v, code) = decide(&env, CHOICE);
    assert_eq!(code, 0, "{v}");
    let probs = v["probabilities"].as_object().expect("probabilities");
    let (best, p) = probs
        .iter()
        .map(|(k, p)| (k.clone(), p.as_f64().unwrap()))
        .fold((String::new(), -1.0), |b, x| if x.1 > b.1 { x } else { b });
    assert_eq!((v["decision"].as_str(), v["confidence"].as_f64()), (Some(best.as_str()), Some(p)), "{v}");
    assert_eq!(mock.decisions(), 2, "one request a decision");
}

#[test]
fn the_routing_features_go_in_one_request() {
    let Some(mock) = Mock::start(&[]) else { return };
    let env = mock.env();
    let out = env.run(
        &["route", "--prompt", "Find every call to parse_legacy_header in the repository and list the files", "--json"],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("route JSON");
    for f in ["read_only", "design", "review", "specified"] {
        assert!(v["routing"]["features"][f]["confidence"].as_f64().is_some_and(|c| c >= 0.5), "{f}: {v}");
    }
    assert_eq!(v["routing"]["provider"], "systemone", "{v}");
    assert_eq!(mock.decisions(), 1, "four questions, one request");
}

#[test]
fn two_hundred_fifty_five_options_in_one_request_and_256_by_rounds() {
    let Some(mock) = Mock::start(&[]) else { return };
    let env = mock.env();
    for (n, requests) in [(255, 1), (256, 2)] {
        let before = mock.decisions();
        let options: Vec<String> = (0..n).map(|i| format!("intent-{i}")).collect();
        let mut args = vec!["-q", "Which intent is this?"];
        for o in &options {
            args.extend(["-o", o.as_str()]);
        }
        let (v, code) = decide(&env, &args);
        assert_eq!(code, 0, "{n}: {v}");
        assert_eq!(v["probabilities"].as_object().map(|p| p.len()), Some(n), "{n}");
        // 256 over 255: two groups in one round's request, then the final over the two winners.
        assert_eq!(mock.decisions() - before, requests, "{n} options: {v}");
        if n == 256 {
            assert!(v["attempts"][0]["detail"].as_str().unwrap_or("").contains("elimination"), "{v}");
        }
    }
}

#[test]
fn a_bearer_key_is_sent_and_a_missing_one_is_named() {
    let Some(mock) = Mock::start(&["--key", "sk-test-1"]) else { return };
    let mut env = mock.env();
    let (v, code) = decide(&env, YES_NO);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["error"]["code"], "provider_error");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("missing") && msg.contains("SYSTEM1_SYSTEMONE_API_KEY"), "{msg}");
    env.set_env("SYSTEM1_SYSTEMONE_API_KEY", "sk-wrong");
    let (v, _) = decide(&env, YES_NO);
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("refused the API key") && !msg.contains("sk-wrong"), "never printed: {msg}");
    env.set_env("SYSTEM1_SYSTEMONE_API_KEY", "sk-test-1");
    let (v, code) = decide(&env, YES_NO);
    assert_eq!((code, &v["status"]), (0, &Value::from("decided")), "{v}");
    // config show names that a key is set, never the key.
    let out = env.run(&["config", "show"], "");
    let shown = stdout(&out);
    assert!(shown.contains("providers.systemone.api_key = \"<set>\"") && !shown.contains("sk-test-1"), "{shown}");
}

#[test]
fn an_unknown_model_lists_what_the_server_offers() {
    let Some(mock) = Mock::start(&[]) else { return };
    let mut env = mock.env();
    env.set_env("SYSTEM1_SYSTEMONE_MODEL", "jev-9");
    let (v, code) = decide(&env, YES_NO);
    assert_eq!(code, 1, "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("no model \"jev-9\"; it offers: jev-latest, mock"), "{msg}");
}

#[test]
fn local_passes_a_yes_no_it_has_no_head_for_on_to_the_mock() {
    let Some(dir) = crate::local_engine::model_dir() else { return };
    let Some(mock) = Mock::start(&[]) else { return };
    let mut env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\nfallback = [\"systemone\"]\ntimeout_s = 30\n[providers.local]\nmodel_dir = {dir:?}\n"
    ));
    env.set_env("SYSTEM1_SYSTEMONE_ENDPOINT", &mock.url());
    let (v, code) = decide(&env, YES_NO);
    assert_eq!((code, &v["status"], &v["provider"]), (0, &Value::from("decided"), &Value::from("systemone")), "{v}");
    assert_eq!(v["attempts"][0]["provider"], "local");
    assert_eq!(v["attempts"][0]["outcome"], "passed");
    assert!(v["attempts"][0]["detail"].as_str().unwrap().contains("no trained head"), "{v}");
    assert_eq!(
        (&v["attempts"][1]["provider"], &v["attempts"][1]["outcome"]),
        (&Value::from("systemone"), &Value::from("ok"))
    );

    // The trained questions stay with local: the routing features never reach the mock.
    let out = env.run(
        &["route", "--prompt", "Find every call to parse_legacy_header in the repository and list the files", "--json"],
        "",
    );
    let r: Value = serde_json::from_str(&stdout(&out)).expect("route JSON");
    assert_eq!(r["routing"]["provider"], "local", "{r}");
    assert_eq!(mock.decisions(), 1, "only the free yes/no went to the mock");

    // A low confidence still abstains without falling back.
    let before = mock.decisions();
    let (v, code) = decide(&env, &["-q", "Which team?", "-o", "billing", "-o", "infra", "--min-confidence", "0.99"]);
    assert_eq!((code, &v["status"], &v["provider"]), (4, &Value::from("abstained"), &Value::from("local")), "{v}");
    assert_eq!(mock.decisions(), before);

    // With nothing after local, the decision abstains and says what would answer it.
    let env = TestEnv::new();
    env.write_config(&format!("[gateway]\nprovider = \"local\"\n[providers.local]\nmodel_dir = {dir:?}\n"));
    let (v, code) = decide(&env, YES_NO);
    assert_eq!((code, &v["status"]), (4, &Value::from("abstained")), "{v}");
    // What the model reads is one sentence; the attempt says why in a few words; the whole
    // response was 1,437 characters when both repeated the instructions meant for the person.
    assert_eq!(v["rationale"], "No engine here answers this kind of question: decide it yourself.");
    assert_eq!(
        v["attempts"][0]["detail"], "passed on: local all-MiniLM-L6-v2: no trained head for this yes/no question",
        "{v}"
    );
    let compact = serde_json::to_string(&v).unwrap();
    assert!(compact.len() < 500, "{} characters: {compact}", compact.len());
    // The person gets what would answer it, once, on stderr.
    let out = env.run(&[&["decide"][..], YES_NO].concat(), "");
    let said = stderr(&out);
    assert!(
        said.matches("calibrate fit --provider local --question").count() == 1
            && said.contains("add a System One server to the chain as a fallback")
            && said.contains("one JSON line each"),
        "{said}"
    );
    assert!(!stdout(&out).contains("calibrate"), "{}", stdout(&out));
    // A choice still goes to local.
    let (v, code) = decide(&env, &["-q", "Which team?", "-o", "billing", "-o", "infra"]);
    assert_eq!((code, &v["provider"]), (0, &Value::from("local")), "{v}");
}

/// The local engine with the shipped heads, optionally with the mock after it.
fn local_env(dir: &str, mock: Option<&Mock>) -> TestEnv {
    let mut env = TestEnv::new();
    let fallback = if mock.is_some() { "fallback = [\"systemone\"]\n" } else { "" };
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\n{fallback}timeout_s = 30\n[providers.local]\nmodel_dir = {dir:?}\n"
    ));
    if let Some(m) = mock {
        env.set_env("SYSTEM1_SYSTEMONE_ENDPOINT", &m.url());
    }
    env
}

/// With `[providers.local] choices = "taught"` the local engine keeps the choices it was taught and
/// passes the others on: a decision server behind it answers them, and capabilities, `engine
/// status` and doctor say that choices go to it. Without a server, such a choice abstains and says
/// how to teach it.
#[test]
fn local_passes_untaught_choices_on_to_the_server_when_told_to() {
    let Some(dir) = crate::local_engine::model_dir() else { return };
    let Some(mock) = Mock::start(&[]) else { return };
    let env = local_env(&dir, Some(&mock));
    let config = std::fs::read_to_string(&env.config).unwrap();
    env.write_config(&format!("{config}choices = \"taught\"\n"));
    let (v, code) = decide(&env, CHOICE);
    assert_eq!((code, &v["status"], &v["provider"]), (0, &Value::from("decided"), &Value::from("systemone")), "{v}");
    assert_eq!((&v["attempts"][0]["provider"], &v["attempts"][0]["outcome"]), (&"local".into(), &"passed".into()));
    let detail = v["attempts"][0]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("choices = \"taught\" passes untaught choices on"), "{v}");
    assert_eq!(mock.decisions(), 1);

    let (_, _, caps) = offered(&env);
    assert_eq!(caps["providers"]["local"]["choice"], "taught", "{caps}");
    assert_eq!(caps["routes"]["choice"], "systemone", "{caps}");
    let status = stdout(&env.run(&["engine", "status"], ""));
    assert!(status.contains("choices go to systemone"), "{status}");
    let report = stdout(&env.run(&["doctor"], ""));
    assert!(
        report.lines().any(|l| l.starts_with("ok    questions go: ") && l.contains("choices → systemone")),
        "{report}"
    );

    // No server behind it: the choice abstains, naming the command that teaches it.
    let alone = local_env(&dir, None);
    let config = std::fs::read_to_string(&alone.config).unwrap();
    alone.write_config(&format!("{config}choices = \"taught\"\n"));
    let (v, code) = decide(&alone, CHOICE);
    assert_eq!((code, &v["status"]), (4, &Value::from("abstained")), "{v}");
    assert!(v.to_string().contains("calibrate fit --provider local --question"), "{v}");

    // A misspelt value is a config error that names the key.
    alone.write_config(&format!("{config}choices = \"some\"\n"));
    let out = alone.run(&["decide", "--json", "-q", "Which?", "-o", "a", "-o", "b"], "");
    assert!(
        stdout(&out).contains("providers.local.choices must be")
            || stderr(&out).contains("providers.local.choices must be"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

/// What the MCP server says the chain answers: the decide tool's listing, the instructions and
/// `system1_capabilities`.
fn offered(env: &TestEnv) -> (String, String, Value) {
    let mut mcp = env.mcp();
    let init = mcp.initialize("2025-11-25");
    let list = mcp.request("tools/list", serde_json::json!({}));
    let caps = mcp.call("system1_capabilities", serde_json::json!({}));
    mcp.close();
    let decide = list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "system1_decide").unwrap();
    let instructions = init["result"]["instructions"].as_str().unwrap().to_string();
    (decide["description"].as_str().unwrap().to_string(), instructions, caps)
}

#[test]
fn capabilities_and_the_tool_listing_say_what_the_chain_answers() {
    let Some(dir) = crate::local_engine::model_dir() else { return };
    let Some(mock) = Mock::start(&[]) else { return };

    // Local alone: choices, and only the yes/no questions its heads were taught.
    let env = local_env(&dir, None);
    let (description, instructions, caps) = offered(&env);
    assert!(
        description.contains("no engine here answers free yes/no questions")
            && description.contains("System One server")
            && description.contains("calibrate fit --question")
            && !description.contains("yes or no"),
        "{description}"
    );
    assert!(!instructions.contains("yes or no"), "{instructions}");
    let local = &caps["providers"]["local"];
    assert_eq!(
        (&local["yes_no"], &local["choice"], &local["max_options"]),
        (&"taught".into(), &"any".into(), &256.into())
    );
    let destructive = local["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["question"] == "Is this shell command destructive?")
        .unwrap_or_else(|| panic!("{local}"));
    assert_eq!(destructive["context"], "an object with \"command\"", "{destructive}");
    assert_eq!((&caps["routes"]["yes_no"], &caps["routes"]["choice"]), (&Value::Null, &"local".into()), "{caps}");
    assert!(caps["routes"]["taught"].as_array().unwrap().iter().all(|t| t["provider"] == "local"), "{caps}");

    // engine status lists the same, for people.
    let status = stdout(&env.run(&["engine", "status"], ""));
    let chain =
        &status[status.find("chain (in order; what each engine answers):").unwrap_or_else(|| panic!("{status}"))..];
    assert!(
        chain.contains("local (all-MiniLM-L6-v2): choices of up to 256 options; yes/no only for the ")
            && chain.contains("Is this shell command destructive?: context an object with \"command\"")
            && chain.contains("no engine of the chain answers free yes/no questions (they abstain)")
            && chain.contains("choices go to local"),
        "{chain}"
    );

    // With the mock after it: yes/no is promised again, and goes to the mock; the taught
    // questions stay with local.
    let env = local_env(&dir, Some(&mock));
    let (description, instructions, caps) = offered(&env);
    assert!(description.contains("answers yes or no") && instructions.contains("yes or no"), "{description}");
    let server = &caps["providers"]["systemone"];
    assert_eq!(
        (&server["yes_no"], &server["choice"], &server["max_options"]),
        (&"any".into(), &"any".into(), &255.into())
    );
    assert!(server.get("questions").is_none(), "{server}");
    assert_eq!((&caps["routes"]["yes_no"], &caps["routes"]["choice"]), (&"systemone".into(), &"local".into()));
    assert!(
        caps["routes"]["taught"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["question"] == "read_only" && t["provider"] == "local"),
        "{caps}"
    );
    let out = env.run(&["engine", "status", "--json"], "");
    let v: Value = serde_json::from_str(&stdout(&out)).expect("status JSON");
    let last = v.as_array().and_then(|a| a.last()).unwrap();
    assert_eq!(last["routes"], caps["routes"], "{last}");
    assert_eq!(last["chain"][1]["name"], "systemone", "{last}");
    assert_eq!(mock.decisions(), 0, "listing what the chain answers asks no engine");
}

/// A mock with `fault` and the question it corrupts: never decided, the error names `rule`.
#[test]
fn faults_that_corrupt_an_answer_are_never_decided_and_name_the_broken_rule() {
    for (fault, question, rule) in [
        ("choice-second", CHOICE, "choice.argmax"),
        ("choice-sum", CHOICE, "choice.distribution"),
        ("noul-range", YES_NO, "noul.answer"),
        ("choice-key-case", CHOICE, "choice.probability-keys"),
        ("nan", YES_NO, "response.finite"),
        ("xssi-200", YES_NO, "http.json"),
        ("boolean-type", YES_NO, "response.answer-type"),
    ] {
        let Some(mock) = Mock::start(&["--fault", fault]) else { return };
        let (v, code) = decide(&mock.env(), question);
        assert_eq!(code, 1, "{fault}: {v}");
        assert_eq!(v["decision"], Value::Null, "{fault}: {v}");
        assert_eq!(v["error"]["code"], "malformed_response", "{fault}: {v}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains(&format!("breaks {rule}")), "{fault}: {msg}");
        assert_eq!(v["attempts"][0]["outcome"], "malformed", "{fault}");
    }
}

#[test]
fn faults_a_client_can_live_with_still_decide() {
    for fault in ["no-usage", "float-usage", "confidence-margin", "unprefixed-extra", "extra-answer", "nfd-keys"] {
        let Some(mock) = Mock::start(&["--fault", fault]) else { return };
        let env = mock.env();
        for question in [YES_NO, CHOICE] {
            let (v, code) = decide(&env, question);
            assert_eq!((code, &v["status"]), (0, &Value::from("decided")), "{fault}: {v}");
        }
        if fault == "nfd-keys" {
            let (v, _) = decide(&env, CHOICE);
            assert!(v["probabilities"].get("Café").is_some(), "read back under the name asked: {v}");
        }
        if fault == "extra-answer" {
            let (v, _) = decide(&env, YES_NO);
            assert!(v["attempts"][0]["detail"].as_str().unwrap_or("").contains("ignored answers"), "{v}");
        }
    }
}

/// With `first-question-only` the mock answers one question of four: the other three pass on to
/// the next engine of the chain, a second mock here (an instance of the same kind).
#[test]
fn unanswered_questions_pass_on_to_the_next_engine() {
    let Some(partial) = Mock::start(&["--fault", "first-question-only"]) else { return };
    let Some(good) = Mock::start(&[]) else { return };
    let mut env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"systemone\"\nfallback = [\"second\"]\ntimeout_s = 30\n\
         [providers.second]\nkind = \"systemone\"\nendpoint = \"{}\"\n",
        good.url()
    ));
    env.set_env("SYSTEM1_SYSTEMONE_ENDPOINT", &partial.url());
    let out = env.run(
        &["route", "--prompt", "Find every call to parse_legacy_header in the repository and list the files", "--json"],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("route JSON");
    for f in ["read_only", "design", "review", "specified"] {
        assert!(v["routing"]["features"][f]["answer"].is_boolean(), "{f} answered: {v}");
    }
    assert_eq!((partial.decisions(), good.decisions()), (1, 1), "the three left go to the second in one request");

    // config show lists the instance with its kind; a decision it answers names it.
    let shown = stdout(&env.run(&["config", "show"], ""));
    assert!(
        shown.contains("# engines: systemone → second") && shown.contains("providers.second.kind = \"systemone\""),
        "{shown}"
    );
}

/// `engine probe` offers the System One servers within reach: the configured one answering (the
/// mock), an Ollama new enough for decision models, a llama-server build that has the API, and
/// the hosted one to ask about; an older Ollama is named as one to upgrade.
#[test]
fn probe_offers_the_system_one_servers_within_reach() {
    let Some(mock) = Mock::start(&[]) else { return };
    let mut env = TestEnv::new();
    env.write_config(&format!("[providers.systemone]\nendpoint = \"{}\"\n", mock.url()));
    let bin = env.root.join("bin");
    support::write_executable(&bin.join("ollama"), "#!/bin/sh\necho 'ollama version is 0.35.1'\n");
    support::write_executable(&bin.join("llama-server"), "#!/bin/sh\necho 'version: 11402 (5e1a2b3)' >&2\nexit 0\n");
    env.set_env("PATH", &format!("{}:/usr/bin:/bin", bin.display()));
    let out = env.run(&["engine", "probe", "--json"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let p: Value = serde_json::from_str(&stdout(&out)).expect("probe JSON");
    let offers: Vec<(&str, bool)> = p["systemone"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["server"].as_str().unwrap(), o["fits"].as_bool().unwrap()))
        .collect();
    assert_eq!(offers, [("running", true), ("ollama", true), ("llama-server", true), ("hosted", true)], "{p}");
    assert_eq!(p["llama_server"], 11402);
    let text = stdout(&env.run(&["engine", "probe"], ""));
    assert!(
        text.contains(&format!("System One server: a System One server answers at {}", mock.url()))
            && text.contains("is up and offers jev-latest")
            && text.contains("`ollama pull d1-omni:600m`")
            && text.contains(
                "TypeSafe's hosted Jev, only if you agree: every prompt and context it decides on leaves this machine"
            ),
        "{text}"
    );

    // An Ollama too old, and no server answering: only what to upgrade, and the hosted one.
    support::write_executable(&bin.join("ollama"), "#!/bin/sh\necho 'ollama version is 0.12.11'\n");
    std::fs::remove_file(bin.join("llama-server")).unwrap();
    drop(mock);
    let text = stdout(&env.run(&["engine", "probe"], ""));
    assert!(!text.contains("answers at"), "{text}");
    assert!(
        text.contains("System One server: (not yet) Ollama (ollama version is 0.12.11) is older than 0.35"),
        "{text}"
    );

    // A hosted decision engine is offered only once its key is set, saying what leaves the
    // machine, what it costs, and where in the chain it goes; the key is never shown.
    assert!(!text.contains("Hosted engine:"), "no key, no offer: {text}");
    env.set_env("SYSTEM1_GEMINI_API_KEY", "k-secret-gemini");
    let text = stdout(&env.run(&["engine", "probe"], ""));
    let line = text.lines().find(|l| l.starts_with("Hosted engine: ")).unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.starts_with(
            "Hosted engine: Google's Gemini Decisions API (gemini-decision-1) (your key is set), only if you agree"
        ) && line.contains("leaves this machine for Google's servers")
            && line.contains("per 1,000 decisions the size of the routing hook's")
            && line.contains("fallback = [\"gemini\"]"),
        "{line}"
    );
    assert!(!text.contains("k-secret-gemini"));
    assert_eq!(text.matches("Hosted engine:").count(), 1, "only the engine whose key is set: {text}");
}

/// doctor checks a configured System One server: that it answers, that its `/v1/models` lists the
/// configured model (naming what it offers when not), and where each kind of question goes.
#[test]
fn doctor_checks_the_server_its_model_and_where_questions_go() {
    let Some(dir) = crate::local_engine::model_dir() else { return };
    let Some(mock) = Mock::start(&[]) else { return };
    let mut env = local_env(&dir, Some(&mock));
    let report = stdout(&env.run(&["doctor"], ""));
    let line = |start: &str| report.lines().find(|l| l.starts_with(start)).map(String::from);
    let server = line("ok    systemone engine (fallback)").unwrap_or_else(|| panic!("{report}"));
    assert!(
        server.contains(&format!("at {}", mock.url())) && server.contains("is up and offers jev-latest"),
        "{server}"
    );
    let routes = line("ok    questions go: ").unwrap_or_else(|| panic!("{report}"));
    assert!(
        routes.contains("read_only; design; review; specified")
            && routes.contains("→ local; free yes/no → systemone; choices → local")
            && routes.ends_with("options per question: local 256, systemone 255"),
        "{routes}"
    );

    // A model the server does not list: named, with what it offers, and the fix.
    env.set_env("SYSTEM1_SYSTEMONE_MODEL", "kev-4b");
    let report = stdout(&env.run(&["doctor"], ""));
    let at = report.find("systemone engine (fallback)").unwrap_or_else(|| panic!("{report}"));
    let finding = &report[at..];
    assert!(
        finding.contains("does not offer the model \"kev-4b\"; it offers: jev-latest, mock")
            && finding.contains("fix: set [providers.systemone] model to one the server lists"),
        "{report}"
    );

    // A server that answers /v1/models without the configured model, and with no default name.
    let fake = crate::support::fake_http::FakeServer::start(|r| {
        if r.path == "/v1/models" {
            crate::support::fake_http::Reply::json(200, &serde_json::json!({"models": [{"name": "d1-omni:600m"}]}))
        } else {
            crate::support::fake_http::Reply::json(404, &serde_json::json!({"detail": "not found"}))
        }
    });
    env.set_env("SYSTEM1_SYSTEMONE_ENDPOINT", &fake.url());
    let report = stdout(&env.run(&["doctor"], ""));
    assert!(report.contains("does not offer the model \"kev-4b\"; it offers: d1-omni:600m"), "{report}");
    assert!(report.contains(&format!("systemone at {} is up, but", fake.url())), "{report}");
}

/// A server that refuses a question type with a 422 naming the question passes that question on;
/// the next engine of the chain (the mock) answers it.
#[test]
fn a_question_type_a_server_refuses_passes_on_to_the_next_engine() {
    use crate::support::fake_http::{FakeServer, Reply};
    let Some(mock) = Mock::start(&[]) else { return };
    let choices_only = FakeServer::start(|r| {
        let body = r.json();
        let questions = body["questions"].as_object().cloned().unwrap_or_default();
        let detail: Vec<Value> = questions
            .iter()
            .filter(|(_, q)| q["type"] == "noul")
            .map(|(id, _)| serde_json::json!({"loc": ["body", "questions", id], "msg": "Input tag 'noul' found using 'type' does not match any of the expected tags: 'choice'", "type": "union_tag_invalid"}))
            .collect();
        if !detail.is_empty() {
            return Reply::json(422, &serde_json::json!({"detail": detail}));
        }
        let answers: serde_json::Map<String, Value> = questions
            .iter()
            .map(|(id, q)| {
                let options: Vec<String> =
                    q["criteria"].as_object().map(|c| c.keys().cloned().collect()).unwrap_or_default();
                let p = 1.0 / options.len() as f64;
                let probs: serde_json::Map<String, Value> =
                    options.iter().map(|o| (o.clone(), Value::from(p))).collect();
                (id.clone(), serde_json::json!({"type": "choice", "choice": options[0], "probabilities": probs}))
            })
            .collect();
        Reply::json(200, &serde_json::json!({"model": "choices-only", "answers": answers}))
    });
    let mut env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"systemone\"\nfallback = [\"second\"]\ntimeout_s = 30\n\
         [providers.second]\nkind = \"systemone\"\nendpoint = \"{}\"\n",
        mock.url()
    ));
    env.set_env("SYSTEM1_SYSTEMONE_ENDPOINT", &choices_only.url());
    let (v, code) = decide(&env, YES_NO);
    assert_eq!((code, &v["status"], &v["provider"]), (0, &Value::from("decided"), &Value::from("second")), "{v}");
    assert_eq!((&v["attempts"][0]["provider"], &v["attempts"][0]["outcome"]), (&"systemone".into(), &"passed".into()));
    let detail = v["attempts"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("refuses this question (HTTP 422: Input tag 'noul'"), "{detail}");
    // Its choices it answers itself.
    let (v, code) = decide(&env, CHOICE);
    assert_eq!((code, &v["provider"]), (0, &Value::from("systemone")), "{v}");
    assert_eq!(mock.decisions(), 1, "only the yes/no reached the mock");
}

/// With routing on, doctor weighs a decision server's latency measured at install against the
/// prompt hook's engine budget: slower than the whole budget is a warning (the hook passes it by),
/// within it is fine; with routing off there is no hook budget to weigh it against.
#[test]
fn doctor_weighs_a_measured_latency_against_the_hook_budget() {
    let mut env = TestEnv::new();
    let config = |routing: &str| {
        format!(
            "[gateway]\nprovider = \"mock\"\nfallback = [\"systemone\"]\n\
             [providers.systemone]\nlatency_ms = 900\n{routing}"
        )
    };
    env.set_env("SYSTEM1_SYSTEMONE_ENDPOINT", &format!("http://127.0.0.1:{}", support::fake_http::free_port()));
    env.write_config(&config("[routing]\nenabled = true\nbudget_ms = 300\n"));
    let report = stdout(&env.run(&["doctor"], ""));
    assert!(
        report.contains(
            "warn  systemone takes about 900 ms a decision (measured at install), more than [routing] budget_ms \
             (300 ms): the prompt hook passes it by"
        ),
        "{report}"
    );
    assert!(report.contains("fix: raise [routing] budget_ms above 900"), "{report}");
    env.write_config(&config("[routing]\nenabled = true\nbudget_ms = 1500\n"));
    let report = stdout(&env.run(&["doctor"], ""));
    assert!(
        report.contains(
            "ok    systemone takes about 900 ms a decision (measured at install), within [routing] budget_ms (1500 ms)"
        ),
        "{report}"
    );
    env.write_config(&config(""));
    let report = stdout(&env.run(&["doctor"], ""));
    assert!(!report.contains("measured at install"), "routing off: {report}");
}
