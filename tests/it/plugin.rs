//! The plugin files: the manifests, hooks.json and the skills pass the real Claude Code CLI's strict
//! validation, the manifests carry the crate's version, and the hook launcher finds the installed
//! binary (or, without one, stays silent except for SessionStart's pointer to /system1:setup).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support;
use crate::support::{TestEnv, claude_cli, stdout};
use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Every Claude Code CLI that `scripts/test` installs; required under CI, skipped loudly otherwise.
fn claude_clis(test: &str) -> Vec<(&'static str, PathBuf)> {
    claude_cli::VERSIONS.iter().filter_map(|v| claude_cli::find(test, v).map(|p| (*v, p))).collect()
}

fn validate(claude: &Path, target: &Path) -> Output {
    let env = TestEnv::new();
    let mut cmd = Command::new(claude);
    support::sandbox(&mut cmd, &env.home);
    cmd.args(["plugin", "validate", "--strict"])
        .arg(target)
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .output()
        .expect("run claude plugin validate")
}

fn read_json(rel: &str) -> Value {
    let text = std::fs::read_to_string(Path::new(ROOT).join(rel)).expect("read manifest");
    serde_json::from_str(&text).expect("manifest is JSON")
}

#[test]
fn marketplace_passes_strict_validation() {
    for (version, claude) in claude_clis("marketplace validation") {
        let out = validate(&claude, Path::new(ROOT));
        let text = format!("{}{}", stdout(&out), support::stderr(&out));
        assert!(out.status.success(), "marketplace validation failed on {version}:\n{text}");
        assert!(text.contains("marketplace.json"), "validated the marketplace on {version}:\n{text}");
    }
}

#[test]
fn plugin_hooks_and_skills_pass_strict_validation() {
    for (version, claude) in claude_clis("plugin validation") {
        let out = validate(&claude, &Path::new(ROOT).join(".claude-plugin/plugin.json"));
        let text = format!("{}{}", stdout(&out), support::stderr(&out));
        assert!(out.status.success(), "plugin validation failed on {version}:\n{text}");
        assert!(text.contains("plugin.json"), "validated the plugin manifest on {version}:\n{text}");
    }
}

/// `scripts/test` installs exactly the versions the tests name, each into its own folder.
#[test]
fn scripts_test_installs_every_claude_code_version_the_tests_run() {
    let script = std::fs::read_to_string(Path::new(ROOT).join("scripts/test")).expect("scripts/test");
    let line = script
        .lines()
        .find_map(|l| l.trim().strip_prefix("for claude_version in ").and_then(|l| l.strip_suffix("; do")))
        .expect("scripts/test loops over the Claude Code versions");
    assert_eq!(line.split_whitespace().collect::<Vec<_>>(), claude_cli::VERSIONS);
    assert!(script.contains(r#"prefix="$deps/claude-$claude_version""#), "one folder per version");
    let platform = format!("@anthropic-ai/claude-code-linux-x64@{}", claude_cli::PLATFORM_NEWEST);
    assert!(script.contains(&platform), "scripts/test installs {platform}");
}

#[test]
fn manifests_name_the_plugin_and_carry_the_crate_version() {
    let plugin = read_json(".claude-plugin/plugin.json");
    assert_eq!(plugin["name"], "system1");
    assert_eq!(plugin["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(plugin["license"], "Apache-2.0");
    let market = read_json(".claude-plugin/marketplace.json");
    assert_eq!(market["name"], "system1-gateway");
    let plugins = market["plugins"].as_array().expect("plugins list");
    assert_eq!(plugins.len(), 1);
    assert_eq!(plugins[0]["name"], "system1");
    assert_eq!(plugins[0]["source"], "./");
    assert_eq!(plugins[0]["version"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn hooks_json_wires_four_events_through_the_launcher() {
    let hooks = read_json("hooks/hooks.json");
    let h = &hooks["hooks"];
    for (event, arg) in [
        ("SessionStart", "session-start"),
        ("UserPromptSubmit", "prompt"),
        ("PreToolUse", "agent"),
        ("PostToolUse", "spawned"),
    ] {
        let cmd = h[event][0]["hooks"][0]["command"].as_str().unwrap_or_else(|| panic!("{event} has a command"));
        assert!(cmd.contains("${CLAUDE_PLUGIN_ROOT}/hooks/system1-hook"), "{event}: {cmd}");
        assert!(cmd.ends_with(arg), "{event} runs `{arg}`: {cmd}");
    }
    assert_eq!(h["PreToolUse"][0]["matcher"], "Agent|Task");
    assert_eq!(h["PostToolUse"][0]["matcher"], "Agent|Task");
    // The prompt hook's engine budget is 1.5 s; its timeout must leave room for start-up and logging.
    let timeout = h["UserPromptSubmit"][0]["hooks"][0]["timeout"].as_f64().expect("a timeout");
    assert!(timeout >= 3.0, "UserPromptSubmit timeout {timeout} s leaves room for the 1.5 s budget");
}

#[cfg(unix)]
/// Runs an event's hooks.json command as Claude Code does (`sh -c`, CLAUDE_PLUGIN_ROOT set): it
/// execs the installed binary, or falls back to the launcher, which also looks on `path`.
fn launch(env: &TestEnv, event: &str, path: &str) -> Output {
    let base = env.command(&[]);
    let key = match event {
        "session-start" => "SessionStart",
        "prompt" => "UserPromptSubmit",
        "spawned" => "PostToolUse",
        _ => "PreToolUse",
    };
    let hooks = read_json("hooks/hooks.json");
    let command = hooks["hooks"][key][0]["hooks"][0]["command"].as_str().expect("a command").to_string();
    let mut c = Command::new("sh");
    c.arg("-c").arg(command);
    for (k, v) in base.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c.env("CLAUDE_PLUGIN_ROOT", ROOT);
    c.env("PATH", path).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn the launcher");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        let _ = stdin.write_all(br#"{"hook_event_name":"SessionStart","source":"startup","session_id":"s"}"#);
    }
    child.wait_with_output().expect("wait for the launcher")
}

#[cfg(unix)]
#[test]
fn launcher_without_a_binary_points_to_setup_only_at_session_start() {
    let env = TestEnv::new();
    let out = launch(&env, "session-start", "/usr/bin:/bin");
    assert!(out.status.success());
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("SessionStart prints JSON");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(v["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or("").contains("/system1:setup"));
    assert!(v["systemMessage"].as_str().unwrap_or("").contains("/system1:setup"));
    for event in ["prompt", "agent", "spawned"] {
        let out = launch(&env, event, "/usr/bin:/bin");
        assert!(out.status.success(), "{event} exits 0");
        assert_eq!(stdout(&out), "", "{event} is silent without a binary");
        assert_eq!(support::stderr(&out), "", "{event} writes nothing to stderr");
    }
}

#[cfg(unix)]
/// Installs a copy of a small script as `<dir>/bin/system1` that records how it was called.
fn fake_binary(dir: &Path, tag: &str) {
    let bin = dir.join("bin/system1");
    support::write_executable(&bin, &format!("#!/bin/sh\necho \"{tag} $*\"\n"));
}

#[cfg(unix)]
#[test]
fn launcher_execs_the_installed_binary_in_lookup_order() {
    let env = TestEnv::new();
    let on_path = env.root.join("path");
    fake_binary(&on_path, "path");
    let path = format!("{}:/usr/bin:/bin", on_path.join("bin").display());
    assert_eq!(stdout(&launch(&env, "prompt", &path)), "path hook prompt\n", "PATH is the last resort");

    // TestEnv sets SYSTEM1_INSTALL_DIR to ~/.system1-gateway; point it elsewhere to see both.
    let mut env = env;
    let custom = env.root.join("custom");
    env.set_env("SYSTEM1_INSTALL_DIR", &custom.display().to_string());
    fake_binary(&env.home.join(".system1-gateway"), "home");
    assert_eq!(stdout(&launch(&env, "agent", &path)), "home hook agent\n", "the home install beats PATH");
    fake_binary(&custom, "custom");
    assert_eq!(
        stdout(&launch(&env, "session-start", &path)),
        "custom hook session-start\n",
        "SYSTEM1_INSTALL_DIR comes first"
    );
}

/// A plugin newer than its binary runs `hook spawned` on a binary that may not know it (until
/// /system1:setup, which the session-start hook asks for): after a spawn, nothing may reach Claude.
#[cfg(unix)]
#[test]
fn the_spawned_hook_is_silent_on_a_binary_that_does_not_know_it() {
    let env = TestEnv::new();
    let old = "#!/bin/sh\ncat >/dev/null\necho \"error: unrecognized subcommand 'spawned'\" >&2\nexit 2\n";
    support::write_executable(&env.install_dir.join("bin/system1"), old);
    let out = launch(&env, "spawned", "/usr/bin:/bin");
    assert!(out.status.success(), "exit {:?}", out.status);
    assert_eq!((stdout(&out), support::stderr(&out)), (String::new(), String::new()));

    // This binary reads an event it does not know and exits 0 without a word.
    let out = env.run(&["hook", "subagent-stop"], "{}");
    assert!(out.status.success(), "exit {:?}", out.status);
    assert_eq!((stdout(&out), support::stderr(&out)), (String::new(), String::new()));
}

#[cfg(unix)]
#[test]
fn launcher_runs_the_real_binary() {
    let env = TestEnv::with_mock("");
    let bin = env.install_dir.join("bin/system1");
    support::copy_executable(Path::new(support::BIN), &bin);
    let out = launch(&env, "session-start", "/usr/bin:/bin");
    assert!(out.status.success(), "{}", support::stderr(&out));
    assert_eq!(stdout(&out), "", "all is well: the session-start hook is silent");
}

/// The skill listing entries Claude Code adds to every session for this plugin: one
/// `- system1:<name>: <description>` line per skill the model may invoke (user-only skills, with
/// `disable-model-invocation: true`, are left out of the listing).
fn skill_listing() -> Vec<String> {
    let mut lines = Vec::new();
    let dir = Path::new(ROOT).join("skills");
    let mut names: Vec<_> = std::fs::read_dir(&dir).expect("skills dir").filter_map(|e| e.ok()).collect();
    names.sort_by_key(|e| e.file_name());
    for entry in names {
        let Ok(text) = std::fs::read_to_string(entry.path().join("SKILL.md")) else { continue };
        let front = text.split("---").nth(1).expect("frontmatter");
        if front.lines().any(|l| l.trim() == "disable-model-invocation: true") {
            continue;
        }
        let description = front
            .lines()
            .find_map(|l| l.strip_prefix("description:"))
            .map(|d| d.trim().trim_matches('"').to_string())
            .expect("a description");
        lines.push(format!("- system1:{}: {description}", entry.file_name().to_string_lossy()));
    }
    lines
}

/// The server's instructions as Claude Code puts them in every session's context (2.1.197 and
/// 2.1.332 alike): a section heading and preamble, then one `## <server>` block per server.
fn instructions_section() -> String {
    let env = TestEnv::with_mock("");
    let mut mcp = env.mcp();
    let init = mcp.initialize("2025-11-25");
    let discover = mcp.request(
        "server/discover",
        serde_json::json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}}),
    );
    let text = init["result"]["instructions"].as_str().expect("instructions in initialize").to_string();
    assert_eq!(discover["result"]["instructions"], text.as_str(), "server/discover sends the same instructions");
    format!(
        "# MCP Server Instructions\n\nThe following MCP servers have provided instructions for how to use their tools \
         and resources:\n\n## system1\n{text}\n\n"
    )
}

/// The three tools' names as Claude Code 2.1.332 lists them deferred, one a line (user-scope server).
fn deferred_names() -> String {
    ["system1_capabilities", "system1_decide", "system1_health"].map(|t| format!("mcp__system1__{t}\n")).concat()
}

#[test]
fn plugin_adds_at_most_about_250_tokens_per_session() {
    let listing = skill_listing();
    assert!(listing.iter().any(|l| l.starts_with("- system1:doctor: ")), "doctor is model-invocable: {listing:?}");
    for user_only in ["setup", "toggle", "choose-model", "add-provider"] {
        let prefix = format!("- system1:{user_only}:");
        assert!(!listing.iter().any(|l| l.starts_with(&prefix)), "{user_only} is user-only: {listing:?}");
    }
    // SessionStart adds nothing when all is well (plugin_commands.rs). The skill listing, the
    // server's instructions and, where tools are deferred, their names are what every session carries;
    // e2e_claude measures the same in the requests the real CLI sends.
    let skills: usize = listing.iter().map(|l| l.chars().count() + 1).sum();
    let instructions = instructions_section().chars().count();
    let names = deferred_names().len();
    let chars = skills + instructions + names;
    let tokens = chars.div_ceil(4);
    eprintln!(
        "OVERHEAD plugin: {} skill listing entries, {skills} chars; server instructions {instructions} chars; \
         deferred tool names {names} chars; {chars} chars, about {tokens} tokens (chars / 4)",
        listing.len()
    );
    assert!(tokens <= 250, "the plugin adds about {tokens} tokens per session: {listing:#?}");
}
