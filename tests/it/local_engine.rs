//! The local engine through the built binary, on the real all-MiniLM-L6-v2 (`scripts/test` installs
//! it and names it in `SYSTEM1_TEST_LOCAL_MODEL`): the four routing features from the shipped heads,
//! a skill pick by similarity, `engine status local`, and the config error of a missing model.
//! Without the model these tests fail under CI and are skipped loudly elsewhere.

use crate::support::{self, TestEnv, stderr, stdout, write};
use serde_json::Value;

pub(crate) fn model_dir() -> Option<String> {
    match std::env::var("SYSTEM1_TEST_LOCAL_MODEL") {
        Ok(p) if std::path::Path::new(&p).join("model.safetensors").is_file() => Some(p),
        other => {
            let why = format!("SYSTEM1_TEST_LOCAL_MODEL is {other:?}: run the tests with scripts/test");
            support::missing_test_dep(
                &format!("the local engine's tests cannot run under CI: {why}"),
                &format!("a local engine test: {why}"),
            );
            None
        }
    }
}

fn local_env(dir: &str, extra: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\n[providers.local]\nmodel_dir = {dir:?}\n[routing]\nenabled = true\n{extra}"
    ));
    env
}

fn route(env: &TestEnv, prompt: &str, cwd: &std::path::Path) -> Value {
    let out = env.run(&["route", "--prompt", prompt, "--cwd", cwd.to_str().unwrap(), "--json"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

#[test]
fn routing_features_and_a_skill_pick_from_one_prompt() {
    let Some(dir) = model_dir() else { return };
    let env = local_env(&dir, "[skills]\nenabled = true\n");
    for (name, description) in [
        ("pdf-forms", "Fill in PDF forms, merge and split PDF files"),
        ("release-notes", "Write release notes and a changelog from merged pull requests"),
    ] {
        write(
            &env.claude_dir.join("skills").join(name).join("SKILL.md"),
            &format!("---\nname: {name}\ndescription: {description}\n---\nBody.\n"),
        );
    }
    let v = route(&env, "Find every call to parse_legacy_header in the repository and list the files", &env.home);
    let r = &v["routing"];
    assert_eq!(r["provider"], "local", "{v}");
    assert_eq!(r["model"], "all-MiniLM-L6-v2");
    for f in ["read_only", "design", "review", "specified"] {
        let c = r["features"][f]["confidence"].as_f64().unwrap_or(0.0);
        assert!(c > 0.5 && c <= 1.0, "{f}: {v}");
    }
    assert_eq!(r["features"]["read_only"]["answer"], true, "a search-and-list task is read-only: {v}");
    assert_eq!(r["features"]["design"]["answer"], false, "{v}");

    let v = route(&env, "Write the changelog for version 2.3 from the pull requests merged since 2.2", &env.home);
    assert_eq!(v["skills"]["pick"], "release-notes", "{v}");
    assert_eq!(v["skills"]["provider"], "local");
    // The skills were embedded once, into the install dir's cache.
    assert!(env.install_dir.join("engines/local/cache/all-MiniLM-L6-v2.embeddings").is_file());
}

#[test]
fn engine_status_and_a_missing_model() {
    let Some(dir) = model_dir() else { return };
    let env = local_env(&dir, "");
    let out = env.run(&["engine", "status", "local", "--json"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v[0]["engine"], "local");
    assert_eq!(v[0]["installed"], true);
    assert_eq!(v[0]["healthy"], true, "{v}");
    assert!(v[0]["bytes"].as_u64().unwrap() > 90_000_000);

    let missing = local_env("/nonexistent/minilm", "");
    let out = missing.run(&["decide", "--json", "--question", "Which?", "--option", "a", "--option", "b"], "");
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(text.contains("/nonexistent/minilm/config.json is missing"), "{text}");
    // The hook stays silent on it.
    let out = missing.run(&["hook", "prompt"], r#"{"prompt": "Refactor the parser so errors carry line numbers"}"#);
    assert!(out.status.success());
    assert_eq!(stdout(&out), "");
}
