//! The real Claude Code CLI for end-to-end tests: where `scripts/test` installed it, and the
//! environment that runs it offline in a test's scratch HOME against a fake API.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::TestEnv;

/// The CLI `scripts/test` installs (`SYSTEM1_TEST_CLAUDE`); required when `CI` is set, otherwise
/// a missing CLI skips `test` loudly.
pub fn find(test: &str) -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("SYSTEM1_TEST_CLAUDE").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join(".test-deps/claude/node_modules/.bin/claude")),
    ];
    if let Some(found) = candidates.into_iter().flatten().find(|p| p.exists()) {
        return Some(found);
    }
    assert!(std::env::var_os("CI").is_none(), "the Claude Code CLI is missing (SYSTEM1_TEST_CLAUDE): run scripts/test");
    eprintln!("SKIPPED {test}: the Claude Code CLI is not installed (SYSTEM1_TEST_CLAUDE); run scripts/test");
    None
}

/// Scrubs whatever the caller's own session set for Claude Code, Anthropic, system1 or proxies,
/// then points everything at the scratch paths, the fake API at `base_url`, and offline switches.
pub fn offline(cmd: &mut Command, env: &TestEnv, base_url: &str) {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().to_string();
        if k.starts_with("ANTHROPIC_")
            || k.starts_with("CLAUDE")
            || k.starts_with("SYSTEM1_")
            || k.to_ascii_lowercase().ends_with("_proxy")
        {
            cmd.env_remove(&k);
        }
    }
    cmd.env("HOME", &env.home)
        .env("USERPROFILE", &env.home)
        .env("XDG_CONFIG_HOME", env.home.join(".config"))
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
