//! The spawn hooks' work, shared with `system1 route --brief` (one run that records every step: the
//! hooks run it `Until::FirstGate`, `route` `Until::End`).
//!
//! Before a spawn (PreToolUse on Agent/Task): the brief's four features and the rule's tier,
//! logged next to the model Claude chose, and under `[routing] enforce` the call's `model` set to
//! that tier when the answers that decided it clear `[routing] min_confidence`. Anything else (routing off,
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
use super::entry::{Call, Enforcement, Entry, Ran, Source, Via};
use super::gate::{self, Gate};
use super::{Input, Routed, Until, cwd_of, log, meet, route, routed_entry, settled};
use crate::claude_code::SubagentModel;
use crate::config::{Enforce, Loaded, RoutingConfig};
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
    /// Claude Code's `CLAUDE_CODE_SUBAGENT_MODEL` in the hook's environment, when set.
    pub subagent_model: Option<SubagentModel>,
    /// Whether `CLAUDE_CODE_SUBAGENT_NO_SMALL_MODELS` is on in the hook's environment.
    pub no_small_models: bool,
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
            subagent_model: SubagentModel::from_env(),
            no_small_models: crate::claude_code::no_small_models_from_env(),
        })
    }

    fn input(&self) -> Input<'_> {
        Input { prompt: &self.brief, cwd: self.cwd.clone(), session_id: self.session_id.clone(), skills: None }
    }
}

/// Everything one spawn went through.
#[derive(Debug)]
pub struct AgentRun {
    /// `[routing] enforce` as configured.
    pub mode: Enforce,
    /// Every gate the run met, in order: the hook does nothing when there is one (and stopped at it).
    pub gates: Vec<Gate>,
    /// The `log_dirs` entry that holds `cwd`, when the spawn is logged.
    pub log_dir: Option<PathBuf>,
    /// What the run found past the gates; `None` when it stopped at one.
    pub verdict: Option<Verdict>,
    /// The rewritten tool input, when the hook rewrites the call.
    pub updated_input: Option<String>,
    pub elapsed: Duration,
}

/// The brief's features and what enforcement does with them.
#[derive(Debug)]
pub struct Verdict {
    pub routed: Routed,
    /// The tier enforcement sets `model` to, or why the call passes as Claude made it.
    pub action: Result<Tier, Left>,
}

impl AgentRun {
    fn ended(mut self, started: Instant) -> AgentRun {
        self.elapsed = started.elapsed();
        self
    }
}

/// Runs a spawn through its gates, routing and enforcement.
pub fn run(loaded: &Loaded, spawn: &Spawn, until: Until) -> AgentRun {
    let started = Instant::now();
    let cfg = &loaded.config.routing;
    let mut run = AgentRun {
        mode: cfg.enforce,
        gates: Vec::new(),
        log_dir: None,
        verdict: None,
        updated_input: None,
        elapsed: Duration::ZERO,
    };
    for check in gate::SPAWN_GATES {
        if meet(&mut run.gates, check(loaded, spawn.tool_name.as_deref()), until) {
            return run.ended(started);
        }
    }
    let words = gate::words(&spawn.brief);
    let early = match &spawn.subagent_model {
        // Claude Code's own setting decides: the rule's tier is recorded, never set.
        Some(var) if cfg.enforce != Enforce::Off => Some(Left::SubagentModel(var.clone())),
        _ => enforce::before_engine(cfg.enforce, &spawn.model, spawn.subagent_type.as_deref(), words),
    };
    run.log_dir = spawn.cwd.as_deref().and_then(|cwd| log::opted_in(cwd, &cfg.log_dirs));
    let can_change = early.is_none() && enforce::could_change(cfg.enforce, &spawn.model);
    // Nothing to set and nothing to log: no engine is asked.
    let idle = run.log_dir.is_none() && !can_change;
    if meet(&mut run.gates, idle.then_some(Gate::NothingToSetOrLog), until) {
        return run.ended(started);
    }
    let gateway = Gateway::new(loaded.clone());
    // A provider's own settings can be wrong where the config file parses.
    if meet(&mut run.gates, gate::refused(&gateway), until) {
        return run.ended(started);
    }
    let deadline = Instant::now() + Duration::from_millis(cfg.budget_ms);
    let routed = route(&gateway, cfg, &spawn.brief, deadline, until, &new_request_id());
    let mut action = action(cfg, cfg.enforce, &spawn.model, early, &routed);
    // Not in `action`, which `report --what-if` replays without the hook's environment.
    if let Ok(tier) = action
        && spawn.no_small_models
        && tier < crate::claude_code::SMALLEST_WITHOUT_SMALL_MODELS
    {
        action = Err(Left::NoSmallModels(tier));
    }
    if run.gates.is_empty()
        && let Ok(tier) = action
    {
        match enforce::rewrite(&spawn.raw_input, tier) {
            Ok(updated) => run.updated_input = Some(updated),
            Err(e) => action = Err(Left::RewriteFailed(e)),
        }
    }
    run.verdict = Some(Verdict { routed, action });
    run.ended(started)
}

/// What `mode` does with a call naming `model` whose brief was `routed`: the tier it sets, or why
/// the call passes as Claude made it (`early`, what `enforce::before_engine` found, else features not
/// settled enough, else the verdict). The step the hook and `report --what-if` share.
pub fn action(
    cfg: &RoutingConfig,
    mode: Enforce,
    model: &Model,
    early: Option<Left>,
    routed: &Routed,
) -> Result<Tier, Left> {
    match early {
        Some(left) => Err(left),
        None => settled(cfg, routed).map_err(Left::Unsettled).and_then(|tier| enforce::verdict(mode, model, tier)),
    }
}

/// The agent entry of a spawn run, naming the hook it ran `via`: `None` unless `cwd` is inside
/// `log_dirs` and the engine answered.
pub fn entry(spawn: &Spawn, run: &AgentRun, via: Via) -> Option<Entry> {
    let dir = run.log_dir.as_deref()?;
    if !run.gates.is_empty() {
        return None;
    }
    let Verdict { routed, action } = run.verdict.as_ref()?;
    routed.asked.features.as_ref().ok()?;
    let base = super::base_entry(Source::Agent, &spawn.input(), dir, &spawn.brief);
    let enforcing = run.mode != Enforce::Off;
    Some(Entry {
        call: Call {
            chosen: spawn.chosen.clone(),
            subagent_type: spawn.subagent_type.clone(),
            tool_use_id: spawn.tool_use_id.clone(),
            description: spawn.description.clone(),
        },
        enforcement: Enforcement {
            enforce: Some(run.mode),
            via: Some(via),
            tier_before: spawn.model.tier(),
            tier_after: run.updated_input.as_ref().and(action.as_ref().ok().copied()),
            kept: action.as_ref().err().filter(|_| enforcing).and_then(Left::kept),
        },
        ..routed_entry(base, routed, false)
    })
}

/// The PostToolUse hook's work: what the spawn ran on, as a spawn entry beside its agent entry
/// (found by `tool_use_id`); `None` when there is nothing to record (no agent entry, no
/// `resolvedModel`, routing off or paused, `cwd` outside `log_dirs`).
pub fn spawned(loaded: &Loaded, payload: &Value) -> Option<Entry> {
    let cfg = &loaded.config.routing;
    if gate::spawn_gate(loaded, payload.get("tool_name").and_then(Value::as_str)).is_some() {
        return None;
    }
    let cwd = cwd_of(payload)?;
    log::opted_in(&cwd, &cfg.log_dirs)?;
    let tool_use_id = payload.get("tool_use_id").and_then(Value::as_str)?;
    let resolved = payload.get("tool_response")?.get("resolvedModel")?.as_str()?;
    let session_id = text(payload.get("session_id"));
    let agent = log::find_agent(tool_use_id, session_id.as_deref())?;
    let ran_tier = Tier::of(resolved);
    let took_effect = agent.enforcement.tier_after.zip(ran_tier).map(|(set, ran)| set == ran);
    Some(Entry {
        id: Some(log::new_id()),
        time: Some(crate::text::now()),
        source: Some(Source::Spawn),
        session_id,
        repo: agent.repo,
        cwd: agent.cwd,
        call: Call { tool_use_id: Some(tool_use_id.to_string()), ..Call::default() },
        ran: Ran { resolved_model: Some(resolved.to_string()), ran_tier, took_effect },
        ..Entry::default()
    })
}
