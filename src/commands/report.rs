//! `system1 report`: reads the Claude Code transcripts and prints whether System-1 is used and pays
//! off (the figures are defined in `report/mod.rs`, and for users in docs/report.md). Totals only.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::json;

use crate::error::{Context, Error, Result};
use crate::report::collect::Collector;
use crate::report::prices::Prices;
use crate::report::spawns::SpawnLog;
use crate::report::{Aggregator, Report, render, svg};
use crate::text::Meter;
use crate::transcripts::{self, Scope};

#[derive(clap::Args)]
pub struct Args {
    /// The Claude Code projects directory to read (default: ~/.claude/projects, or
    /// $CLAUDE_CONFIG_DIR/projects).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Only lines from this moment on: a date (2026-11-01, midnight UTC) or an RFC 3339 time.
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Only lines before this moment: a date counts whole (until 2026-11-30 includes that day).
    #[arg(long, value_name = "WHEN")]
    until: Option<String>,
    /// Only the last N days (instead of --since).
    #[arg(long, value_name = "N", conflicts_with = "since")]
    days: Option<u32>,
    /// Only projects whose directory matches: a path (/home/me/repo) or part of a name.
    #[arg(long, value_name = "PROJECT")]
    project: Option<String>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Also write the report as an SVG chart to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Use this price file instead of the built-in scripts/prices.json.
    #[arg(long, value_name = "FILE")]
    prices: Option<PathBuf>,
    /// The routing log the spawn section reads (default: the one the hooks write,
    /// ~/.system1-gateway/logs/routing.jsonl).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Reader threads (default: one per available core).
    #[arg(long, value_name = "N", default_value_t = 0)]
    threads: usize,
}

pub fn run(args: Args) -> Result<i32> {
    let prices = Prices::load(args.prices.as_deref())?;
    let mut since = args.since.as_deref().map(|s| transcripts::parse_when(s, "--since", false)).transpose()?;
    if let Some(days) = args.days {
        since = Some(Utc::now() - chrono::Duration::days(i64::from(days)));
    }
    let until = args.until.as_deref().map(|s| transcripts::parse_when(s, "--until", true)).transpose()?;
    if let (Some(s), Some(u)) = (since, until)
        && s >= u
    {
        return Err(Error::usage("--since must be before --until"));
    }
    let scope = Scope { dir: args.dir.clone(), since, until, project: args.project.clone(), threads: args.threads };

    let started = Instant::now();
    let files = transcripts::list(&scope)?;
    let total_bytes: u64 = files.iter().map(|f| f.size).sum();
    let mut agg = Aggregator::new();
    let mut progress = Progress::new(total_bytes);
    let stats = transcripts::read(files, &scope, Collector::new, |info, facts, file_stats| {
        agg.add(info, facts);
        progress.advance(file_stats.bytes);
    });
    progress.clear();
    let seconds = started.elapsed().as_secs_f64();

    let mut scope_json = BTreeMap::new();
    scope_json.insert("dir".to_string(), json!(scope.projects_dir().display().to_string()));
    let rfc3339 = |t: chrono::DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    scope_json.insert("since".to_string(), json!(since.map(rfc3339)));
    scope_json.insert("until".to_string(), json!(until.map(rfc3339)));
    scope_json.insert("days".to_string(), json!(args.days));
    scope_json.insert("project".to_string(), json!(args.project));
    let log = SpawnLog::read(&args.log.clone().unwrap_or_else(crate::paths::routing_log), &scope);
    let report = Report::build(&agg, &prices, &stats, seconds, scope_json, &log);

    if let Some(path) = &args.svg {
        std::fs::write(path, svg::render(&report)).context(|| format!("cannot write {}", path.display()))?;
    }
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&report).map_err(|e| Error::failure(e.to_string()))?;
        s.push('\n');
        s
    } else {
        render::table(&report)
    };
    out!("{text}")?;
    Ok(0)
}

/// Bytes read, on a one-line meter that shows only when stderr is a terminal and the run has
/// lasted a second: short runs and pipes stay quiet.
struct Progress {
    total: u64,
    done: u64,
    meter: Meter,
}

impl Progress {
    fn new(total: u64) -> Self {
        Progress { total, done: 0, meter: Meter::after(Duration::from_secs(1), Duration::from_millis(200)) }
    }

    fn advance(&mut self, bytes: u64) {
        self.done += bytes;
        let (done, total) = (self.done, self.total);
        self.meter.draw(|| {
            let share = if total > 0 { done as f64 / total as f64 * 100.0 } else { 100.0 };
            format!("reading transcripts: {share:3.0}% ({} of {} MB)", done / 1_000_000, total / 1_000_000)
        });
    }

    fn clear(&mut self) {
        self.meter.clear();
    }
}
