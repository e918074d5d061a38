//! The SessionStart hook: silent unless something needs the user. It speaks when the config is
//! broken, when routing is on but no engine of the chain answers a health probe, when the plugin
//! was updated but the binary was not, and when enough logged prompts wait for labels that a
//! calibration run is worth it.
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

pub fn handle(loaded: &Loaded, payload: &Value) -> HookResult {
    // A compaction restarts the context mid-task; the user has seen these lines at startup already.
    if payload.get("source").and_then(Value::as_str) == Some("compact") {
        return Ok(None);
    }
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
    if let Some(plugin) = plugin_version().filter(|v| v != crate::gateway::VERSION) {
        out.push(format!(
            "system1: the plugin is version {plugin} but the installed binary is {}; run /system1:setup to upgrade it.",
            crate::gateway::VERSION
        ));
    }
    let pending = pending_labels();
    if pending >= PENDING_LABELS_THRESHOLD {
        out.push(format!(
            "system1: {pending} logged prompts are waiting for labels; /system1:calibrate fits routing to them."
        ));
    }
    out
}

/// Probes every provider of the chain in parallel; `None` when any of them answers.
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
///
/// Runs at every session start, so it reads the log without the writers' lock (a line being
/// appended at that moment is incomplete and skipped) and parses as little as it can.
pub fn pending_labels() -> usize {
    let Ok(bytes) = std::fs::read(crate::paths::routing_log()) else { return 0 };
    String::from_utf8_lossy(&bytes).lines().filter(|line| waits_for_labels(line)).count()
}

/// Whether one log line is a prompt entry without labels. The writers emit compact JSON, where
/// `"source":"` and `"labels":` can only be keys (inside a string value the quotes are escaped), so
/// most lines are settled by two short searches: `source` comes early in an entry, and `labels`,
/// added last by labelling, is found from the end. Any other line is parsed, keeping only the two
/// fields that matter.
fn waits_for_labels(line: &str) -> bool {
    const SOURCE: &str = r#""source":""#;
    const LABELS: &str = r#""labels":"#;
    let compact = line.trim_end();
    if compact.ends_with('}')
        && let Some(at) = compact.find(SOURCE)
    {
        if !compact[at + SOURCE.len()..].starts_with("prompt\"") {
            return false;
        }
        match compact.rfind(LABELS) {
            None => return true,
            Some(at) if compact[at + LABELS.len()..].starts_with("{\"") => return false,
            Some(_) => {} // null, empty or another shape: parse it
        }
    }
    #[derive(serde::Deserialize)]
    struct Entry<'a> {
        #[serde(borrow)]
        source: Option<std::borrow::Cow<'a, str>>,
        labels: Option<Value>,
    }
    // An empty `labels` object labels nothing, as `calibrate` counts it.
    let unlabelled = |l: &Option<Value>| l.as_ref().is_none_or(|v| v.as_object().is_some_and(|m| m.is_empty()));
    serde_json::from_str::<Entry>(line).is_ok_and(|e| e.source.as_deref() == Some("prompt") && unlabelled(&e.labels))
}

/// The version in `$CLAUDE_PLUGIN_ROOT/.claude-plugin/plugin.json` (Claude Code sets the variable for
/// plugin hooks), so that a plugin update without a binary upgrade is noticed.
fn plugin_version() -> Option<String> {
    let root = std::env::var_os("CLAUDE_PLUGIN_ROOT").filter(|v| !v.is_empty())?;
    let manifest = std::path::PathBuf::from(root).join(".claude-plugin").join("plugin.json");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(manifest).ok()?).ok()?;
    json.get("version").and_then(Value::as_str).map(String::from)
}

#[cfg(test)]
mod tests {
    use super::waits_for_labels;

    #[test]
    fn a_prompt_entry_waits_for_labels_until_it_has_them() {
        assert!(waits_for_labels(r#"{"id":"1","source":"prompt","prompt":"x"}"#));
        assert!(!waits_for_labels(r#"{"id":"1","source":"prompt","labels":{"read_only":true}}"#));
        assert!(waits_for_labels(r#"{"id":"1","source":"prompt","labels":null}"#), "null labels are none");
        assert!(waits_for_labels(r#"{"id":"1","source":"prompt","labels":{}}"#), "empty labels are none");
        assert!(!waits_for_labels(r#"{"id":"1","source":"agent","prompt":"x"}"#));
        assert!(!waits_for_labels(r#"{"id":"1","source":"skill"}"#));
    }

    #[test]
    fn lines_in_other_shapes_are_parsed() {
        assert!(waits_for_labels(r#"{ "source" : "prompt", "prompt": "x" }"#));
        assert!(!waits_for_labels(r#"{ "source" : "prompt", "labels" : { "design": false } }"#));
        assert!(waits_for_labels(r#"{ "source" : "prompt", "labels" : { } }"#));
        assert!(!waits_for_labels(r#"{"source":"prompt""#), "an incomplete line is skipped");
        assert!(!waits_for_labels("not json"));
        assert!(!waits_for_labels(r#"["source","prompt"]"#));
        // A prompt quoting the key is escaped in the string, so it cannot fool the search.
        let tricky = r#"{"source":"agent","prompt":"say \"source\":\"prompt\" please"}"#;
        assert!(!waits_for_labels(tricky));
        // A labels key quoted inside a prompt's text does not hide a pending entry.
        let quoted = r#"{"source":"prompt","prompt":"add \"labels\": to it"}"#;
        assert!(waits_for_labels(quoted));
    }
}
