//! Checks that the SessionStart hook and `system1 doctor` both make, written once so that the two
//! never disagree: how to start an engine that is down, and how many log entries wait for labels.

/// From this many entries waiting for labels on, the hook suggests `/system1:calibrate`.
pub const PENDING_LABELS_THRESHOLD: usize = 30;

/// How to start an engine, as one imperative phrase.
pub fn start_hint(provider: &str) -> String {
    match provider {
        "laya" | "von" => format!("Start it with `system1 engine start {provider}`"),
        "ollama" => "Start Ollama (`ollama serve`)".to_string(),
        "mock" => "The mock engine is configured as down: unset `[providers.mock] down`".to_string(),
        other => format!("Start the {other} engine"),
    }
}

/// Routing-log entries waiting for labels (`Entry::needs_labels`: what `calibrate pending` lists).
pub fn pending_labels() -> usize {
    crate::routing::log::count_waiting_for_labels()
}
