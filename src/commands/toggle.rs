//! `system1 toggle on|off|status`: pause or resume System-1 everywhere, or show its state.
//!
//! The pause flag is a file in the install dir (`state::set_paused`). The server reads it on every
//! decision and the hooks on every prompt, so a toggle takes effect from the next call with no
//! restart. `status` shows what is on, the engine's health and today's decision tally.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::Enforce;
use crate::error::{Context, Error, Result, exit};
use crate::gateway::{Gateway, HealthResponse};
use crate::output::{self, Tone};
use crate::{logging, paths, state, text};

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 toggle off                         # pause everywhere from the next call
  system1 toggle on
  system1 toggle status --json")]
pub struct Args {
    #[arg(value_enum, default_value = "status")]
    action: Action,
    /// With status: print the state as one JSON object (its fields are in docs/troubleshooting.md).
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Action {
    /// Resume: routing hint, skill picker and system1_decide work again.
    On,
    /// Pause: decisions abstain saying so, the hooks stay silent and no spawn's model is set.
    Off,
    /// Show what is on, the engine's health and today's decisions.
    Status,
}

pub fn run(args: Args) -> Result<i32> {
    if args.json && !matches!(args.action, Action::Status) {
        return Err(Error::usage("--json goes with `toggle status` only"));
    }
    match args.action {
        Action::On => {
            state::set_paused(false).context(|| format!("cannot remove {}", paths::pause_file().display()))?;
            outln!("System-1 is on: routing hint, skill picker and system1_decide resume from the next prompt.")?;
            Ok(exit::OK)
        }
        Action::Off => {
            state::set_paused(true).context(|| format!("cannot write {}", paths::pause_file().display()))?;
            outln!(
                "System-1 is paused: from the next prompt, system1_decide abstains, the hooks stay silent and no spawn's model is set. `{}` resumes.",
                text::command("toggle on")
            )?;
            Ok(exit::OK)
        }
        Action::Status => status(args.json),
    }
}

/// What `toggle status` shows, and what `--json` prints: one shape for people and programs.
#[derive(Serialize)]
struct Status {
    /// Whether System-1 is paused (`toggle off`), and since when.
    paused: bool,
    paused_since: Option<String>,
    /// Whether the config loads; without it nothing is asked.
    config_ok: bool,
    /// The engines asked, in order.
    engines: Vec<String>,
    routing_hint: Mode,
    spawn_model: SpawnModel,
    skill_picker: Mode,
    /// The `system1_health` answer (docs/tools.md); absent when the config is broken.
    engine_health: Option<HealthResponse>,
    config_errors: Vec<String>,
    decisions_today: Tally,
}

/// A hook feature's mode: off (or paused), on with hints, or on and only logging.
#[derive(Serialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Off,
    Hints,
    LogOnly,
}

#[derive(Serialize)]
struct SpawnModel {
    /// `[routing] enforce`: off, fill, raise or set.
    #[serde(serialize_with = "as_name")]
    enforce: Enforce,
    /// Whether it acts now: routing on and not paused.
    active: bool,
}

#[derive(Serialize)]
struct Tally {
    total: u64,
    /// By status (decided, abstained, error).
    by_status: BTreeMap<String, u64>,
}

fn as_name<S: serde::Serializer>(e: &Enforce, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(e.name())
}

impl Mode {
    fn of(enabled: bool, hint: bool, paused: bool) -> Mode {
        match (enabled && !paused, hint) {
            (false, _) => Mode::Off,
            (true, true) => Mode::Hints,
            (true, false) => Mode::LogOnly,
        }
    }
    fn describe(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Hints => "on (hints)",
            Mode::LogOnly => "on (log only, no hints)",
        }
    }
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

/// `[routing] enforce`, and whether it acts now (routing on and not paused).
fn enforce_state(active: bool, enforce: Enforce) -> String {
    match (enforce, active) {
        (Enforce::Off, _) => format!("enforce off ({})", enforce.describe()),
        (_, true) => format!("enforce {enforce} ({})", enforce.describe()),
        (_, false) => format!("enforce {enforce}, inactive while routing is off or paused"),
    }
}

fn status(json: bool) -> Result<i32> {
    let gateway = Gateway::from_env();
    let g = &gateway.loaded.config.gateway;
    logging::init(&g.log_level, &g.log_file, false);
    let paused = state::is_paused();
    let cfg = &gateway.loaded.config;
    let today = state::decisions_today();
    let s = Status {
        paused,
        paused_since: if paused { state::paused_since() } else { None },
        config_ok: gateway.is_ok(),
        engines: gateway.loaded.chain(),
        routing_hint: Mode::of(cfg.routing.enabled, cfg.routing.hint, paused),
        spawn_model: SpawnModel { enforce: cfg.routing.enforce, active: cfg.routing.enabled && !paused },
        skill_picker: Mode::of(cfg.skills.enabled, cfg.skills.hint, paused),
        engine_health: gateway.is_ok().then(|| gateway.health()),
        config_errors: gateway.config_errors.clone(),
        decisions_today: Tally { total: today.values().sum(), by_status: today },
    };
    if json {
        outln!("{}", serde_json::to_string_pretty(&s).map_err(|e| Error::failure(e.to_string()))?)?;
    } else {
        print(&s)?;
    }
    Ok(exit::OK)
}

fn print(s: &Status) -> Result<()> {
    if s.paused {
        let since = s.paused_since.as_deref().map(|t| format!(" since {t}")).unwrap_or_default();
        let rest = format!("{since} (`{}` resumes)", text::command("toggle on"));
        output::write_line(&[(None, "System-1:      "), (Some(Tone::Warn), "paused"), (None, &rest)])?;
    } else {
        output::write_line(&[(None, "System-1:      "), (Some(Tone::Good), "on")])?;
    }
    let gateway_state = if !s.config_ok {
        format!("broken config (`{}`)", text::command("doctor"))
    } else {
        format!("{} (engines: {})", on_off(!s.paused), s.engines.join(" → "))
    };
    outln!("gateway:       {gateway_state}")?;
    outln!("routing hint:  {}", s.routing_hint.describe())?;
    outln!("spawn model:   {}", enforce_state(s.spawn_model.active, s.spawn_model.enforce))?;
    outln!("skill picker:  {}", s.skill_picker.describe())?;

    if let Some(health) = &s.engine_health {
        let engines: Vec<String> = health
            .providers
            .iter()
            .map(|p| {
                let state = if p.ok { "up" } else { "down" };
                let detail = p.detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
                format!("{} {state} in {:.0} ms{detail}", p.name, p.latency_ms)
            })
            .collect();
        let status = health.status.to_string();
        let tone = match status.as_str() {
            "ok" => Tone::Good,
            "down" => Tone::Bad,
            _ => Tone::Warn,
        };
        let rest = format!(" ({})", engines.join("; "));
        output::write_line(&[(None, "engine health: "), (Some(tone), &status), (None, &rest)])?;
    } else {
        for e in &s.config_errors {
            outln!("config error:  {e}")?;
        }
    }
    let by_status: Vec<String> = s.decisions_today.by_status.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let detail = if by_status.is_empty() { String::new() } else { format!(" ({})", by_status.join(", ")) };
    outln!("decisions today: {}{detail}", s.decisions_today.total)?;
    Ok(())
}
