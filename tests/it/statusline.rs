//! `system1 statusline`, as Claude Code runs it: the JSON 2.1.332 sends on stdin (its fields as its
//! binary builds them: `session_id`, `transcript_path`, `model.display_name`, `cost`,
//! `context_window.used_percentage`, `rate_limits.five_hour`/`seven_day`), one line on stdout.
//! Figures against values worked out by hand; the cache read on where a file grew and kept where
//! a file's size and mtime did not move; new files found; System-1's state; bad input silent; and
//! `--install`/`--remove` in Claude Code's settings.json.
//!
//! The history, all of it today but one file (in dollars, at list prices per million tokens:
//! opus 4.8 $5 in, $25 out; haiku 4.5 $1, $5; sonnet 4.5 $3, $15):
//! - session s1 (/home/u/w1), the one the status line is for: m1 opus 100k in, 10k out = $0.75,
//!   after a haiku hint, spawning tu1 (a1: haiku 1M in, 100k out = $1.50); then, unhinted, m2 $0.75
//!   spawning tu2 (a2: sonnet 1M in, 100k out = $4.50). Session: $7.50.
//! - session s2 (/home/u/w2): m3 opus 200k in = $1.00.
//! - session s0 (/home/u/w2), yesterday: opus 1M in = $5.00, which today leaves out.
//!
//! Today: $8.50. Saved: the usual mix is tu2's sonnet, where a1's tokens cost $4.50: $3.00.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::report::{File, routing_hint, spawn, subagent, text_block, usage};
use crate::support::{TestEnv, stderr, stdout};

const OPUS: &str = "claude-opus-4-8";
const HAIKU: &str = "claude-haiku-4-5-20251001";
const SONNET: &str = "claude-sonnet-4-5-20250929";

fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

fn yesterday() -> String {
    (chrono::Utc::now() - chrono::Duration::days(1)).format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

struct History {
    env: TestEnv,
    s1: PathBuf,
    s2: PathBuf,
}

fn history() -> History {
    let env = TestEnv::with_mock("[routing]\nenabled = true\nhint = true\n");
    let projects = env.claude_dir.join("projects");
    let (w1, w2) = (projects.join("-home-u-w1"), projects.join("-home-u-w2"));
    let t = now();
    let mut s1 = File::new("s1", &t).in_dir("/home/u/w1");
    s1.prompt("p1");
    s1.hint("h1", "p1", &routing_hint("haiku"));
    s1.reply("a1", "m1", "r1", OPUS, usage(100_000, 10_000, 0, 0, 0), spawn("tu1", Some("haiku")), false);
    s1.agent_result("tu1", "a1", HAIKU);
    s1.prompt("p2");
    s1.reply("a2", "m2", "r2", OPUS, usage(100_000, 10_000, 0, 0, 0), spawn("tu2", Some("sonnet")), false);
    s1.agent_result("tu2", "a2", SONNET);
    s1.write(&w1.join("s1.jsonl"), true);
    let mut a1 = File::new("s1", &t).in_dir("/home/u/w1");
    a1.reply("x1", "x1", "rx1", HAIKU, usage(1_000_000, 100_000, 0, 0, 0), text_block(), true);
    subagent(&w1, "s1", "a1", "tu1", &a1, true);
    let mut a2 = File::new("s1", &t).in_dir("/home/u/w1");
    a2.reply("x2", "x2", "rx2", SONNET, usage(1_000_000, 100_000, 0, 0, 0), text_block(), true);
    subagent(&w1, "s1", "a2", "tu2", &a2, true);
    let mut s2 = File::new("s2", &t).in_dir("/home/u/w2");
    s2.reply("a3", "m3", "r3", OPUS, usage(200_000, 0, 0, 0, 0), text_block(), false);
    s2.write(&w2.join("s2.jsonl"), true);
    let mut s0 = File::new("s0", &yesterday()).in_dir("/home/u/w2");
    s0.reply("a0", "m0", "r0", OPUS, usage(1_000_000, 0, 0, 0, 0), text_block(), false);
    s0.write(&w2.join("s0.jsonl"), true);
    History { s1: w1.join("s1.jsonl"), s2: w2.join("s2.jsonl"), env }
}

/// The input as Claude Code 2.1.332 builds it (trimmed of fields the line does not read).
fn input(h: &History) -> String {
    json!({
        "session_id": "s1",
        "transcript_path": h.s1,
        "cwd": "/home/u/w1",
        "model": {"id": "claude-opus-4-8", "display_name": "Opus 4.8"},
        "workspace": {"current_dir": "/home/u/w1", "project_dir": "/home/u/w1", "added_dirs": []},
        "version": "2.1.332",
        "output_style": {"name": "default"},
        "cost": {"total_cost_usd": 0.42, "total_duration_ms": 45000, "total_api_duration_ms": 2300,
                 "total_lines_added": 156, "total_lines_removed": 23},
        "context_window": {"total_input_tokens": 84_000, "total_output_tokens": 4521, "context_window_size": 200_000,
                           "current_usage": null, "used_percentage": 42.4, "remaining_percentage": 57.6},
        "exceeds_200k_tokens": false,
        "rate_limits": {"five_hour": {"used_percentage": 23.0, "resets_at": 1_796_000_000},
                        "seven_day": {"used_percentage": 61.2, "resets_at": 1_796_500_000}}
    })
    .to_string()
}

fn line(env: &TestEnv, stdin: &str) -> String {
    let out = env.run(&["statusline"], stdin);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    stdout(&out)
}

#[test]
fn the_line_has_the_model_the_session_today_and_what_routing_saved() {
    let h = history();
    let first = line(&h.env, &input(&h));
    // The last prompt, p2, is long and got no hint.
    assert_eq!(
        first,
        "Opus 4.8 · session $7.50 · today $8.50 · saved $3.00 · no hint: not sure enough · ctx 42% · 5h 23% · 7d 61%\n"
    );
    // Again, from the cache: the same line.
    assert_eq!(line(&h.env, &input(&h)), first);
    let cache = h.env.install_dir.join("statusline");
    assert!(cache.join("state.json").exists() && cache.join("facts.json").exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(cache.join("facts.json")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the cache holds what the transcripts say: private");
    }
    // Without a transcript to read, Claude Code's own session cost stands in; only what is sent shows.
    let bare = json!({"session_id": "elsewhere", "model": {"id": "claude-sonnet-5"}, "cost": {"total_cost_usd": 0.42}});
    assert_eq!(line(&h.env, &bare.to_string()), "claude-sonnet-5 · session $0.42 · today $8.50 · saved $3.00\n");
}

/// `path`'s mtime, and setting it back.
fn mtime(path: &Path) -> std::time::SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

fn set_mtime(path: &Path, t: std::time::SystemTime) {
    std::fs::File::options().write(true).open(path).unwrap().set_modified(t).unwrap();
}

#[test]
fn the_cache_reads_on_where_a_file_grew_and_trusts_size_and_mtime() {
    let h = history();
    assert!(line(&h.env, &input(&h)).contains("session $7.50 · today $8.50"));

    // The session goes on: m4, another $0.75. Its first reply is blanked in place first: read on
    // from where the last read stopped, the file still holds m1; read again from the start, it
    // would not (and the session would come to $7.50).
    let text = std::fs::read_to_string(&h.s1).unwrap();
    let m1 = text.lines().find(|l| l.contains("\"r1\"")).unwrap();
    std::fs::write(&h.s1, text.replacen(m1, &" ".repeat(m1.len()), 1)).unwrap();
    let mut more = File::new("s1", &now()).in_dir("/home/u/w1");
    more.reply("a4", "m4", "r4", OPUS, usage(100_000, 10_000, 0, 0, 0), text_block(), false);
    let grown = format!("{}{}\n", std::fs::read_to_string(&h.s1).unwrap(), more.lines[0]);
    std::fs::write(&h.s1, grown).unwrap();
    assert!(line(&h.env, &input(&h)).contains("session $8.25 · today $9.25"));

    // Keyed by size and mtime: s2 changed in place (200k input tokens made 900k, same length)
    // with its mtime put back is not read again...
    let before = mtime(&h.s2);
    let text = std::fs::read_to_string(&h.s2).unwrap();
    std::fs::write(&h.s2, text.replace("200000", "900000")).unwrap();
    set_mtime(&h.s2, before);
    assert!(line(&h.env, &input(&h)).contains("today $9.25"));
    // ...and once its mtime moves, it is: 900k opus input tokens, $4.50.
    set_mtime(&h.s2, before + std::time::Duration::from_secs(1));
    assert!(line(&h.env, &input(&h)).contains("today $12.75"), "{}", line(&h.env, &input(&h)));

    // A new session in a new project, found without walking the whole history again.
    let mut s3 = File::new("s3", &now()).in_dir("/home/u/w3");
    s3.reply("a5", "m5", "r5", OPUS, usage(100_000, 0, 0, 0, 0), text_block(), false);
    s3.write(&h.env.claude_dir.join("projects/-home-u-w3/s3.jsonl"), true);
    assert!(line(&h.env, &input(&h)).contains("today $13.25"));
    // And a new subagent of the session, under a folder that was watched before it existed.
    let mut a6 = File::new("s1", &now()).in_dir("/home/u/w1");
    a6.reply("x6", "x6", "rx6", HAIKU, usage(1_000_000, 0, 0, 0, 0), text_block(), true);
    subagent(&h.env.claude_dir.join("projects/-home-u-w1"), "s1", "a6", "tu6", &a6, true);
    assert!(line(&h.env, &input(&h)).contains("session $9.25 · today $14.25"));
}

#[test]
fn the_line_says_when_system1_is_paused_or_its_engine_is_down() {
    let h = history();
    assert_eq!(h.env.run(&["toggle", "off"], "").status.code(), Some(0));
    assert!(line(&h.env, &input(&h)).ends_with(" · System-1 paused\n"));
    assert_eq!(h.env.run(&["toggle", "on"], "").status.code(), Some(0));
    // A Laya nothing listens for: the probe is refused at once.
    h.env.write_config("[gateway]\nprovider = \"laya\"\n[providers.laya]\nendpoint = \"http://127.0.0.1:9\"\n");
    let l = line(&h.env, &input(&h));
    assert!(l.ends_with(" · System-1 engine down\n"), "{l}");
    // Routing off: the saved figure still shows, as hints were followed today.
    assert!(l.contains("saved $3.00"), "{l}");
    h.env.write_config("[gateway]\nprovider = \"nosuch\"\n");
    assert!(line(&h.env, &input(&h)).ends_with(" · System-1 config error\n"));
}

#[test]
fn empty_or_broken_input_prints_nothing_and_exits_0() {
    let h = history();
    for bad in ["", "   ", "not json", "[1, 2]", "{}", "{\"session_id\": 7}", "{\"model\": ", "\u{0}\u{1}"] {
        let out = h.env.run(&["statusline"], bad);
        assert_eq!(out.status.code(), Some(0), "{bad:?}");
        assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{bad:?}: {} {}", stdout(&out), stderr(&out));
    }
    // Odd types are read as absent; what is there still shows.
    let odd =
        json!({"session_id": "s1", "transcript_path": 7, "model": "opus", "context_window": {"used_percentage": "x"}});
    assert_eq!(line(&h.env, &odd.to_string()), "today $8.50 · saved $3.00\n");
    // A transcript path that is no transcript, and a cache that is garbage, cost nothing but the figures.
    std::fs::create_dir_all(h.env.install_dir.join("statusline")).unwrap();
    std::fs::write(h.env.install_dir.join("statusline/state.json"), "{garbage").unwrap();
    let nowhere =
        json!({"session_id": "s9", "transcript_path": "/nonexistent/s9.jsonl", "model": {"display_name": "Haiku"}});
    assert_eq!(line(&h.env, &nowhere.to_string()), "Haiku · today $8.50 · saved $3.00\n");
}

fn settings(env: &TestEnv) -> Value {
    serde_json::from_str(&std::fs::read_to_string(env.claude_dir.join("settings.json")).unwrap()).unwrap()
}

#[test]
fn install_sets_it_only_where_no_status_line_is_and_remove_takes_only_its_own() {
    let env = TestEnv::new();
    std::fs::create_dir_all(&env.claude_dir).unwrap();
    let file = env.claude_dir.join("settings.json");
    std::fs::write(&file, r#"{"model": "opus", "enabledPlugins": {"system1@system1-gateway": true}}"#).unwrap();
    let out = env.run(&["statusline", "--install"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = settings(&env);
    let bin = env.install_dir.join("bin/system1");
    assert_eq!(
        s["statusLine"],
        json!({"type": "command", "command": format!("{} statusline", bin.display()), "padding": 0})
    );
    let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["model", "enabledPlugins", "statusLine"], "the other keys kept, in order");
    assert!(stdout(&env.run(&["statusline", "--install"], "")).contains("already system1's"));
    assert_eq!(env.run(&["statusline", "--remove"], "").status.code(), Some(0));
    assert_eq!(settings(&env), json!({"model": "opus", "enabledPlugins": {"system1@system1-gateway": true}}));

    // Someone else's status line is never replaced, nor removed.
    let theirs = json!({"statusLine": {"type": "command", "command": "bunx ccusage statusline"}});
    std::fs::write(&file, theirs.to_string()).unwrap();
    let out = env.run(&["statusline", "--install"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("already has a status line (`bunx ccusage statusline`); left as it is"),
        "{}",
        stderr(&out)
    );
    assert_eq!(env.run(&["statusline", "--remove"], "").status.code(), Some(0));
    assert_eq!(settings(&env), theirs);
    // A settings file that does not read is left alone.
    std::fs::write(&file, "{not json").unwrap();
    assert_eq!(env.run(&["statusline", "--install"], "").status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{not json");
}

/// The input with Claude Code's `prompt_cache` block (2.1.280 on) added.
fn with_cache(h: &History, cache: Value) -> String {
    let mut v: Value = serde_json::from_str(&input(h)).unwrap();
    v["prompt_cache"] = cache;
    v.to_string()
}

/// Appends lines to a transcript, as Claude Code does while the session goes on.
fn append(path: &Path, f: &File) {
    let mut text = std::fs::read_to_string(path).unwrap();
    for l in &f.lines {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn the_line_says_what_routing_did_for_the_last_prompt_and_the_prompt_caches_state() {
    let h = history();
    let cache = json!({"warm": true, "caching_observed": true, "ttl": 300, "requests": 12, "misses": 1,
        "expected_rebuilds": 2, "hit_ratio": 0.917, "cache_write_tokens": 40_000, "miss_causes": {}});
    let l = line(&h.env, &with_cache(&h, cache));
    assert!(
        l.contains(" · saved $3.00 · no hint: not sure enough · cache warm, 92% hit, 2 rebuilds due · ctx 42%"),
        "{l}"
    );
    let cold = line(&h.env, &with_cache(&h, json!({"warm": false, "hit_ratio": 0, "expected_rebuilds": 0})));
    assert!(cold.contains(" · cache cold, 0% hit · ctx"), "{cold}");
    // A block of other types says nothing, and costs nothing else.
    let odd = line(&h.env, &with_cache(&h, json!({"warm": "yes", "hit_ratio": "x"})));
    assert!(!odd.contains("cache") && odd.contains("ctx 42%"), "{odd}");

    // The session goes on: a prompt whose turn got a haiku hint...
    let mut more = File::new("s1", &now()).in_dir("/home/u/w1");
    more.prompt("p3");
    more.hint("h3", "p3", &routing_hint("sonnet"));
    append(&h.s1, &more);
    assert!(line(&h.env, &input(&h)).contains(" · saved $3.00 · hint sonnet · ctx"), "{}", line(&h.env, &input(&h)));
    // ...then a short one, which the hook never hints.
    let mut short = File::new("s1", &now()).in_dir("/home/u/w1");
    short.short_prompt("p4");
    append(&h.s1, &short);
    assert!(line(&h.env, &input(&h)).contains(" · no hint: short prompt · "));
    // Hints off in the config; routing off says nothing of hints; paused says why itself.
    h.env.write_config("[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\nhint = false\n");
    assert!(line(&h.env, &input(&h)).contains(" · no hint: hints off · "));
    h.env.write_config("[gateway]\nprovider = \"mock\"\n[routing]\nenabled = false\n");
    assert!(!line(&h.env, &input(&h)).contains("hint"));
    h.env.write_config("[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\nhint = true\n");
    assert_eq!(h.env.run(&["toggle", "off"], "").status.code(), Some(0));
    let paused = line(&h.env, &input(&h));
    assert!(!paused.contains("hint") && paused.ends_with(" · System-1 paused\n"), "{paused}");

    // --help says what it reads on stdin.
    let help = stdout(&h.env.run(&["statusline", "--help"], ""));
    for field in ["transcript_path", "prompt_cache.warm", "context_window.used_percentage", "exits 0"] {
        assert!(help.contains(field), "{field} not in\n{help}");
    }
}

#[test]
fn a_workflow_agents_file_in_a_nested_folder_counts_in_the_session() {
    let h = history();
    assert!(line(&h.env, &input(&h)).contains("session $7.50 · today $8.50"));
    let sub = h.env.claude_dir.join("projects/-home-u-w1/s1/subagents/workflows");
    let agent = |dir: &Path, id: &str, input_tokens: u64| {
        let mut f = File::new("s1", &now()).in_dir("/home/u/w1");
        f.reply(
            &format!("w{id}"),
            &format!("w{id}"),
            &format!("rw{id}"),
            HAIKU,
            usage(input_tokens, 0, 0, 0, 0),
            text_block(),
            true,
        );
        f.write(&dir.join(format!("agent-{id}.jsonl")), true);
    };
    // A workflow's first agent, two levels below subagents/: haiku 1M input tokens, $1.00.
    agent(&sub.join("wf_1"), "w1", 1_000_000);
    assert!(line(&h.env, &input(&h)).contains("session $8.50 · today $9.50"), "{}", line(&h.env, &input(&h)));
    // A second workflow, in a folder made after the status line last looked: $0.50.
    agent(&sub.join("wf_2"), "w2", 500_000);
    assert!(line(&h.env, &input(&h)).contains("session $9.00 · today $10.00"), "{}", line(&h.env, &input(&h)));
    // And one more agent in the first workflow's folder: $0.25.
    agent(&sub.join("wf_1"), "w3", 250_000);
    assert!(line(&h.env, &input(&h)).contains("session $9.25 · today $10.25"), "{}", line(&h.env, &input(&h)));
}
