//! Checks that the SessionStart hook and `system1 doctor` both make, written once so that the two
//! never disagree: how to start an engine that is down, and how many logged prompts wait for labels.

use serde_json::Value;

use crate::paths;

/// From this many prompts waiting for labels on, the hook suggests `/system1:calibrate`.
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

/// Prompt entries in the routing log that have no labels yet. A log that cannot be read counts 0.
///
/// Runs at every session start, so it reads the log without the writers' lock (a line being
/// appended at that moment is incomplete and skipped) and parses as little as it can.
pub fn pending_labels() -> usize {
    let Ok(bytes) = std::fs::read(paths::routing_log()) else { return 0 };
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
