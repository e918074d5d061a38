//! Small pieces of state in the install dir shared by the server, the hooks and `toggle`: the
//! pause flag, read on every decision and every hook (so `toggle off` takes effect from the next
//! prompt with no restart), and the per-day decision tally, appended to on every decision and read
//! by `toggle status` and `doctor`. Both are system1's private files (`fsutil::open_private`):
//! written only in place, never through a link planted under their name.

use std::fs::OpenOptions;
use std::io::Write;

use serde::{Deserialize, Serialize};

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

/// What one decision sent off this machine to one engine, for the report's cost of hosted engines
/// (in the decision tally and the routing log).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sent {
    pub provider: String,
    /// The host the requests went to: the report prices them by the hosted service there.
    pub host: String,
    /// Input tokens of every request to it, estimated at one per four characters of the
    /// questions, options and context as sent.
    pub input_tokens: u64,
}

/// One line of a day's decision tally. Every field may be missing from a line an older version
/// wrote (`sent` always is), or one written by hand.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tallied {
    /// RFC 3339, UTC.
    pub time: Option<String>,
    /// `decided`, `abstained` or `error`.
    pub status: Option<String>,
    /// The engine that answered.
    pub provider: Option<String>,
    pub latency_ms: Option<f64>,
    /// What went off this machine, engine by engine.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sent: Vec<Sent>,
}

/// Appends one line per decision (status, provider, latency, what went to hosted engines; never
/// the question) to today's tally. Best effort: a tally that cannot be written never fails a
/// decision.
pub fn record_decision(status: &str, provider: Option<&str>, latency_ms: f64, sent: Vec<Sent>) {
    let path = paths::decisions_log(&today());
    let line = Tallied {
        time: Some(crate::text::now()),
        status: Some(status.to_string()),
        provider: provider.map(String::from),
        latency_ms: Some(latency_ms),
        sent,
    };
    let Ok(line) = serde_json::to_string(&line) else { return };
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
    for t in tallied(day) {
        *counts.entry(t.status.unwrap_or_else(|| "unknown".to_string())).or_insert(0) += 1;
    }
}

/// The lines of `day`'s tally (`YYYY-MM-DD`, UTC) that read as one; none when there is no tally.
pub fn tallied(day: &str) -> Vec<Tallied> {
    // A tally line is under 200 bytes: 64 MiB is hundreds of thousands of decisions in a day.
    match fsutil::read_small_file(&paths::decisions_log(day), 64 << 20) {
        Ok(text) => text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect(),
        Err(_) => Vec::new(),
    }
}

/// The days (`YYYY-MM-DD`) that have a tally, oldest first.
pub fn tallied_days() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(paths::logs_dir()) else { return Vec::new() };
    let mut days: Vec<String> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let day = name.strip_prefix("decisions-")?.strip_suffix(".jsonl")?.to_string();
            chrono::NaiveDate::parse_from_str(&day, "%Y-%m-%d").is_ok().then_some(day)
        })
        .collect();
    days.sort();
    days
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_line_of_an_older_version_reads_and_one_without_sent_is_written_as_before() {
        let old = r#"{"latency_ms":1.5,"provider":"mock","status":"decided","time":"2026-12-01T10:00:00.000Z"}"#;
        let t: Tallied = serde_json::from_str(old).expect("an old line reads");
        assert_eq!((t.provider.as_deref(), t.sent.len()), (Some("mock"), 0));
        let written = serde_json::to_string(&t).expect("json");
        assert!(!written.contains("sent"), "no new key on a line with nothing sent: {written}");
        assert_eq!(serde_json::from_str::<Tallied>(&written).expect("reads back"), t);
        let t: Tallied = serde_json::from_str(r#"{"status":"error","provider":null}"#).expect("a failed one");
        assert_eq!(t.provider, None);
    }
}
