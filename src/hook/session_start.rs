//! The SessionStart hook: silent unless something needs the user. It speaks when the config is
//! broken, once when no real engine is set up (the abstaining mock install wrote), when routing is on but
//! no engine of the chain answers a health probe, when the plugin
//! was updated but the binary was not, and when enough logged prompts and spawns wait for labels that a
//! calibration run is worth it.
//!
//! All is well in a few milliseconds: the engine is probed only when routing is on (and System-1
//! is not paused), every provider of the chain at once, each bounded by [`PROBE_TIMEOUT`]. The
//! message goes both to Claude (`additionalContext`) and to the user (`systemMessage`).

use std::time::Duration;

use serde_json::Value;

use super::HookResult;
use crate::checks::{self, NoEngine};
use crate::claude_code;
use crate::config::Loaded;
use crate::gateway::Gateway;
use crate::providers::{Probe, Provider};
use crate::{engine_servers, state, text};

/// How long the engine may take to answer the session-start probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(300);

pub fn handle(loaded: &Loaded, payload: &Value) -> HookResult {
    // A rewrite of the routing log killed midway leaves a whole hidden copy of it (the user's
    // prompts); once a session is soon enough to take them away.
    crate::fsutil::remove_stale_temps(&crate::paths::routing_log());
    // A compaction restarts the context mid-task; the user has seen these lines at startup already.
    if payload.get("source").and_then(Value::as_str) == Some("compact") {
        return Ok(None);
    }
    let messages = findings(loaded);
    if messages.is_empty() {
        return Ok(None);
    }
    let text = messages.join(" ");
    let mut out = super::additional_context(super::Event::SessionStart.name(), &text);
    if let Value::Object(o) = &mut out {
        o.insert("systemMessage".into(), Value::String(text));
    }
    Ok(Some(out.to_string()))
}

/// The lines the hook would say, in order of urgency; empty when all is well.
fn findings(loaded: &Loaded) -> Vec<String> {
    let mut out = Vec::new();
    let gateway = Gateway::new(loaded.clone());
    let no_engine = checks::no_real_engine(loaded);
    if !gateway.is_ok() {
        let first = &gateway.config_errors[0];
        let more = match gateway.config_errors.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        out.push(format!(
            "system1: the config at {} is broken: {first}{more}. Fix it (`{}`), or run /system1:doctor.",
            loaded.path.display(),
            text::command("config check")
        ));
    } else if no_engine == Some(NoEngine::Placeholder) {
        // The placeholder install wrote is said once.
        if !state::is_paused() && checks::first_no_engine_notice() {
            let none = NoEngine::Placeholder;
            out.push(format!("system1: {}; {}.", none.what(), checks::engine_setup_hint()));
        }
    } else {
        // A mock with answers is someone's deliberate setup (a demo, a test): doctor names it, and
        // it is probed like an engine. A real engine resets the notice, should it go again.
        if no_engine.is_none() {
            checks::reset_no_engine_notice();
        }
        if loaded.config.routing.enabled
            && !state::is_paused()
            && let Some(down) = engine_down(gateway.chain())
        {
            out.push(down);
        }
    }
    if let Some(plugin) = claude_code::running_plugin_version().map(|(v, _)| v).filter(|v| v != crate::gateway::VERSION)
    {
        out.push(format!(
            "system1: the plugin is version {plugin} but the installed binary is {}; run /system1:setup to upgrade it.",
            crate::gateway::VERSION
        ));
    }
    let pending = checks::pending_labels();
    if pending >= checks::PENDING_LABELS_THRESHOLD {
        out.push(format!(
            "system1: {pending} logged prompts and spawns are waiting for labels; /system1:calibrate fits routing to them."
        ));
    }
    out
}

/// Probes every provider of the chain in parallel; `None` when any of them answers.
fn engine_down(chain: &[std::sync::Arc<dyn Provider>]) -> Option<String> {
    let probes: Vec<(usize, Probe)> = std::thread::scope(|s| {
        let handles: Vec<_> =
            chain.iter().enumerate().map(|(i, p)| s.spawn(move || (i, p.health(PROBE_TIMEOUT)))).collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let (provider, failure) = match probes.first() {
        Some((i, Probe::Down(failure))) if !probes.iter().any(|(_, p)| p.ok()) => (&chain[*i], failure),
        _ => return None,
    };
    Some(format!(
        "system1: routing is on, but the {} engine does not answer ({}). To fix it, {}; or run /system1:doctor.",
        provider.name(),
        failure.detail,
        engine_servers::fix::engine_fix(provider.as_ref(), failure)
    ))
}
