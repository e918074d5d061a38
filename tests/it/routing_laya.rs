//! The prompt hook against a loopback fake of laya-serve 0.4.15 (its wire format): the four
//! features go out as one request, an engine that refuses the connection is silent at once, and
//! one that never answers is cut off at the hook's engine budget, which the picker then skips.

use std::path::Path;
use std::time::Instant;

use crate::support::fake_http::{FakeServer, Reply, Request, free_port};
use crate::support::{BIN, CUT_OFF, TestEnv, stderr, stdout, write};
use serde_json::{Value, json};

const TASK: &str = "Read src/main.rs and explain how the command line arguments are parsed and dispatched";

/// laya-serve's answer: `no` for design and review, `yes` for everything else, at 0.8.
fn laya_answer(body: &Value) -> Value {
    let mut answers = serde_json::Map::new();
    for (id, q) in body["questions"].as_object().expect("questions") {
        // The adapter sends the criteria as an object keyed by label (`{"yes": null, "no": null}`).
        let labels: Vec<&str> =
            q["criteria"].as_object().expect("criteria object").keys().map(String::as_str).collect();
        let pick = if id == "design" || id == "review" { "no" } else { labels[0] };
        let probs: serde_json::Map<String, Value> =
            labels.iter().map(|l| (l.to_string(), json!(if *l == pick { 0.8 } else { 0.2 }))).collect();
        answers.insert(
            id.clone(),
            json!({"type": "choice", "choice": pick, "probabilities": probs, "confidence": 0.2781,
                   "answer_confidence": 0.8, "action": {"act_probability": 0.5}, "x_jev_confidence": 0.6}),
        );
    }
    json!({"model": "laya-rl-agent", "answers": answers,
           "usage": {"input_tokens": 80, "output_tokens": 0, "state_tokens": 20, "state_tokens_dropped": 0,
                     "truncated": false, "truncated_questions": []},
           "routing": {"model": "typed-decisions", "repo": "convaiinnovations/laya/typed-decisions",
                       "reason": "explicit model='typed-decisions'", "detection": null, "workflow": null}})
}

fn env_for(url: &str, routing: &str) -> TestEnv {
    let mut env = TestEnv::new();
    env.write_config(&format!("[gateway]\nprovider = \"laya\"\n[routing]\nenabled = true\nhint = true\n{routing}\n"));
    env.set_env("SYSTEM1_LAYA_ENDPOINT", url);
    env
}

fn prompt_hook(env: &TestEnv) -> String {
    let payload = json!({"session_id": "s", "cwd": "/", "hook_event_name": "UserPromptSubmit", "prompt": TASK});
    let out = env.run(&["hook", "prompt"], &payload.to_string());
    assert!(out.status.success());
    assert_eq!(stderr(&out), "");
    stdout(&out)
}

#[test]
fn four_features_in_one_engine_request() {
    let server = FakeServer::start(|r: &Request| match r.path.as_str() {
        "/v1/systemone" => Reply::json(200, &laya_answer(&r.json())),
        _ => Reply::json(404, &json!({"detail": "Not Found"})),
    });
    let env = env_for(&server.url(), "");
    let out = prompt_hook(&env);
    let v: Value = serde_json::from_str(&out).expect("hook JSON");
    let ctx = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(ctx.starts_with("System-1 routing hint:") && ctx.contains("model \"haiku\""), "{ctx}");
    let sent = server.requests_to("/v1/systemone");
    assert_eq!(sent.len(), 1, "one engine request for all four features");
    let body = sent[0].json();
    assert_eq!(body["state"], TASK);
    let ids: Vec<&str> = body["questions"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(ids, ["read_only", "design", "review", "specified"]);
    assert_eq!(body["questions"]["design"]["criteria"], json!({"yes": null, "no": null}));
}

/// A static build cannot lean on glibc's name service: the hook resolves loopback names itself, so
/// an engine at 127.0.0.1 and the same engine named `localhost` both answer. (scripts/test runs this
/// on a static-pie build where the platform makes one.)
#[test]
fn the_hook_reaches_an_engine_on_127_0_0_1_and_named_localhost() {
    let server = FakeServer::start(|r: &Request| Reply::json(200, &laya_answer(&r.json())));
    for url in [server.url(), server.url().replace("127.0.0.1", "localhost")] {
        let out = prompt_hook(&env_for(&url, ""));
        assert!(out.contains("System-1 routing hint:"), "{url}: {out:?}");
    }
    assert_eq!(server.requests_to("/v1/systemone").len(), 2);
}

/// Where a mount namespace can be made (as root, or with unprivileged user namespaces), `localhost`
/// is hidden from the system resolver: nsswitch.conf says `hosts: dns`, /etc/hosts is empty and the
/// name server is dead. The hook must still reach an engine named localhost, as a static build on
/// a machine whose name service it cannot load has to.
#[test]
fn the_hook_reaches_localhost_without_the_system_resolver() {
    use std::process::{Command, Stdio};
    let scratch = TestEnv::new();
    let dir = &scratch.root;
    let (nss, hosts, resolv) = (dir.join("nsswitch.conf"), dir.join("hosts"), dir.join("resolv.conf"));
    write(&nss, "hosts: dns\n");
    write(&hosts, "");
    write(&resolv, "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n");
    let hide = format!(
        "mount --bind {} /etc/nsswitch.conf && mount --bind {} /etc/hosts && mount --bind {} /etc/resolv.conf",
        nss.display(),
        hosts.display(),
        resolv.display()
    );
    let works = |flags: &[&str]| {
        Command::new("unshare")
            .args(flags)
            .args(["sh", "-c", &hide])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let Some(flags) = [&["-m"][..], &["-r", "-m"][..]].into_iter().find(|f| works(f)) else {
        eprintln!("skipped: no mount namespace here (unshare -m needs root or user namespaces)");
        return;
    };
    let server = FakeServer::start(|r: &Request| Reply::json(200, &laya_answer(&r.json())));
    let env = env_for(&server.url().replace("127.0.0.1", "localhost"), "");
    let hook = env.command(&["hook", "prompt"]);
    let mut cmd = Command::new("unshare");
    cmd.args(flags).args(["sh", "-c", &format!("{hide} && exec \"$0\" hook prompt"), BIN]);
    for (k, v) in hook.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let payload = json!({"session_id": "s", "cwd": "/", "hook_event_name": "UserPromptSubmit", "prompt": TASK});
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), payload.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(stdout(&out).contains("System-1 routing hint:"), "{}{}", stdout(&out), stderr(&out));
}

#[test]
fn engine_down_is_silent() {
    // A port nobody listens on: the connection is refused.
    let port = free_port();
    let env = env_for(&format!("http://127.0.0.1:{port}"), "");
    assert_eq!(prompt_hook(&env), "");
}

#[test]
fn an_engine_that_never_answers_costs_the_budget_and_the_picker_is_skipped() {
    let server = FakeServer::start(|_r: &Request| Reply::hang());
    let mut env = env_for(&server.url(), "budget_ms = 400\n[skills]\nenabled = true\nhint = true");
    env.set_env("SYSTEM1_TIMEOUT_S", "60"); // the per-attempt timeout is far away: only the budget can stop it
    write(&env.claude_dir.join("skills/pdf/SKILL.md"), "---\nname: pdf\ndescription: PDF forms\n---\n");
    let started = Instant::now();
    assert_eq!(prompt_hook(&env), "");
    assert!(started.elapsed() < CUT_OFF, "cut off by the budget, not the 60 s timeout");
    assert_eq!(server.requests_to("/v1/systemone").len(), 1, "the picker made no second request");

    let out = env.run(&["route", "--prompt", TASK, "--cwd", Path::new("/").to_str().unwrap(), "--json"], "");
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(v["routing"]["engine_error"].as_str().unwrap().contains("laya"), "{v}");
    assert_eq!(v["skills"]["not_picked_because"], "skipped: routing used up the engine budget");
}
