//! `system1 report --by day|week|month|session|project|model|agent` on the report's fixture history
//! (tests/it/report.rs): every row against totals worked out by hand in the comments, the rows
//! adding up to the report's own totals, `--format md|csv`, `--timezone`, and the scope fixes (the
//! session count follows the filters, the header shows the last day typed, a `--project` that
//! matches nothing says so, the usual mix says how many spawns it is drawn from).
//!
//! The fixture, in millionths of a dollar: on 2026-11-10 (UTC noon) sessions sA and sB (a fork of
//! sA that copies its first two requests, prompt p1 and spawn tu1) in /home/u/w1; on 2026-11-20 sC
//! in /home/u/other.
//! - sA: main m1 8000, m2 1550, m3 150, m4 30 (opus); subagents a1 11000 (haiku, tu1 hinted haiku),
//!   a2 3000 (opus, tu2 unhinted), a3 30000 (opus, tu3 hinted sonnet: upgraded); prompts p1
//!   (hinted), p2 (short), p3 (hinted).
//! - sB: main m5 110 (opus), mx (claude-mystery-1, unpriced), x1 60 (an old-style haiku sidechain
//!   line in the main file); subagent a4 750 (haiku, tu4 hinted haiku); prompt p4 (hinted).
//! - sC: main m6 210 (sonnet); subagent a5 7500 (sonnet, tu5 unhinted); prompt p5.
//!
//! Realised savings against the usual mix (tu2 opus, tu5 sonnet: half each): tu1 33000, tu4 2250.

use serde_json::{Value, json};

use crate::report::{File, close, fixtures, report_json, text_block, usage};
use crate::support::{self, TestEnv, stderr, stdout};

const OPUS: &str = "claude-opus-4-8";

fn by(env: &TestEnv, view: &str, extra: &[&str]) -> Value {
    let mut args = vec!["--by", view];
    args.extend_from_slice(extra);
    let v = report_json(env, &args);
    assert_eq!(v["by"], view);
    v
}

/// The row whose key is `key` (and tier `tier`, where the view has one).
fn row<'a>(v: &'a Value, key: &str, tier: Option<&str>) -> &'a Value {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == key && tier.is_none_or(|t| r["tier"] == t))
        .unwrap_or_else(|| panic!("no row {key} {tier:?} in {}", v["rows"]))
}

fn keys(v: &Value) -> Vec<String> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| match r["tier"].as_str() {
            Some(t) => format!("{} {t}", r["key"].as_str().unwrap()),
            None => r["key"].as_str().unwrap().to_string(),
        })
        .collect()
}

/// Requests, cost in millionths, unpriced requests, sessions.
fn usage_of(r: &Value) -> (u64, f64, u64, u64) {
    (
        r["requests"].as_u64().unwrap(),
        (r["cost_usd"].as_f64().unwrap() * 1e6).round(),
        r["unpriced_requests"].as_u64().unwrap(),
        r["sessions"].as_u64().unwrap(),
    )
}

/// Prompts, hinted prompts, spawns, hinted spawns, followed, upgraded, downgraded.
fn system1_of(r: &Value) -> (Option<u64>, Option<u64>, u64, u64, u64, u64, u64) {
    let n = |k: &str| r[k].as_u64().unwrap();
    (
        r["prompts"].as_u64(),
        r["hinted_prompts"].as_u64(),
        n("spawns"),
        n("hinted_spawns"),
        n("followed"),
        n("upgraded"),
        n("downgraded"),
    )
}

/// Every row's figures add up to the total, and the total is the report's.
fn adds_up(v: &Value, report: &Value) {
    let rows = v["rows"].as_array().unwrap();
    for k in [
        "requests",
        "input",
        "output",
        "cache_creation",
        "cache_write_5m",
        "cache_write_1h",
        "cache_read",
        "total_tokens",
        "unpriced_requests",
        "spawns",
        "hinted_spawns",
        "followed",
        "upgraded",
        "downgraded",
    ] {
        let sum: u64 = rows.iter().map(|r| r[k].as_u64().unwrap()).sum();
        assert_eq!(json!(sum), v["total"][k], "{k}");
    }
    let cost: f64 = rows.iter().map(|r| r["cost_usd"].as_f64().unwrap()).sum();
    close(&v["total"]["cost_usd"], cost);
    close(&v["total"]["cost_usd"], report["totals"]["all"]["cost_usd"].as_f64().unwrap());
    assert_eq!(v["total"]["requests"], report["totals"]["all"]["requests"]);
    assert_eq!(v["total"]["total_tokens"], report["totals"]["all"]["tokens"]["total"]);
    assert_eq!(v["total"]["sessions"], report["totals"]["sessions"]);
    assert_eq!(v["total"]["hinted_spawns"], report["adherence"]["hinted_spawns"]);
    assert_eq!(v["total"]["followed"], report["adherence"]["followed"]);
    let realised: f64 = rows.iter().filter_map(|r| r["realised_usd"].as_f64()).sum();
    close(&v["total"]["realised_usd"], realised);
    close(&v["total"]["realised_usd"], report["savings"]["realised_usd"].as_f64().unwrap());
}

#[test]
fn by_day_week_and_month_match_the_hand_computed_rows() {
    let env = TestEnv::new();
    fixtures(&env.claude_dir);
    let report = report_json(&env, &[]);
    let v = by(&env, "day", &[]);
    assert_eq!(v["timezone"], "UTC");
    assert_eq!(keys(&v), ["2026-11-10", "2026-11-20"]);
    // 11-10: m1..m5, mx, x1 and a1..a4; 8000 + 1550 + 150 + 30 + 110 + 60 + 11000 + 3000 + 30000 + 750.
    let d10 = row(&v, "2026-11-10", None);
    assert_eq!(usage_of(d10), (11, 54650.0, 1, 2));
    // Input: m1 100, m2 10, m3 5, m4 1, m5 7, mx 9, x1 40, a1 1000, a2 100, a3 1000, a4 500.
    assert_eq!(d10["input"], 2772);
    assert_eq!(d10["output"], 50 + 20 + 5 + 1 + 3 + 1 + 4 + 200 + 100 + 1000 + 50);
    assert_eq!((d10["cache_write_5m"].as_u64(), d10["cache_write_1h"].as_u64()), (Some(1000), Some(4000)));
    assert_eq!(d10["cache_creation"], 5000);
    assert_eq!(d10["cache_read"], 12000);
    assert_eq!(d10["total_tokens"], 21206);
    // p1..p4, three hinted; tu1..tu4: tu1 and tu4 followed, tu3 upgraded, tu2 unhinted.
    assert_eq!(system1_of(d10), (Some(4), Some(3), 4, 3, 2, 1, 0));
    close(&d10["realised_usd"], 0.03525);
    let d20 = row(&v, "2026-11-20", None);
    assert_eq!(usage_of(d20), (2, 7710.0, 0, 1));
    assert_eq!(d20["total_tokens"], 2130);
    assert_eq!(system1_of(d20), (Some(1), Some(0), 1, 0, 0, 0, 0));
    close(&d20["realised_usd"], 0.0);
    adds_up(&v, &report);

    // Weeks from Monday: the 10th (a Tuesday) is in the week of the 9th, the 20th (a Friday) of the 16th.
    let w = by(&env, "week", &[]);
    assert_eq!(keys(&w), ["2026-11-09", "2026-11-16"]);
    assert_eq!(usage_of(row(&w, "2026-11-09", None)), (11, 54650.0, 1, 2));
    adds_up(&w, &report);
    let m = by(&env, "month", &[]);
    assert_eq!(keys(&m), ["2026-11"]);
    assert_eq!(usage_of(row(&m, "2026-11", None)), (13, 62360.0, 1, 3));
    assert_eq!(system1_of(row(&m, "2026-11", None)), (Some(5), Some(3), 5, 3, 2, 1, 0));
    adds_up(&m, &report);
}

#[test]
fn by_session_and_project_count_a_forks_copies_once() {
    let env = TestEnv::new();
    fixtures(&env.claude_dir);
    let report = report_json(&env, &[]);
    let v = by(&env, "session", &[]);
    // By last activity, the latest last; sA and sB tie at noon on the 10th, then by id.
    assert_eq!(keys(&v), ["sA", "sB", "sC"]);
    // sB's copies of m1, m2, p1 and tu1 count in sA, the session that sorts first.
    let a = row(&v, "sA", None);
    assert_eq!(usage_of(a), (7, 53730.0, 0, 1));
    assert_eq!(system1_of(a), (Some(3), Some(2), 3, 2, 1, 1, 0));
    close(&a["realised_usd"], 0.033);
    assert_eq!(a["project"], "/home/u/w1");
    assert_eq!(a["last_activity"], "2026-11-10T12:00:00Z");
    let b = row(&v, "sB", None);
    assert_eq!(usage_of(b), (4, 920.0, 1, 1));
    assert_eq!(system1_of(b), (Some(1), Some(1), 1, 1, 1, 0, 0));
    close(&b["realised_usd"], 0.00225);
    let c = row(&v, "sC", None);
    assert_eq!(usage_of(c), (2, 7710.0, 0, 1));
    assert_eq!(c["project"], "/home/u/other");
    adds_up(&v, &report);

    let p = by(&env, "project", &[]);
    // Dearest first, shown by the path their lines name.
    assert_eq!(keys(&p), ["/home/u/w1", "/home/u/other"]);
    let w1 = row(&p, "/home/u/w1", None);
    assert_eq!(usage_of(w1), (11, 54650.0, 1, 2));
    assert_eq!(system1_of(w1), (Some(4), Some(3), 4, 3, 2, 1, 0));
    assert_eq!(usage_of(row(&p, "/home/u/other", None)), (2, 7710.0, 0, 1));
    adds_up(&p, &report);
}

#[test]
fn by_model_and_agent_put_spawns_where_they_ran() {
    let env = TestEnv::new();
    fixtures(&env.claude_dir);
    let report = report_json(&env, &[]);
    let v = by(&env, "model", &[]);
    assert_eq!(
        keys(&v),
        [
            "claude-opus-4-8 opus",
            "claude-haiku-4-5-20251001 haiku",
            "claude-sonnet-4-5-20250929 sonnet",
            "claude-mystery-1 unknown"
        ]
    );
    // Opus: m1..m5, a2, a3. Haiku: a1, a4, x1. Sonnet: m6, a5.
    let opus = row(&v, OPUS, None);
    assert_eq!(usage_of(opus), (7, 42840.0, 0, 2));
    // A prompt has no model; tu2 and tu3 ran on opus (tu3 upgraded past its sonnet hint).
    assert_eq!(system1_of(opus), (None, None, 2, 1, 0, 1, 0));
    let haiku = row(&v, "claude-haiku-4-5-20251001", None);
    assert_eq!(usage_of(haiku), (3, 11810.0, 0, 2));
    assert_eq!(system1_of(haiku), (None, None, 2, 2, 2, 0, 0));
    close(&haiku["realised_usd"], 0.03525);
    assert_eq!(usage_of(row(&v, "claude-sonnet-4-5-20250929", None)), (2, 7710.0, 0, 1));
    assert_eq!(usage_of(row(&v, "claude-mystery-1", None)), (1, 0.0, 1, 1));
    assert_eq!(v["unknown_models"], json!(["claude-mystery-1"]));
    adds_up(&v, &report);

    let a = by(&env, "agent", &[]);
    // Each subagent's type from its .meta.json; the main thread a type of its own; x1, a sidechain
    // line with no subagent file, of no known type.
    assert_eq!(
        keys(&a),
        [
            "general-purpose opus",
            "general-purpose haiku",
            "(main thread) opus",
            "general-purpose sonnet",
            "(main thread) sonnet",
            "(unknown type) haiku",
            "(main thread) unknown"
        ]
    );
    let gp_haiku = row(&a, "general-purpose", Some("haiku"));
    assert_eq!(usage_of(gp_haiku), (2, 11750.0, 0, 2));
    assert_eq!(system1_of(gp_haiku), (None, None, 2, 2, 2, 0, 0));
    close(&gp_haiku["realised_usd"], 0.03525);
    let gp_opus = row(&a, "general-purpose", Some("opus"));
    assert_eq!(usage_of(gp_opus), (2, 33000.0, 0, 1));
    assert_eq!(system1_of(gp_opus), (None, None, 2, 1, 0, 1, 0));
    assert_eq!(usage_of(row(&a, "(main thread)", Some("opus"))), (5, 9840.0, 0, 2));
    assert_eq!(usage_of(row(&a, "(unknown type)", Some("haiku"))), (1, 60.0, 0, 1));
    adds_up(&a, &report);
}

#[test]
fn a_subagent_without_its_meta_file_takes_the_type_its_call_asked_for() {
    let env = TestEnv::new();
    let dir = env.claude_dir.join("projects").join("-home-u-w1");
    let t = "2026-11-10T12:00:00.000Z";
    let mut main = File::new("sE", t).in_dir("/home/u/w1");
    main.prompt("p1");
    let input = json!({"description": "d", "prompt": "SECRET-SUBAGENT-PROMPT", "subagent_type": "Explore"});
    main.reply(
        "a1",
        "m1",
        "r1",
        OPUS,
        usage(10, 10, 0, 0, 0),
        json!([{"type":"tool_use","id":"tu1","name":"Agent","input":input}]),
        false,
    );
    main.agent_result("tu1", "a1", "claude-haiku-4-5-20251001");
    main.write(&dir.join("sE.jsonl"), true);
    // An older Claude Code wrote no .meta.json: the run is found by the agent id the result names.
    let mut sub = File::new("sE", t).in_dir("/home/u/w1");
    sub.reply("s1", "s1", "rs1", "claude-haiku-4-5-20251001", usage(1000, 100, 0, 0, 0), text_block(), true);
    sub.write(&dir.join("sE/subagents/agent-a1.jsonl"), true);
    let a = by(&env, "agent", &[]);
    assert_eq!(keys(&a), ["Explore haiku", "(main thread) opus"]);
    // Haiku 4.5 at $1 in and $5 out: 1000 + 500.
    assert_eq!(usage_of(row(&a, "Explore", Some("haiku"))), (1, 1500.0, 0, 1));
    assert_eq!(row(&a, "Explore", Some("haiku"))["spawns"], 1);
}

#[test]
fn days_are_counted_in_the_chosen_time_zone() {
    let env = TestEnv::new();
    let dir = env.claude_dir.join("projects").join("-home-u-tz");
    // Three requests: one before 15:00 UTC on the 10th, one at 15:00, one at 23:30.
    let mut f = File::new("sT", "2026-11-10T14:59:00.000Z").in_dir("/home/u/tz");
    f.reply("a1", "m1", "r1", "claude-haiku-4-5-20251001", usage(100, 0, 0, 0, 0), text_block(), false);
    f.at("2026-11-10T15:00:00.000Z");
    f.reply("a2", "m2", "r2", "claude-haiku-4-5-20251001", usage(100, 0, 0, 0, 0), text_block(), false);
    f.at("2026-11-10T23:30:00.000Z");
    f.reply("a3", "m3", "r3", "claude-haiku-4-5-20251001", usage(100, 0, 0, 0, 0), text_block(), false);
    f.write(&dir.join("sT.jsonl"), true);
    let counts = |v: &Value| -> Vec<(String, u64)> {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["key"].as_str().unwrap().to_string(), r["requests"].as_u64().unwrap()))
            .collect()
    };
    let utc = by(&env, "day", &[]);
    assert_eq!(counts(&utc), [("2026-11-10".to_string(), 3)]);
    // Tokyo (+09:00): 15:00 UTC is midnight of the 11th.
    let tokyo = by(&env, "day", &["--timezone", "+09:00"]);
    assert_eq!(tokyo["timezone"], "+09:00");
    assert_eq!(counts(&tokyo), [("2026-11-10".to_string(), 1), ("2026-11-11".to_string(), 2)]);
    // A date in --since and --until is that day in the zone: the 11th in Tokyo is 15:00 UTC on the 10th on.
    let only = by(&env, "day", &["--timezone", "+09:00", "--since", "2026-11-11", "--until", "2026-11-11"]);
    assert_eq!(counts(&only), [("2026-11-11".to_string(), 2)]);
    assert_eq!(only["scope"]["since"], "2026-11-10T15:00:00Z");
    assert_eq!(only["scope"]["until"], "2026-11-11T15:00:00Z");
    // New York in November is UTC-5: 23:30 UTC is still the 10th there, and so is everything else.
    let ny = by(&env, "day", &["--timezone", "EST5EDT,M3.2.0,M11.1.0"]);
    assert_eq!(counts(&ny), [("2026-11-10".to_string(), 3)]);
    // The local zone by default: TZ.
    let mut env = env;
    env.set_env("TZ", "<+09>-9");
    assert_eq!(counts(&by(&env, "day", &[])), [("2026-11-10".to_string(), 1), ("2026-11-11".to_string(), 2)]);
    let out = env.run(&["report", "--by", "day", "--timezone", "Mars/Olympus_Mons"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--timezone \"Mars/Olympus_Mons\""), "{}", stderr(&out));
}

#[test]
fn the_by_table_markdown_and_csv_say_the_same() {
    let env = TestEnv::new();
    fixtures(&env.claude_dir);
    let table = stdout(&env.run(&["report", "--by", "session"], ""));
    assert!(!table.contains("SECRET"));
    let md = env.run(&["report", "--by", "session", "--format", "md"], "");
    assert_eq!(md.status.code(), Some(0), "{}", stderr(&md));
    let md = stdout(&md);
    let csv = stdout(&env.run(&["report", "--by", "session", "--format", "csv"], ""));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "key,project,requests,input,output,cache_creation,cache_write_5m,cache_write_1h,cache_read,total_tokens,cost_usd,unpriced_requests,sessions,prompts,hinted_prompts,spawns,hinted_spawns,followed,upgraded,downgraded,realised_usd"
    );
    assert_eq!(lines[1], "sA,/home/u/w1,7,2216,1376,5000,1000,4000,12000,20592,0.053730,0,1,3,2,3,2,1,1,0,0.033000");
    assert_eq!(
        lines.last().copied(),
        Some("total,,13,4792,1544,5000,1000,4000,12000,23336,0.062360,1,3,5,3,5,3,2,1,0,0.035250")
    );
    assert!(csv.ends_with("\r\n"));
    crate::support::snapshots(&env).bind(|| {
        insta::assert_snapshot!("report_by_session_table", table);
        insta::assert_snapshot!("report_by_session_markdown", md);
    });
    // --format needs --by, and is not --json.
    assert_eq!(env.run(&["report", "--format", "csv"], "").status.code(), Some(2));
    assert_eq!(env.run(&["report", "--by", "day", "--format", "csv", "--json"], "").status.code(), Some(2));
}

#[test]
fn the_scope_is_what_the_user_asked_for() {
    let env = TestEnv::new();
    fixtures(&env.claude_dir);
    // Sessions follow the filters: only sC has anything after the 15th, though every file counts
    // as written since (mtime now).
    let late = report_json(&env, &["--since", "2026-11-15"]);
    assert_eq!(late["totals"]["sessions"], 1);
    let none = report_json(&env, &["--days", "3"]);
    assert_eq!((none["totals"]["sessions"].as_u64(), none["totals"]["all"]["requests"].as_u64()), (Some(0), Some(0)));
    // The header names the last day typed, which the report includes.
    let text = stdout(&env.run(&["report", "--since", "2026-11-01", "--until", "2026-11-10"], ""));
    assert!(
        text.starts_with("System-1 usage report: 2026-11-01 to 2026-11-10, 2 sessions\n"),
        "{}",
        text.lines().next().unwrap_or_default()
    );
    let r = report_json(&env, &["--until", "2026-11-10"]);
    assert_eq!(
        (r["scope"]["until_date"].as_str(), r["scope"]["until"].as_str()),
        (Some("2026-11-10"), Some("2026-11-11T00:00:00Z"))
    );
    // --days counts today as one of them.
    let r = report_json(&env, &["--days", "1"]);
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(r["scope"]["since_date"], today);
    assert!(
        stdout(&env.run(&["report", "--days", "1"], ""))
            .starts_with(&format!("System-1 usage report: the last 1 day (since {today}), 0 sessions"))
    );
    assert_eq!(env.run(&["report", "--days", "0"], "").status.code(), Some(2));
    // A project that names nothing is a mistake to point out, with the names there are.
    let out = env.run(&["report", "--project", "nosuch"], "");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("--project \"nosuch\": no project under"), "{err}");
    assert!(err.contains("-home-u-other, -home-u-w1"), "{err}");
    // The usual mix says what it is drawn from, and how many.
    let text = stdout(&env.run(&["report"], ""));
    assert!(text.contains("against the usual mix (2 unhinted spawns: sonnet 50%, opus 50%)"), "{text}");
    assert_eq!(report_json(&env, &[])["savings"]["baseline_samples"], 2);
}

/// ccusage 20.0.24 (`scripts/test` installs it), run on the same history: its `daily` and `session`
/// JSON rows against ours, key by key, to the token and (its offline prices for these models being
/// the same list prices) to the cent's millionth.
fn ccusage(env: &TestEnv, command: &str) -> Option<Value> {
    let exe = support::test_dep(
        "report_views ccusage comparison",
        "SYSTEM1_TEST_CCUSAGE",
        ".test-deps/ccusage-20.0.24/node_modules/.bin/ccusage",
    )?;
    let home = env.root.join("ccusage-home");
    std::fs::create_dir_all(&home).unwrap();
    let out = std::process::Command::new(exe)
        .args(["claude", command, "--json", "--offline", "--timezone", "UTC"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("CLAUDE_CONFIG_DIR", &env.claude_dir)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(out.status.success(), "ccusage {command}: {}", stderr(&out));
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// Our rows against ccusage's, whose key is in `key` (`date`, `sessionId`).
fn same_rows(ours: &Value, theirs: &[Value], key: &str) {
    let mut keys: Vec<&str> = theirs.iter().map(|r| r[key].as_str().unwrap()).collect();
    keys.sort();
    let mut mine: Vec<&str> = ours["rows"].as_array().unwrap().iter().map(|r| r["key"].as_str().unwrap()).collect();
    mine.sort();
    assert_eq!(mine, keys);
    for t in theirs {
        let r = row(ours, t[key].as_str().unwrap(), None);
        for (a, b) in [
            ("input", "inputTokens"),
            ("output", "outputTokens"),
            ("cache_creation", "cacheCreationTokens"),
            ("cache_read", "cacheReadTokens"),
            ("total_tokens", "totalTokens"),
        ] {
            assert_eq!(r[a], t[b], "{}: {a} against ccusage's {b}", t[key]);
        }
        close(&r["cost_usd"], t["totalCost"].as_f64().unwrap());
    }
}

#[test]
fn by_day_and_by_session_agree_with_ccusage() {
    let env = TestEnv::new();
    fixtures(&env.claude_dir);
    let Some(daily) = ccusage(&env, "daily") else { return };
    same_rows(&by(&env, "day", &["--timezone", "UTC"]), daily["daily"].as_array().unwrap(), "date");
    let Some(sessions) = ccusage(&env, "session") else { return };
    // The forked sB's copies of sA's first requests count in sA for both.
    let ours = by(&env, "session", &[]);
    let theirs = sessions["sessions"].as_array().unwrap();
    same_rows(&ours, theirs, "sessionId");
    for t in theirs {
        let last = t["lastActivity"].as_str().unwrap();
        let r = row(&ours, t["sessionId"].as_str().unwrap(), None);
        assert_eq!(r["last_activity"].as_str(), Some(format!("{}Z", &last[..19]).as_str()));
    }
    close(&ours["total"]["cost_usd"], sessions["totals"]["totalCost"].as_f64().unwrap());
}

#[test]
fn a_reply_whose_blocks_straddle_midnight_counts_on_the_day_it_finished_as_ccusage_counts_it() {
    let env = TestEnv::new();
    let dir = env.claude_dir.join("projects").join("-home-u-late");
    // One reply written as two content blocks: the first copy, with a placeholder output count,
    // at 23:59:50; the full one at 00:00:10 the next day. Then a reply of its own on the 11th.
    let mut f = File::new("sL", "2026-11-10T23:59:50.000Z").in_dir("/home/u/late");
    f.reply("a1a", "m1", "r1", OPUS, usage(100, 2, 0, 0, 0), text_block(), false);
    f.at("2026-11-11T00:00:10.000Z");
    f.reply("a1b", "m1", "r1", OPUS, usage(100, 700, 0, 0, 0), text_block(), false);
    f.reply("a2", "m2", "r2", OPUS, usage(10, 20, 0, 0, 0), text_block(), false);
    f.write(&dir.join("sL.jsonl"), true);
    let ours = by(&env, "day", &["--timezone", "UTC"]);
    let rows: Vec<(&str, u64, u64, u64)> = ours["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["key"].as_str().unwrap(),
                r["requests"].as_u64().unwrap(),
                r["input"].as_u64().unwrap(),
                r["output"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(rows, [("2026-11-11", 2, 110, 720)], "the full copy's time decides the day");
    let Some(daily) = ccusage(&env, "daily") else { return };
    same_rows(&ours, daily["daily"].as_array().unwrap(), "date");
}

/// A subagent transcript below `subagents/`, with its `.meta.json` beside it.
fn nested_subagent(dir: &std::path::Path, agent: &str, agent_type: &str, f: &File) {
    f.write(&dir.join(format!("agent-{agent}.jsonl")), true);
    std::fs::write(
        dir.join(format!("agent-{agent}.meta.json")),
        json!({"agentType": agent_type, "description": "a workflow step", "spawnDepth": 2}).to_string(),
    )
    .unwrap();
}

/// Every API request under `projects`, counted without system1's reader: each `.jsonl` file at any
/// depth, each line that parses and is an assistant reply with usage, deduplicated on `message.id` +
/// `requestId` keeping the copy with the most tokens. (input, output, cache writes, cache reads).
fn independent_count(projects: &std::path::Path) -> [u64; 4] {
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    let mut paths = Vec::new();
    files(projects, &mut paths);
    let mut best: std::collections::HashMap<String, [u64; 4]> = std::collections::HashMap::new();
    let mut unkeyed = [0u64; 4];
    for p in paths {
        for line in std::fs::read_to_string(&p).unwrap().lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
            if v["type"] != "assistant" || !v["message"]["usage"].is_object() {
                continue;
            }
            let u = &v["message"]["usage"];
            let n = |k: &str| u[k].as_u64().unwrap_or(0);
            let t =
                [n("input_tokens"), n("output_tokens"), n("cache_creation_input_tokens"), n("cache_read_input_tokens")];
            match (v["message"]["id"].as_str(), v["requestId"].as_str()) {
                (Some(id), Some(req)) => {
                    let e = best.entry(format!("{id}:{req}")).or_default();
                    if t.iter().sum::<u64>() > e.iter().sum::<u64>() {
                        *e = t;
                    }
                }
                _ => (0..4).for_each(|i| unkeyed[i] += t[i]),
            }
        }
    }
    best.values().fold(unkeyed, |mut acc, t| {
        (0..4).for_each(|i| acc[i] += t[i]);
        acc
    })
}

/// Claude Code writes a Workflow agent's transcript in folders below `subagents/`
/// (`subagents/workflows/<wf>/agent-<id>.jsonl`, with its `.meta.json`). The report reads them at
/// any depth: its totals equal a count of every transcript made without its reader, and ccusage's.
#[test]
fn nested_subagent_transcripts_are_read_and_agree_with_an_independent_count_and_ccusage() {
    let env = TestEnv::new();
    let projects = fixtures(&env.claude_dir);
    let flat = report_json(&env, &[]);
    let sub = projects.join("-home-u-w1").join("sA").join("subagents");
    let t = "2026-11-10T12:00:00.000Z";
    // Two levels down: haiku 4.5, 300 input and 30 output tokens, $0.00045.
    let mut w1 = File::new("sA", t).in_dir("/home/u/w1");
    w1.reply("w1a", "w1", "rw1", "claude-haiku-4-5-20251001", usage(300, 2, 0, 0, 0), text_block(), true);
    w1.reply("w1b", "w1", "rw1", "claude-haiku-4-5-20251001", usage(300, 30, 0, 0, 0), text_block(), true);
    nested_subagent(&sub.join("workflows").join("wf_1"), "w1", "workflow-step", &w1);
    // Three levels down: sonnet 4.5, 200 input and 20 output tokens, $0.0009.
    let mut w2 = File::new("sA", t).in_dir("/home/u/w1");
    w2.reply("w2a", "w2", "rw2", "claude-sonnet-4-5-20250929", usage(200, 20, 0, 0, 0), text_block(), true);
    nested_subagent(&sub.join("workflows").join("wf_1").join("steps"), "w2", "Explore", &w2);

    let r = report_json(&env, &[]);
    let n = |v: &Value| v.as_u64().unwrap();
    assert_eq!(n(&r["read"]["subagent_files"]), n(&flat["read"]["subagent_files"]) + 2);
    assert_eq!(n(&r["totals"]["subagents"]["requests"]), n(&flat["totals"]["subagents"]["requests"]) + 2);
    close(&r["totals"]["all"]["cost_usd"], flat["totals"]["all"]["cost_usd"].as_f64().unwrap() + 0.00045 + 0.0009);
    // The .meta.json beside each is read: the agent view names their types.
    let agents = by(&env, "agent", &[]);
    assert_eq!(usage_of(row(&agents, "workflow-step", Some("haiku"))).0, 1);
    assert_eq!(usage_of(row(&agents, "Explore", Some("sonnet"))).0, 1);

    let ours = by(&env, "day", &["--timezone", "UTC"]);
    let [input, output, cache_creation, cache_read] = independent_count(&projects);
    let total = &ours["total"];
    assert_eq!(
        [n(&total["input"]), n(&total["output"]), n(&total["cache_creation"]), n(&total["cache_read"])],
        [input, output, cache_creation, cache_read]
    );
    assert_eq!(n(&r["totals"]["all"]["tokens"]["total"]), input + output + cache_creation + cache_read);
    let Some(daily) = ccusage(&env, "daily") else { return };
    same_rows(&ours, daily["daily"].as_array().unwrap(), "date");
}
