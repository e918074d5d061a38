//! `system1 report`: reads the Claude Code transcripts and prints whether System-1 is used and pays
//! off (the figures are defined in `report/mod.rs`, and for users in docs/report.md). Totals only.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::json;
use system1_transcripts::{self as transcripts, Scope};

use crate::config::Enforce;
use crate::error::{Context, Error, Result};
use crate::report::breakdown::{self, View};
use crate::report::collect::Collector;
use crate::report::engines::Engines;
use crate::report::prices::Prices;
use crate::report::spawns::SpawnLog;
use crate::report::what_if::{self, EngineAsker};
use crate::report::{Aggregator, ReadStats, Report, html, render, svg};
use crate::text::Meter;
use crate::zone::{self, Zone};

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 report
  system1 report --by day --days 14
  system1 report --by session --format csv > sessions.csv
  system1 report --what-if set")]
pub struct Args {
    /// The Claude Code projects directory to read (default: ~/.claude/projects, or
    /// $CLAUDE_CONFIG_DIR/projects).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Only lines from this moment on: a date (2026-11-01, from its midnight in --timezone) or an
    /// RFC 3339 time.
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Only lines up to this moment: a date counts whole (until 2026-11-30 includes that day).
    #[arg(long, value_name = "WHEN")]
    until: Option<String>,
    /// Only the last N days, today included (instead of --since).
    #[arg(long, value_name = "N", conflicts_with = "since")]
    days: Option<u32>,
    /// One row per day, week (from Monday), month, session, project, model or subagent type and tier.
    #[arg(long, value_name = "VIEW")]
    by: Option<View>,
    /// The --by table as Markdown or CSV, for pasting elsewhere.
    #[arg(long, value_name = "FORMAT", requires = "by", conflicts_with = "json")]
    format: Option<Format>,
    /// The time zone of dates and days: UTC, local (the default), an offset (+02:00) or a name
    /// (Europe/Paris).
    #[arg(long, value_name = "ZONE")]
    timezone: Option<String>,
    /// Replay `[routing] enforce = MODE` on every subagent spawn in scope with the configured
    /// engine, and price what it would have changed (an estimate).
    #[arg(long, value_name = "MODE", conflicts_with = "by")]
    what_if: Option<WhatIfMode>,
    /// Only projects whose directory matches: a path (/home/me/repo) or part of a name.
    #[arg(long, value_name = "PROJECT")]
    project: Option<String>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Also write the report as an SVG chart to FILE; with --by day, week or month, the chart over
    /// time (cost by tier, realised and missed savings, hint reach per period).
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Also write the report as one self-contained HTML page to FILE: the summary, the charts, the
    /// views by day, session, project and agent, and the what-if if asked for. Totals only.
    #[arg(long, value_name = "FILE", conflicts_with = "by")]
    html: Option<PathBuf>,
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

#[derive(Clone, Copy, clap::ValueEnum)]
enum WhatIfMode {
    Fill,
    Raise,
    Set,
}

impl WhatIfMode {
    fn enforce(self) -> Enforce {
        match self {
            WhatIfMode::Fill => Enforce::Fill,
            WhatIfMode::Raise => Enforce::Raise,
            WhatIfMode::Set => Enforce::Set,
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Md,
    Csv,
}

/// The span of time the report covers, as instants and as the dates the user gave.
struct Period {
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
    /// The first day whole, when --since was a date or --days gave one.
    since_date: Option<NaiveDate>,
    /// The last day whole (inclusive), when --until was a date.
    until_date: Option<NaiveDate>,
}

impl Period {
    fn of(args: &Args, zone: &Zone) -> Result<Period> {
        let mut p = Period {
            since: args.since.as_deref().map(|s| zone::parse_when(s, "--since", false, zone)).transpose()?,
            until: args.until.as_deref().map(|s| zone::parse_when(s, "--until", true, zone)).transpose()?,
            since_date: args.since.as_deref().and_then(zone::date_in),
            until_date: args.until.as_deref().and_then(zone::date_in),
        };
        if let Some(days) = args.days {
            if days == 0 {
                return Err(Error::usage("--days 0: give at least 1 (today)"));
            }
            let first = zone.today() - i64::from(days - 1);
            p.since = DateTime::from_timestamp(zone.start_of(first), 0);
            p.since_date = Some(zone::date(first));
        }
        if let (Some(s), Some(u)) = (p.since, p.until)
            && s >= u
        {
            return Err(Error::usage("--since must be before --until"));
        }
        Ok(p)
    }
}

pub fn run(args: Args) -> Result<i32> {
    let prices = Prices::load(args.prices.as_deref())?;
    let zone = match &args.timezone {
        Some(name) => Zone::named(name)?,
        None => Zone::local(),
    };
    let period = Period::of(&args, &zone)?;
    let scope = Scope {
        dir: args.dir.clone().unwrap_or_else(crate::paths::claude_projects_dir),
        since: period.since,
        until: period.until,
        project: args.project.clone(),
        threads: args.threads,
    };

    let started = Instant::now();
    let files = transcripts::list(&scope)?;
    if files.is_empty() {
        nothing_matched(&scope)?;
    }
    let total_bytes: u64 = files.iter().map(|f| f.size).sum();
    let mut agg = Aggregator::new();
    let mut progress = Progress::new(total_bytes);
    let collector = if args.what_if.is_some() { Collector::with_briefs } else { Collector::new };
    let stats = transcripts::read(files, &scope, collector, |info, facts, file_stats| {
        agg.add(info, facts);
        progress.advance(file_stats.bytes);
    });
    progress.clear();
    let seconds = started.elapsed().as_secs_f64();

    let rfc3339 = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let date = |d: Option<NaiveDate>| d.map(|d| d.format("%Y-%m-%d").to_string());
    let scope_json: BTreeMap<String, serde_json::Value> = [
        ("dir", json!(scope.dir.display().to_string())),
        ("since", json!(period.since.map(rfc3339))),
        ("until", json!(period.until.map(rfc3339))),
        ("since_date", json!(date(period.since_date))),
        ("until_date", json!(date(period.until_date))),
        ("days", json!(args.days)),
        ("project", json!(args.project)),
        ("timezone", json!(zone.name())),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();

    if let Some(view) = args.by {
        if args.svg.is_some() && !matches!(view, View::Day | View::Week | View::Month) {
            return Err(Error::usage(format!("--svg with --by {}: the chart is over time", view.name()))
                .with_hint("use --by day, week or month, or --svg without --by for the summary chart"));
        }
        let b = breakdown::build(&agg, &prices, view, &zone, scope_json, ReadStats::new(&stats, seconds));
        if let Some(path) = &args.svg {
            std::fs::write(path, svg::over_time(&b)).context(|| format!("cannot write {}", path.display()))?;
        }
        let text = match (args.json, args.format) {
            (true, _) => json_text(&b)?,
            (false, Some(Format::Md)) => render::breakdown_markdown(&b),
            (false, Some(Format::Csv)) => render::breakdown_csv(&b),
            (false, None) => render::breakdown_table(&b),
        };
        out!("{text}")?;
        return Ok(0);
    }

    let log = SpawnLog::read(&args.log.clone().unwrap_or_else(crate::paths::routing_log), &scope);
    let read = ReadStats::new(&stats, seconds);
    let views: Vec<breakdown::Breakdown> = match &args.html {
        Some(_) => html::VIEWS
            .iter()
            .map(|v| breakdown::build(&agg, &prices, *v, &zone, scope_json.clone(), read.clone()))
            .collect(),
        None => Vec::new(),
    };
    let mut report = Report::build(&agg, &prices, &stats, seconds, scope_json, &log);
    report.engines = Engines::read(&log, &scope);
    if let Some(mode) = args.what_if {
        let loaded = crate::config::load();
        let briefs = report.adherence.spawns;
        let mut asker = EngineAsker::new(&loaded, briefs)
            .map_err(|e| Error::config(format!("--what-if needs an engine, and the config is broken: {e}")))?;
        let w = what_if::build(&agg, &prices, &log, &loaded, mode.enforce(), &mut asker, &crate::paths::claude_dir());
        asker.save();
        report.what_if = Some(w);
    }
    if let Some(path) = &args.svg {
        std::fs::write(path, svg::render(&report)).context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        std::fs::write(path, html::render(&report, &views)).context(|| format!("cannot write {}", path.display()))?;
    }
    let text = if args.json { json_text(&report)? } else { render::table(&report) };
    out!("{text}")?;
    Ok(0)
}

fn json_text(value: &impl serde::Serialize) -> Result<String> {
    let mut s = serde_json::to_string_pretty(value).map_err(|e| Error::failure(e.to_string()))?;
    s.push('\n');
    Ok(s)
}

/// No transcript in scope: fine for a period with no use, but a `--project` that names no project
/// at all is most likely a typo, and is said so with the names there are.
fn nothing_matched(scope: &Scope) -> Result<()> {
    let Some(project) = &scope.project else { return Ok(()) };
    let names = transcripts::project_names(scope);
    if names.iter().any(|n| scope.project_matches(n)) {
        return Ok(());
    }
    let shown: Vec<&str> = names.iter().take(8).map(String::as_str).collect();
    let more = names.len().saturating_sub(shown.len());
    let hint = match (shown.is_empty(), more) {
        (true, _) => format!("{} holds no project at all", scope.dir.display()),
        (false, 0) => format!("projects there: {}", shown.join(", ")),
        (false, n) => format!("projects there: {} and {n} more", shown.join(", ")),
    };
    Err(Error::usage(format!("--project {project:?}: no project under {} matches it", scope.dir.display()))
        .with_hint(hint))
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
