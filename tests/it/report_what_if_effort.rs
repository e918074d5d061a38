//! `system1 report --what-if`: a spawn is repriced at the effort it ran at and on its session's
//! provider. Transcripts as Claude Code 2.1.332 and later write them (each assistant line's
//! `effort`, `requestedModel`; a subagent's `.meta.json` with the `effort` its Agent call named),
//! and one as older versions do (no effort anywhere). The engine is the loopback laya-serve fake of
//! report_what_if: every brief here is read-only and fully specified, so the rule gives haiku, and
//! `set` lowers each spawn that named a larger tier.
//!
//! Each subagent makes one request of 10,000 input and 1,000 output tokens, one project each:
//! - low: first-party, ran on claude-opus-5-5 ($0.06) at the `low` effort its line records. Haiku
//!   ran nowhere, so the tier is priced at the catalog's first-party alias, claude-haiku-5-5:
//!   $0.0015 at high, times its cost of low over opus 5.5's, 0.38 / 0.48: $0.0011875.
//! - meta: the same, its lines record no effort, its `.meta.json` says `medium`: × 0.52 / 0.66.
//! - old: ran on claude-opus-4-8 ($0.075) and nothing says the effort: assumed high, $0.0015.
//! - bedrock: the `requestedModel` is Bedrock's `us.anthropic.claude-opus-5-5` ($0.06), at low:
//!   Bedrock's `haiku` is claude-haiku-4-5 ($0.015), which the catalog gives no effort index, so the
//!   tokens are priced as they are.
//! - vertex: plain ids, but the project's `.claude/settings.json` sets CLAUDE_CODE_USE_VERTEX; ran
//!   on claude-sonnet-5-5 ($0.03) at high: Vertex's `haiku` is claude-haiku-4-5, $0.015.

use serde_json::{Value, json};

use crate::report::{File, close, report_json, usage};
use crate::report_what_if::{SPEC, engine};
use crate::support::{TestEnv, stdout};

const T: &str = "2026-11-20T12:00:00.000Z";

/// One session in its own project: a main thread on `main_model` that spawns one subagent with
/// `model: named`, which makes one request on `ran` at `effort`; `requested` prefixes each line's
/// model as its `requestedModel`.
struct Case<'a> {
    project: &'a str,
    cwd: String,
    named: &'a str,
    ran: &'a str,
    requested: Option<&'a str>,
    effort: Option<&'a str>,
    meta_effort: Option<&'a str>,
}

fn write(env: &TestEnv, n: usize, c: &Case) {
    let dir = env.claude_dir.join("projects").join(c.cwd.replace(|ch: char| !ch.is_ascii_alphanumeric(), "-"));
    let (session, tu, agent) = (format!("s-{}", c.project), format!("tu-{}", c.project), format!("ag{n}"));
    let assistant = |f: &mut File, uuid: &str, model: &str, usage: Value, content: Value, sidechain: bool| {
        let mut line = json!({"type": "assistant", "uuid": uuid, "isSidechain": sidechain, "requestId": format!("r-{uuid}"),
            "message": {"id": format!("m-{uuid}"), "model": model, "role": "assistant", "content": content, "usage": usage}});
        // On Bedrock the request names the provider's id; `message.model` may be the plain one.
        if let Some(prefix) = c.requested {
            line["requestedModel"] = json!(format!("{prefix}{model}"));
        }
        if let Some(e) = c.effort {
            line["effort"] = json!(e);
            line["perTurnEffort"] = json!(e);
        }
        f.push(line);
    };
    let mut main = File::new(&session, T).in_dir(&c.cwd);
    main.prompt(&format!("p-{}", c.project));
    let spawn = json!([{"type": "tool_use", "id": tu, "name": "Agent",
        "input": {"description": "d", "prompt": SPEC, "subagent_type": "general-purpose", "model": c.named}}]);
    assistant(&mut main, &format!("a-{}", c.project), "claude-opus-5-5", usage(10, 10, 0, 0, 0), spawn, false);
    main.agent_result(&tu, &agent, c.ran);
    main.write(&dir.join(format!("{session}.jsonl")), true);
    let mut sub = File::new(&session, T).in_dir(&c.cwd);
    assistant(
        &mut sub,
        &format!("s-{}", c.project),
        c.ran,
        usage(10_000, 1_000, 0, 0, 0),
        json!([{"type": "text", "text": "done"}]),
        true,
    );
    let subagents = dir.join(&session).join("subagents");
    sub.write(&subagents.join(format!("agent-{agent}.jsonl")), true);
    let mut meta =
        json!({"agentType": "general-purpose", "description": "d", "toolUseId": tu, "spawnDepth": 1, "model": c.named});
    if let Some(e) = c.meta_effort {
        meta["effort"] = json!(e);
    }
    std::fs::write(subagents.join(format!("agent-{agent}.meta.json")), meta.to_string()).unwrap();
}

fn history(env: &TestEnv) -> String {
    let vertex_cwd = env.root.join("vertex-proj");
    let settings = vertex_cwd.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, r#"{"env": {"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "us-east5"}}"#).unwrap();
    let home = |p: &str| format!("/home/u/{p}");
    let cases = [
        Case {
            project: "low",
            cwd: home("low"),
            named: "opus",
            ran: "claude-opus-5-5",
            requested: None,
            effort: Some("low"),
            meta_effort: None,
        },
        Case {
            project: "meta",
            cwd: home("meta"),
            named: "opus",
            ran: "claude-opus-5-5",
            requested: None,
            effort: None,
            meta_effort: Some("medium"),
        },
        Case {
            project: "old",
            cwd: home("old"),
            named: "opus",
            ran: "claude-opus-4-8",
            requested: None,
            effort: None,
            meta_effort: None,
        },
        Case {
            project: "bedrock",
            cwd: home("bedrock"),
            named: "opus",
            ran: "claude-opus-5-5",
            requested: Some("us.anthropic."),
            effort: Some("low"),
            meta_effort: None,
        },
        Case {
            project: "vertex",
            cwd: vertex_cwd.display().to_string(),
            named: "sonnet",
            ran: "claude-sonnet-5-5",
            requested: None,
            effort: Some("high"),
            meta_effort: None,
        },
    ];
    for (n, c) in cases.iter().enumerate() {
        write(env, n, c);
    }
    settings.display().to_string()
}

fn env_with(url: &str) -> (TestEnv, String) {
    let mut env = TestEnv::new();
    env.write_config("[gateway]\nprovider = \"laya\"\n");
    env.set_env("SYSTEM1_LAYA_ENDPOINT", url);
    let settings = history(&env);
    (env, settings)
}

fn what_if(env: &TestEnv, project: Option<&str>) -> Value {
    let mut args = vec!["--what-if", "set"];
    if let Some(p) = project {
        args.extend(["--project", p]);
    }
    report_json(env, &args)["what_if"].clone()
}

#[test]
fn a_spawn_is_repriced_at_the_effort_it_ran_at() {
    let server = engine();
    let (env, _) = env_with(&server.url());

    // Recorded low: haiku 5.5's cost of low over opus 5.5's, not haiku at high ($0.0015).
    let low = what_if(&env, Some("low"));
    assert_eq!((low["changed"].as_u64(), low["not_priced"].as_u64()), (Some(1), Some(0)));
    close(&low["cost_usd"], 0.06);
    close(&low["projected_cost_usd"], 0.0015 * 0.38 / 0.48);
    assert_eq!(low["effort"]["recorded"], json!({"low": 1}));
    assert_eq!(low["effort"]["assumed_high"], 0);
    assert_eq!(low["providers"][0]["provider"], "first_party");
    assert_eq!(low["providers"][0]["from"], "default");
    assert_eq!(low["providers"][0]["models"], json!({"haiku": "claude-haiku-5-5"}));

    // The effort the Agent call named, from the subagent's .meta.json.
    let meta = what_if(&env, Some("meta"));
    close(&meta["projected_cost_usd"], 0.0015 * 0.52 / 0.66);
    assert_eq!(meta["effort"]["agent_call"], json!({"medium": 1}));

    // Nothing says: assumed high, and said so.
    let old = what_if(&env, Some("old"));
    close(&old["cost_usd"], 0.075);
    close(&old["projected_cost_usd"], 0.0015);
    assert_eq!(old["effort"]["assumed_high"], 1);
    let text = stdout(&env.run(&["report", "--what-if", "set", "--project", "old"], ""));
    assert!(
        text.contains("\n  effort     1 request assumed at high (nothing records their effort: Claude Code before 2.1.332), so not scaled;"),
        "{text}"
    );
}

#[test]
fn a_session_on_bedrock_or_vertex_is_repriced_with_that_providers_aliases() {
    let server = engine();
    let (env, settings) = env_with(&server.url());

    // Bedrock, from the model id its requests named: haiku is 4.5 there ($1/$5), not 5.5.
    let bedrock = what_if(&env, Some("bedrock"));
    close(&bedrock["cost_usd"], 0.06);
    close(&bedrock["projected_cost_usd"], 0.015);
    assert_eq!(
        bedrock["providers"],
        json!([{"provider": "bedrock", "sessions": 1, "from": "transcript", "evidence": "us.anthropic.claude-opus-5-5",
                "models": {"haiku": "claude-haiku-4-5"}}])
    );
    // Low effort, but the catalog has no index for haiku 4.5: not scaled, and said so.
    assert_eq!(bedrock["effort"]["recorded"], json!({"low": 1}));
    assert_eq!(
        (bedrock["effort"]["not_indexed"].as_u64(), &bedrock["effort"]["not_indexed_models"]),
        (Some(1), &json!(["claude-haiku-4-5"]))
    );
    let text = stdout(&env.run(&["report", "--what-if", "set", "--project", "bedrock"], ""));
    for part in [
        "\n  provider   bedrock 1 session (a model id only it uses in the transcripts, us.anthropic.claude-opus-5-5): haiku → claude-haiku-4-5;",
        "; 1 not scaled, the catalog giving no index for claude-haiku-4-5\n",
        "\n  prices     API list prices as of 2026-12-01, each request at the price in force on its day; aliases and effort costs from Claude Code's model catalog (2.1.332 to 2.1.337, read 2026-12-07)\n",
    ] {
        assert!(text.contains(part), "missing {part:?} in\n{text}");
    }

    // Vertex, from the project's settings.
    let vertex = what_if(&env, Some("vertex-proj"));
    close(&vertex["cost_usd"], 0.03);
    close(&vertex["projected_cost_usd"], 0.015);
    assert_eq!(vertex["providers"][0]["provider"], "vertex");
    assert_eq!(vertex["providers"][0]["evidence"], json!(format!("CLAUDE_CODE_USE_VERTEX in {settings}")));
    assert_eq!(vertex["effort"]["recorded"], json!({"high": 1}));

    // All five at once: each priced as alone; the report's own totals are untouched by the what-if.
    let all = report_json(&env, &["--what-if", "set"]);
    let w = &all["what_if"];
    close(&w["cost_usd"], 0.06 + 0.06 + 0.075 + 0.06 + 0.03);
    close(&w["projected_cost_usd"], 0.0015 * 0.38 / 0.48 + 0.0015 * 0.52 / 0.66 + 0.0015 + 0.015 + 0.015);
    let providers: Vec<&str> =
        w["providers"].as_array().unwrap().iter().map(|p| p["provider"].as_str().unwrap()).collect();
    assert_eq!(providers, ["first_party", "bedrock", "vertex"]);
    let plain = report_json(&env, &[]);
    assert_eq!(all["totals"], plain["totals"]);
    assert!(plain.get("what_if").is_none_or(Value::is_null));
}
