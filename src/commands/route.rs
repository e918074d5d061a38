//! `system1 route`: what the prompt hook would do with a prompt (`--prompt`), or the agent hook with
//! a subagent's brief (`--brief`), step by step. It runs the hooks' own code (`routing::run_prompt`,
//! `routing::agent::run`) `Until::End`, which goes on past the gates a hook would stop at and
//! records them, and it never writes the routing log.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::gateway::millis;
use crate::logging;
use crate::routing::agent::{AgentRun, Spawn};
use crate::routing::enforce::Model;
use crate::routing::{self, Input, Until, rule::Chosen};

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("text").required(true).args(["prompt", "brief"])))]
pub struct Args {
    /// The prompt, as the user would type it.
    #[arg(long)]
    prompt: Option<String>,
    /// A subagent's brief (the Agent tool's `prompt`): what the agent hook and `[routing] enforce` would do.
    #[arg(long)]
    brief: Option<String>,
    /// With --brief: the `model` the Agent call names (none by default).
    #[arg(long, conflicts_with = "prompt")]
    model: Option<String>,
    /// With --brief: the call's `subagent_type`.
    #[arg(long, conflicts_with = "prompt", default_value = "general-purpose")]
    subagent_type: String,
    /// The session's working directory (default: the current one); decides log opt-in and project skills.
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<i32> {
    let loaded = crate::config::load();
    let g = &loaded.config.gateway;
    logging::init(&g.log_level, &g.log_file, true);
    let cwd = match args.cwd {
        Some(c) => c,
        None => {
            std::env::current_dir().map_err(|e| Error::failure(format!("cannot read the current directory: {e}")))?
        }
    };
    let cwd = std::path::absolute(&cwd).unwrap_or(cwd);
    if let Some(brief) = &args.brief {
        let spawn = spawn(brief, args.model.as_deref(), &args.subagent_type, cwd);
        let run = routing::agent::run(&loaded, &spawn, Until::End);
        let report = brief_json(&loaded, &spawn, &run);
        if args.json {
            outln!("{}", serde_json::to_string_pretty(&report).unwrap_or_default())?;
        } else {
            print_brief(&report)?;
        }
        return Ok(0);
    }
    let prompt = args.prompt.unwrap_or_default();
    let input = Input { prompt: &prompt, cwd: Some(cwd), session_id: None, skills: None };
    let run = routing::run_prompt(&loaded, &input, Until::End);
    // The hook's own choice of entries (none when silent, or when the engine gave nothing to log).
    let logged = !routing::entries(&input, &run).is_empty();
    let report = to_json(&loaded, &run, logged);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report).unwrap_or_default())?;
    } else {
        print_text(&report)?;
    }
    Ok(0)
}

/// The features, the tier and the rule, as `--json` shows them for a prompt and for a brief.
fn routed_json(loaded: &crate::config::Loaded, r: &routing::Routed) -> Value {
    let features = match &r.asked.features {
        Ok(fs) => json!(
            fs.iter()
                .map(|f| (
                    f.feature.name().to_string(),
                    json!({"answer": f.answer, "confidence": f.confidence, "calibrated": f.calibrated})
                ))
                .collect::<serde_json::Map<String, Value>>()
        ),
        Err(_) => Value::Null,
    };
    let (tier, rule, rule_text) = match &r.tier {
        Some((t, Chosen::Rule(n))) => {
            let text = loaded.config.routing.rules.get(n - 1).map(routing::rule::describe);
            (json!(t), json!(n), json!(text))
        }
        Some((t, Chosen::Default)) => (json!(t), json!("default"), json!("no rule matched")),
        None => (Value::Null, Value::Null, Value::Null),
    };
    json!({
        "features": features,
        "engine_error": r.asked.features.as_ref().err(),
        "provider": r.asked.provider, "model": r.asked.model, "engine_ms": r.asked.latency_ms,
        "tier": tier, "rule": rule, "rule_text": rule_text,
    })
}

fn to_json(loaded: &crate::config::Loaded, run: &routing::Run, logged: bool) -> Value {
    let hints = run.hints.as_ref();
    let routing = hints.and_then(|h| h.routing.as_ref()).map(|r| routed_json(loaded, r));
    let skills = hints.and_then(|h| h.picked.as_ref()).map(|p| {
        let (pick, confidence, why) = match p.pick.skill() {
            Ok((skill, confidence)) => (json!(skill), json!(confidence), Value::Null),
            Err(why) => (Value::Null, Value::Null, json!(why)),
        };
        json!({
            "candidates": p.candidates.iter().map(|s| json!({"name": s.name, "origin": s.origin})).collect::<Vec<_>>(),
            "pick": pick, "confidence": confidence, "not_picked_because": why,
            "provider": p.provider, "engine_ms": p.latency_ms,
        })
    });
    // A hint's own reason first; a hint the hook would give but for a gate, the gate.
    let gate = run.gates.first();
    let hint = |h: std::result::Result<&String, String>| match (h, gate) {
        (Ok(text), None) => json!({"given": true, "text": text}),
        (Ok(_), Some(gate)) => json!({"given": false, "because": gate}),
        (Err(why), _) => json!({"given": false, "because": why}),
    };
    json!({
        "silent_because": gate,
        "routing": routing,
        "routing_hint": hints.map(|h| hint(h.routing_hint.as_ref().map_err(ToString::to_string))),
        "skills": skills,
        "skill_hint": hints.map(|h| hint(h.skill_hint.as_ref().map_err(ToString::to_string))),
        "logged": logged,
        "log_dir": run.log_dir.as_ref().map(|d| d.display().to_string()),
        "elapsed_ms": millis(run.elapsed),
    })
}

fn print_text(r: &Value) -> Result<()> {
    if let Some(why) = r["silent_because"].as_str() {
        outln!("hook: silent ({why}); what it would ask anyway:")?;
    }
    print_routing(&r["routing"])?;
    let hint_line = |label: &str, h: &Value| {
        if h["given"].as_bool() == Some(true) {
            outln!("{label}: given: {}", shown(&h["text"]))?;
        } else {
            outln!("{label}: none ({})", shown(&h["because"]))?;
        }
        Ok::<(), crate::error::Error>(())
    };
    hint_line("routing hint", &r["routing_hint"])?;
    if let Some(sk) = r["skills"].as_object() {
        let names: Vec<String> = sk["candidates"]
            .as_array()
            .map(|a| a.iter().map(|c| format!("{} ({})", shown(&c["name"]), shown(&c["origin"]))).collect())
            .unwrap_or_default();
        outln!("skills: {} candidates{}{}", names.len(), if names.is_empty() { "" } else { ": " }, names.join(", "))?;
        match sk["pick"].as_str() {
            Some(p) => outln!(
                "skill pick: {p} ({:.2}, {:.1} ms)",
                sk["confidence"].as_f64().unwrap_or(0.0),
                sk["engine_ms"].as_f64().unwrap_or(0.0)
            )?,
            None => outln!("skill pick: none ({})", shown(&sk["not_picked_because"]))?,
        }
    }
    hint_line("skill hint", &r["skill_hint"])?;
    match r["log_dir"].as_str() {
        Some(d) if r["logged"].as_bool() == Some(true) => outln!("log: the hook would log this prompt (inside {d})")?,
        Some(d) if r["silent_because"].is_string() => {
            outln!("log: not logged (the hook is silent), though inside {d}")?
        }
        Some(d) => outln!("log: not logged (the engine gave nothing to log), though inside {d}")?,
        None => outln!("log: not logged (cwd is outside [routing] log_dirs)")?,
    }
    outln!("time: {:.1} ms", r["elapsed_ms"].as_f64().unwrap_or(0.0))?;
    Ok(())
}

/// A report field as printed: a string as it is, anything else as JSON.
fn shown(v: &Value) -> String {
    v.as_str().map(String::from).unwrap_or_else(|| v.to_string())
}

/// The features with their confidences, and the tier with the rule that chose it.
fn print_routing(routing: &Value) -> Result<()> {
    if let Some(fs) = routing["features"].as_object() {
        outln!(
            "features ({} {}, {:.1} ms):",
            shown(&routing["provider"]),
            shown(&routing["model"]),
            routing["engine_ms"].as_f64().unwrap_or(0.0)
        )?;
        for (name, f) in fs {
            let answer = match f["answer"].as_bool() {
                Some(true) => "yes",
                Some(false) => "no",
                None => "abstained",
            };
            let cal = if f["calibrated"].as_bool() == Some(true) { "calibrated" } else { "uncalibrated" };
            outln!("  {name:<10} {answer:<9} {:.2} ({cal})", f["confidence"].as_f64().unwrap_or(0.0))?;
        }
    } else if let Some(e) = routing["engine_error"].as_str() {
        outln!("features: no answer ({e})")?;
    }
    if routing["tier"].is_string() {
        let rule = match &routing["rule"] {
            Value::String(d) => d.clone(),
            n => format!("rule {n}"),
        };
        outln!("tier: {} ({rule}: {})", shown(&routing["tier"]), shown(&routing["rule_text"]))?;
    }
    Ok(())
}

/// The Agent call the agent hook would see for `brief`.
fn spawn(brief: &str, model: Option<&str>, subagent_type: &str, cwd: PathBuf) -> Spawn {
    let mut input = json!({"description": "system1 route", "prompt": brief, "subagent_type": subagent_type});
    if let Some(m) = model {
        input["model"] = json!(m);
    }
    Spawn {
        tool_name: Some("Agent".into()),
        raw_input: input.to_string(),
        brief: brief.to_string(),
        model: Model::read(input.get("model")),
        chosen: model.map(String::from),
        subagent_type: Some(subagent_type.to_string()),
        description: None,
        tool_use_id: None,
        session_id: None,
        cwd: Some(cwd),
    }
}

fn brief_json(loaded: &crate::config::Loaded, spawn: &Spawn, run: &AgentRun) -> Value {
    let action = run.verdict.as_ref().map(|v| &v.action);
    let (set, because) = match action {
        Some(Ok(t)) => (json!(t), Value::Null),
        Some(Err(left)) => (Value::Null, json!(left)),
        None => (Value::Null, Value::Null),
    };
    json!({
        "silent_because": run.gates.first(),
        "routing": run.verdict.as_ref().map(|v| routed_json(loaded, &v.routed)),
        "enforce": run.mode,
        "enforce_means": run.mode.describe(),
        "model": spawn.chosen,
        "tier_before": spawn.model.tier(),
        "set_tier": set,
        "rewrites": run.updated_input.is_some(),
        "kept": action.and_then(|a| a.as_ref().err()).and_then(|l| l.kept()),
        "unchanged_because": because,
        "logged": routing::agent::entry(spawn, run).is_some(),
        "log_dir": run.log_dir.as_ref().map(|d| d.display().to_string()),
        "elapsed_ms": millis(run.elapsed),
    })
}

fn print_brief(r: &Value) -> Result<()> {
    if let Some(why) = r["silent_because"].as_str() {
        outln!("hook: does nothing ({why}); what it would ask anyway:")?;
    }
    print_routing(&r["routing"])?;
    outln!("enforce: {} ({})", shown(&r["enforce"]), shown(&r["enforce_means"]))?;
    let model = r["model"].as_str().map_or("no model".to_string(), |m| format!("model {m:?}"));
    match r["set_tier"].as_str() {
        Some(t) if r["rewrites"].as_bool() == Some(true) => {
            outln!("spawn: {model} → model \"{t}\" (the hook rewrites the call's model, nothing else)")?
        }
        Some(t) => outln!("spawn: {model} would become model \"{t}\", but the hook does nothing (above)")?,
        None => outln!("spawn: {model}, passed as Claude made it ({})", shown(&r["unchanged_because"]))?,
    }
    match r["log_dir"].as_str() {
        Some(d) if r["logged"].as_bool() == Some(true) => outln!("log: the hook would log this spawn (inside {d})")?,
        Some(d) if r["silent_because"].is_string() => {
            outln!("log: not logged (the hook does nothing), though inside {d}")?
        }
        Some(d) => outln!("log: not logged (the engine gave nothing to log), though inside {d}")?,
        None => outln!("log: not logged (cwd is outside [routing] log_dirs)")?,
    }
    outln!("time: {:.1} ms", r["elapsed_ms"].as_f64().unwrap_or(0.0))?;
    Ok(())
}
