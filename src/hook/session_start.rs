//! The SessionStart hook: silent unless something needs the user. It speaks when the config is
//! broken, when routing is on but no engine of the chain answers a health probe, and when enough
//! logged prompts wait for labels that a calibration run is worth it.
//!
//! All is well in a few milliseconds: the engine is probed only when routing is on (and System-1
//! is not paused), every provider of the chain at once, each bounded by [`PROBE_TIMEOUT`]. The
//! message goes both to Claude (`additionalContext`) and to the user (`systemMessage`).

use std::time::Duration;

use serde_json::Value;

use super::HookResult;
use crate::config::Loaded;
use crate::gateway::Gateway;
use crate::providers::Provider;
use crate::state;

/// How long the engine may take to answer the session-start probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(300);

/// From this many prompts waiting for labels on, the hook suggests `/system1:calibrate`.
pub const PENDING_LABELS_THRESHOLD: usize = 30;

pub fn handle(loaded: &Loaded, _payload: &Value) -> HookResult {
    let messages = findings(loaded);
    if messages.is_empty() {
        return Ok(None);
    }
    let text = messages.join(" ");
    let mut out = super::additional_context("SessionStart", &text);
    if let Value::Object(o) = &mut out {
        o.insert("systemMessage".into(), Value::String(text));
    }
    Ok(Some(out))
}

/// The lines the hook would say, in order of urgency; empty when all is well.
fn findings(loaded: &Loaded) -> Vec<String> {
    let mut out = Vec::new();
    let gateway = Gateway::new(loaded.clone());
    if !gateway.is_ok() {
        let first = &gateway.config_errors[0];
        let more = match gateway.config_errors.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        out.push(format!(
            "system1: the config at {} is broken: {first}{more}. Fix it (`system1 config check`), or run /system1:doctor.",
            loaded.path.display()
        ));
    } else if loaded.config.routing.enabled
        && !state::is_paused()
        && let Some(down) = engine_down(gateway.chain())
    {
        out.push(down);
    }
    let pending = pending_labels();
    if pending >= PENDING_LABELS_THRESHOLD {
        out.push(format!(
            "system1: {pending} logged prompts are waiting for labels; /system1:calibrate fits routing to them."
        ));
    }
    out
}

/// Probes every provider of the chain in parallel; `None` as soon as one answers.
fn engine_down(chain: &[std::sync::Arc<dyn Provider>]) -> Option<String> {
    let probes: Vec<(String, crate::providers::Probe)> = std::thread::scope(|s| {
        let handles: Vec<_> =
            chain.iter().map(|p| s.spawn(move || (p.name().to_string(), p.health(PROBE_TIMEOUT)))).collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    if probes.is_empty() || probes.iter().any(|(_, p)| p.ok) {
        return None;
    }
    let (name, probe) = &probes[0];
    let detail = probe.detail.as_deref().unwrap_or("no answer");
    Some(format!(
        "system1: routing is on, but the {name} engine does not answer ({detail}). {}, or run /system1:doctor.",
        start_hint(name)
    ))
}

/// How to start an engine, as one imperative phrase.
pub fn start_hint(provider: &str) -> String {
    match provider {
        "laya" | "von" => format!("Start it with `system1 engine start {provider}`"),
        "ollama" => "Start Ollama (`ollama serve`)".to_string(),
        "mock" => "The mock engine is configured as down: unset `[providers.mock] down`".to_string(),
        other => format!("Start the {other} engine"),
    }
}

/// Prompt entries in the routing log that have no labels yet. A log that cannot be read counts 0.
pub fn pending_labels() -> usize {
    let Ok(log) = crate::routing::log::read_all() else { return 0 };
    log.entries
        .iter()
        .filter(|e| {
            e.get("source").and_then(Value::as_str) == Some("prompt") && e.get("labels").is_none_or(Value::is_null)
        })
        .count()
}
