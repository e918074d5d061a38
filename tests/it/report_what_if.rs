//! `system1 report --what-if fill|raise|set`: the routing rule replayed with the configured engine
//! (a loopback fake of laya-serve's wire format that answers each feature from markers in the
//! brief) on every spawn in scope, priced against what each cost, with the labelled outcomes of the
//! tiers it would set, and the engine asked once per brief across runs.
//!
//! Seven spawns, each subagent 10,000 input and 1,000 output tokens (opus 4.8 $0.075, sonnet 4.5
//! $0.045, haiku 4.5 $0.015). The default rule: read-only and fully specified gives haiku, a design
//! opus, the rest sonnet.
//! - tu1 read-only, specified, `model: opus`, ran opus: set lowers it to haiku; raise and fill keep it.
//! - tu2 a design, `model: haiku`, ran haiku: set and raise raise it to opus; fill keeps it.
//! - tu3 read-only, specified, no model, ran on its parent's opus: every mode sets haiku.
//! - tu4 a fork: kept. tu5 a 4-word brief: kept.
//! - tu6 the engine is unsure (0.55, under min_confidence 0.6), `model: sonnet`: kept.
//! - tu7 read-only, specified, `model: haiku`, ran haiku: already on the rule's tier.
//!
//! Under set: $0.315 as they ran; tu1 and tu3 $0.075 → $0.015 each, tu2 $0.015 → $0.075: $0.255.

use serde_json::{Value, json};

use crate::report::{File, close, report_json, text_block, usage};
use crate::support::fake_http::{FakeServer, Reply, Request};
use crate::support::{TestEnv, stderr, stdout};

const OPUS: &str = "claude-opus-4-8";
const SONNET: &str = "claude-sonnet-4-5-20250929";
const HAIKU: &str = "claude-haiku-4-5-20251001";

/// laya-serve's answer: each feature `yes` where the brief carries its marker (`[read_only]`, ...),
/// else `no`, at 0.8; everything at 0.55 for a brief marked `[unsure]`.
fn answer(body: &Value) -> Value {
    let brief = body["state"].as_str().unwrap_or_default();
    let p = if brief.contains("[unsure]") { 0.55 } else { 0.8 };
    let mut answers = serde_json::Map::new();
    for (id, _) in body["questions"].as_object().expect("questions") {
        let pick = if brief.contains(&format!("[{id}]")) { "yes" } else { "no" };
        let other = if pick == "yes" { "no" } else { "yes" };
        answers.insert(
            id.clone(),
            json!({"type": "choice", "choice": pick, "probabilities": {pick: p, other: 1.0 - p},
                   "confidence": 0.3, "answer_confidence": p, "action": {"act_probability": 0.5}, "x_jev_confidence": 0.6}),
        );
    }
    json!({"model": "laya-rl-agent", "answers": answers,
           "routing": {"model": "typed-decisions", "reason": "explicit model='typed-decisions'"}})
}

pub(crate) fn engine() -> FakeServer {
    FakeServer::start(|r: &Request| match r.path.as_str() {
        "/v1/systemone" => Reply::json(200, &answer(&r.json())),
        "/health" => Reply::json(200, &json!({"status": "ok", "loaded": ["typed-decisions"]})),
        _ => Reply::json(404, &json!({"detail": "Not Found"})),
    })
}

pub(crate) const SPEC: &str =
    "SECRET-BRIEF [read_only] [specified]: read src/parser.rs and list every public function with its line";
const DESIGN: &str = "SECRET-BRIEF [design]: choose how the cache should be invalidated and write down the trade-offs";
const UNSURE: &str = "SECRET-BRIEF [unsure]: look into the thing we talked about earlier and do what seems best";

/// (tool use, brief, subagent_type, model, the model it ran on)
const SPAWNS: [(&str, &str, &str, Option<&str>, &str); 7] = [
    ("tu1", SPEC, "general-purpose", Some("opus"), OPUS),
    ("tu2", DESIGN, "general-purpose", Some("haiku"), HAIKU),
    ("tu3", SPEC, "Explore", None, OPUS),
    ("tu4", DESIGN, "fork", None, OPUS),
    ("tu5", "SECRET-BRIEF fix the typo", "general-purpose", Some("haiku"), HAIKU),
    ("tu6", UNSURE, "general-purpose", Some("sonnet"), SONNET),
    ("tu7", SPEC, "general-purpose", Some("haiku"), HAIKU),
];

fn history(env: &TestEnv) {
    let dir = env.claude_dir.join("projects").join("-home-u-w1");
    let t = "2026-11-10T12:00:00.000Z";
    let mut main = File::new("sW", t).in_dir("/home/u/w1");
    main.prompt("p1");
    for (i, (tu, brief, kind, model, ran)) in SPAWNS.iter().enumerate() {
        let mut input = json!({"description": "d", "prompt": brief, "subagent_type": kind});
        if let Some(m) = model {
            input["model"] = json!(m);
        }
        let block = json!([{"type": "tool_use", "id": tu, "name": "Agent", "input": input}]);
        main.reply(&format!("a{i}"), &format!("m{i}"), &format!("r{i}"), OPUS, usage(10, 10, 0, 0, 0), block, false);
        main.agent_result(tu, &format!("ag{i}"), ran);
        let mut sub = File::new("sW", t).in_dir("/home/u/w1");
        sub.reply(
            &format!("s{i}"),
            &format!("s{i}"),
            &format!("rs{i}"),
            ran,
            usage(10_000, 1_000, 0, 0, 0),
            text_block(),
            true,
        );
        crate::report::subagent(&dir, "sW", &format!("ag{i}"), tu, &sub, true);
    }
    main.write(&dir.join("sW.jsonl"), true);
    // Labelled outcomes: tu5 and tu7 ran on haiku (one succeeded), tu4 on opus (succeeded).
    let log: Vec<String> = [("tu5", "succeeded"), ("tu7", "failed"), ("tu4", "succeeded")]
        .iter()
        .map(|(tu, outcome)| {
            json!({"id": format!("e-{tu}"), "time": "2026-11-10T12:00:01.000Z", "source": "agent", "session_id": "sW",
                   "cwd": "/home/u/w1", "tool_use_id": tu, "outcome": outcome, "outcome_source": "user"})
            .to_string()
        })
        .collect();
    let path = env.install_dir.join("logs/routing.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, log.join("\n") + "\n").unwrap();
}

fn env_with(url: &str) -> TestEnv {
    let mut env = TestEnv::new();
    // Routing off and nothing enforced: the point is to see before turning it on.
    env.write_config("[gateway]\nprovider = \"laya\"\n");
    env.set_env("SYSTEM1_LAYA_ENDPOINT", url);
    history(&env);
    env
}

fn what_if(env: &TestEnv, mode: &str) -> Value {
    let r = report_json(env, &["--what-if", mode]);
    r["what_if"].clone()
}

#[test]
fn set_raise_and_fill_replayed_on_every_spawn_and_priced() {
    let server = engine();
    let env = env_with(&server.url());
    let w = what_if(&env, "set");
    assert_eq!(w["mode"], "set");
    assert!(w["estimate"].as_str().unwrap().starts_with("an estimate"));
    assert_eq!(
        [&w["spawns"], &w["changed"], &w["lowered"], &w["raised"], &w["unchanged"]],
        [7, 3, 2, 1, 0].map(|n| json!(n)).each_ref()
    );
    assert_eq!(w["left_alone"], json!({"at_tier": 1, "fork": 1, "low_confidence": 1, "short_brief": 1}));
    close(&w["cost_usd"], 0.315);
    close(&w["projected_cost_usd"], 0.255);
    close(&w["savings_usd"], 0.06);
    assert_eq!(w["not_priced"], 0);
    let moves: Vec<String> = w["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}>{} {} {:.3}>{:.3}",
                m["from"].as_str().unwrap(),
                m["to"].as_str().unwrap(),
                m["spawns"],
                m["cost_usd"].as_f64().unwrap(),
                m["projected_cost_usd"].as_f64().unwrap()
            )
        })
        .collect();
    assert_eq!(moves, ["opus>haiku 2 0.150>0.030", "haiku>opus 1 0.015>0.075"]);
    // Labelled outcomes on the tiers it would set: haiku 1 of 2, opus 1 of 1.
    assert_eq!(
        w["outcomes"],
        json!([{"tier": "haiku", "labelled": 2, "succeeded": 1, "failed": 1, "success": 0.5},
               {"tier": "opus", "labelled": 1, "succeeded": 1, "failed": 0, "success": 1.0}])
    );
    // Past the gates are tu1, tu2, tu3, tu6 and tu7, three briefs (tu1, tu3 and tu7 have the same):
    // the engine was asked once about each, with the brief as its state.
    assert_eq!((w["engine"]["asked"].as_u64(), w["engine"]["cached"].as_u64()), (Some(3), Some(2)));
    let sent = server.requests_to("/v1/systemone");
    assert_eq!(sent.len(), 3);
    assert!(sent.iter().all(|r| r.json()["state"].as_str().unwrap().starts_with("SECRET-BRIEF")));

    // Again, and in the other modes: nothing asked twice.
    let again = what_if(&env, "set");
    assert_eq!((again["engine"]["asked"].as_u64(), again["engine"]["cached"].as_u64()), (Some(0), Some(5)));
    assert_eq!(again["moves"], w["moves"]);
    let raise = what_if(&env, "raise");
    // tu1 names opus, above the rule's haiku: raise keeps it; tu3 names nothing and gets haiku.
    assert_eq!([&raise["changed"], &raise["lowered"], &raise["raised"]], [2, 1, 1].map(|n| json!(n)).each_ref());
    assert_eq!(raise["left_alone"]["above_rule"], 1);
    // What raise "lowered" is tu3, a call that named no model and ran on its parent's opus: filled,
    // as every mode fills; set differs from it by lowering tu1, a call that named opus.
    assert_eq!(raise["rewrites"], json!({"filled": 1, "raised": 1, "lowered": 0}));
    assert_eq!(w["rewrites"], json!({"filled": 1, "raised": 1, "lowered": 1}));
    let text = stdout(&env.run(&["report", "--what-if", "raise"], ""));
    assert!(
        text.contains(
            "\n  rewrites      2: 1 filled, 1 raised, 0 lowered\n             filled: the call named no model"
        ),
        "{text}"
    );
    close(&raise["savings_usd"], 0.0);
    let fill = what_if(&env, "fill");
    // Only tu3 names no model: fill sets it, and asks the engine nothing it did not know.
    assert_eq!([&fill["changed"], &fill["lowered"]], [1, 1].map(|n| json!(n)).each_ref());
    assert_eq!(fill["left_alone"]["model_given"], 4);
    close(&fill["savings_usd"], 0.06);
    assert_eq!(server.requests_to("/v1/systemone").len(), 3);

    // The table says it is an estimate, and never quotes a brief.
    let out = env.run(&["report", "--what-if", "set"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("SECRET"));
    for line in [
        "What routing would have done with [routing] enforce = \"set\", on 7 spawns",
        "  an estimate: a cheaper model may need more turns, or fail where the one that ran did not",
        "  repriced:  each of its requests at the API list price on its day of the model the tier's alias names on its session's provider, with the same tokens at the same effort (scaled by what that effort costs on each model)",
        "  effort     3 requests assumed at high (nothing records their effort: Claude Code before 2.1.332), so not scaled; each priced at the same effort on the other model: its tokens times that model's cost of the effort over the one it ran on (the catalog's effort_cost_index, 1 at high)",
        "  provider   first-party 1 session (nothing in the transcripts or settings says otherwise): haiku → claude-haiku-4-5-20251001, opus → claude-opus-4-8; a tier is priced at the model its alias names there (first-party: the one it ran on most here, else the catalog's)",
        "  prices     API list prices as of 2026-12-01, each request at the price in force on its day; aliases and effort costs from Claude Code's model catalog (2.1.332 to 2.1.337, read 2026-12-07)",
        "  changed       3: 2 lowered, 1 raised from the tier it ran on; 0 set to the tier it ran on",
        "  rewrites      3: 1 filled, 1 raised, 1 lowered",
        "  left alone    4: at tier 1, fork 1, low confidence 1, short brief 1",
        "  cost       $0.3150 as they ran, $0.2550 projected: saves $0.0600",
        "  opus→haiku   2 spawns    $0.1500 → $0.0300",
        "  outcomes of spawns that already ran on haiku: 1 of 2 succeeded (50%); on opus: 1 of 1 succeeded (100%)",
        "  engine     0 briefs asked, 5 answered from answers it gave before",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
    }
    // The answers kept between runs are private, and hold no brief.
    let cache = std::fs::read_to_string(env.install_dir.join("what-if.json")).unwrap();
    assert!(!cache.contains("SECRET"));
}

#[test]
fn an_engine_that_does_not_answer_is_given_up_on_and_said_so() {
    let env = env_with("http://127.0.0.1:9");
    let w = what_if(&env, "set");
    // Three spawns' briefs asked (two of them the same brief), none answered: the rest are not asked.
    assert_eq!((w["engine"]["asked"].as_u64(), w["engine"]["gave_up"].as_bool()), (Some(3), Some(true)));
    assert_eq!(w["left_alone"]["no_engine_answer"], 5);
    assert_eq!(w["changed"], 0);
    let text = stdout(&env.run(&["report", "--what-if", "set"], ""));
    assert!(text.contains("stopped asking (check `"), "{text}");
    // Nothing was kept to answer from next time.
    assert!(!env.install_dir.join("what-if.json").exists());
    // A config that does not read is an error, not a guess.
    env.write_config("[gateway]\nprovider = \"nosuch\"\n");
    let out = env.run(&["report", "--what-if", "set"], "");
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("--what-if needs an engine"), "{}", stderr(&out));
}
