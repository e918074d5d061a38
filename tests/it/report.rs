//! `system1 report` on fixture transcripts in the real Claude Code layout (main files, subagent files
//! with `.meta.json`, a forked session, streaming duplicates with placeholder output counts, an
//! old-style sidechain line, hook attachments with the hint marker, Agent tool uses with a `model`,
//! tool results with `resolvedModel` including a `[1m]` suffix, malformed lines, a truncated file).
//! Every figure is checked against the value worked out by hand in the comments.

use std::path::{Path, PathBuf};

use crate::support;
use crate::support::{TestEnv, stdout};
use serde_json::{Value, json};

const OPUS: &str = "claude-opus-4-8";
const SONNET: &str = "claude-sonnet-4-5-20250929";
const HAIKU: &str = "claude-haiku-4-5-20251001";
/// Eleven words: long enough for the routing hook.
const PROMPT_TEXT: &str = "SECRET-PROMPT-TEXT please refactor the parser module and keep every test green";
/// Three words: a follow-up the hook stays silent on.
const SHORT_TEXT: &str = "SECRET yes go";

/// A routing hint of exactly 80 characters (20 tokens at four characters a token).
pub(crate) fn routing_hint(tier: &str) -> String {
    let h = format!("System-1 routing hint: spawn subagents with model \"{tier}\"");
    format!("{h:.<80}")
}

/// A skill hint of exactly 40 characters (10 tokens).
pub(crate) fn skill_hint() -> String {
    format!("{:.<40}", "System-1 skill hint: consider `pdf`")
}

pub(crate) struct File {
    pub(crate) lines: Vec<String>,
    session: String,
    ts: String,
    /// The working directory every line names, as Claude Code writes it.
    cwd: Option<String>,
}

impl File {
    pub(crate) fn new(session: &str, ts: &str) -> Self {
        File { lines: Vec::new(), session: session.into(), ts: ts.into(), cwd: None }
    }

    pub(crate) fn in_dir(mut self, cwd: &str) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Lines from here on carry this timestamp.
    pub(crate) fn at(&mut self, ts: &str) {
        self.ts = ts.into();
    }

    pub(crate) fn push(&mut self, mut v: Value) {
        let obj = v.as_object_mut().unwrap();
        obj.insert("sessionId".into(), json!(self.session));
        obj.insert("timestamp".into(), json!(self.ts));
        if let Some(cwd) = &self.cwd {
            obj.insert("cwd".into(), json!(cwd));
        }
        obj.entry("isSidechain").or_insert(json!(false));
        obj.insert("userType".into(), json!("external"));
        self.lines.push(serde_json::to_string(&v).unwrap());
    }

    pub(crate) fn raw(&mut self, s: &str) {
        self.lines.push(s.to_string());
    }

    pub(crate) fn prompt(&mut self, uuid: &str) {
        self.push(json!({"type":"user","uuid":uuid,"parentUuid":null,"promptId":"p",
            "message":{"role":"user","content":format!("{PROMPT_TEXT} {uuid}")}}));
    }

    pub(crate) fn short_prompt(&mut self, uuid: &str) {
        self.push(json!({"type":"user","uuid":uuid,"parentUuid":null,"promptId":"p",
            "message":{"role":"user","content":SHORT_TEXT}}));
    }

    pub(crate) fn hint(&mut self, uuid: &str, parent: &str, text: &str) {
        self.push(json!({"type":"attachment","uuid":uuid,"parentUuid":parent,
            "attachment":{"type":"hook_additional_context","content":[text],"hookName":"UserPromptSubmit",
                          "toolUseID":"UserPromptSubmit","hookEvent":"UserPromptSubmit"}}));
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn reply(
        &mut self,
        uuid: &str,
        id: &str,
        req: &str,
        model: &str,
        usage: Value,
        content: Value,
        sidechain: bool,
    ) {
        self.push(json!({"type":"assistant","uuid":uuid,"isSidechain":sidechain,"requestId":req,
            "message":{"id":id,"model":model,"role":"assistant","content":content,"stop_reason":null,"usage":usage}}));
    }

    pub(crate) fn agent_result(&mut self, tool_use: &str, agent: &str, resolved: &str) {
        // The parent's copy of the subagent's usage must never be counted: huge numbers make it obvious.
        self.push(json!({"type":"user","uuid":format!("r-{tool_use}"),
            "message":{"role":"user","content":[{"tool_use_id":tool_use,"type":"tool_result",
                "content":[{"type":"text","text":"done"}]}]},
            "toolUseResult":{"status":"completed","agentId":agent,"agentType":"general-purpose","resolvedModel":resolved,
                "totalTokens":999999,"usage":{"input_tokens":900000,"output_tokens":90000}}}));
    }

    pub(crate) fn write(&self, path: &Path, trailing_newline: bool) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut text = self.lines.join("\n");
        if trailing_newline {
            text.push('\n');
        }
        std::fs::write(path, text).unwrap();
    }
}

pub(crate) fn usage(input: u64, output: u64, w5: u64, w1: u64, read: u64) -> Value {
    json!({"input_tokens":input,"output_tokens":output,"cache_creation_input_tokens":w5 + w1,
           "cache_read_input_tokens":read,"cache_creation":{"ephemeral_5m_input_tokens":w5,"ephemeral_1h_input_tokens":w1},
           "service_tier":"standard"})
}

pub(crate) fn spawn(id: &str, model: Option<&str>) -> Value {
    let mut input =
        json!({"description":"look around","prompt":"SECRET-SUBAGENT-PROMPT","subagent_type":"general-purpose"});
    if let Some(m) = model {
        input["model"] = json!(m);
    }
    json!([{"type":"tool_use","id":id,"name":"Agent","input":input}])
}

pub(crate) fn text_block() -> Value {
    json!([{"type":"text","text":"working on it\nnow"}])
}

pub(crate) fn subagent(dir: &Path, session: &str, agent: &str, tool_use: &str, f: &File, complete: bool) {
    let sub = dir.join(session).join("subagents");
    f.write(&sub.join(format!("agent-{agent}.jsonl")), complete);
    std::fs::write(
        sub.join(format!("agent-{agent}.meta.json")),
        json!({"agentType":"general-purpose","description":"look around","toolUseId":tool_use,"spawnDepth":1})
            .to_string(),
    )
    .unwrap();
}

/// Writes the fixture history under `<claude_dir>/projects` and returns that dir.
pub(crate) fn fixtures(claude_dir: &Path) -> PathBuf {
    let projects = claude_dir.join("projects");
    let w1 = projects.join("-home-u-w1");
    let other = projects.join("-home-u-other");
    let t_ab = "2026-11-10T12:00:00.000Z";

    // Session A.
    let mut a = File::new("sA", t_ab).in_dir("/home/u/w1");
    a.push(json!({"type":"attachment","uuid":"ss","attachment":{"type":"hook_additional_context",
        "content":["System-1 is ready"],"hookName":"SessionStart","hookEvent":"SessionStart"}}));
    a.prompt("p1");
    a.hint("h1", "p1", &routing_hint("haiku"));
    // One reply, two content blocks: the first copy carries a placeholder output count.
    a.reply("a1a", "m1", "r1", OPUS, usage(100, 2, 1000, 0, 0), text_block(), false);
    a.reply("a1b", "m1", "r1", OPUS, usage(100, 50, 1000, 0, 0), spawn("tu1", Some("haiku")), false);
    a.agent_result("tu1", "a1", HAIKU);
    a.reply("a2", "m2", "r2", OPUS, usage(10, 20, 0, 0, 2000), text_block(), false);
    let fork_prefix = a.lines[1..a.lines.len()].to_vec();
    a.short_prompt("p2");
    a.reply("a3", "m3", "r3", OPUS, usage(5, 5, 0, 0, 0), spawn("tu2", None), false);
    a.agent_result("tu2", "a2", "claude-opus-4-8[1m]");
    a.prompt("p3");
    a.hint("h3", "p3", &routing_hint("sonnet"));
    a.reply("a4", "m4", "r4", OPUS, usage(1, 1, 0, 0, 0), spawn("tu3", Some("opus")), false);
    a.agent_result("tu3", "a3", OPUS);
    a.push(json!({"type":"queue-operation","operation":"enqueue","content":"SECRET queued prompt"}));
    a.push(json!({"type":"last-prompt","lastPrompt":"SECRET last prompt"}));
    a.push(json!({"type":"user","uuid":"meta","isMeta":true,"message":{"role":"user","content":"Caveat: generated"}}));
    a.raw(r#"{"type":"assistant","message":{"id":"broken""#);
    a.raw(r#"{"type":"user","message":{"content":"x"}, oops}"#);
    a.write(&w1.join("sA.jsonl"), true);

    let mut s1 = File::new("sA", t_ab).in_dir("/home/u/w1");
    s1.push(json!({"type":"user","uuid":"s1u","isSidechain":true,"agentId":"a1","message":{"role":"user","content":"SECRET-SUBAGENT-PROMPT"}}));
    s1.reply("s1a", "s1", "rs1", HAIKU, usage(1000, 1, 0, 4000, 10000), text_block(), true);
    s1.reply("s1b", "s1", "rs1", HAIKU, usage(1000, 200, 0, 4000, 10000), text_block(), true);
    subagent(&w1, "sA", "a1", "tu1", &s1, true);
    let mut s2 = File::new("sA", t_ab);
    s2.reply("s2a", "s2", "rs2", OPUS, usage(100, 100, 0, 0, 0), text_block(), true);
    subagent(&w1, "sA", "a2", "tu2", &s2, true);
    let mut s3 = File::new("sA", t_ab);
    s3.reply("s3a", "s3", "rs3", OPUS, usage(1000, 1000, 0, 0, 0), text_block(), true);
    s3.raw(r#"{"type":"assistant","isSidechain":true,"message":{"id":"s3b","usage":{"input_tok"#);
    subagent(&w1, "sA", "a3", "tu3", &s3, false);

    // Session B: a fork of A (same lines, new sessionId), then its own turn, whose hint was written
    // before its prompt.
    let mut b = File::new("sB", t_ab).in_dir("/home/u/w1");
    for l in &fork_prefix {
        let mut v: Value = serde_json::from_str(l).unwrap();
        v["sessionId"] = json!("sB");
        b.lines.push(v.to_string());
    }
    b.hint("h4", "a2", &routing_hint("haiku"));
    b.prompt("p4");
    b.reply("a5", "m5", "r5", OPUS, usage(7, 3, 0, 0, 0), spawn("tu4", Some("haiku")), false);
    b.agent_result("tu4", "a4", HAIKU);
    // An old-layout subagent line inside the main file.
    b.reply("x1", "x1", "rx1", HAIKU, usage(40, 4, 0, 0, 0), text_block(), true);
    b.reply("mx", "mx", "rmx", "claude-mystery-1", usage(9, 1, 0, 0, 0), text_block(), false);
    b.reply("sy", "sy", "rsy", "<synthetic>", usage(0, 0, 0, 0, 0), text_block(), false);
    b.write(&w1.join("sB.jsonl"), true);
    let mut s4 = File::new("sB", t_ab);
    s4.reply("s4a", "s4", "rs4", HAIKU, usage(500, 50, 0, 0, 0), text_block(), true);
    subagent(&w1, "sB", "a4", "tu4", &s4, true);

    // Session C, another project, ten days later: no routing hint, one skill hint, one spawn.
    let t_c = "2026-11-20T12:00:00.000Z";
    let mut c = File::new("sC", t_c).in_dir("/home/u/other");
    c.prompt("p5");
    c.hint("h5", "p5", &skill_hint());
    c.reply("a6", "m6", "r6", SONNET, usage(20, 10, 0, 0, 0), spawn("tu5", Some("sonnet")), false);
    c.agent_result("tu5", "a5", SONNET);
    c.write(&other.join("sC.jsonl"), true);
    let mut s5 = File::new("sC", t_c);
    s5.reply("s5a", "s5", "rs5", SONNET, usage(2000, 100, 0, 0, 0), text_block(), true);
    subagent(&other, "sC", "a5", "tu5", &s5, true);
    projects
}

pub(crate) fn report_json(env: &TestEnv, args: &[&str]) -> Value {
    let mut all = vec!["report", "--json"];
    all.extend_from_slice(args);
    let out = env.run(&all, "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    assert!(!text.contains("SECRET"), "prompt text leaked into the report");
    serde_json::from_str(&text).unwrap()
}

pub(crate) fn close(v: &Value, expected: f64) {
    let got = v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    assert!((got - expected).abs() < 1e-9, "got {got}, expected {expected}");
}

#[test]
fn every_figure_matches_the_hand_computed_value() {
    let env = TestEnv::new();
    fixtures(&env.claude_dir);
    let r = report_json(&env, &[]);

    // Read counts: 2 malformed lines in sA, 1 torn line in agent-a3, which is the one truncated file.
    assert_eq!(r["read"]["files"], 8);
    assert_eq!(r["read"]["subagent_files"], 5);
    assert_eq!(r["read"]["malformed_lines"], 3);
    assert_eq!(r["read"]["truncated_files"], 1);

    // Prompts p1..p5 (p1's fork copy is the same prompt); p1, p3, p4 got routing hints.
    assert_eq!(r["reach"]["prompts"], 5);
    assert_eq!(r["reach"]["hinted_prompts"], 3);
    close(&r["reach"]["share"], 0.6);
    // p2 is a three-word follow-up: of the four long prompts, three were hinted.
    assert_eq!(r["reach"]["long_prompts"], 4);
    assert_eq!(r["reach"]["hinted_long_prompts"], 3);
    close(&r["reach"]["share_of_long"], 0.75);
    assert_eq!(r["reach"]["routing_hints"], 3);
    assert_eq!(r["reach"]["skill_hints"], 1);

    // tu1 haiku→haiku and tu4 haiku→haiku followed; tu3 sonnet→opus upgraded; tu2, tu5 unhinted.
    let a = &r["adherence"];
    assert_eq!(a["spawns"], 5);
    assert_eq!(a["hinted_spawns"], 3);
    assert_eq!(a["followed"], 2);
    assert_eq!(a["upgraded"], 1);
    assert_eq!(a["downgraded"], 0);
    assert_eq!(a["with_model_given"], 3);
    close(&a["share"], 2.0 / 3.0);

    // Main thread: m1 (100 in, 50 out, 1000 5m writes), m2, m3, m4, m5, the mystery model and m6.
    // Costs in millionths of a dollar: m1 8000, m2 1550, m3 150, m4 30, m5 110, m6 210.
    let t = &r["totals"];
    assert_eq!(t["main"]["requests"], 7);
    assert_eq!(t["main"]["tokens"]["total"], 3242);
    assert_eq!(t["main"]["unpriced_requests"], 1);
    close(&t["main"]["cost_usd"], 0.01005);
    // Subagents: s1 11000, s2 3000, s3 30000, s4 750, x1 60, s5 7500; the toolUseResult copies never count.
    assert_eq!(t["subagents"]["requests"], 6);
    assert_eq!(t["subagents"]["tokens"]["total"], 20094);
    close(&t["subagents"]["cost_usd"], 0.05231);
    assert_eq!(t["all"]["tokens"]["cache_write_1h"], 4000);
    assert_eq!(t["all"]["tokens"]["cache_write_5m"], 1000);
    assert_eq!(t["all"]["tokens"]["cache_read"], 12000);
    assert_eq!(t["duplicate_copies"], 2);
    assert_eq!(t["sessions"], 3);

    let tiers: Vec<&Value> = r["subagents_by_tier"].as_array().unwrap().iter().collect();
    let tier = |name: &str| *tiers.iter().find(|t| t["tier"] == name).unwrap();
    let names: Vec<&str> = tiers.iter().map(|t| t["tier"].as_str().unwrap()).collect();
    assert_eq!(names, ["haiku", "sonnet", "opus"], "no fable row where nothing ran on fable");
    assert_eq!(tier("haiku")["spawns"], 2);
    assert_eq!(tier("haiku")["requests"], 3);
    assert_eq!(tier("haiku")["tokens"]["total"], 15794);
    close(&tier("haiku")["cost_usd"], 0.01181);
    assert_eq!(tier("sonnet")["spawns"], 1);
    close(&tier("sonnet")["cost_usd"], 0.0075);
    assert_eq!(tier("opus")["spawns"], 2);
    assert_eq!(tier("opus")["tokens"]["total"], 2200);
    close(&tier("opus")["cost_usd"], 0.033);

    // Usual mix: the unhinted spawns, tu2 (opus) and tu5 (sonnet), half each.
    // tu1 at that mix: (33000 sonnet + 55000 opus) / 2 = 44000, ran for 11000: saved 33000.
    // tu4: (2250 + 3750) / 2 = 3000, ran for 750: saved 2250. Realised 35250.
    // tu3 hinted sonnet (18000) ran on opus (30000): missed 12000.
    // Overhead: m1 20×6.25, m2 20×0.5, m3 20×0.5, m4 20×6.25+20×0.5, m5 the same, m6 10×3.75 = 452.5.
    let s = &r["savings"];
    assert_eq!(s["baseline"], "unhinted spawns");
    close(&s["mix"]["opus"], 0.5);
    close(&s["mix"]["sonnet"], 0.5);
    assert_eq!(s["tier_models"]["haiku"], HAIKU);
    close(&s["realised_usd"], 0.03525);
    assert_eq!(s["followed_spawns_priced"], 2);
    close(&s["missed_usd"], 0.012);
    assert_eq!(s["hint_tokens"], 70);
    close(&s["hint_overhead_usd"], 0.0004525);
    close(&s["net_usd"], 0.03525 - 0.0004525);

    assert_eq!(r["unknown_models"], json!(["claude-mystery-1"]));
    let models = r["models"].as_array().unwrap();
    let mystery = models.iter().find(|m| m["model"] == "claude-mystery-1").unwrap();
    assert!(mystery["cost_usd"].is_null());
    assert!(models.iter().all(|m| m["model"] != "<synthetic>"));
    let opus = models.iter().find(|m| m["model"] == OPUS).unwrap();
    // m1..m5 main plus s2, s3.
    assert_eq!(opus["requests"], 7);
    assert_eq!(opus["tokens"]["input"], 100 + 10 + 5 + 1 + 7 + 100 + 1000);
    assert_eq!(opus["tokens"]["cache_creation"], 1000);
    assert!(r["prices"]["note"].as_str().unwrap().contains("subscription"));
    assert_eq!(r["calibrate"]["suggested"], false);
}

#[test]
fn project_and_time_filters_narrow_the_history() {
    let env = TestEnv::new();
    fixtures(&env.claude_dir);
    let only_c = report_json(&env, &["--project", "other"]);
    assert_eq!(only_c["reach"]["prompts"], 1);
    assert_eq!(only_c["adherence"]["spawns"], 1);
    // One of each is said in the singular on the chart ("1 spawns" before).
    let svg = env.root.join("one.svg");
    let out = env.run(&["report", "--project", "other", "--svg", svg.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(0), "{}", support::stderr(&out));
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains(" · 1 session · 1 prompt · 1 subagent spawn<"), "{svg}");
    assert!(svg.contains(">0 of 1 prompt · "), "the reach card too: {svg}");
    assert_eq!(only_c["read"]["files"], 2);
    // With no unhinted... tu5 is unhinted, so the baseline is still spawns, and nothing was followed.
    close(&only_c["savings"]["realised_usd"], 0.0);

    let path = report_json(&env, &["--project", "/home/u/w1"]);
    assert_eq!(path["reach"]["prompts"], 4);

    let late = report_json(&env, &["--since", "2026-11-15"]);
    assert_eq!(late["reach"]["prompts"], 1);
    assert_eq!(late["totals"]["subagents"]["requests"], 1);
    let early = report_json(&env, &["--until", "2026-11-10"]);
    assert_eq!(early["reach"]["prompts"], 4);
    assert_eq!(early["reach"]["hinted_prompts"], 3);
    let none = report_json(&env, &["--until", "2026-11-09"]);
    assert_eq!(none["reach"]["prompts"], 0);
    assert!(none["reach"]["share"].is_null());
}

#[test]
fn dir_option_and_table_and_svg_output() {
    let env = TestEnv::new();
    let projects = fixtures(&env.root.join("elsewhere"));
    let svg = env.root.join("report.svg");
    let out = env.run(&["report", "--dir", projects.to_str().unwrap(), "--svg", svg.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(0));
    // Its reach, adherence, unpriced model and the calibrate hint are in the report_table snapshot.
    let text = stdout(&out);
    assert!(!text.contains("SECRET"));
    // Progress goes to stderr only on a terminal: a test's stderr is a pipe.
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("Is System-1 worth it?"));
    assert!(svg.contains("60%"));
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    assert!(!svg.contains("SECRET"));
    support::snapshots(&env).bind(|| {
        insta::assert_snapshot!("report_table", text);
        insta::assert_snapshot!("report_chart_svg", svg);
    });
}

#[test]
fn missing_dir_and_bad_dates_are_clear_errors() {
    let env = TestEnv::new();
    let out = env.run(&["report"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(support::stderr(&out).contains("projects"));
    fixtures(&env.claude_dir);
    let out = env.run(&["report", "--since", "last tuesday"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(support::stderr(&out).contains("--since"));
    let out = env.run(&["report", "--since", "2026-11-20", "--until", "2026-11-01"], "");
    assert_eq!(out.status.code(), Some(2));
    let prices = env.root.join("prices.json");
    std::fs::write(&prices, "{not json").unwrap();
    let out = env.run(&["report", "--prices", prices.to_str().unwrap()], "");
    assert_ne!(out.status.code(), Some(0));
    assert!(support::stderr(&out).contains("prices.json"));
}

#[test]
fn a_spawn_that_ran_on_fable_gets_a_fable_row() {
    let env = TestEnv::new();
    let dir = env.claude_dir.join("projects").join("-home-u-w1");
    let t = "2026-11-10T12:00:00.000Z";
    let mut main = File::new("sF", t);
    main.prompt("p1");
    main.hint("h1", "p1", &routing_hint("fable"));
    main.reply("a1", "m1", "r1", OPUS, usage(10, 10, 0, 0, 0), spawn("tu1", Some("fable")), false);
    main.agent_result("tu1", "a1", "claude-fable-5-2");
    main.write(&dir.join("sF.jsonl"), true);
    let mut sub = File::new("sF", t);
    sub.reply("s1", "s1", "rs1", "claude-fable-5-2", usage(1000, 100, 0, 0, 0), text_block(), true);
    subagent(&dir, "sF", "a1", "tu1", &sub, true);
    let r = report_json(&env, &[]);
    let tiers = r["subagents_by_tier"].as_array().unwrap();
    let names: Vec<&str> = tiers.iter().map(|t| t["tier"].as_str().unwrap()).collect();
    assert_eq!(names, ["haiku", "sonnet", "opus", "fable"], "cheapest first, fable last");
    let fable = &tiers[3];
    assert_eq!((fable["spawns"].as_u64(), fable["requests"].as_u64()), (Some(1), Some(1)));
    // Fable 5.2 at $8 input and $40 output per million: 1000 × 8 + 100 × 40.
    close(&fable["cost_usd"], 0.012);
    assert_eq!(tiers[0]["spawns"], 0, "the three usual tiers are listed even when empty");
    // The hint named fable and the spawn ran there: followed. With no unhinted spawn the usual mix
    // is the main thread's (opus 4.8), where the same tokens cost 1000 × 5 + 100 × 25.
    assert_eq!(r["adherence"]["followed"], 1);
    assert_eq!(r["savings"]["baseline"], "main thread");
    close(&r["savings"]["realised_usd"], 0.0075 - 0.012);
}

/// Every model id the two Claude Code versions resolve or know, on both sides of each price change.
/// Each request: 1,000 input, 100 output, 200 5-minute and 100 1-hour cache writes, 10,000 cache
/// reads, so a price (input, output, 5m, 1h, read) in dollars per million tokens comes to
/// 1000·in + 100·out + 200·5m + 100·1h + 10000·read millionths of a dollar.
const EVERY_MODEL: [(&str, &str, f64); 13] = [
    ("claude-opus-4-8", "opus", 14750.0),           // 5, 25, 6.25, 10, 0.5
    ("claude-sonnet-5", "sonnet", 5900.0),          // 2, 10, 2.5, 4, 0.2
    ("claude-haiku-4-5-20251001", "haiku", 2950.0), // 1, 5, 1.25, 2, 0.1
    ("claude-fable-5", "fable", 29500.0),           // 10, 50, 12.5, 20, 1
    ("claude-opus-5-5", "opus", 9800.0),            // 4, 20, 5, 8, 0.2
    ("claude-sonnet-5-5", "sonnet", 5900.0),        // 2, 10, 2.5, 4, 0.2 before 2026-10-07 (0.1 from then: 4900)
    ("claude-sonnet-5-5[1m]", "sonnet", 5900.0),    // the same model
    ("claude-haiku-5-5", "haiku", 295.0),           // 0.1, 0.5, 0.125, 0.2, 0.01 (a prompt of 11,300)
    ("claude-fable-5-1", "fable", 22000.0),         // 10, 50, 12.5, 20, 0.25
    ("claude-fable-5-2", "fable", 17600.0),         // 8, 40, 10, 16, 0.2
    ("claude-mythos-5", "fable", 29500.0),          // as Fable 5
    ("claude-mythos-5-1", "fable", 22000.0),        // as Fable 5.1
    ("claude-mythos-5-2", "fable", 17600.0),        // as Fable 5.2
];

#[test]
fn every_model_id_is_priced_at_the_price_in_force_on_its_day() {
    let env = TestEnv::new();
    let dir = env.claude_dir.join("projects").join("-home-u-prices");
    // The last moment before Sonnet 5.5's cache reads went from $0.20 to $0.10, and the first after.
    let days = [("before", "2026-10-06T23:59:59.999Z"), ("after", "2026-10-07T00:00:00.000Z")];
    for (side, ts) in days {
        let mut f = File::new(side, ts);
        for (i, (model, _, _)) in EVERY_MODEL.iter().enumerate() {
            let id = format!("{side}-{i}");
            f.reply(&id, &id, &format!("r-{id}"), model, usage(1000, 100, 200, 100, 10_000), text_block(), false);
        }
        if side == "before" {
            // Haiku 5.5's band: a prompt of exactly 100,000 tokens (input + reads + both writes) is
            // short: 40000×0.1 + 1000×0.5 + 10000×0.125 + 10000×0.2 + 40000×0.01 = 8150. One more
            // token and the whole request is long: 40001×0.5 + 1000×2.5 + 10000×0.625 + 10000×1.0
            // + 40000×0.05 = 40750.5.
            f.reply(
                "h1",
                "h1",
                "r-h1",
                "claude-haiku-5-5",
                usage(40_000, 1000, 10_000, 10_000, 40_000),
                text_block(),
                false,
            );
            f.reply(
                "h2",
                "h2",
                "r-h2",
                "claude-haiku-5-5",
                usage(40_001, 1000, 10_000, 10_000, 40_000),
                text_block(),
                false,
            );
        }
        f.write(&dir.join(format!("{side}.jsonl")), true);
    }
    let r = report_json(&env, &[]);
    assert_eq!(r["unknown_models"], json!([]), "{}", r["unknown_models"]);
    let models = r["models"].as_array().unwrap();
    let mut total = 0.0;
    for (model, tier, micro) in EVERY_MODEL {
        let row = models.iter().find(|m| m["model"] == model).unwrap_or_else(|| panic!("no row for {model}"));
        assert_eq!(row["tier"], tier, "{model}");
        assert!(row["priced_as"].is_string(), "{model}: {row}");
        let expected = match model {
            "claude-sonnet-5-5" | "claude-sonnet-5-5[1m]" => 5900.0 + 4900.0,
            "claude-haiku-5-5" => 2.0 * 295.0 + 8150.0 + 40750.5,
            _ => 2.0 * micro,
        };
        close(&json!(row["cost_usd"].as_f64().unwrap() * 1e6), expected);
        total += expected;
    }
    // 183,695 before, 181,695 after, and the two band requests: 414,290.5 millionths of a dollar.
    assert!((total - 414_290.5).abs() < 1e-6, "{total}");
    close(&r["totals"]["all"]["cost_usd"], 0.4142905);
    assert_eq!(r["totals"]["all"]["unpriced_requests"], 0);
    assert_eq!(r["totals"]["all"]["requests"], 28);
}

#[test]
fn a_price_override_reprices_everything() {
    let env = TestEnv::new();
    fixtures(&env.claude_dir);
    // Every model at $1 per million tokens of every kind; mystery stays unknown.
    let flat = |family: &str| {
        json!({"name":format!("{family} flat"),"family":family,"from":"0","input":1.0,"output":1.0,
               "cache_write_5m":1.0,"cache_write_1h":1.0,"cache_read":1.0})
    };
    let prices = env.root.join("flat.json");
    std::fs::write(&prices, json!({"as_of":"test","models":[flat("opus"),flat("sonnet"),flat("haiku")]}).to_string())
        .unwrap();
    let r = report_json(&env, &["--prices", prices.to_str().unwrap()]);
    // All priced tokens: 3242 + 20094 - 10 (mystery) = 23326.
    close(&r["totals"]["all"]["cost_usd"], 23326.0 / 1e6);
    assert_eq!(r["prices"]["as_of"], "test");
}

/// A routing log beside the fixture history: the agent hook's entries for its spawns tu1 to tu5 and
/// two spawns the transcripts do not hold (tu6, tu7), the PostToolUse hook's spawn entries, and
/// lines the section must pass over.
pub(crate) fn routing_log(path: &Path) {
    let (w1, other) = ("/home/u/w1", "/home/u/other");
    let (t_ab, t_c) = ("2026-11-10T12:00:01.000Z", "2026-11-20T12:00:01.000Z");
    let agent = |session: &str, id: &str, cwd: &str, time: &str, extra: Value| {
        let mut v = json!({"id": format!("e-{id}"), "time": time, "source": "agent", "session_id": session,
            "repo": cwd, "cwd": cwd, "prompt": "SECRET-SUBAGENT-PROMPT", "tool_use_id": id});
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v.to_string()
    };
    let ran = |session: &str, id: &str, resolved: &str, tier: &str, took: Option<bool>| {
        let mut v = json!({"source": "spawn", "session_id": session, "tool_use_id": id,
            "resolved_model": resolved, "ran_tier": tier});
        if let Some(t) = took {
            v["took_effect"] = json!(t);
        }
        v.to_string()
    };
    let lines = [
        // Record only: tu1 (rule haiku, ran haiku), tu3 from before enforcement (rule sonnet, ran opus).
        agent(
            "sA",
            "tu1",
            w1,
            t_ab,
            json!({"enforce": "off", "chosen": "haiku", "tier_before": "haiku",
            "rule_tier": "haiku", "decision": "haiku", "outcome": "succeeded"}),
        ),
        agent(
            "sA",
            "tu3",
            w1,
            t_ab,
            json!({"chosen": "opus", "rule_tier": "sonnet", "decision": "sonnet", "outcome": "failed"}),
        ),
        // fill: tu2 named no model, set to opus, ran on opus.
        agent("sA", "tu2", w1, t_ab, json!({"enforce": "fill", "rule_tier": "opus", "tier_after": "opus"})),
        ran("sA", "tu2", "claude-opus-4-8[1m]", "opus", Some(true)),
        // set: tu4 named sonnet, lowered to haiku; no spawn entry, the transcript says haiku.
        agent(
            "sB",
            "tu4",
            w1,
            t_ab,
            json!({"enforce": "set", "chosen": "sonnet", "tier_before": "sonnet",
            "rule_tier": "haiku", "tier_after": "haiku", "outcome": "succeeded"}),
        ),
        // raise: tu5 named sonnet, raised to opus, ran on sonnet anyway.
        agent(
            "sC",
            "tu5",
            other,
            t_c,
            json!({"enforce": "raise", "chosen": "sonnet", "tier_before": "sonnet",
            "rule_tier": "opus", "tier_after": "opus"}),
        ),
        ran("sC", "tu5", "claude-sonnet-4-5-20250929", "sonnet", Some(false)),
        // raise, left alone: tu6 named opus above the rule's sonnet; nothing says what ran.
        agent(
            "sC",
            "tu6",
            other,
            t_c,
            json!({"enforce": "raise", "chosen": "opus", "tier_before": "opus",
            "rule_tier": "sonnet", "kept": "above_rule"}),
        ),
        // raise: tu7 haiku to sonnet, took effect, but no subagent file to price.
        agent(
            "sA",
            "tu7",
            w1,
            t_ab,
            json!({"enforce": "raise", "chosen": "haiku", "tier_before": "haiku",
            "rule_tier": "sonnet", "tier_after": "sonnet"}),
        ),
        ran("sA", "tu7", "claude-sonnet-5", "sonnet", Some(true)),
        // Passed over: a prompt entry, another session's spawn entry for tu1, a torn line.
        json!({"source": "prompt", "session_id": "sA", "cwd": w1, "rule_tier": "opus"}).to_string(),
        ran("elsewhere", "tu1", "claude-opus-4-8", "opus", None),
        r#"{"source": "agent", "tool_use"#.to_string(),
    ];
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn the_spawn_section_matches_the_hand_computed_value() {
    let env = TestEnv::new();
    fixtures(&env.claude_dir);
    routing_log(&env.install_dir.join("logs/routing.jsonl"));
    let r = report_json(&env, &[]);
    let s = &r["spawns"];
    assert_eq!(s["spawns"], 7);
    assert_eq!(s["skipped_lines"], 1);
    assert!(s["read_error"].is_null());

    // Record only: tu1 on its rule's tier, tu3 above it; one success, one failure.
    let g = &s["record_only"];
    assert_eq!((g["spawns"].as_u64(), g["compared"].as_u64(), g["on_rule_tier"].as_u64()), (Some(2), Some(2), Some(1)));
    assert_eq!((g["above_rule_tier"].as_u64(), g["below_rule_tier"].as_u64()), (Some(1), Some(0)));
    close(&g["agreement"], 0.5);
    assert_eq!((g["labelled"].as_u64(), g["succeeded"].as_u64(), g["failed"].as_u64()), (Some(2), Some(1), Some(1)));
    close(&g["success"], 0.5);
    assert_eq!(
        g["rule_vs_ran"],
        json!([{"rule_tier": "haiku", "ran_tier": "haiku", "spawns": 1}, {"rule_tier": "sonnet", "ran_tier": "opus", "spawns": 1}])
    );

    // Enforced: tu2, tu4, tu7 on the rule's tier, tu5 below it, tu6 unknown; tu4 succeeded.
    let g = &s["enforced"];
    assert_eq!((g["spawns"].as_u64(), g["compared"].as_u64(), g["on_rule_tier"].as_u64()), (Some(5), Some(4), Some(3)));
    assert_eq!((g["above_rule_tier"].as_u64(), g["below_rule_tier"].as_u64()), (Some(0), Some(1)));
    close(&g["agreement"], 0.75);
    assert_eq!((g["labelled"].as_u64(), g["succeeded"].as_u64()), (Some(1), Some(1)));
    let cells: Vec<String> = g["rule_vs_ran"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{}>{} {}", c["rule_tier"].as_str().unwrap(), c["ran_tier"].as_str().unwrap(), c["spawns"]))
        .collect();
    assert_eq!(cells, ["haiku>haiku 1", "sonnet>sonnet 1", "sonnet>unknown 1", "opus>sonnet 1", "opus>opus 1"]);
    let g = &s["rewritten"];
    assert_eq!((g["spawns"].as_u64(), g["compared"].as_u64(), g["on_rule_tier"].as_u64()), (Some(4), Some(4), Some(3)));

    // Rewrites: tu2 filled, tu5 and tu7 raised, tu4 lowered; tu5 did not take effect.
    let rw = &s["rewrites"];
    assert_eq!(
        [
            &rw["made"],
            &rw["filled"],
            &rw["raised"],
            &rw["lowered"],
            &rw["checked"],
            &rw["took_effect"],
            &rw["not_taken"]
        ],
        [4, 1, 2, 1, 4, 3, 1].map(|n| json!(n)).each_ref()
    );
    close(&rw["not_taken_share"], 0.25);

    // Enforced savings, in millionths of a dollar. tu2 (fill) against the usual mix, half opus and
    // half sonnet (the unhinted spawns tu2 and tu5): its 3000 on opus is 1800 on sonnet, so
    // (3000 + 1800) / 2 - 3000 = -600. tu4 (set, sonnet to haiku): 2250 on sonnet - 750 = +1500.
    // tu7 has no subagent file (not priced); tu5 did not take effect (nothing to price).
    let e = &s["enforced_savings"];
    close(&e["usd"], 0.0009);
    close(&e["filled_usd"], -0.0006);
    close(&e["lowered_usd"], 0.0015);
    close(&e["raised_usd"], 0.0);
    assert_eq!((e["spawns_priced"].as_u64(), e["not_priced"].as_u64()), (Some(2), Some(1)));
    let findings = r["calibrate"]["findings"].as_array().unwrap();
    assert!(
        findings.iter().any(|f| f == "1 of 4 checked model rewrites did not take effect (see `system1 doctor`)"),
        "{findings:?}"
    );

    // The report's scope narrows the log too: by time, and by project (the entry's cwd).
    let late = report_json(&env, &["--since", "2026-11-15"]);
    assert_eq!(late["spawns"]["spawns"], 2, "tu5 and tu6");
    assert_eq!(late["spawns"]["rewrites"]["made"], 1);
    assert_eq!(report_json(&env, &["--project", "/home/u/w1"])["spawns"]["spawns"], 5);
    assert_eq!(report_json(&env, &["--project", "other"])["spawns"]["enforced"]["spawns"], 2);

    // The table and the chart say the same; --log reads another file.
    let moved = env.root.join("copy.jsonl");
    std::fs::copy(env.install_dir.join("logs/routing.jsonl"), &moved).unwrap();
    std::fs::remove_file(env.install_dir.join("logs/routing.jsonl")).unwrap();
    let svg = env.root.join("spawns.svg");
    let out = env.run(&["report", "--log", moved.to_str().unwrap(), "--svg", svg.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(0), "{}", support::stderr(&out));
    let text = stdout(&out);
    for line in [
        "  record only                   2    1 of 2   50%      1      0   1 of 2 succeeded",
        "  enforced                      5    3 of 4   75%      0      1   1 of 1 succeeded",
        "    rewritten                   4    3 of 4   75%      0      1   1 of 1 succeeded",
        "  rule's tier→ran, record only: haiku→haiku 1, sonnet→opus 1",
        "  rewrites   4: 1 filled, 2 raised, 1 lowered; 1 of 4 checked did not take effect (25%)",
        "  enforced   +$0.0009   2 rewrites that took effect, against the tier each call named (else the usual mix); 1 spawn not priced (its subagent's transcript is not among those read, or a model it ran on or would run on has no price), left out of both sums",
        "Finding: 1 of 4 checked model rewrites did not take effect (see `system1 doctor`).",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
    }
    assert!(!text.contains("SECRET"));
    let svg = std::fs::read_to_string(svg).unwrap();
    for part in [
        "Spawns in the routing log",
        "50% on the rule's tier (1 of 2)",
        "75% on the rule's tier (3 of 4)",
        "4 rewrites (1 filled, 2 raised, 1 lowered)",
        "1 of 4 checked did not take effect (25%)",
        "enforced savings +$0.0009 (2 priced)",
    ] {
        assert!(svg.contains(part), "missing {part:?} in the SVG");
    }
    assert!(!svg.contains("SECRET"));

    // No log at all: the section says none, and the rest of the report stands.
    let r = report_json(&env, &[]);
    assert_eq!(r["spawns"]["spawns"], 0);
    assert!(r["spawns"]["read_error"].is_null());
}

/// The columns the `n`th word of `line` spans (its start, and one past its end).
fn cell(line: &str, n: usize) -> (usize, usize) {
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in line.chars().chain([' ']).enumerate() {
        match (c == ' ', start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                words.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    words[n]
}

/// Where `word` starts and ends in `line`.
fn at(line: &str, word: &str) -> (usize, usize) {
    let b = line.find(word).unwrap_or_else(|| panic!("{word:?} not in {line:?}"));
    let start = line[..b].chars().count();
    (start, start + word.chars().count())
}

/// The smaller findings of a new user (issue 39): a path with `_` in it names its project; every
/// column lines up with its heading; no line ends in blanks; a filter that leaves nothing says so
/// in words; a spawn that never ran follows no hint.
#[test]
fn what_a_new_user_tripped_on() {
    let env = TestEnv::new();
    let projects = fixtures(&env.claude_dir);
    // Claude Code names the project dir with every character but a letter or digit as `-`.
    let mut f = File::new("sW", "2026-11-12T12:00:00.000Z").in_dir("/home/user/code/web_app.v2");
    f.prompt("pw");
    f.hint("hw", "pw", &routing_hint("haiku"));
    // A spawn refused before it ran: an error result, no agent id, no subagent transcript.
    f.reply("aw", "mw", "rw", OPUS, usage(10, 10, 0, 0, 0), spawn("tuw", Some("haiku")), false);
    f.push(json!({"type":"user","uuid":"rtuw","message":{"role":"user","content":[{"tool_use_id":"tuw",
        "type":"tool_result","is_error":true,"content":"The subagent was not started"}]}}));
    f.write(&projects.join("-home-user-code-web-app-v2").join("sW.jsonl"), true);
    let r = report_json(&env, &["--project", "/home/user/code/web_app.v2"]);
    assert_eq!(r["reach"]["prompts"], 1, "{}", r["reach"]);
    assert_eq!(r["adherence"]["hinted_spawns"], 1);
    assert_eq!((r["adherence"]["followed"].as_u64(), r["adherence"]["not_run"].as_u64()), (Some(0), Some(1)));
    let pinned = support::snapshots(&env);
    // "(0 of 1: 0 upgraded, 0 downgraded, 1 never ran)".
    let text = stdout(&env.run(&["report", "--project", "/home/user/code/web_app.v2"], ""));
    pinned.bind(|| insta::assert_snapshot!("report_a_spawn_that_never_ran", text));

    // An empty filter: no "n/a of prompts (0 of 0)", but no share to give, in words.
    let text = stdout(&env.run(&["report", "--until", "2026-11-09"], ""));
    pinned.bind(|| insta::assert_snapshot!("report_an_empty_filter", text));

    // Every line of the full report, with its routing-log sections.
    let log = env.install_dir.join("logs/routing.jsonl");
    routing_log(&log);
    let rule = json!({"id": "e-r1", "time": "2026-11-10T12:00:02.000Z", "source": "prompt", "session_id": "sA",
        "cwd": "/home/u/w1", "rule": 1, "rule_tier": "opus", "decision": "opus"});
    let mut lines = std::fs::read_to_string(&log).unwrap();
    lines.push_str(&format!("{rule}\n"));
    std::fs::write(&log, lines).unwrap();
    let text = stdout(&env.run(&["report"], ""));
    assert!(text.lines().all(|l| !l.ends_with(' ')), "a line ends in blanks:\n{text}");
    let line = |start: &str| {
        text.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("no {start:?} in\n{text}")).to_string()
    };
    // Right-aligned figures end where their heading ends; the rule's tier starts where its heading does.
    let (head, total) = (line("All usage"), line("  total"));
    assert_eq!(at(&head, "requests").1, cell(&total, 1).1, "\n{head}\n{total}");
    assert_eq!(at(&head, "tokens").1, cell(&total, 2).1, "\n{head}\n{total}");
    assert_eq!(at(&head, "cost").1, cell(&total, 3).1, "\n{head}\n{total}");
    let (head, row) = (line("Spawns in the routing log  spawns"), line("  record only"));
    assert_eq!(at(&head, "spawns").1, cell(&row, 2).1, "\n{head}\n{row}");
    assert_eq!(at(&head, "above").1, cell(&row, 7).1, "\n{head}\n{row}");
    let head = line("Rules in the routing log");
    let row = text.lines().skip_while(|l| *l != head).nth(1).unwrap_or_default().to_string();
    let tier = at(&head, "tier").0;
    let chars: Vec<char> = row.chars().collect();
    assert!(chars[tier - 1] == ' ' && chars[tier] != ' ', "the tier starts under its heading:\n{head}\n{row}");
    let prompts = (0..8).map(|n| cell(&row, n)).find(|c| c.0 > tier + 1).unwrap();
    assert_eq!(at(&head, "prompts").1, prompts.1, "\n{head}\n{row}");
}
