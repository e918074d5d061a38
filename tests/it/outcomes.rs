//! `system1 outcomes` on transcripts in Claude Code's real layout (a main session file per session,
//! `<session>/subagents/agent-<id>.jsonl` with its `.meta.json`), one fixture per rule and per
//! doubtful case, and `--apply` into a routing log that 20 other processes append to meanwhile.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::support::{TestEnv, stderr, stdout, write};
use serde_json::{Value, json};

const PROJECT: &str = "-home-u-w1";

/// Writes one session's transcript, line by line, the way Claude Code 2.1 does.
struct Session {
    dir: PathBuf,
    id: String,
    lines: Vec<Value>,
    clock: u32,
}

impl Session {
    fn new(env: &TestEnv, id: &str) -> Self {
        Session { dir: env.claude_dir.join("projects").join(PROJECT), id: id.into(), lines: Vec::new(), clock: 0 }
    }

    fn ts(&mut self) -> String {
        self.clock += 1;
        format!("2026-10-01T10:{:02}:{:02}.000Z", self.clock / 60, self.clock % 60)
    }

    fn common(&mut self, kind: &str) -> Value {
        json!({"parentUuid": null, "isSidechain": false, "type": kind, "uuid": format!("u-{}-{}", self.id, self.clock),
               "timestamp": self.ts(), "userType": "external", "entrypoint": "sdk-cli", "cwd": "/home/u/w1",
               "sessionId": self.id, "version": "2.1.197", "gitBranch": "main"})
    }

    /// The orchestrator's Agent tool use.
    fn spawn(&mut self, id: &str, description: &str, prompt: &str, subagent_type: &str, model: Option<&str>) {
        let mut input = json!({"description": description, "prompt": prompt, "subagent_type": subagent_type});
        if let Some(m) = model {
            input["model"] = json!(m);
        }
        let mut l = self.common("assistant");
        l["requestId"] = json!(format!("req_{id}"));
        l["message"] = json!({"id": format!("msg_{id}"), "model": "claude-opus-4-8", "role": "assistant",
            "content": [{"type": "tool_use", "id": id, "name": "Agent", "input": input}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 1754, "output_tokens": 59}});
        self.lines.push(l);
    }

    /// The tool result that comes back to the orchestrator.
    fn result(&mut self, id: &str, text: &str, is_error: bool, tool_use_result: Value) {
        let mut block = json!({"tool_use_id": id, "type": "tool_result", "content": [{"type": "text", "text": text}]});
        if is_error {
            block["is_error"] = json!(true);
        }
        let mut l = self.common("user");
        l["message"] = json!({"role": "user", "content": [block]});
        l["toolUseResult"] = tool_use_result;
        self.lines.push(l);
    }

    fn completed(&mut self, id: &str, agent: &str, text: &str, resolved: &str) {
        let tur = json!({"status": "completed", "prompt": "…", "agentId": agent, "agentType": "general-purpose",
            "content": [{"type": "text", "text": text}], "resolvedModel": resolved, "totalDurationMs": 38,
            "totalTokens": 1327, "totalToolUseCount": 0});
        self.result(id, &format!("{text}\nagentId: {agent} <usage>subagent_tokens: 1327</usage>"), false, tur);
    }

    fn notification(&mut self, agent: &str, status: &str, result: &str) {
        let mut l = self.common("user");
        l["message"] = json!({"role": "user", "content": format!(
            "<task-notification>\n<task-id>{agent}</task-id>\n<status>{status}</status>\n<summary>Agent finished</summary>\n<result>{result}</result>\n</task-notification>")});
        self.lines.push(l);
    }

    /// Noise a real transcript has: a typed prompt, a hint attachment, another tool's result.
    fn noise(&mut self) {
        let mut l = self.common("user");
        l["message"] = json!({"role": "user", "content": "please carry on with the plan"});
        self.lines.push(l);
        let mut l = self.common("attachment");
        l["attachment"] = json!({"type": "hook_additional_context", "content": ["System-1 routing hint: use model \"sonnet\""], "hookEvent": "UserPromptSubmit"});
        self.lines.push(l);
        let mut l = self.common("user");
        l["message"] = json!({"role": "user", "content": [{"tool_use_id": "toolu_bash", "type": "tool_result", "content": "BLOCKED by the firewall", "is_error": true}]});
        self.lines.push(l);
    }

    /// A subagent's own transcript and meta file.
    fn subagent(&self, agent: &str, tool_use_id: &str, model: &str, api_error: bool) {
        let dir = self.dir.join(&self.id).join("subagents");
        let mut lines = vec![
            json!({"type": "user", "isSidechain": true, "agentId": agent, "parentUuid": null, "message": {"role": "user", "content": "go"}}),
            json!({"type": "assistant", "isSidechain": true, "agentId": agent, "message": {"model": model, "content": [{"type": "text", "text": "working"}], "usage": {"input_tokens": 10, "output_tokens": 5}}}),
        ];
        if api_error {
            lines.push(json!({"type": "assistant", "isSidechain": true, "agentId": agent, "isApiErrorMessage": true,
                "message": {"model": "<synthetic>", "content": [{"type": "text", "text": "API Error: 529 overloaded"}]}}));
        }
        write(&dir.join(format!("agent-{agent}.jsonl")), &jsonl(&lines));
        write(
            &dir.join(format!("agent-{agent}.meta.json")),
            &json!({"agentType": "general-purpose", "description": "d", "toolUseId": tool_use_id, "spawnDepth": 1})
                .to_string(),
        );
    }

    fn save(&self) {
        write(&self.dir.join(format!("{}.jsonl", self.id)), &jsonl(&self.lines));
    }
}

fn jsonl(lines: &[Value]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// Every rule and doubtful case, one spawn each, across two sessions of one project.
fn fixtures(env: &TestEnv) {
    let mut s = Session::new(env, "11111111-aaaa");
    s.noise();
    // ok: completed, resolved to haiku.
    s.spawn("toolu_ok", "List the TODOs", "List every TODO in src", "general-purpose", Some("haiku"));
    s.completed("toolu_ok", "a0k", "Found 12 TODOs.", "claude-haiku-4-5-20251001");
    s.subagent("a0k", "toolu_ok", "claude-haiku-4-5-20251001", false);
    // the tool result was an error.
    s.spawn("toolu_err", "Refactor the parser", "Refactor the parser module", "general-purpose", Some("sonnet"));
    s.result("toolu_err", "[Request interrupted by user for tool use]", true, json!("Error: interrupted"));
    // background agents: the notification says failed / stopped.
    for (id, agent) in [("toolu_bgfail", "abgf"), ("toolu_bgstop", "abgs")] {
        s.spawn(id, "Run the benchmark", "Run the benchmark suite", "general-purpose", Some("sonnet"));
        s.result(
            id,
            &format!("Async agent launched successfully.\nagentId: {agent}"),
            false,
            json!({"status": "async_launched", "agentId": agent, "description": "Run the benchmark"}),
        );
    }
    s.notification("abgf", "failed", "The suite crashed.");
    s.notification("abgs", "stopped", "");
    // the hand-back says blocked.
    s.spawn("toolu_blocked", "Apply the migration", "Apply the DB migration", "general-purpose", Some("sonnet"));
    s.completed(
        "toolu_blocked",
        "ablk",
        "BLOCKED: I have no credentials for the staging database.",
        "claude-sonnet-4-6",
    );
    // died on an API error: completed in the parent, only the subagent's file shows it.
    s.spawn("toolu_api", "Summarise the logs", "Summarise the error logs", "general-purpose", Some("haiku"));
    s.completed("toolu_api", "aapi", "", "claude-haiku-4-5-20251001");
    s.subagent("aapi", "toolu_api", "claude-haiku-4-5-20251001", true);
    // redo by task id plus "previous attempt": the first attempt failed, the retry did not.
    s.spawn("toolu_w4a", "W4-P3: implement the tokenizer", "Implement W4-P3, the tokenizer", "coder", Some("haiku"));
    s.completed("toolu_w4a", "aw4a", "Implemented the tokenizer.", "claude-haiku-4-5-20251001");
    s.spawn(
        "toolu_w4b",
        "W4-P3 (retry)",
        "W4-P3 again: the previous attempt left the tests red. Fix it.",
        "coder",
        Some("sonnet"),
    );
    s.completed("toolu_w4b", "aw4b", "Tokenizer fixed, tests green.", "claude-sonnet-4-6");
    // doubtful: the same task id, same role, no retry words.
    s.spawn("toolu_t12a", "Task 12: write the parser tests", "Task 12: write tests for the parser", "tester", None);
    s.completed("toolu_t12a", "at12a", "Wrote 8 tests.", "claude-sonnet-4-6");
    s.spawn(
        "toolu_t12b",
        "Task 12: parser tests",
        "Task 12: write tests for the parser, covering errors too",
        "tester",
        None,
    );
    s.completed("toolu_t12b", "at12b", "Wrote 14 tests.", "claude-sonnet-4-6");
    // inherit: resolvedModel (with a [1m] suffix) says what ran.
    s.spawn("toolu_inherit", "Design the cache", "Design the cache layer", "general-purpose", Some("inherit"));
    s.completed("toolu_inherit", "ainh", "Here is the design.", "claude-opus-4-8[1m]");
    s.save();

    let mut s = Session::new(env, "22222222-bbbb");
    // doubtful: the report hedges.
    s.spawn("toolu_hedge", "Update the docs", "Update the install docs", "general-purpose", Some("haiku"));
    s.completed(
        "toolu_hedge",
        "ahdg",
        "Updated most pages but could not build the site locally.",
        "claude-haiku-4-5-20251001",
    );
    // doubtful: no resolvedModel, so the tier is the one asked for.
    s.spawn("toolu_noresolve", "Check the links", "Check the README links", "general-purpose", Some("sonnet"));
    s.result("toolu_noresolve", "All links fine.", false, json!({"status": "completed"}));
    // doubtful: no result at all (the session ended).
    s.spawn("toolu_noresult", "Profile the build", "Profile the build", "general-purpose", Some("opus"));
    s.save();

    // `--fork-session` copies a whole history into a new file with only `sessionId` changed: the
    // spawns in it are the same spawns, not new ones.
    let dir = env.claude_dir.join("projects").join(PROJECT);
    let original = std::fs::read_to_string(dir.join("11111111-aaaa.jsonl")).unwrap();
    write(&dir.join("99999999-fork.jsonl"), &original.replace("11111111-aaaa", "99999999-fork"));
}

fn run_json(env: &TestEnv, args: &[&str]) -> Value {
    let out = env.run(args, "");
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("not JSON: {e}: {}", stdout(&out)))
}

fn by_id(v: &Value) -> std::collections::HashMap<String, Value> {
    v["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["tool_use_id"].as_str().unwrap().to_string(), p.clone()))
        .collect()
}

#[test]
fn one_fixture_per_rule_and_doubtful_case() {
    let env = TestEnv::new();
    fixtures(&env);
    let v = run_json(&env, &["outcomes", "--json"]);
    let p = by_id(&v);
    assert_eq!(p.len(), 14, "{:?}", p.keys());
    let check = |id: &str, outcome: &str, reason: &str, tier: Option<&str>, doubtful: bool| {
        let x = &p[id];
        assert_eq!(x["outcome"], outcome, "{id}: {x}");
        assert!(x["reason"].as_str().unwrap().contains(reason), "{id}: {x}");
        assert_eq!(x["tier"].as_str(), tier, "{id}: {x}");
        assert_eq!(!x["doubtful"].is_null(), doubtful, "{id}: {x}");
    };
    check("toolu_ok", "succeeded", "no sign", Some("haiku"), false);
    check("toolu_err", "failed", "tool result was an error", Some("sonnet"), false);
    check("toolu_bgfail", "failed", "status was failed", Some("sonnet"), false);
    check("toolu_bgstop", "failed", "status was stopped", Some("sonnet"), false);
    check("toolu_blocked", "failed", "blocked", Some("sonnet"), false);
    check("toolu_api", "failed", "API error", Some("haiku"), false);
    check("toolu_w4a", "failed", "redone by toolu_w4b", Some("haiku"), false);
    check("toolu_w4b", "succeeded", "no sign", Some("sonnet"), false);
    check("toolu_t12a", "failed", "redone by toolu_t12b", Some("sonnet"), true);
    check("toolu_t12b", "succeeded", "no sign", Some("sonnet"), false);
    check("toolu_inherit", "succeeded", "no sign", Some("opus"), false);
    check("toolu_hedge", "succeeded", "no sign", Some("haiku"), true);
    check("toolu_noresolve", "succeeded", "no sign", Some("sonnet"), true);
    check("toolu_noresult", "succeeded", "no sign", Some("opus"), true);
    assert_eq!(v["failed"], 7);
    assert_eq!(v["doubtful"], 4);

    // The summary prints the counts and the doubtful list.
    let out = env.run(&["outcomes"], "");
    let text = stdout(&out);
    assert!(text.contains("Subagent spawns: 14  succeeded 7  failed 7  doubtful 4"), "{text}");
    assert!(text.contains("toolu_t12a") && text.contains("same-role re-spawn"), "{text}");
    assert!(text.contains("Nothing written"), "{text}");

    // --since leaves out what came before, --until what came after (a date counts whole), and
    // --project the other projects, as for `report`.
    let v = run_json(&env, &["outcomes", "--json", "--since", "2030-01-01"]);
    assert_eq!(v["spawns"], 0);
    assert_eq!(run_json(&env, &["outcomes", "--json", "--until", "2026-09-30"])["spawns"], 0);
    assert_eq!(run_json(&env, &["outcomes", "--json", "--until", "2026-10-01"])["spawns"], 14);
    assert_eq!(run_json(&env, &["outcomes", "--json", "--project", "no-such-project"])["spawns"], 0);
    assert_eq!(run_json(&env, &["outcomes", "--json", "--project", "/home/u/w1"])["spawns"], 14);
    let out = env.run(&["outcomes", "--since", "2026-10-02", "--until", "2026-10-01"], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn missing_transcripts_are_a_clear_error() {
    let env = TestEnv::new();
    let out = env.run(&["outcomes"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("transcripts"), "{}", stderr(&out));
}

fn log_path(env: &TestEnv) -> PathBuf {
    env.install_dir.join("logs").join("routing.jsonl")
}

fn agent_entry(id: &str, tool_use_id: &str) -> Value {
    json!({"id": id, "time": "2026-10-01T10:00:00Z", "source": "agent", "session_id": "11111111-aaaa",
           "prompt": "brief", "tool_use_id": tool_use_id, "chosen": "haiku", "subagent_type": "general-purpose"})
}

/// Starts the real agent hook, which logs the spawn (routing on, mock engine, cwd in `log_dirs`).
fn agent_hook(env: &TestEnv, cwd: &Path, k: usize) -> std::process::Child {
    let payload = json!({"session_id": "33333333-cccc", "cwd": cwd, "hook_event_name": "PreToolUse", "tool_name": "Agent",
        "tool_use_id": format!("toolu_race_{k}"),
        "tool_input": {"description": "race", "prompt": format!("Write the unit tests for module {k} of the parser, covering errors and edge cases"),
                       "subagent_type": "general-purpose", "model": "haiku"}});
    let mut child = env
        .command(&["hook", "agent"])
        .current_dir(cwd)
        // The engine's answer is delayed a different time per hook, spreading the appends out.
        .env("SYSTEM1_MOCK_DELAY_MS", (k * 50).to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
    child
}

#[test]
fn apply_writes_outcomes_and_loses_no_concurrent_append() {
    let env = TestEnv::new();
    let repo = env.home.join("w1");
    std::fs::create_dir_all(&repo).unwrap();
    env.write_config(&format!(
        "[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\nlog_dirs = [{:?}]\n",
        repo.display().to_string()
    ));
    fixtures(&env);
    let log = log_path(&env);
    let mut seed = vec![
        agent_entry("e-ok", "toolu_ok"),
        agent_entry("e-api", "toolu_api"),
        agent_entry("e-t12a", "toolu_t12a"),
        agent_entry("e-other", "toolu_not_in_transcripts"),
    ];
    let mut user = agent_entry("e-user", "toolu_blocked");
    user["outcome"] = json!("succeeded");
    user["outcome_source"] = json!("user");
    seed.push(user);
    write(&log, &jsonl(&seed));

    // Rewrites run back to back on one thread while the 20 hooks start one after another, so that
    // appends land between, before and during rewrites.
    let done = std::sync::atomic::AtomicBool::new(false);
    let (runs, lines_seen) = std::thread::scope(|s| {
        let applier = s.spawn(|| {
            let mut runs = 0;
            let mut lines_seen = std::collections::BTreeSet::new();
            while !done.load(std::sync::atomic::Ordering::SeqCst) || runs == 0 {
                let out = env.run(&["outcomes", "--apply"], "");
                assert!(out.status.success(), "{}", stderr(&out));
                runs += 1;
                lines_seen.insert(std::fs::read_to_string(&log).map(|t| t.lines().count()).unwrap_or(0));
            }
            (runs, lines_seen)
        });
        let mut children = Vec::new();
        for k in 0..20 {
            children.push(agent_hook(&env, &repo, k));
        }
        for mut c in children {
            assert!(c.wait().unwrap().success());
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        applier.join().unwrap()
    });
    // A rewrite that saw only some of the hooks' lines proves the two overlapped.
    assert!(lines_seen.iter().any(|&n| n < 5 + 20), "no rewrite ran during the appends: {lines_seen:?}");
    let out = env.run(&["outcomes", "--apply"], "");
    assert!(stdout(&out).contains("Wrote 3 outcomes"), "{}", stdout(&out));
    assert!(stdout(&out).contains("1 labelled by you kept"), "{}", stdout(&out));

    let text = std::fs::read_to_string(&log).unwrap();
    let entries: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("every line whole")).collect();
    assert_eq!(entries.len(), 5 + 20, "after {runs} concurrent --apply runs");
    let raced: Vec<&Value> = entries
        .iter()
        .filter(|e| e["source"] == "agent" && e["tool_use_id"].as_str().unwrap().starts_with("toolu_race_"))
        .collect();
    assert_eq!(raced.len(), 20, "every hook's entry survived the rewrites");
    let ids: std::collections::HashSet<&str> = entries.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), entries.len());
    let get = |id: &str| entries.iter().find(|e| e["id"] == id).unwrap().clone();
    let ok = get("e-ok");
    assert_eq!(
        (ok["outcome"].as_str(), ok["outcome_tier"].as_str(), ok["outcome_source"].as_str()),
        (Some("succeeded"), Some("haiku"), Some("auto"))
    );
    assert_eq!(get("e-api")["outcome"], "failed");
    assert!(get("e-api")["outcome_reason"].as_str().unwrap().contains("API error"));
    assert!(get("e-t12a")["outcome_doubtful"].is_string(), "doubtful cases are marked for labelling");
    assert_eq!(get("e-user")["outcome"], "succeeded", "a user's label is never overwritten");
    assert!(get("e-other").get("outcome").is_none());
}

/// One session with 20,000 spawns: each is checked for a redo against the spawns after it, and
/// that used to compare every pair (40 s); now the run ends well within the cut-off. A spawn whose
/// timestamp cannot be read is not placed in time: a retry of W4-P3 with such a timestamp used to
/// switch the 24 h window off and count as a redo of any W4-P3 before it, however long before.
#[test]
fn many_spawns_in_one_session_and_unreadable_timestamps() {
    let env = TestEnv::new();
    let dir = env.claude_dir.join("projects").join(PROJECT);
    let spawn = |id: &str, ts: &str, description: &str| {
        let input = json!({"description": description, "prompt": format!("{description}, please"), "subagent_type": "general-purpose"});
        let call = json!({"type": "assistant", "timestamp": ts, "sessionId": "big", "message": {"model": "claude-opus-4-8",
            "role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Agent", "input": input}]}});
        let result = json!({"type": "user", "timestamp": ts, "sessionId": "big", "message": {"role": "user",
            "content": [{"type": "tool_result", "tool_use_id": id, "content": [{"type": "text", "text": "Done."}]}]},
            "toolUseResult": {"status": "completed", "resolvedModel": "claude-sonnet-4-6"}});
        format!("{call}\n{result}\n")
    };
    let mut text = spawn("toolu_w4a", "2026-09-01T09:00:00.000Z", "W4-P3: implement the parser");
    for i in 0..20_000 {
        let ts = format!("2026-10-01T{:02}:{:02}:{:02}.000Z", i / 3600, i / 60 % 60, i % 60);
        text.push_str(&spawn(&format!("toolu_{i}"), &ts, &format!("Task {i}: one step of the plan")));
    }
    text.push_str(&spawn("toolu_w4b", "a month later", "W4-P3 retry: implement the parser"));
    write(&dir.join("big.jsonl"), &text);
    let out = env
        .run_within_cpu(&["outcomes", "--json"], "", crate::support::CUT_OFF * 3)
        .expect("outcomes on 20,000 spawns ends within 30 s of CPU time");
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(v["spawns"], 20_002);
    let p = by_id(&v);
    assert_eq!(p["toolu_w4a"]["outcome"], "succeeded", "{}", p["toolu_w4a"]);
    assert_eq!(p["toolu_w4b"]["outcome"], "succeeded", "{}", p["toolu_w4b"]);
    assert_eq!(v["failed"], 0);
}

/// What a transcript says about a spawn (its id, its description) is printed escaped and short:
/// a description of 100 KB with terminal escapes in it, on a spawn that is doubtful (no result),
/// gives a line of a few hundred characters.
#[test]
fn a_hostile_description_is_printed_escaped_and_short() {
    let env = TestEnv::new();
    let evil = format!("\u{1b}]0;owned\u{7}\u{1b}[2J\r{}{}", "\n".repeat(50), "A".repeat(100_000));
    let mut s = Session::new(&env, "11111111-aaaa");
    let id = format!("toolu_\u{1b}[2J{}", "B".repeat(10_000));
    s.spawn(&id, &evil, "Profile the build", "general-purpose", Some("opus"));
    s.save();
    let out = env.run(&["outcomes"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("doubtful 1"), "{text}");
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\r'), "{text:?}");
    assert!(text.len() < 5_000, "printed {} bytes", text.len());
    assert!(text.contains("\"\\u{1b}]0;owned\\u{7}"), "the description is there, escaped: {text}");
}

/// What was skipped is counted in the singular where it is one.
#[test]
fn one_skipped_line_in_one_transcript_is_said_in_the_singular() {
    let env = TestEnv::new();
    let mut s = Session::new(&env, "s1");
    s.spawn("toolu_1", "look", "Find where the config is parsed", "general-purpose", Some("haiku"));
    s.completed("toolu_1", "a1", "Done: it is parsed in config/mod.rs", "claude-haiku-4-5-20251001");
    s.save();
    let path = s.dir.join("s1.jsonl");
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"{not json\n").unwrap();
    let out = env.run(&["outcomes"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("(1 malformed line and 0 truncated files in 1 transcript were skipped)"), "{text}");
}
