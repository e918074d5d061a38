//! The spawn hooks' work, shared with `system1 route --brief` (one code path: the hooks run it in
//! `Mode::Hook`, `route` in `Mode::Explain`).
//!
//! Before a spawn (PreToolUse on Agent/Task): the brief's four features and the rule's tier,
//! logged next to the model Claude chose, and under `[routing] enforce` the call's `model` set to
//! that tier when every feature clears `[routing] min_confidence`. Anything else (routing off,
//! paused, a config error, a fork, a short brief, no confident answer within the budget, a rewrite
//! that cannot be made) lets the call pass exactly as Claude made it.
//!
//! After it (PostToolUse): the model the spawn ran on (`resolvedModel`), logged beside the agent
//! entry, and whether a rewrite took effect.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::enforce::{self, Left, Model};
use super::entry::{Entry, Source};
use super::{Input, Mode, Routed, cwd_of, log, paused_or_broken, route, routed_entry, settled};
use crate::config::{Enforce, Loaded};
use crate::gateway::{Gateway, new_request_id};
use crate::tier::Tier;

/// An Agent call as the hook sees it.
#[derive(Debug, Clone)]
pub struct Spawn {
    pub tool_name: Option<String>,
    /// The call's input exactly as Claude Code sent it: a JSON object's text.
    pub raw_input: String,
    /// The subagent's whole task (`prompt`).
    pub brief: String,
    pub model: Model,
    /// `model` as given, when it is text.
    pub chosen: Option<String>,
    pub subagent_type: Option<String>,
    pub description: Option<String>,
    pub tool_use_id: Option<String>,
    pub session_id: Option<String>,
    pub cwd: Option<PathBuf>,
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(String::from)
}

impl Spawn {
    /// The call in a PreToolUse input (`raw` is the input's text, `payload` the same parsed);
    /// `None` when it carries no tool input object with a brief.
    pub fn from_hook(raw: &str, payload: &Value) -> Option<Spawn> {
        #[derive(Deserialize)]
        struct Borrowed<'a> {
            #[serde(borrow)]
            tool_input: Option<&'a RawValue>,
        }
        let raw_input = serde_json::from_str::<Borrowed>(raw).ok()?.tool_input?.get().to_string();
        let input = payload.get("tool_input").filter(|v| v.is_object())?;
        let brief = input.get("prompt").and_then(Value::as_str).filter(|p| !p.trim().is_empty())?;
        Some(Spawn {
            tool_name: text(payload.get("tool_name")),
            raw_input,
            brief: brief.to_string(),
            model: Model::read(input.get("model")),
            chosen: text(input.get("model")),
            subagent_type: text(input.get("subagent_type")),
            description: text(input.get("description")),
            tool_use_id: text(payload.get("tool_use_id")),
            session_id: text(payload.get("session_id")),
            cwd: cwd_of(payload),
        })
    }

    fn input(&self) -> Input<'_> {
        Input { prompt: &self.brief, cwd: self.cwd.clone(), session_id: self.session_id.clone(), skills: None }
    }
}

/// Everything one spawn went through.
pub struct AgentRun {
    /// `[routing] enforce` as configured.
    pub mode: Enforce,
    /// Why the hook does nothing at all (in `Explain` mode, why it would not).
    pub gate: Option<String>,
    /// The `log_dirs` entry that holds `cwd`, when the spawn is logged.
    pub log_dir: Option<PathBuf>,
    pub routed: Option<Routed>,
    /// The tier enforcement sets `model` to, or why the call passes as Claude made it.
    pub action: Result<Tier, Left>,
    /// The rewritten tool input, when the hook rewrites the call.
    pub updated_input: Option<String>,
    pub elapsed: Duration,
}

/// Why the spawn hooks may not run at all: routing off, paused, a broken config, another tool.
fn gate(loaded: &Loaded, tool_name: Option<&str>) -> Option<String> {
    if !loaded.config.routing.enabled {
        return Some("routing is off ([routing] enabled = false)".into());
    }
    if let Some(why) = paused_or_broken(loaded) {
        return Some(why);
    }
    match tool_name {
        Some(t) if t != "Agent" && t != "Task" => Some(format!("the {t} tool spawns no subagent")),
        _ => None,
    }
}

/// Runs a spawn through routing and enforcement.
pub fn run(loaded: &Loaded, spawn: &Spawn, mode: Mode) -> AgentRun {
    let started = Instant::now();
    let cfg = &loaded.config.routing;
    let explain = mode == Mode::Explain;
    let mut run = AgentRun {
        mode: cfg.enforce,
        gate: gate(loaded, spawn.tool_name.as_deref()),
        log_dir: None,
        routed: None,
        action: Err(Left::new(None, "")),
        updated_input: None,
        elapsed: Duration::ZERO,
    };
    let finish = |mut run: AgentRun, why: Left| {
        run.action = Err(why);
        run.elapsed = started.elapsed();
        run
    };
    if let Some(why) = &run.gate
        && !explain
    {
        let why = Left::new(None, why.clone());
        return finish(run, why);
    }
    let words = spawn.brief.split_whitespace().count();
    let early = enforce::before_engine(cfg.enforce, &spawn.model, spawn.subagent_type.as_deref(), words);
    run.log_dir = spawn.cwd.as_deref().and_then(|cwd| log::opted_in(cwd, &cfg.log_dirs));
    let can_change = early.is_none() && enforce::could_change(cfg.enforce, &spawn.model);
    if !explain && run.log_dir.is_none() && !can_change {
        // Nothing to set and nothing to log: no engine is asked.
        let why = early.unwrap_or_else(|| Left::new(None, "nothing enforcement could change"));
        return finish(run, why);
    }
    let gateway = Gateway::new(loaded.clone());
    if !gateway.is_ok() {
        // A provider's own settings can be wrong where the config file parses.
        let why = format!("config error: {}", gateway.config_errors.join("; "));
        if !explain {
            return finish(run, Left::new(None, why));
        }
        run.gate.get_or_insert(why);
    }
    let deadline = Instant::now() + Duration::from_millis(cfg.budget_ms);
    let routed = route(&gateway, cfg, &spawn.brief, deadline, &new_request_id());
    run.action = match early {
        Some(left) => Err(left),
        None => settled(cfg, &routed).and_then(|tier| enforce::verdict(cfg.enforce, &spawn.model, tier)),
    };
    run.routed = Some(routed);
    if run.gate.is_none()
        && let Ok(tier) = run.action
    {
        match enforce::rewrite(&spawn.raw_input, tier) {
            Ok(updated) => run.updated_input = Some(updated),
            Err(e) => run.action = Err(Left::new(None, e)),
        }
    }
    run.elapsed = started.elapsed();
    run
}

/// The agent entry of a spawn run: `None` unless `cwd` is inside `log_dirs` and the engine answered.
pub fn entry(spawn: &Spawn, run: &AgentRun) -> Option<Entry> {
    let dir = run.log_dir.as_deref()?;
    if run.gate.is_some() {
        return None;
    }
    let routed = run.routed.as_ref()?;
    routed.asked.features.as_ref().ok()?;
    let base = super::base_entry(Source::Agent, &spawn.input(), dir, &spawn.brief);
    let enforcing = run.mode != Enforce::Off;
    Some(Entry {
        chosen: spawn.chosen.clone(),
        subagent_type: spawn.subagent_type.clone(),
        tool_use_id: spawn.tool_use_id.clone(),
        description: spawn.description.clone(),
        enforce: Some(run.mode),
        tier_before: spawn.model.tier(),
        tier_after: run.updated_input.as_ref().and(run.action.as_ref().ok().copied()),
        kept: run.action.as_ref().err().filter(|_| enforcing).and_then(|l| l.kept.clone()),
        ..routed_entry(base, routed, false)
    })
}

/// The PostToolUse hook's work: what the spawn ran on, as a spawn entry beside its agent entry
/// (found by `tool_use_id`); `None` when there is nothing to record (no agent entry, no
/// `resolvedModel`, routing off or paused, `cwd` outside `log_dirs`).
pub fn spawned(loaded: &Loaded, payload: &Value) -> Option<Entry> {
    let cfg = &loaded.config.routing;
    if gate(loaded, payload.get("tool_name").and_then(Value::as_str)).is_some() {
        return None;
    }
    let cwd = cwd_of(payload)?;
    log::opted_in(&cwd, &cfg.log_dirs)?;
    let tool_use_id = payload.get("tool_use_id").and_then(Value::as_str)?;
    let resolved = payload.get("tool_response")?.get("resolvedModel")?.as_str()?;
    let session_id = text(payload.get("session_id"));
    let agent = log::find_agent(tool_use_id, session_id.as_deref())?;
    let ran_tier = Tier::of(resolved);
    let took_effect = agent.tier_after.zip(ran_tier).map(|(set, ran)| set == ran);
    Some(Entry {
        id: Some(log::new_id()),
        time: Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        source: Some(Source::Spawn),
        session_id,
        repo: agent.repo,
        cwd: agent.cwd,
        tool_use_id: Some(tool_use_id.to_string()),
        resolved_model: Some(resolved.to_string()),
        ran_tier,
        took_effect,
        ..Entry::default()
    })
}
