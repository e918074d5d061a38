//! Small pieces of state in the install dir shared by the server, the hooks and `toggle`: the
//! pause flag, read on every decision and every hook (so `toggle off` takes effect from the next
//! prompt with no restart), and the per-day decision tally, appended to on every decision and read
//! by `toggle status` and `doctor`. Both are system1's private files (`fsutil::open_private`):
//! written only in place, never through a link planted under their name.

use std::fs::OpenOptions;
use std::io::Write;

use crate::{fsutil, paths};

pub fn is_paused() -> bool {
    paths::pause_file().exists()
}

pub fn set_paused(paused: bool) -> std::io::Result<()> {
    let f = paths::pause_file();
    if paused {
        fsutil::private_dir(&paths::install_dir())?;
        let mut file = fsutil::open_private(&f, OpenOptions::new().write(true).create(true).truncate(true))?;
        file.write_all(format!("paused at {}\n", chrono::Utc::now().to_rfc3339()).as_bytes())
    } else {
        match std::fs::remove_file(&f) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// When the pause began, from the pause file (`paused at <RFC 3339>`), to the minute.
pub fn paused_since() -> Option<String> {
    let text = fsutil::read_small_file(&paths::pause_file(), 4096).ok()?;
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
        "time": crate::text::now(),
        "status": status,
        "provider": provider,
        "latency_ms": latency_ms,
    });
    let opened = fsutil::private_dir(&paths::logs_dir())
        .and_then(|()| fsutil::open_private(&path, OpenOptions::new().create(true).append(true)));
    match opened {
        // A single write of a short line is atomic with O_APPEND, so concurrent servers never interleave.
        Ok(mut f) => {
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
        Err(e) => crate::logging::warn("tally", &format!("decision not tallied: {}: {e}", path.display())),
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
    // A tally line is under 200 bytes: 64 MiB is hundreds of thousands of decisions in a day.
    if let Ok(text) = fsutil::read_small_file(&paths::decisions_log(day), 64 << 20) {
        for line in text.lines() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                let status = v.get("status").and_then(|s| s.as_str()).unwrap_or("unknown").to_string();
                *counts.entry(status).or_insert(0) += 1;
            }
        }
    }
}
