//! `system1 toggle on|off|status`: pause or resume System-1 everywhere, or show its state.
//!
//! The pause flag is a file in the install dir (`state::set_paused`). The server reads it on every
//! decision and the hooks on every prompt, so a toggle takes effect from the next call with no
//! restart. `status` shows what is on, the engine's health and today's decision tally.

use crate::error::{Context, Result, exit};
use crate::gateway::Gateway;
use crate::{logging, paths, state, text};

#[derive(clap::Args)]
pub struct Args {
    #[arg(value_enum, default_value = "status")]
    action: Action,
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
        Action::Status => status(),
    }
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

/// `[routing] enforce`, and whether it acts now (routing on and not paused).
fn enforce_state(active: bool, enforce: crate::config::Enforce) -> String {
    match (enforce, active) {
        (crate::config::Enforce::Off, _) => format!("enforce off ({})", enforce.describe()),
        (_, true) => format!("enforce {enforce} ({})", enforce.describe()),
        (_, false) => format!("enforce {enforce}, inactive while routing is off or paused"),
    }
}

fn status() -> Result<i32> {
    let gateway = Gateway::from_env();
    let g = &gateway.loaded.config.gateway;
    logging::init(&g.log_level, &g.log_file, false);
    let paused = state::is_paused();
    let cfg = &gateway.loaded.config;

    if paused {
        let since = state::paused_since().map(|t| format!(" since {t}")).unwrap_or_default();
        outln!("System-1:      paused{since} (`{}` resumes)", text::command("toggle on"))?;
    } else {
        outln!("System-1:      on")?;
    }
    let chain = gateway.loaded.chain().join(" → ");
    let gateway_state = if !gateway.is_ok() {
        format!("broken config (`{}`)", text::command("doctor"))
    } else {
        format!("{} (engines: {chain})", on_off(!paused))
    };
    outln!("gateway:       {gateway_state}")?;
    let mode = |enabled: bool, hint: bool| match (enabled && !paused, hint) {
        (false, _) => "off".to_string(),
        (true, true) => "on (hints)".to_string(),
        (true, false) => "on (log only, no hints)".to_string(),
    };
    outln!("routing hint:  {}", mode(cfg.routing.enabled, cfg.routing.hint))?;
    outln!("spawn model:   {}", enforce_state(cfg.routing.enabled && !paused, cfg.routing.enforce))?;
    outln!("skill picker:  {}", mode(cfg.skills.enabled, cfg.skills.hint))?;

    if gateway.is_ok() {
        let health = gateway.health();
        let engines: Vec<String> = health
            .providers
            .iter()
            .map(|p| {
                let state = if p.ok { "up" } else { "down" };
                let detail = p.detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
                format!("{} {state} in {:.0} ms{detail}", p.name, p.latency_ms)
            })
            .collect();
        outln!("engine health: {} ({})", health.status, engines.join("; "))?;
    } else {
        for e in &gateway.config_errors {
            outln!("config error:  {e}")?;
        }
    }

    let today = state::decisions_today();
    let total: u64 = today.values().sum();
    let by_status: Vec<String> = today.iter().map(|(s, n)| format!("{s} {n}")).collect();
    let detail = if by_status.is_empty() { String::new() } else { format!(" ({})", by_status.join(", ")) };
    outln!("decisions today: {total}{detail}")?;
    Ok(exit::OK)
}
