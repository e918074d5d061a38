//! Model routing and the skill picker, shared by the prompt hook, the agent hooks ([`agent`]) and
//! `system1 route` (one code path: the hook runs it in `Mode::Hook`, `route` in `Mode::Explain`).
//!
//! For a prompt: cheap checks first (off, paused, broken config, slash command, short prompt,
//! subagent hand-back), each of which makes the hook silent before any engine is asked; then the
//! four features in one engine request, the user's rule, the hint; then the skill picker on what is
//! left of the same engine budget. The log is written only for `cwd`s inside `[routing] log_dirs`.
//! In `Mode::Hook` nothing is computed that will neither be hinted nor logged.

pub mod agent;
pub mod enforce;
pub mod entry;
pub mod features;
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
use crate::gateway::{Gateway, new_request_id};
use crate::state;
use crate::tier::Tier;
use enforce::Left;
use entry::{Entry, Kept, Source};
use features::Asked;
use rule::Chosen;
use skills::{Pick, Picked};

/// The fixed start of the routing hint, which the usage report looks for in transcripts.
pub const HINT_MARKER: &str = "System-1 routing hint:";
/// The fixed start of the skill hint.
pub const SKILL_HINT_MARKER: &str = "System-1 skill hint:";
/// Shorter prompts are follow-ups whose size depends on the conversation, which the hook cannot see.
pub const MIN_WORDS: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// The hook: stop at the first reason to stay silent, skip work nobody will see.
    Hook,
    /// `system1 route`: do everything, and say what the hook would have done and why.
    Explain,
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
}

/// Everything one prompt went through.
pub struct Run {
    /// Why the hook is silent before asking any engine (in `Explain` mode, why it would be).
    pub gate: Option<String>,
    /// The `log_dirs` entry that holds `cwd`, when this prompt is logged.
    pub log_dir: Option<PathBuf>,
    pub routing: Option<Routed>,
    /// The routing hint line, or why there is none.
    pub routing_hint: Result<String, String>,
    pub picked: Option<Picked>,
    /// The skill hint line, or why there is none.
    pub skill_hint: Result<String, String>,
    pub elapsed: Duration,
}

impl Run {
    /// The `additionalContext` for Claude: the hint lines that apply, or `None` for silence.
    pub fn context(&self) -> Option<String> {
        let lines: Vec<&str> =
            [&self.routing_hint, &self.skill_hint].into_iter().filter_map(|h| h.as_deref().ok()).collect();
        (!lines.is_empty()).then(|| lines.join("\n"))
    }
}

/// Why a prompt is not for routing, before any engine is asked.
pub fn prompt_gate(prompt: &str) -> Option<String> {
    let text = prompt.trim_start();
    if text.starts_with("<agent-message") || text.starts_with("<task-notification") {
        return Some("a subagent hand-back, not a task".into());
    }
    if let Some(first) = text.split_whitespace().next()
        && first.len() > 1
        && first.starts_with('/')
        && first[1..].chars().all(|c| c.is_alphanumeric() || "-_:.".contains(c))
    {
        return Some(format!("a slash command ({first})"));
    }
    let words = text.split_whitespace().count();
    if words < MIN_WORDS {
        return Some(format!("{words} words, fewer than {MIN_WORDS}"));
    }
    None
}

/// Why the hook may not run at all: off, paused, or a broken config.
fn state_gate(loaded: &Loaded, wanted: bool) -> Option<String> {
    if !wanted {
        return Some("routing and the skill picker are off ([routing] enabled, [skills] enabled)".into());
    }
    paused_or_broken(loaded)
}

/// Why no routing hook may act, whatever it is for: System-1 paused, or a broken config.
fn paused_or_broken(loaded: &Loaded) -> Option<String> {
    if state::is_paused() {
        return Some(format!("System-1 is paused (`{}` resumes it)", crate::text::command("toggle on")));
    }
    if !loaded.errors.is_empty() {
        return Some(format!("config error: {}", loaded.errors.join("; ")));
    }
    None
}

/// Runs a prompt through routing and the picker.
pub fn run_prompt(loaded: &Loaded, input: &Input, mode: Mode) -> Run {
    let started = Instant::now();
    let routing_cfg = &loaded.config.routing;
    let skills_cfg = &loaded.config.skills;
    let mut run = Run {
        gate: None,
        log_dir: None,
        routing: None,
        routing_hint: Err(String::new()),
        picked: None,
        skill_hint: Err(String::new()),
        elapsed: Duration::ZERO,
    };
    let explain = mode == Mode::Explain;
    run.gate = state_gate(loaded, routing_cfg.enabled || skills_cfg.enabled).or_else(|| prompt_gate(input.prompt));
    if let Some(why) = &run.gate
        && !explain
    {
        run.routing_hint = Err(why.clone());
        run.skill_hint = Err(why.clone());
        run.elapsed = started.elapsed();
        return run;
    }
    run.log_dir = input.cwd.as_deref().and_then(|cwd| log::opted_in(cwd, &routing_cfg.log_dirs));
    let logging = run.log_dir.is_some();
    let want_routing = explain || routing_cfg.enabled && (routing_cfg.hint || logging);
    let want_skills = explain || skills_cfg.enabled && (skills_cfg.hint || logging);
    if !want_routing && !want_skills {
        let why = "nothing to hint and nothing to log (cwd is outside [routing] log_dirs)".to_string();
        run.routing_hint = Err(why.clone());
        run.skill_hint = Err(why);
        run.elapsed = started.elapsed();
        return run;
    }
    let gateway = Gateway::new(loaded.clone());
    if !gateway.is_ok() {
        // A provider's own settings can be wrong where the config file parses (e.g. a bad mock `fail`).
        let why = format!("config error: {}", gateway.config_errors.join("; "));
        if !explain {
            run.routing_hint = Err(why.clone());
            run.skill_hint = Err(why);
            run.elapsed = started.elapsed();
            return run;
        }
        run.gate.get_or_insert(why);
    }
    let rid = new_request_id();
    let deadline = Instant::now() + Duration::from_millis(routing_cfg.budget_ms);

    run.routing_hint = Err("routing is off ([routing] enabled = false)".into());
    if want_routing {
        let routed = route(&gateway, routing_cfg, input.prompt, deadline, &rid);
        run.routing_hint = routing_hint(routing_cfg, &routed);
        run.routing = Some(routed);
    }

    run.skill_hint = Err("the skill picker is off ([skills] enabled = false)".into());
    if want_skills {
        // The file walk happens only here, when the picker runs.
        let candidates = match &input.skills {
            Some(list) => list.clone(),
            None => skills::discover(input.cwd.as_deref(), deadline),
        };
        let picked = skills::pick(&gateway, input.prompt, candidates, deadline, &rid);
        run.skill_hint = skill_hint(skills_cfg, &picked);
        run.picked = Some(picked);
    }
    if let Some(why) = &run.gate {
        // Explain mode went on past a gate; the hook itself would have said nothing.
        for hint in [&mut run.routing_hint, &mut run.skill_hint] {
            if hint.is_ok() {
                *hint = Err(why.clone());
            }
        }
    }
    run.elapsed = started.elapsed();
    run
}

/// Asks the features of `text` and applies the rule.
pub fn route(gateway: &Gateway, cfg: &RoutingConfig, text: &str, deadline: Instant, rid: &str) -> Routed {
    let asked = features::ask(gateway, text, Some(deadline), rid);
    let tier = match &asked.features {
        Ok(fs) if fs.iter().all(|f| f.answer.is_some()) => {
            let answers: BTreeMap<Feature, bool> = fs.iter().filter_map(|f| Some((f.feature, f.answer?))).collect();
            Some(rule::choose(&cfg.rules, cfg.default_tier, &answers))
        }
        _ => None,
    };
    Routed { asked, tier }
}

/// The rule's tier when every feature has an answer that clears `[routing] min_confidence`: the
/// one bar both the hint and enforcement must clear. Otherwise why not.
pub fn settled(cfg: &RoutingConfig, routed: &Routed) -> Result<Tier, Left> {
    let features = routed.asked.features.as_ref().map_err(|e| Left::new(None, format!("no engine answer: {e}")))?;
    if let Some(f) = features.iter().find(|f| f.answer.is_none()) {
        return Err(Left::new(Some(Kept::Abstained), format!("the engine abstained on {}", f.feature)));
    }
    if let Some(f) = features.iter().find(|f| f.confidence < cfg.min_confidence) {
        return Err(Left::new(
            Some(Kept::LowConfidence),
            format!(
                "{} confidence {:.2} is below [routing] min_confidence {:.2}",
                f.feature, f.confidence, cfg.min_confidence
            ),
        ));
    }
    routed.tier.map(|(tier, _)| tier).ok_or_else(|| Left::new(None, "no tier"))
}

/// The routing hint, or why there is none.
fn routing_hint(cfg: &RoutingConfig, routed: &Routed) -> Result<String, String> {
    if !cfg.enabled {
        return Err("routing is off ([routing] enabled = false)".into());
    }
    let tier = settled(cfg, routed).map_err(|l| l.why)?;
    if !cfg.hint {
        return Err("hints are off ([routing] hint = false): log only".into());
    }
    Ok(hint_text(tier))
}

/// The one line Claude reads.
pub fn hint_text(tier: Tier) -> String {
    format!(
        "{HINT_MARKER} use model \"{tier}\" for any subagent you spawn for this task (set it as the Agent tool's `model`)."
    )
}

fn skill_hint(cfg: &crate::config::SkillsConfig, picked: &Picked) -> Result<String, String> {
    if !cfg.enabled {
        return Err("the skill picker is off ([skills] enabled = false)".into());
    }
    match &picked.pick {
        Pick::NotAsked(why) | Pick::Failed(why) => Err(why.clone()),
        Pick::Abstained => Err("the engine abstained".into()),
        Pick::Picked { skill, .. } if skill == skills::NONE => Err("the engine picked no skill".into()),
        Pick::Picked { confidence, .. } if *confidence < cfg.min_confidence => {
            Err(format!("confidence {confidence:.2} is below [skills] min_confidence {:.2}", cfg.min_confidence))
        }
        Pick::Picked { .. } if !cfg.hint => Err("hints are off ([skills] hint = false): record only".into()),
        Pick::Picked { skill, .. } => Ok(format!("{SKILL_HINT_MARKER} consider the `{skill}` skill if it fits")),
    }
}

/// The fields every log entry starts with.
fn base_entry(source: Source, input: &Input, log_dir: &Path, prompt: &str) -> Entry {
    let cwd = input.cwd.as_deref().unwrap_or(log_dir);
    Entry {
        id: Some(log::new_id()),
        time: Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        source: Some(source),
        session_id: input.session_id.clone(),
        repo: Some(log::repo_of(cwd, log_dir).display().to_string()),
        cwd: Some(cwd.display().to_string()),
        prompt: Some(prompt.to_string()),
        ..Entry::default()
    }
}

/// An entry with the routing fields: features, rule, tier, engine.
fn routed_entry(base: Entry, routed: &Routed, hinted: bool) -> Entry {
    let tier = routed.tier.map(|(t, _)| t);
    Entry {
        features: routed.asked.logged(),
        rule_tier: tier,
        rule: routed.tier.map(|(_, c)| c),
        decision: tier.map(|t| t.name().to_string()),
        hinted: Some(hinted),
        provider: routed.asked.provider.clone(),
        model: routed.asked.model.clone(),
        latency_ms: Some(routed.asked.latency_ms),
        ..base
    }
}

/// The log entries of a prompt run: one for routing (when the engine answered) and one for the
/// picker (when it was asked). None unless `cwd` is inside `log_dirs`.
pub fn entries(input: &Input, run: &Run) -> Vec<Entry> {
    let Some(dir) = &run.log_dir else { return Vec::new() };
    if run.gate.is_some() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let Some(routed) = &run.routing
        && routed.asked.features.is_ok()
    {
        let base = base_entry(Source::Prompt, input, dir, input.prompt);
        out.push(routed_entry(base, routed, run.routing_hint.is_ok()));
    }
    if let Some(p) = &run.picked
        && let Pick::Picked { skill, confidence } = &p.pick
    {
        out.push(Entry {
            decision: Some(skill.clone()),
            hinted: Some(run.skill_hint.is_ok()),
            provider: p.provider.clone(),
            model: p.model.clone(),
            latency_ms: Some(p.latency_ms),
            candidates: Some(p.candidates.len()),
            skill: Some(skill.clone()),
            skill_confidence: Some(*confidence),
            ..base_entry(Source::Skill, input, dir, input.prompt)
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates() {
        assert!(prompt_gate("/compact keep the routing notes and the test plan for later please ok").is_some());
        assert!(prompt_gate("/system1:toggle off").is_some());
        assert!(prompt_gate("Plan is ok, implement").unwrap().contains("4 words"));
        assert!(
            prompt_gate(
                "<task-notification><status>completed</status> lots of words here to pass the count</task-notification>"
            )
            .is_some()
        );
        assert!(prompt_gate("  <agent-message from=x> one two three four five six seven eight nine ten").is_some());
        let task = "Read src/main.rs and explain how the command line is parsed and dispatched";
        assert_eq!(prompt_gate(task), None);
        assert_eq!(prompt_gate("/home/u/app/main.rs crashes on start, find out why and fix the cause please"), None);
    }

    #[test]
    fn hint_carries_marker_and_tier() {
        let h = hint_text(Tier::Haiku);
        assert!(h.starts_with(HINT_MARKER));
        assert!(h.contains("model \"haiku\""));
        assert!(!h.contains('\n'));
    }
}
