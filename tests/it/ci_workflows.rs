//! The GitHub workflows, checked here because GitHub Actions cannot run here: both files validate
//! against the workflow schema bundled with check-jsonschema (installed by `scripts/test`), CI runs
//! `.ci/run` on every push and pull request on the stable toolchain and on the MSRV, and a release
//! builds nothing unless CI passes on the tagged commit.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const WORKFLOWS: [&str; 2] = [".github/workflows/ci.yml", ".github/workflows/release.yml"];

/// check-jsonschema from `scripts/test`; required when `CI` is set, otherwise a missing one skips
/// the test loudly.
fn check_jsonschema(test: &str) -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("SYSTEM1_TEST_CHECK_JSONSCHEMA").map(PathBuf::from),
        Some(Path::new(ROOT).join(".test-deps/check-jsonschema-0.39.0/bin/check-jsonschema")),
    ];
    if let Some(found) = candidates.into_iter().flatten().find(|p| p.exists()) {
        return Some(found);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "check-jsonschema is missing (SYSTEM1_TEST_CHECK_JSONSCHEMA): run scripts/test"
    );
    eprintln!("SKIPPED {test}: check-jsonschema is not installed (SYSTEM1_TEST_CHECK_JSONSCHEMA); run scripts/test");
    None
}

/// A workflow file as JSON, read by the YAML loader check-jsonschema itself uses (ruamel.yaml, in
/// the same venv), so the assertions below see what the validator saw.
fn load(tool: &Path, file: &str) -> Value {
    let python = tool.with_file_name("python");
    let out = Command::new(&python)
        .args([
            "-c",
            "import json, sys; from ruamel.yaml import YAML; print(json.dumps(YAML(typ='safe').load(open(sys.argv[1]))))",
        ])
        .arg(Path::new(ROOT).join(file))
        .output()
        .expect("run the venv's python");
    assert!(out.status.success(), "{file}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON from the YAML loader")
}

fn runs(job: &Value) -> Vec<String> {
    job["steps"].as_array().into_iter().flatten().filter_map(|s| s["run"].as_str().map(String::from)).collect()
}

#[test]
fn workflows_validate_against_the_github_workflow_schema() {
    let Some(tool) = check_jsonschema("workflows_validate_against_the_github_workflow_schema") else { return };
    for file in WORKFLOWS {
        let out = Command::new(&tool)
            .args(["--builtin-schema", "vendor.github-workflows"])
            .arg(Path::new(ROOT).join(file))
            .output()
            .expect("run check-jsonschema");
        assert!(
            out.status.success(),
            "{file} is not a valid workflow:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The validator is not a rubber stamp: a misspelt key fails it.
    let bad = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bad-workflow.yml");
    let ci = std::fs::read_to_string(Path::new(ROOT).join(WORKFLOWS[0])).expect("ci.yml");
    std::fs::write(&bad, ci.replace("runs-on:", "runs_on:")).expect("write the bad copy");
    let out =
        Command::new(&tool).args(["--builtin-schema", "vendor.github-workflows"]).arg(&bad).output().expect("run");
    assert!(!out.status.success(), "a workflow with `runs_on` passed the schema");
}

#[test]
fn ci_runs_ci_run_on_every_push_and_pull_request_on_stable_and_the_msrv() {
    let Some(tool) = check_jsonschema("ci_runs_ci_run_on_every_push_and_pull_request_on_stable_and_the_msrv") else {
        return;
    };
    let ci = load(&tool, WORKFLOWS[0]);
    // The YAML 1.1 loader reads the key `on` as true.
    let on = ci.get("on").or_else(|| ci.get("true")).expect("triggers");
    for trigger in ["push", "pull_request", "workflow_call"] {
        assert!(on.get(trigger).is_some(), "ci.yml is not triggered by {trigger}: {on}");
    }
    let test = &ci["jobs"]["test"];
    assert!(runs(test).iter().any(|r| r.trim() == ".ci/run"), "the test job runs .ci/run: {test}");
    let uses: Vec<&str> = test["steps"].as_array().expect("steps").iter().filter_map(|s| s["uses"].as_str()).collect();
    assert!(uses.iter().any(|u| u.starts_with("actions/setup-node@")), "Node for the Claude Code CLI");
    assert!(uses.iter().any(|u| u.starts_with("actions/setup-python@")), "Python for the SDK client and laya-serve");

    let msrv = runs(&ci["jobs"]["msrv"]).join("\n");
    assert!(msrv.contains("rust-version") && msrv.contains("RUSTUP_TOOLCHAIN"), "the MSRV job reads Cargo.toml");
    assert!(msrv.contains("scripts/test"), "the MSRV job runs the tests");
    let manifest = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).expect("Cargo.toml");
    assert!(manifest.lines().any(|l| l.starts_with("rust-version = \"")), "Cargo.toml names its MSRV");
}

#[test]
fn a_release_builds_only_after_ci_passes() {
    let Some(tool) = check_jsonschema("a_release_builds_only_after_ci_passes") else { return };
    let release = load(&tool, WORKFLOWS[1]);
    let jobs = release["jobs"].as_object().expect("jobs");
    assert_eq!(jobs["ci"]["uses"], "./.github/workflows/ci.yml", "release calls the CI workflow");
    assert_eq!(jobs["build"]["needs"], "ci", "the builds wait for CI");
    assert_eq!(jobs["release"]["needs"], "build", "the upload waits for the builds");
}
