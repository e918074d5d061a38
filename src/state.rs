//! Small pieces of state in the install dir shared by the server, the hooks and `toggle`: the
//! pause flag, read on every decision and every hook (so `toggle off` takes effect from the next
//! prompt with no restart), and the per-day decision tally, appended to on every decision and read
//! by `toggle status` and `doctor`.

use std::io::Write;

use crate::paths;

pub fn is_paused() -> bool {
    paths::pause_file().exists()
}

pub fn set_paused(paused: bool) -> std::io::Result<()> {
    let f = paths::pause_file();
    if paused {
        paths::ensure_parent(&f)?;
        std::fs::write(&f, format!("paused at {}\n", chrono::Utc::now().to_rfc3339()))
    } else {
        match std::fs::remove_file(&f) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// When the pause began, from the pause file (`paused at <RFC 3339>`), to the minute.
pub fn paused_since() -> Option<String> {
    let text = std::fs::read_to_string(paths::pause_file()).ok()?;
    let stamp = text.trim().strip_prefix("paused at ")?;
    let t = chrono::DateTime::parse_from_rfc3339(stamp).ok()?;
    Some(t.with_timezone(&chrono::Utc).format("%Y-%m-%d %H:%M UTC").to_string())
}

/// Today's date in UTC, the key of the decision tally.
pub fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

/// Appends one line per decision (status, provider, latency; never the question) to today's tally.
/// Best effort: a tally that cannot be written never fails a decision.
pub fn record_decision(status: &str, provider: Option<&str>, latency_ms: f64) {
    let path = paths::decisions_log(&today());
    let line = serde_json::json!({
        "time": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "status": status,
        "provider": provider,
        "latency_ms": latency_ms,
    });
    let _ = paths::ensure_parent(&path);
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(&path) {
        // A single write of a short line is atomic with O_APPEND, so concurrent servers never interleave.
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

/// Decisions counted today, by status.
pub fn decisions_today() -> std::collections::BTreeMap<String, u64> {
    let mut counts = std::collections::BTreeMap::new();
    count_decisions(&today(), &mut counts);
    counts
}

/// Adds the decisions of `day` (`YYYY-MM-DD`, UTC) to `counts`, by status.
pub fn count_decisions(day: &str, counts: &mut std::collections::BTreeMap<String, u64>) {
    if let Ok(text) = std::fs::read_to_string(paths::decisions_log(day)) {
        for line in text.lines() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                let status = v.get("status").and_then(|s| s.as_str()).unwrap_or("unknown").to_string();
                *counts.entry(status).or_insert(0) += 1;
            }
        }
    }
}
