//! `system1 route`: what the prompt hook would do with a prompt, step by step. It runs the hook's
//! own code (`routing::run_prompt`) in explain mode, which goes on past the reasons the hook would
//! stop at and reports them, and it never writes the routing log.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::gateway::millis;
use crate::logging;
use crate::routing::{self, Input, Mode, rule::Chosen, skills::Pick};

#[derive(clap::Args)]
pub struct Args {
    /// The prompt, as the user would type it.
    #[arg(long)]
    prompt: String,
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
    let input = Input { prompt: &args.prompt, cwd: Some(cwd), session_id: None, skills: None };
    let run = routing::run_prompt(&loaded, &input, Mode::Explain);
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

fn to_json(loaded: &crate::config::Loaded, run: &routing::Run, logged: bool) -> Value {
    let routing = run.routing.as_ref().map(|r| {
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
    });
    let skills = run.picked.as_ref().map(|p| {
        let (pick, confidence, why) = match &p.pick {
            Pick::Picked { skill, confidence } => (json!(skill), json!(confidence), Value::Null),
            Pick::Abstained => (Value::Null, Value::Null, json!("the engine abstained")),
            Pick::NotAsked(w) | Pick::Failed(w) => (Value::Null, Value::Null, json!(w)),
        };
        json!({
            "candidates": p.candidates.iter().map(|s| json!({"name": s.name, "origin": s.origin})).collect::<Vec<_>>(),
            "pick": pick, "confidence": confidence, "not_picked_because": why,
            "provider": p.provider, "engine_ms": p.latency_ms,
        })
    });
    let hint = |h: &std::result::Result<String, String>| match h {
        Ok(text) => json!({"given": true, "text": text}),
        Err(why) => json!({"given": false, "because": why}),
    };
    json!({
        "silent_because": run.gate,
        "routing": routing,
        "routing_hint": hint(&run.routing_hint),
        "skills": skills,
        "skill_hint": hint(&run.skill_hint),
        "logged": logged,
        "log_dir": run.log_dir.as_ref().map(|d| d.display().to_string()),
        "elapsed_ms": millis(run.elapsed),
    })
}

fn print_text(r: &Value) -> Result<()> {
    let s = |v: &Value| v.as_str().map(String::from).unwrap_or_else(|| v.to_string());
    if let Some(why) = r["silent_because"].as_str() {
        outln!("hook: silent ({why}); what it would ask anyway:")?;
    }
    let routing = &r["routing"];
    if let Some(fs) = routing["features"].as_object() {
        outln!(
            "features ({} {}, {:.1} ms):",
            s(&routing["provider"]),
            s(&routing["model"]),
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
        outln!("tier: {} ({rule}: {})", s(&routing["tier"]), s(&routing["rule_text"]))?;
    }
    let hint_line = |label: &str, h: &Value| {
        if h["given"].as_bool() == Some(true) {
            outln!("{label}: given: {}", s(&h["text"]))?;
        } else {
            outln!("{label}: none ({})", s(&h["because"]))?;
        }
        Ok::<(), crate::error::Error>(())
    };
    hint_line("routing hint", &r["routing_hint"])?;
    if let Some(sk) = r["skills"].as_object() {
        let names: Vec<String> = sk["candidates"]
            .as_array()
            .map(|a| a.iter().map(|c| format!("{} ({})", s(&c["name"]), s(&c["origin"]))).collect())
            .unwrap_or_default();
        outln!("skills: {} candidates{}{}", names.len(), if names.is_empty() { "" } else { ": " }, names.join(", "))?;
        match sk["pick"].as_str() {
            Some(p) => outln!(
                "skill pick: {p} ({:.2}, {:.1} ms)",
                sk["confidence"].as_f64().unwrap_or(0.0),
                sk["engine_ms"].as_f64().unwrap_or(0.0)
            )?,
            None => outln!("skill pick: none ({})", s(&sk["not_picked_because"]))?,
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
