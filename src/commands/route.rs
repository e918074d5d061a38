//! `system1 route`: what the prompt hook would do with a prompt (`--prompt`), or the agent hook with
//! a subagent's brief (`--brief`), step by step. It runs the hooks' own code (`routing::run_prompt`,
//! `routing::agent::run`) `Until::End`, which goes on past the gates a hook would stop at and
//! records them, and it never writes the routing log. The run becomes a typed record
//! (`PromptRecord`, `BriefRecord`) that `--json` serializes and the text form prints, so both say
//! the same thing.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::json;

use crate::config::Enforce;
use crate::error::{Error, Result};
use crate::feature::Feature;
use crate::gateway::millis;
use crate::logging;
use crate::routing::agent::{AgentRun, Spawn};
use crate::routing::enforce::{Left, Model};
use crate::routing::entry::Kept;
use crate::routing::features::FeatureAnswer;
use crate::routing::gate::{Gate, NoSkillHint};
use crate::routing::skills::Picked;
use crate::routing::{self, Input, Until, rule::Chosen};
use crate::tier::Tier;

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("text").required(true).args(["prompt", "brief"])))]
#[command(after_help = "\
Examples:
  system1 route --prompt \"Rename the flag in src/cli.rs and update its three callers\"
  system1 route --brief \"Find every caller of parse_config\" --model opus
  system1 route --prompt \"Plan the database migration\" --json")]
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
        let record = BriefRecord::new(&loaded, &spawn, &run);
        if args.json {
            outln!("{}", serde_json::to_string_pretty(&record).unwrap_or_default())?;
        } else {
            record.print()?;
        }
        return Ok(0);
    }
    let prompt = args.prompt.unwrap_or_default();
    let input = Input { prompt: &prompt, cwd: Some(cwd), session_id: None, skills: None };
    let run = routing::run_prompt(&loaded, &input, Until::End);
    // The hook's own choice of entries (none when silent, or when the engine gave nothing to log).
    let logged = !routing::entries(&input, &run).is_empty();
    let record = PromptRecord::new(&loaded, &run, logged);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&record).unwrap_or_default())?;
    } else {
        record.print()?;
    }
    Ok(0)
}

/// The features, the tier and the rule, as a prompt's and a brief's record show them.
#[derive(Serialize)]
struct RoutingView<'a> {
    /// `null` when the engine gave no answers.
    features: Option<Features<'a>>,
    engine_error: Option<&'a crate::gateway::Refusal>,
    provider: Option<&'a str>,
    model: Option<&'a str>,
    engine_ms: f64,
    /// The tier head's answer, when `[routing] tier_head` asked it and the local engine's heads gave one.
    tier_head: Option<HeadView>,
    tier: Option<Tier>,
    rule: Option<Chosen>,
    rule_text: Option<String>,
    /// The features whose answers decided the tier: only they must clear min_confidence.
    decided_by: &'a [Feature],
}

#[derive(Serialize)]
struct HeadView {
    tier: Tier,
    confidence: f64,
}

/// The feature answers, keyed by feature name.
struct Features<'a>(&'a [FeatureAnswer]);

impl Serialize for Features<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct One {
            answer: Option<bool>,
            confidence: f64,
            calibrated: bool,
        }
        s.collect_map(
            self.0
                .iter()
                .map(|f| (f.feature, One { answer: f.answer, confidence: f.confidence, calibrated: f.calibrated })),
        )
    }
}

impl<'a> RoutingView<'a> {
    fn new(loaded: &crate::config::Loaded, r: &'a routing::Routed) -> Self {
        let rule_text = match &r.tier {
            Some((_, Chosen::Rule(n))) => loaded.config.routing.rules.get(n - 1).map(routing::rule::describe),
            Some((_, Chosen::Default)) => Some("no rule matched".to_string()),
            Some((_, Chosen::Head)) => r.asked.tier_head.map(|h| {
                format!(
                    "{:.2} sure, at least tier_head_min_confidence {:.2}",
                    h.confidence, loaded.config.routing.tier_head_min_confidence
                )
            }),
            None => None,
        };
        RoutingView {
            features: r.asked.features.as_deref().ok().map(Features),
            engine_error: r.asked.features.as_ref().err(),
            provider: r.asked.provider.as_deref(),
            model: r.asked.model.as_deref(),
            engine_ms: r.asked.latency_ms,
            tier_head: r.asked.tier_head.map(|h| HeadView { tier: h.tier, confidence: h.confidence }),
            tier: r.tier.map(|(t, _)| t),
            rule: r.tier.map(|(_, c)| c),
            rule_text,
            decided_by: &r.deciding,
        }
    }

    /// The features with their confidences, and the tier with the rule that chose it.
    fn print(&self) -> Result<()> {
        if let Some(Features(fs)) = &self.features {
            outln!("features ({} {}, {:.1} ms):", or_null(self.provider), or_null(self.model), self.engine_ms)?;
            for f in *fs {
                let answer = match f.answer {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "abstained",
                };
                let cal = if f.calibrated { "calibrated" } else { "uncalibrated" };
                outln!("  {:<10} {answer:<9} {:.2} ({cal})", f.feature.name(), f.confidence)?;
            }
        } else if let Some(e) = self.engine_error {
            outln!("features: no answer ({e})")?;
        }
        if let Some(h) = &self.tier_head {
            outln!("tier head: {} {:.2}", h.tier, h.confidence)?;
        }
        if let (Some(tier), Some(rule)) = (self.tier, self.rule) {
            let features = || self.decided_by.iter().map(|f| f.name()).collect::<Vec<_>>().join(", ");
            let (name, decided) = match rule {
                Chosen::Default => ("default".to_string(), features()),
                Chosen::Rule(n) => (format!("rule {n}"), features()),
                Chosen::Head => ("tier head".to_string(), "the tier head".to_string()),
            };
            outln!("tier: {tier} ({name}: {})", or_null(self.rule_text.as_deref()))?;
            outln!("decided by: {decided}")?;
        }
        Ok(())
    }
}

/// A field the record may lack, as printed.
fn or_null(v: Option<&str>) -> &str {
    v.unwrap_or("null")
}

/// A hint line, or why the hook gives none.
enum Hint<'a> {
    Given(&'a str),
    Withheld(String),
}

impl<'a> Hint<'a> {
    /// A hint's own reason first; a hint the hook would give but for a gate, the gate.
    fn new<E: std::fmt::Display>(hint: &'a std::result::Result<String, E>, gate: Option<&Gate>) -> Self {
        match (hint, gate) {
            (Ok(text), None) => Hint::Given(text),
            (Ok(_), Some(gate)) => Hint::Withheld(gate.to_string()),
            (Err(why), _) => Hint::Withheld(why.to_string()),
        }
    }

    fn print(&self, label: &str) -> Result<()> {
        match self {
            Hint::Given(text) => outln!("{label}: given: {text}"),
            Hint::Withheld(why) => outln!("{label}: none ({why})"),
        }
    }
}

impl Serialize for Hint<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2))?;
        match self {
            Hint::Given(text) => {
                m.serialize_entry("given", &true)?;
                m.serialize_entry("text", text)?;
            }
            Hint::Withheld(why) => {
                m.serialize_entry("given", &false)?;
                m.serialize_entry("because", why)?;
            }
        }
        m.end()
    }
}

/// What the skill picker had to choose from and what it picked.
#[derive(Serialize)]
struct SkillsView<'a> {
    candidates: Vec<Candidate<'a>>,
    pick: Option<&'a str>,
    confidence: Option<f64>,
    not_picked_because: Option<NoSkillHint>,
    provider: Option<&'a str>,
    engine_ms: f64,
}

#[derive(Serialize)]
struct Candidate<'a> {
    name: &'a str,
    origin: &'a str,
}

impl<'a> SkillsView<'a> {
    fn new(p: &'a Picked) -> Self {
        let (pick, confidence, not_picked_because) = match p.pick.skill() {
            Ok((skill, confidence)) => (Some(skill), Some(confidence), None),
            Err(why) => (None, None, Some(why)),
        };
        SkillsView {
            candidates: p.candidates.iter().map(|s| Candidate { name: &s.name, origin: s.origin }).collect(),
            pick,
            confidence,
            not_picked_because,
            provider: p.provider.as_deref(),
            engine_ms: p.latency_ms,
        }
    }

    fn print(&self) -> Result<()> {
        let names: Vec<String> = self.candidates.iter().map(|c| format!("{} ({})", c.name, c.origin)).collect();
        let counted = crate::text::count(names.len() as u64, "candidate");
        outln!("skills: {counted}{}{}", if names.is_empty() { "" } else { ": " }, names.join(", "))?;
        match (self.pick, &self.not_picked_because) {
            (Some(p), _) => outln!("skill pick: {p} ({:.2}, {:.1} ms)", self.confidence.unwrap_or(0.0), self.engine_ms),
            (None, why) => {
                outln!("skill pick: none ({})", why.as_ref().map_or("null".to_string(), ToString::to_string))
            }
        }
    }
}

/// What the prompt hook would do with a prompt: `--json` prints it, the text form reads it.
#[derive(Serialize)]
struct PromptRecord<'a> {
    silent_because: Option<&'a Gate>,
    routing: Option<RoutingView<'a>>,
    routing_hint: Option<Hint<'a>>,
    skills: Option<SkillsView<'a>>,
    skill_hint: Option<Hint<'a>>,
    logged: bool,
    log_dir: Option<String>,
    elapsed_ms: f64,
}

impl<'a> PromptRecord<'a> {
    fn new(loaded: &crate::config::Loaded, run: &'a routing::Run, logged: bool) -> Self {
        let hints = run.hints.as_ref();
        let gate = run.gates.first();
        PromptRecord {
            silent_because: gate,
            routing: hints.and_then(|h| h.routing.as_ref()).map(|r| RoutingView::new(loaded, r)),
            routing_hint: hints.map(|h| Hint::new(&h.routing_hint, gate)),
            skills: hints.and_then(|h| h.picked.as_ref()).map(SkillsView::new),
            skill_hint: hints.map(|h| Hint::new(&h.skill_hint, gate)),
            logged,
            log_dir: run.log_dir.as_ref().map(|d| d.display().to_string()),
            elapsed_ms: millis(run.elapsed),
        }
    }

    fn print(&self) -> Result<()> {
        if let Some(why) = self.silent_because {
            outln!("hook: silent ({why}); what it would ask anyway:")?;
        }
        if let Some(r) = &self.routing {
            r.print()?;
        }
        print_hint("routing hint", &self.routing_hint)?;
        if let Some(sk) = &self.skills {
            sk.print()?;
        }
        print_hint("skill hint", &self.skill_hint)?;
        print_log(&self.log_dir, self.logged, self.silent_because.is_some(), "prompt", "is silent")?;
        outln!("time: {:.1} ms", self.elapsed_ms)
    }
}

/// A hint line; a run that stopped before the hints (which `Until::End` never does) prints `null`.
fn print_hint(label: &str, hint: &Option<Hint>) -> Result<()> {
    match hint {
        Some(h) => h.print(label),
        None => outln!("{label}: none (null)"),
    }
}

/// Whether the hook would write a routing log entry, and why not.
fn print_log(log_dir: &Option<String>, logged: bool, silent: bool, what: &str, silence: &str) -> Result<()> {
    match log_dir {
        Some(d) if logged => outln!("log: the hook would log this {what} (inside {d})"),
        Some(d) if silent => outln!("log: not logged (the hook {silence}), though inside {d}"),
        Some(d) => outln!("log: not logged (the engine gave nothing to log), though inside {d}"),
        None => outln!("log: not logged (cwd is outside [routing] log_dirs)"),
    }
}

/// What the agent hook and `[routing] enforce` would do with a spawn.
#[derive(Serialize)]
struct BriefRecord<'a> {
    silent_because: Option<&'a Gate>,
    routing: Option<RoutingView<'a>>,
    enforce: Enforce,
    enforce_means: &'static str,
    model: Option<&'a str>,
    tier_before: Option<Tier>,
    set_tier: Option<Tier>,
    rewrites: bool,
    kept: Option<Kept>,
    unchanged_because: Option<&'a Left>,
    logged: bool,
    log_dir: Option<String>,
    /// `agent_spawn` when this runs inside a Claude Code session where the plugin's module acts;
    /// otherwise `null`: the Claude Code version decides (docs/routing.md#two-ways-to-set-the-model).
    mechanism: Option<routing::entry::Via>,
    elapsed_ms: f64,
}

impl<'a> BriefRecord<'a> {
    fn new(loaded: &crate::config::Loaded, spawn: &'a Spawn, run: &'a AgentRun) -> Self {
        let action = run.verdict.as_ref().map(|v| &v.action);
        let left = action.and_then(|a| a.as_ref().err());
        BriefRecord {
            silent_because: run.gates.first(),
            routing: run.verdict.as_ref().map(|v| RoutingView::new(loaded, &v.routed)),
            enforce: run.mode,
            enforce_means: run.mode.describe(),
            model: spawn.chosen.as_deref(),
            tier_before: spawn.model.tier(),
            set_tier: action.and_then(|a| a.as_ref().ok()).copied(),
            rewrites: run.updated_input.is_some(),
            kept: left.and_then(Left::kept),
            unchanged_because: left,
            logged: routing::agent::entry(spawn, run, routing::entry::Via::PreToolUse).is_some(),
            log_dir: run.log_dir.as_ref().map(|d| d.display().to_string()),
            mechanism: std::env::var_os(crate::claude_code::SPAWN_MODULE_VAR)
                .filter(|v| !v.is_empty())
                .map(|_| routing::entry::Via::AgentSpawn),
            elapsed_ms: millis(run.elapsed),
        }
    }

    fn print(&self) -> Result<()> {
        if let Some(why) = self.silent_because {
            outln!("hook: does nothing ({why}); what it would ask anyway:")?;
        }
        if let Some(r) = &self.routing {
            r.print()?;
        }
        outln!("enforce: {} ({})", self.enforce, self.enforce_means)?;
        let model = self.model.map_or("no model".to_string(), |m| format!("model {m:?}"));
        match self.set_tier {
            Some(t) if self.rewrites => {
                outln!("spawn: {model} → model \"{t}\" (the hook rewrites the call's model, nothing else)")?
            }
            Some(t) => outln!("spawn: {model} would become model \"{t}\", but the hook does nothing (above)")?,
            None => outln!(
                "spawn: {model}, passed as Claude made it ({})",
                self.unchanged_because.map_or("null".to_string(), ToString::to_string)
            )?,
        }
        match self.mechanism {
            Some(_) => outln!(
                "set by: the plugin's module at agent.spawn, which acts in this Claude Code session (the PreToolUse hook steps aside)"
            )?,
            None => outln!(
                "set by: the plugin's module at agent.spawn in Claude Code 2.1.287 and later (modules are on by default there), else the PreToolUse hook on the Agent call"
            )?,
        }
        print_log(&self.log_dir, self.logged, self.silent_because.is_some(), "spawn", "does nothing")?;
        outln!("time: {:.1} ms", self.elapsed_ms)
    }
}

/// The Agent call the agent hook would see for `brief`.
fn spawn(brief: &str, model: Option<&str>, subagent_type: &str, cwd: PathBuf) -> Spawn {
    let mut input = json!({"description": "system1 route", "prompt": brief, "subagent_type": subagent_type});
    if let Some(m) = model {
        input["model"] = json!(m);
    }
    Spawn {
        tool_name: Some(crate::claude_code::SPAWN_TOOLS[0].into()),
        raw_input: input.to_string(),
        brief: brief.to_string(),
        model: Model::read(input.get("model")),
        chosen: model.map(String::from),
        subagent_type: Some(subagent_type.to_string()),
        description: None,
        tool_use_id: None,
        session_id: None,
        cwd: Some(cwd),
        // As the agent hook reads it: from the environment it runs in.
        subagent_model: crate::claude_code::SubagentModel::from_env(),
        no_small_models: crate::claude_code::no_small_models_from_env(),
    }
}
