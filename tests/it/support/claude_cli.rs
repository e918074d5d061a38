//! The real Claude Code CLI for end-to-end tests: the versions they run against, where
//! `scripts/test` installed each, and the environment that runs it offline in a test's scratch HOME
//! against a fake API.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::{TestEnv, drain};

/// The pinned version the tests were written against, and the newest on npm when last checked
/// (pinned too). `scripts/test` installs the same list, each into `.test-deps/claude-<version>/`.
pub const VERSIONS: [&str; 2] = [PINNED, NEWEST];
pub const PINNED: &str = "2.1.197";
pub const NEWEST: &str = "2.1.332";
/// The newest build, published only as the Linux x64 platform package
/// (`@anthropic-ai/claude-code-linux-x64`; the wrapper package still tags 2.1.332), which
/// `scripts/test` installs on that platform alone.
pub const PLATFORM_NEWEST: &str = "2.1.337";

/// Whether Claude Code `version` loads a plugin's function-hook modules (from 2.1.287 on).
pub fn has_modules(version: &str) -> bool {
    let parts: Vec<u32> = version.split('.').filter_map(|p| p.parse().ok()).collect();
    parts >= vec![2, 1, 287]
}

/// The environment variable `scripts/test` sets to a version's CLI: `SYSTEM1_TEST_CLAUDE_2_1_332`.
pub fn env_var(version: &str) -> String {
    format!("SYSTEM1_TEST_CLAUDE_{}", version.replace('.', "_"))
}

/// The CLI of `version` that `scripts/test` installs; required when `CI` is set, otherwise a
/// missing CLI skips `test` loudly.
pub fn find(test: &str, version: &str) -> Option<PathBuf> {
    let var = env_var(version);
    let candidates = [
        std::env::var_os(&var).map(PathBuf::from),
        Some(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(".test-deps/claude-{version}/node_modules/.bin/claude")),
        ),
        Some(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(format!(".test-deps/claude-{version}/node_modules/@anthropic-ai/claude-code-linux-x64/claude")),
        ),
    ];
    if let Some(found) = candidates.into_iter().flatten().find(|p| p.exists()) {
        return Some(found);
    }
    // The platform package exists for Linux x64 alone.
    let platform_only = version == PLATFORM_NEWEST && !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64"));
    assert!(
        std::env::var_os("CI").is_none() || platform_only,
        "Claude Code {version} is missing ({var}): run scripts/test"
    );
    eprintln!("SKIPPED {test}: Claude Code {version} is not installed ({var}); run scripts/test");
    None
}

/// Scrubs whatever the caller's own session set for Claude Code, Anthropic, system1 or proxies,
/// then points everything at the scratch paths, the fake API at `base_url`, and offline switches.
pub fn offline(cmd: &mut Command, env: &TestEnv, base_url: &str) {
    super::sandbox(cmd, &env.home);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().to_string();
        if k.starts_with("ANTHROPIC_") || k.to_ascii_lowercase().ends_with("_proxy") {
            cmd.env_remove(&k);
        }
    }
    // 2.1.332 keeps a background agent's output under $TMPDIR/claude-<uid>/: in the scratch dir too.
    let tmp = env.root.join("tmp");
    let _ = std::fs::create_dir_all(&tmp);
    cmd.env("TMPDIR", &tmp)
        .env("SYSTEM1_INSTALL_DIR", &env.install_dir)
        .env("SYSTEM1_CONFIG", &env.config)
        .env("CLAUDE_CONFIG_DIR", &env.claude_dir)
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("ANTHROPIC_API_KEY", "test")
        .env("ANTHROPIC_BASE_URL", base_url)
        .stdin(Stdio::null());
}

/// Runs a `claude` command to completion, giving up (and failing the test) after `limit`. Its
/// output is read while it runs: Node writes to a pipe asynchronously and drops what is still
/// pending when the process exits, so a full pipe nobody reads cuts a long stream-json short.
pub fn run_within(mut cmd: Command, limit: std::time::Duration) -> std::process::Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let (o, e) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
            panic!(
                "timed out after {limit:?}: {cmd:?}\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&o),
                String::from_utf8_lossy(&e)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    std::process::Output { status, stdout: out.join().unwrap_or_default(), stderr: err.join().unwrap_or_default() }
}

/// The `hook_response` events of one hook event (`PreToolUse`, ...) in a `--include-hook-events`
/// stream, in the order the hooks ran.
pub fn hook_responses<'a>(events: &'a [serde_json::Value], hook_event: &str) -> Vec<&'a serde_json::Value> {
    events.iter().filter(|e| e["subtype"] == "hook_response" && e["hook_event"] == hook_event).collect()
}

/// This checkout's plugin files as a fresh clone has them (tracked files and new ones .gitignore
/// does not name, as they are in the working tree), copied into `to` for `plugin marketplace add`.
/// Claude Code copies a folder marketplace whole into its plugin cache, so adding the checkout
/// itself copies its target/ and .test-deps/ into every test's scratch home: gigabytes each in a
/// clean clone, which filled the disk of a CI run.
pub fn plugin_checkout(to: &Path) {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("git")
        .args(["ls-files", "-z", "--cached", "--others", "--exclude-standard"])
        .current_dir(root)
        .output()
        .expect("git ls-files");
    assert!(out.status.success(), "git ls-files: {}", String::from_utf8_lossy(&out.stderr));
    for name in out.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name).to_string();
        let from = Path::new(root).join(&name);
        if !from.is_file() {
            continue;
        }
        let dest = to.join(&name);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&from, &dest).unwrap();
    }
}
