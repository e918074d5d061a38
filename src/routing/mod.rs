//! Model routing and the skill picker, shared by the prompt hook, the agent hooks ([`agent`]) and
//! `system1 route`: one run that records every step, which the hooks act on and `route` prints
//! (the hooks run it `Until::FirstGate`, `route` `Until::End`).
//!
//! For a prompt: the gates first (off, paused, broken config, subagent hand-back, slash command,
//! short prompt, nothing to hint or log: [`gate`]), each of which makes the hook silent before any
//! engine is asked; then the four features in one engine request, the user's rule, the hint; then
//! the skill picker on what is left of the same engine budget. The log is written only for `cwd`s
//! inside `[routing] log_dirs`. The hook computes nothing that will neither be hinted nor logged.

pub mod agent;
pub mod enforce;
pub mod entry;
pub mod features;
pub mod gate;
pub mod log;
pub mod rule;
pub mod skills;
pub mod spawn_log;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::config::{Loaded, RoutingConfig};
use crate::feature::Feature;
use crate::gateway::{Budget, Gateway, Purpose, new_request_id};
use crate::tier::Tier;
use entry::{Entry, Source};
use features::Asked;
use gate::{Gate, NoRoutingHint, NoSkillHint, Unsettled};
use rule::Chosen;
use skills::Picked;

/// The fixed start of the routing hint, which the usage report looks for in transcripts.
pub const HINT_MARKER: &str = "System-1 routing hint:";
/// The fixed start of the skill hint.
pub const SKILL_HINT_MARKER: &str = "System-1 skill hint:";
/// Shorter prompts are follow-ups whose size depends on the conversation, which the hook cannot see.
pub const MIN_WORDS: usize = 10;

/// How far a run goes. Both stop nowhere else and compute nothing differently: the record a hook
/// acts on is the one `system1 route` prints.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Until {
    /// The hooks: stop at the first gate (nothing after it can make the hook act), and skip work
    /// whose result would be neither hinted, enforced nor logged.
    FirstGate,
    /// `system1 route`: go on past every gate and do all the work, to show every gate the hook
    /// would meet and what it would have asked anyway.
    End,
}

impl Until {
    /// What the gateway is asked for: the hooks' decisions are used, `route`'s only shown (the
    /// pause, one of its gates, does not stop it).
    pub fn purpose(self) -> Purpose {
        match self {
            Until::FirstGate => Purpose::Use,
            Until::End => Purpose::Check,
        }
    }
}

/// Records `gate` among the gates a run met, when there is one; whether the run stops there.
fn meet(gates: &mut Vec<Gate>, gate: Option<Gate>, until: Until) -> bool {
    gates.extend(gate);
    until == Until::FirstGate && !gates.is_empty()
}

/// What the hook knows about a prompt.
pub struct Input<'a> {
    pub prompt: &'a str,
    pub cwd: Option<PathBuf>,
    pub session_id: Option<String>,
    /// The skills Claude Code listed in the hook input, if it sent any.
    pub skills: Option<Vec<skills::Skill>>,
}

impl<'a> Input<'a> {
    pub fn from_payload(payload: &'a Value, prompt: &'a str) -> Self {
        Input {
            prompt,
            cwd: cwd_of(payload),
            session_id: payload.get("session_id").and_then(Value::as_str).map(String::from),
            skills: skills::from_input(payload),
        }
    }
}

/// The hook input's `cwd`, when it names one.
pub fn cwd_of(payload: &Value) -> Option<PathBuf> {
    payload.get("cwd").and_then(Value::as_str).filter(|c| !c.is_empty()).map(PathBuf::from)
}

/// The features and the tier the rule gives them.
#[derive(Debug, Clone)]
pub struct Routed {
    pub asked: Asked,
    /// `None` when the engine gave no answer for some feature.
    pub tier: Option<(Tier, Chosen)>,
    /// The features whose answers decided the tier (`rule::deciding`); empty without a tier.
    pub deciding: Vec<Feature>,
}

/// Everything one prompt went through.
#[derive(Debug, Default)]
pub struct Run {
    /// Every gate the run met, in order: the hook is silent when there is one (and stopped at it).
    pub gates: Vec<Gate>,
    /// The `log_dirs` entry that holds `cwd`, when this prompt is logged.
    pub log_dir: Option<PathBuf>,
    /// What the run found past the gates; `None` when it stopped at one.
    pub hints: Option<Hints>,
    pub elapsed: Duration,
}

/// The engine's answers for a prompt and the hints they give.
#[derive(Debug)]
pub struct Hints {
    /// `None` when the hook did not ask (routing off, or neither hinted nor logged).
    pub routing: Option<Routed>,
    /// The routing hint line, or why there is none.
    pub routing_hint: Result<String, NoRoutingHint>,
    /// `None` when the hook did not run the picker.
    pub picked: Option<Picked>,
    /// The skill hint line, or why there is none.
    pub skill_hint: Result<String, NoSkillHint>,
}

impl Run {
    /// The `additionalContext` for Claude: the hint lines that apply, or `None` for silence.
    pub fn context(&self) -> Option<String> {
        let hints = self.hints.as_ref().filter(|_| self.gates.is_empty())?;
        let lines: Vec<&str> =
            [hints.routing_hint.as_deref().ok(), hints.skill_hint.as_deref().ok()].into_iter().flatten().collect();
        (!lines.is_empty()).then(|| lines.join("\n"))
    }

    fn ended(mut self, started: Instant) -> Run {
        self.elapsed = started.elapsed();
        self
    }
}

/// Runs a prompt through its gates, routing and the picker.
pub fn run_prompt(loaded: &Loaded, input: &Input, until: Until) -> Run {
    let started = Instant::now();
    let routing_cfg = &loaded.config.routing;
    let skills_cfg = &loaded.config.skills;
    let mut run = Run::default();
    for check in gate::PROMPT_GATES {
        if meet(&mut run.gates, check(loaded, input.prompt), until) {
            return run.ended(started);
        }
    }
    run.log_dir = input.cwd.as_deref().and_then(|cwd| log::opted_in(cwd, &routing_cfg.log_dirs));
    let logging = run.log_dir.is_some();
    let want_routing = routing_cfg.enabled && (routing_cfg.hint || logging);
    let want_skills = skills_cfg.enabled && (skills_cfg.hint || logging);
    if meet(&mut run.gates, (!want_routing && !want_skills).then_some(Gate::NothingToHintOrLog), until) {
        return run.ended(started);
    }
    let gateway = Gateway::new(loaded.clone());
    // A provider's own settings can be wrong where the config file parses (e.g. a bad mock `fail`).
    if meet(&mut run.gates, gate::refused(&gateway), until) {
        return run.ended(started);
    }
    let everything = until == Until::End;
    let rid = new_request_id();
    let deadline = Instant::now() + Duration::from_millis(routing_cfg.budget_ms);
    let routing =
        (want_routing || everything).then(|| route(&gateway, routing_cfg, input.prompt, deadline, until, &rid));
    let picked = (want_skills || everything).then(|| {
        // The file walk happens only here, when the picker runs.
        let candidates = match &input.skills {
            Some(list) => list.clone(),
            None => skills::discover(input.cwd.as_deref(), deadline),
        };
        skills::pick(&gateway, input.prompt, candidates, deadline, until.purpose(), &rid)
    });
    run.hints = Some(Hints {
        routing_hint: routing_hint(routing_cfg, routing.as_ref()),
        skill_hint: skill_hint(skills_cfg, picked.as_ref()),
        routing,
        picked,
    });
    run.ended(started)
}

/// Asks the features of `text` and applies the rule.
pub fn route(gateway: &Gateway, cfg: &RoutingConfig, text: &str, deadline: Instant, until: Until, rid: &str) -> Routed {
    let budget = Budget::Until(deadline);
    apply_rule(cfg, features::ask(gateway, text, budget, until.purpose(), rid, cfg.tier_head))
}

/// The rule's tier for the features `asked` gave (none unless every feature has an answer); with
/// `[routing] tier_head`, the tier head's where it is at least `tier_head_min_confidence` sure,
/// which no feature then decides.
pub fn apply_rule(cfg: &RoutingConfig, asked: Asked) -> Routed {
    let (tier, deciding) = match &asked.features {
        Ok(fs) if fs.iter().all(|f| f.answer.is_some()) => match asked.tier_head {
            Some(h) if cfg.tier_head && h.confidence >= cfg.tier_head_min_confidence => {
                (Some((h.tier, Chosen::Head)), Vec::new())
            }
            _ => {
                let answers: BTreeMap<Feature, (bool, f64)> =
                    fs.iter().filter_map(|f| Some((f.feature, (f.answer?, f.confidence)))).collect();
                let picks: BTreeMap<Feature, bool> = answers.iter().map(|(f, a)| (*f, a.0)).collect();
                let (tier, chosen) = rule::choose(&cfg.rules, cfg.default_tier, &picks);
                (Some((tier, chosen)), rule::deciding(&cfg.rules, chosen, &answers))
            }
        },
        _ => (None, Vec::new()),
    };
    Routed { asked, tier, deciding }
}

/// The rule's tier when every feature has an answer, and every answer that decided the tier (the
/// features of the rule that matched and of the rules skipped before it: `rule::deciding`) clears
/// `[routing] min_confidence`: the one bar both the hint and enforcement must clear. An unsure
/// answer no deciding rule reads does not matter. Otherwise why not.
pub fn settled(cfg: &RoutingConfig, routed: &Routed) -> Result<Tier, Unsettled> {
    let features = routed.asked.features.as_ref().map_err(|e| Unsettled::EngineFailed(e.clone()))?;
    if let Some(f) = features.iter().find(|f| f.answer.is_none()) {
        return Err(Unsettled::Abstained(f.feature));
    }
    if let Some(f) = features.iter().find(|f| routed.deciding.contains(&f.feature) && f.confidence < cfg.min_confidence)
    {
        return Err(Unsettled::LowConfidence { feature: f.feature, confidence: f.confidence, min: cfg.min_confidence });
    }
    routed.tier.map(|(tier, _)| tier).ok_or(Unsettled::NoTier)
}

/// The routing hint, or why there is none. `routed` is `None` when routing was not asked, which
/// past the gates happens only when it is off or its hint is.
fn routing_hint(cfg: &RoutingConfig, routed: Option<&Routed>) -> Result<String, NoRoutingHint> {
    if !cfg.enabled {
        return Err(NoRoutingHint::RoutingOff);
    }
    let Some(routed) = routed else { return Err(NoRoutingHint::HintsOff) };
    let tier = settled(cfg, routed).map_err(NoRoutingHint::Unsettled)?;
    if !cfg.hint {
        return Err(NoRoutingHint::HintsOff);
    }
    if tier < crate::claude_code::SMALLEST_WITHOUT_SMALL_MODELS && crate::claude_code::no_small_models_from_env() {
        return Err(NoRoutingHint::RefusedTier(tier));
    }
    Ok(hint_text(tier))
}

/// The one line Claude reads.
pub fn hint_text(tier: Tier) -> String {
    format!(
        "{HINT_MARKER} use model \"{tier}\" for any subagent you spawn for this task (set it as the Agent tool's `model`)."
    )
}

/// The skill hint, or why there is none. `picked` is `None` when the picker did not run, which past
/// the gates happens only when it is off or its hint is.
fn skill_hint(cfg: &crate::config::SkillsConfig, picked: Option<&Picked>) -> Result<String, NoSkillHint> {
    if !cfg.enabled {
        return Err(NoSkillHint::PickerOff);
    }
    let Some(picked) = picked else { return Err(NoSkillHint::HintsOff) };
    let (skill, confidence) = picked.pick.skill()?;
    if skill == skills::NONE {
        return Err(NoSkillHint::PickedNone);
    }
    if confidence < cfg.min_confidence {
        return Err(NoSkillHint::LowConfidence { confidence, min: cfg.min_confidence });
    }
    if !cfg.hint {
        return Err(NoSkillHint::HintsOff);
    }
    Ok(format!("{SKILL_HINT_MARKER} consider the `{skill}` skill if it fits"))
}

/// The fields every log entry starts with.
fn base_entry(source: Source, input: &Input, log_dir: &Path, prompt: &str) -> Entry {
    let cwd = input.cwd.as_deref().unwrap_or(log_dir);
    Entry {
        id: Some(log::new_id()),
        time: Some(crate::text::now()),
        source: Some(source),
        session_id: input.session_id.clone(),
        repo: Some(log::repo_of(cwd, log_dir).display().to_string()),
        cwd: Some(cwd.display().to_string()),
        prompt: Some(prompt.to_string()),
        ..Entry::default()
    }
}

/// What a record says was decided, and by which engine.
fn decided(
    decision: Option<String>,
    hinted: bool,
    provider: &Option<String>,
    model: &Option<String>,
    latency_ms: f64,
    sent: &[crate::state::Sent],
) -> entry::Decided {
    entry::Decided {
        decision,
        hinted: Some(hinted),
        provider: provider.clone(),
        model: model.clone(),
        latency_ms: Some(latency_ms),
        sent: sent.to_vec(),
    }
}

/// An entry with the routing fields: features, rule, tier, engine.
fn routed_entry(base: Entry, routed: &Routed, hinted: bool) -> Entry {
    let tier = routed.tier.map(|(t, _)| t);
    Entry {
        routing: entry::Routing { features: routed.asked.logged(), rule_tier: tier, rule: routed.tier.map(|(_, c)| c) },
        decided: decided(
            tier.map(|t| t.name().to_string()),
            hinted,
            &routed.asked.provider,
            &routed.asked.model,
            routed.asked.latency_ms,
            &routed.asked.sent,
        ),
        ..base
    }
}

/// The log entries of a prompt run: one for routing (when the engine answered) and one for the
/// picker (when it was asked). None unless `cwd` is inside `log_dirs`.
pub fn entries(input: &Input, run: &Run) -> Vec<Entry> {
    let (Some(dir), Some(hints)) = (&run.log_dir, &run.hints) else { return Vec::new() };
    if !run.gates.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let Some(routed) = &hints.routing
        && routed.asked.features.is_ok()
    {
        let base = base_entry(Source::Prompt, input, dir, input.prompt);
        out.push(routed_entry(base, routed, hints.routing_hint.is_ok()));
    }
    if let Some(p) = &hints.picked
        && let skills::Pick::Picked { skill, confidence } = &p.pick
    {
        out.push(Entry {
            decided: decided(
                Some(skill.clone()),
                hints.skill_hint.is_ok(),
                &p.provider,
                &p.model,
                p.latency_ms,
                &p.sent,
            ),
            skill_pick: entry::SkillPick {
                candidates: Some(p.candidates.len()),
                skill: Some(skill.clone()),
                skill_confidence: Some(*confidence),
            },
            ..base_entry(Source::Skill, input, dir, input.prompt)
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_carries_marker_and_tier() {
        let h = hint_text(Tier::Haiku);
        assert!(h.starts_with(HINT_MARKER));
        assert!(h.contains("model \"haiku\""));
        assert!(!h.contains('\n'));
    }
}
