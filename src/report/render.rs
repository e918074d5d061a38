//! The report as a terminal table: the System-1 figures first (what the user asked), then usage by
//! model, then the price note and the calibrate offer. Plain text, no colour, fits 100 columns.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::Value;

use super::breakdown::{Breakdown, Figures, View};
use super::spawns::{Group, RuleRow, SpawnSection, cells_text};
use super::what_if::WhatIf;
use super::{Part, ReadStats, Report, Savings, TierRow, TokenTotals, mix_source, mix_text};
use crate::text;

/// `1234567` → `1.2M`; small counts stay exact.
pub fn tokens(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1}M", n as f64 / 1e6),
        _ => format!("{:.2}B", n as f64 / 1e9),
    }
}

pub fn money(x: f64) -> String {
    let sign = if x < 0.0 { "-" } else { "" };
    let x = x.abs();
    if x >= 1000.0 {
        format!("{sign}${}", thousands(x.round() as u64))
    } else if x >= 1.0 || x == 0.0 {
        format!("{sign}${x:.2}")
    } else {
        // Small histories and the hint overhead live in fractions of a cent.
        format!("{sign}${x:.4}")
    }
}

fn signed_money(x: f64) -> String {
    if x > 0.0 { format!("+{}", money(x)) } else { money(x) }
}

pub fn pct(x: Option<f64>) -> String {
    x.map(|v| text::pct(v, 0)).unwrap_or_else(|| "n/a".to_string())
}

fn bytes(n: u64) -> String {
    match n {
        0..=999_999 => format!("{:.1} kB", n as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1} MB", n as f64 / 1e6),
        _ => format!("{:.2} GB", n as f64 / 1e9),
    }
}

fn part_line(out: &mut String, name: &str, p: &Part) {
    let _ = writeln!(
        out,
        "  {name:<22} {:>9} {:>9} {:>9} {:>10}",
        p.requests,
        tokens(p.tokens.total),
        money(p.cost_usd),
        if p.unpriced_requests > 0 { format!("{} unpriced", p.unpriced_requests) } else { String::new() }
    );
}

fn token_cells(t: &TokenTotals) -> String {
    format!(
        "{:>8} {:>8} {:>8} {:>8} {:>9}",
        tokens(t.input),
        tokens(t.output),
        tokens(t.cache_write_5m),
        tokens(t.cache_write_1h),
        tokens(t.cache_read)
    )
}

/// An RFC 3339 moment for the header, to the minute.
fn moment(rfc3339: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => t.with_timezone(&chrono::Utc).format("%Y-%m-%d %H:%M UTC").to_string(),
        Err(_) => rfc3339.to_string(),
    }
}

/// The period and projects a report covers, as the user gave them: `2026-11-01 to 2026-11-30`
/// (dates count whole, the last one included), `the last 3 days (since 2026-11-28)`, `since
/// 2026-11-10 12:00 UTC`, `all history`; then `, projects matching "w1"`.
pub fn period(scope: &BTreeMap<String, Value>) -> String {
    let get = |key: &str| scope.get(key).and_then(|v| v.as_str());
    let since = get("since_date").map(String::from).or_else(|| get("since").map(moment));
    let until = get("until_date").map(String::from).or_else(|| get("until").map(moment));
    let mut period = match (since, until) {
        (None, None) => "all history".to_string(),
        (Some(s), None) => format!("since {s}"),
        (None, Some(u)) => format!("until {u}"),
        (Some(s), Some(u)) => format!("{s} to {u}"),
    };
    if let Some(days) = scope.get("days").and_then(|v| v.as_u64()) {
        period = format!("the last {} ({period})", text::count(days, "day"));
    }
    if let Some(project) = get("project") {
        period.push_str(&format!(", projects matching {project:?}"));
    }
    period
}

fn group_line(out: &mut String, name: &str, g: &Group) {
    let outcomes = if g.labelled > 0 {
        format!("{} of {} succeeded", g.succeeded, g.labelled)
    } else {
        "none labelled".to_string()
    };
    let _ = writeln!(
        out,
        "  {name:<24} {:>6} {:>9} {:>5} {:>6} {:>6}   {outcomes}",
        g.spawns,
        format!("{} of {}", g.on_rule_tier, g.compared),
        pct(g.agreement),
        g.above_rule_tier,
        g.below_rule_tier,
    );
}

/// Each rule of the routing log: what it decided, how often labels agree, and the spend it steered.
fn rules_section(out: &mut String, rows: &[RuleRow]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nRules in the routing log  tier     prompts  hinted   spawns  rewritten  labelled  agree  subagent spend"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "  {:<23} {:<7} {:>8} {:>7} {:>8} {:>10} {:>9} {:>6} {:>15}",
            r.rule,
            r.tier.map_or("?", |t| t.name()),
            r.prompts,
            r.hinted,
            r.spawns,
            r.rewritten,
            r.labelled,
            pct(r.agreement),
            money(r.spend_usd)
        );
    }
}

/// The routing log's spawns: record-only against enforced, and what the rewrites did.
fn spawn_section(out: &mut String, s: &SpawnSection) {
    if let Some(e) = &s.read_error {
        let _ = writeln!(out, "\nSpawns in the routing log: cannot read {}: {e}", s.log);
        return;
    }
    if s.spawns == 0 {
        let _ = writeln!(
            out,
            "\nSpawns in the routing log: none logged (the agent hook logs spawns in [routing] log_dirs repos)"
        );
        return;
    }
    let _ = writeln!(out, "\nSpawns in the routing log  spawns  on rule's tier  above  below   outcomes");
    group_line(out, "record only", &s.record_only);
    group_line(out, "enforced", &s.enforced);
    group_line(out, "  rewritten", &s.rewritten);
    for (name, g) in [("record only", &s.record_only), ("enforced", &s.enforced)] {
        if !g.rule_vs_ran.is_empty() {
            let _ = writeln!(out, "  rule's tier→ran, {name}: {}", cells_text(&g.rule_vs_ran));
        }
    }
    let rw = &s.rewrites;
    if rw.made > 0 {
        let _ = writeln!(
            out,
            "  rewrites   {}: {} filled, {} raised, {} lowered; {} of {} checked did not take effect ({})",
            rw.made,
            rw.filled,
            rw.raised,
            rw.lowered,
            rw.not_taken,
            rw.checked,
            pct(rw.not_taken_share)
        );
        let e = &s.enforced_savings;
        let _ = writeln!(
            out,
            "  enforced {:>10}   {} that took effect, against the tier each call named (else the usual mix){}",
            signed_money(e.usd),
            text::count(e.spawns_priced, "rewrite"),
            if e.not_priced > 0 { format!("; {}", not_priced(e.not_priced)) } else { String::new() }
        );
    }
    if s.subagent_model_env > 0 {
        let _ = writeln!(
            out,
            "  left alone {}: CLAUDE_CODE_SUBAGENT_MODEL was set, and Claude Code's own setting decides every subagent's model",
            s.subagent_model_env
        );
    }
    if s.no_small_models_env > 0 {
        let _ = writeln!(
            out,
            "  left alone {}: CLAUDE_CODE_SUBAGENT_NO_SMALL_MODELS was set, and the rule's tier is one Claude Code refuses subagents there",
            s.no_small_models_env
        );
    }
    if s.skipped_lines > 0 {
        let _ = writeln!(out, "  skipped {} of the log: not an entry", text::count(s.skipped_lines, "line"));
    }
}

/// Spawns left out of a cost, and why that can be.
fn not_priced(n: u64) -> String {
    format!(
        "{} not priced (its subagent's transcript is not among those read, or a model it ran on or would run on has no price), left out of both sums",
        text::count(n, "spawn")
    )
}

/// The what-if's `effort` line: the effort the repriced requests are taken to have run at, from
/// where, and what that does to the price.
pub fn what_if_effort(w: &WhatIf) -> String {
    let e = &w.effort;
    let levels = |m: &BTreeMap<crate::claude_code::Effort, u64>| {
        m.iter().map(|(l, n)| format!("{} {n}", l.name())).collect::<Vec<_>>().join(", ")
    };
    let mut parts = Vec::new();
    let recorded: u64 = e.recorded.values().sum();
    if recorded > 0 {
        parts.push(format!(
            "{} at the effort their line records ({})",
            text::count(recorded, "request"),
            levels(&e.recorded)
        ));
    }
    let called: u64 = e.agent_call.values().sum();
    if called > 0 {
        parts.push(format!(
            "{} at the one their Agent call named ({})",
            text::count(called, "request"),
            levels(&e.agent_call)
        ));
    }
    if e.assumed_high > 0 {
        parts.push(format!(
            "{} assumed at high (nothing records their effort: Claude Code before 2.1.332), so not scaled",
            text::count(e.assumed_high, "request")
        ));
    }
    if parts.is_empty() {
        return "no request repriced".to_string();
    }
    let mut line = format!(
        "{}; each priced at the same effort on the other model: its tokens times that model's cost of the effort over the one it ran on (the catalog's effort_cost_index, 1 at high)",
        parts.join("; ")
    );
    if e.not_indexed > 0 {
        line.push_str(&format!(
            "; {} not scaled, the catalog giving no index for {}",
            e.not_indexed,
            e.not_indexed_models.join(", ")
        ));
    }
    line
}

/// The what-if's `provider` line: where the repriced spawns' sessions ran, why that is taken to be
/// so, and the model each tier is priced at there.
pub fn what_if_providers(w: &WhatIf) -> String {
    let each: Vec<String> = w
        .providers
        .iter()
        .map(|p| {
            let why = match (p.from, &p.evidence) {
                ("transcript", Some(id)) => format!("a model id only it uses in the transcripts, {id}"),
                ("settings", Some(e)) => e.clone(),
                _ => "nothing in the transcripts or settings says otherwise".to_string(),
            };
            let models: Vec<String> = p.models.iter().map(|(t, m)| format!("{t} → {m}")).collect();
            format!(
                "{} {} ({why}): {}",
                p.provider.name().replace('_', "-"),
                text::count(p.sessions, "session"),
                if models.is_empty() { "no tier priced".to_string() } else { models.join(", ") }
            )
        })
        .collect();
    if each.is_empty() {
        return "no session repriced".to_string();
    }
    format!(
        "{}; a tier is priced at the model its alias names there (first-party: the one it ran on most here, else the catalog's)",
        each.join("; ")
    )
}

/// The what-if's `prices` line: which prices and catalog, with their dates.
pub fn what_if_prices(w: &WhatIf) -> String {
    let catalog = match (&w.prices.catalog, &w.prices.catalog_as_of) {
        (Some(_), Some(date)) => {
            format!("aliases and effort costs from Claude Code's model catalog (2.1.332 to 2.1.337, read {date})")
        }
        _ => "the price file has no model catalog: first-party aliases, effort not scaled".to_string(),
    };
    format!(
        "API list prices as of {}, each request at the price in force on its day; {catalog}",
        if w.prices.as_of.is_empty() { "an undated file" } else { &w.prices.as_of }
    )
}

/// `--what-if`: what enforcement would have changed, what it would have cost, and how spawns
/// already on those tiers fared.
fn what_if_section(out: &mut String, w: &WhatIf) {
    let _ = writeln!(
        out,
        "\nWhat routing would have done with [routing] enforce = \"{}\", on {}",
        w.mode,
        text::count(w.spawns, "spawn")
    );
    let _ = writeln!(out, "  {}", w.estimate);
    let _ = writeln!(out, "  repriced:  {}", super::what_if::REPRICED);

    let _ = writeln!(
        out,
        "  changed    {:>4}: {} lowered, {} raised from the tier it ran on; {} set to the tier it ran on",
        w.changed, w.lowered, w.raised, w.unchanged
    );
    if w.changed > 0 {
        let rw = &w.rewrites;
        let _ = writeln!(
            out,
            "  rewrites   {:>4}: {} filled, {} raised, {} lowered\n             \
             filled: the call named no model and ran on its parent's tier, which every mode fills, up or down; \
             raised: it named a tier below the rule's; lowered: above it, which only set changes",
            w.changed, rw.filled, rw.raised, rw.lowered
        );
    }
    let left: u64 = w.left_alone.values().sum();
    let why: Vec<String> = w.left_alone.iter().map(|(k, n)| format!("{} {n}", k.replace('_', " "))).collect();
    let _ = writeln!(
        out,
        "  left alone {left:>4}{}",
        if why.is_empty() { String::new() } else { format!(": {}", why.join(", ")) }
    );
    let _ = writeln!(
        out,
        "  cost       {} as they ran, {} projected: {} {}{}",
        money(w.cost_usd),
        money(w.projected_cost_usd),
        if w.savings_usd >= 0.0 { "saves" } else { "costs" },
        money(w.savings_usd.abs()),
        if w.not_priced > 0 { format!("; {}", not_priced(w.not_priced)) } else { String::new() }
    );
    for m in &w.moves {
        let _ = writeln!(
            out,
            "  {:<12} {:>4} {:>10} → {}{}",
            format!("{}→{}", m.from, m.to),
            text::count(m.spawns, "spawn"),
            money(m.cost_usd),
            money(m.projected_cost_usd),
            if m.not_priced > 0 { format!(" ({} of them not priced)", m.not_priced) } else { String::new() }
        );
    }
    if w.changed > 0 {
        let _ = writeln!(out, "  effort     {}", what_if_effort(w));
        let _ = writeln!(out, "  provider   {}", what_if_providers(w));
        let _ = writeln!(out, "  prices     {}", what_if_prices(w));
    }
    if !w.outcomes.is_empty() {
        let each: Vec<String> = w
            .outcomes
            .iter()
            .map(|o| {
                if o.labelled == 0 {
                    format!("on {}: none labelled", o.tier)
                } else {
                    format!("on {}: {} of {} succeeded ({})", o.tier, o.succeeded, o.labelled, pct(o.success))
                }
            })
            .collect();
        let _ = writeln!(out, "  outcomes of spawns that already ran {}", each.join("; "));
    }
    let e = &w.engine;
    let mut engine =
        format!("{} asked, {} answered from answers it gave before", text::count(e.asked, "brief"), e.cached);
    if e.failed > 0 {
        engine.push_str(&format!(
            "; {} no answer{}",
            e.failed,
            e.failure.as_deref().map(|f| format!(": {f}")).unwrap_or_default()
        ));
    }
    if e.gave_up {
        engine.push_str(&format!("; stopped asking (check `{}`)", text::command("doctor")));
    }
    let _ = writeln!(out, "  engine     {engine}");
}

pub fn table(r: &Report) -> String {
    let mut out = String::new();
    header(&mut out, r);
    reach_and_adherence(&mut out, r);
    tiers(&mut out, &r.subagents_by_tier);
    savings(&mut out, &r.savings);
    spawn_section(&mut out, &r.spawns);
    let engines = super::engines::lines(&r.engines);
    if !engines.is_empty() {
        out.push('\n');
        for line in engines {
            let _ = writeln!(out, "{line}");
        }
    }
    rules_section(&mut out, &r.spawns.rules);
    if let Some(w) = &r.what_if {
        what_if_section(&mut out, w);
    }
    usage(&mut out, r);
    prices_and_next(&mut out, r);
    trim_line_ends(out)
}

/// Every line without the blanks an empty last column leaves at its end.
fn trim_line_ends(text: String) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        match line.strip_suffix('\n') {
            Some(l) => {
                out.push_str(l.trim_end_matches(' '));
                out.push('\n');
            }
            None => out.push_str(line.trim_end_matches(' ')),
        }
    }
    out
}

/// The period and project the report covers, its sessions, and what was read.
fn header(out: &mut String, r: &Report) {
    let period = period(&r.scope);
    let _ = writeln!(out, "System-1 usage report: {period}, {}", text::count(r.totals.sessions, "session"));
    read_line(out, &r.read);
}

/// What was read, and what was skipped.
fn read_line(out: &mut String, rd: &ReadStats) {
    let _ = write!(
        out,
        "read {} in {} ({} subagent) in {:.1} s",
        bytes(rd.bytes),
        text::count(rd.files, "file"),
        rd.subagent_files,
        rd.seconds
    );
    if rd.malformed_lines + rd.truncated_files + rd.unreadable_files > 0 {
        let _ = write!(
            out,
            "; skipped {}, {}, {}",
            text::count(rd.malformed_lines, "malformed line"),
            text::count(rd.truncated_files, "truncated file"),
            text::count(rd.unreadable_files, "unreadable file")
        );
    }
    let _ = writeln!(out, "\n");
}

fn reach_and_adherence(out: &mut String, r: &Report) {
    let reach = &r.reach;
    if reach.prompts == 0 {
        let _ = writeln!(out, "Reach       no prompts in scope, so no share to give");
    } else {
        reach_line(out, reach);
    }
    let a = &r.adherence;
    if a.hinted_spawns == 0 {
        let _ = writeln!(
            out,
            "Adherence   no spawn in a hinted turn ({} in scope), so no share to give",
            text::count(a.spawns, "spawn")
        );
        return;
    }
    adherence_line(out, a);
}

fn reach_line(out: &mut String, reach: &super::Reach) {
    let _ = writeln!(
        out,
        "Reach       {} of prompts got a routing hint ({} of {}); {} of those long enough for one ({} of {}); {}",
        pct(reach.share),
        reach.hinted_prompts,
        reach.prompts,
        pct(reach.share_of_long),
        reach.hinted_long_prompts,
        reach.long_prompts,
        text::count(reach.skill_hints, "skill hint")
    );
}

fn adherence_line(out: &mut String, a: &super::Adherence) {
    let _ = writeln!(
        out,
        "Adherence   {} of hinted spawns ran on the hinted tier ({} of {}: {} upgraded, {} downgraded{}{})",
        pct(a.share),
        a.followed,
        a.hinted_spawns,
        a.upgraded,
        a.downgraded,
        if a.unknown > 0 { format!(", {} unknown", a.unknown) } else { String::new() },
        if a.not_run > 0 { format!(", {} never ran", a.not_run) } else { String::new() }
    );
}

fn tiers(out: &mut String, rows: &[TierRow]) {
    let _ = writeln!(out, "\nSubagents by tier          spawns  requests    tokens       cost");
    for t in rows {
        let _ = writeln!(
            out,
            "  {:<22} {:>8} {:>9} {:>9} {:>10}",
            t.tier,
            t.spawns,
            t.requests,
            tokens(t.tokens.total),
            money(t.cost_usd)
        );
    }
}

fn savings(out: &mut String, s: &Savings) {
    let _ = writeln!(out, "\nSavings at API list prices");
    let mix = s.mix_text();
    match s.realised_usd {
        Some(v) => {
            let _ = writeln!(
                out,
                "  realised   {:>10}   {} that followed a hint, against the usual mix ({}: {})",
                signed_money(v),
                text::count(s.followed_spawns_priced, "spawn"),
                s.mix_source(),
                mix
            );
        }
        None => {
            let _ = writeln!(out, "  realised   {:>10}   no usual tier mix to compare with", "n/a");
        }
    }
    let _ = writeln!(
        out,
        "  missed     {:>10}   {} upgraded past a hint",
        money(s.missed_usd),
        text::count(s.upgraded_spawns_priced, "spawn")
    );
    let _ = writeln!(
        out,
        "  overhead   {:>10}   {} hint tokens, written once and re-read from the cache",
        signed_money(-s.hint_overhead_usd),
        tokens(s.hint_tokens)
    );
    let _ = writeln!(
        out,
        "  net        {:>10}   realised minus overhead",
        s.net_usd.map(signed_money).unwrap_or_else(|| "n/a".to_string())
    );
}

/// All usage by thread, then by model, with the models no price covers.
fn usage(out: &mut String, r: &Report) {
    let _ = writeln!(out, "\nAll usage                 requests    tokens      cost");
    part_line(out, "main threads", &r.totals.main);
    part_line(out, "subagents", &r.totals.subagents);
    part_line(out, "total", &r.totals.all);
    let _ = writeln!(
        out,
        "\n{:<34} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>10}",
        "By model", "requests", "input", "output", "cw 5m", "cw 1h", "cache rd", "cost"
    );
    for m in &r.models {
        let _ = writeln!(
            out,
            "  {:<32} {:>8} {} {:>10}",
            m.model,
            m.requests,
            token_cells(&m.tokens),
            m.cost_usd.map(money).unwrap_or_else(|| "unpriced".to_string())
        );
    }
    if !r.unknown_models.is_empty() {
        let _ = writeln!(
            out,
            "  not priced (no entry in prices.json, left out of every cost): {}",
            r.unknown_models.join(", ")
        );
    }
}

/// The price note, the findings and the calibrate offer.
fn prices_and_next(out: &mut String, r: &Report) {
    let _ =
        writeln!(out, "\nPrices: API list prices as of {} ({}). {}", r.prices.as_of, r.prices.source, r.prices.note);
    let c = &r.calibrate;
    out.push('\n');
    for f in &c.findings {
        let _ = writeln!(out, "Finding: {f}.");
    }
    if c.suggested {
        let _ = writeln!(out, "Next: run /system1:calibrate and ask it to: {}.", c.instructions);
    } else {
        let _ = writeln!(out, "Next: {}.", c.instructions);
    }
}

/// The widest a `--by` table's key column gets: the table then fits 100 columns.
const KEY_WIDTH: usize = 22;

/// A row's key as the `--by` table shows it (the Markdown, CSV and JSON keep it whole): a session
/// by the first 8 characters of its id and its project's last folder, a project's path cut from the
/// left, a model without `claude-`, a subagent type with its tier.
fn short_key(view: View, key: &str, tier: Option<&str>, project: Option<&str>) -> String {
    let shown = match view {
        View::Session => {
            let folder = project.and_then(|p| p.rsplit(['/', '\\']).find(|s| !s.is_empty())).unwrap_or("");
            format!("{} {folder}", key.chars().take(8).collect::<String>())
        }
        View::Model => key.strip_prefix("claude-").unwrap_or(key).to_string(),
        View::Agent => format!("{key} {}", tier.unwrap_or("unknown")),
        _ => key.to_string(),
    };
    let n = shown.chars().count();
    if n <= KEY_WIDTH {
        shown
    } else if view == View::Project {
        project_tail(&shown)
    } else {
        text::ellipsis(&shown, KEY_WIDTH)
    }
}

/// A project path too long for the key column: its last folders whole, after `…/`, as many as fit
/// (a folder name cut in two reads as another folder); a last folder too long alone is cut at its
/// end instead.
fn project_tail(path: &str) -> String {
    let parts: Vec<&str> = path.split(['/', '\\']).filter(|s| !s.is_empty()).collect();
    let mut tail = String::new();
    for part in parts.iter().rev() {
        let longer = if tail.is_empty() { part.to_string() } else { format!("{part}/{tail}") };
        if longer.chars().count() + 2 > KEY_WIDTH {
            break;
        }
        tail = longer;
    }
    if tail.is_empty() {
        let last = parts.last().copied().unwrap_or(path);
        return text::ellipsis(&format!("…/{last}"), KEY_WIDTH);
    }
    format!("…/{tail}")
}

/// `3/4`, or `-` when the view has no such figure.
fn of(part: Option<u64>, whole: Option<u64>) -> String {
    match (part, whole) {
        (Some(p), Some(w)) => format!("{p}/{w}"),
        _ => "-".to_string(),
    }
}

fn figure_cells(out: &mut String, key: &str, width: usize, f: &Figures) {
    let saved = match f.realised_usd {
        Some(v) if f.followed > 0 => signed_money(v),
        Some(_) => "-".to_string(),
        None => "n/a".to_string(),
    };
    let _ = writeln!(
        out,
        "{key:<width$} {:>6} {:>7} {:>7} {:>8} {:>8} {:>9}  {:>7} {:>8} {:>9}",
        f.requests,
        tokens(f.input),
        tokens(f.output),
        tokens(f.cache_creation),
        tokens(f.cache_read),
        if f.requests > 0 && f.unpriced_requests == f.requests { "unpriced".to_string() } else { money(f.cost_usd) },
        of(f.hinted_prompts, f.prompts),
        of(Some(f.followed), Some(f.hinted_spawns)),
        saved,
    );
}

/// `system1 report --by VIEW`: one line per row, then the total, then what the columns mean.
pub fn breakdown_table(b: &Breakdown) -> String {
    let mut out = String::new();
    let view = b.by;
    let _ = writeln!(
        out,
        "System-1 usage by {} ({}): {}, {}",
        view.name(),
        b.timezone,
        period(&b.scope),
        text::count(b.total.sessions, "session")
    );
    read_line(&mut out, &b.read);
    let keys: Vec<String> =
        b.rows.iter().map(|r| short_key(view, &r.key, r.tier.as_deref(), r.project.as_deref())).collect();
    let width = keys.iter().map(|k| k.chars().count()).chain([view.name().len(), 5]).max().unwrap_or(10);
    let _ = writeln!(
        out,
        "{:<width$} {:>6} {:>7} {:>7} {:>8} {:>8} {:>9}  {:>7} {:>8} {:>9}",
        view.name(),
        "reqs",
        "input",
        "output",
        "cache wr",
        "cache rd",
        "cost",
        "hinted",
        "followed",
        "saved"
    );
    if b.rows.is_empty() {
        let _ = writeln!(out, "(nothing in this period)");
    }
    for (row, key) in b.rows.iter().zip(&keys) {
        figure_cells(&mut out, key, width, &row.figures);
    }
    figure_cells(&mut out, "total", width, &b.total);
    let m = &b.usual_mix;
    out.push('\n');
    if view.has_prompts() {
        let _ = writeln!(out, "hinted    prompts that got a routing hint, of all prompts");
    }
    let _ = writeln!(out, "followed  spawns that ran on their hint's tier, of the spawns with a hint");
    let _ = writeln!(
        out,
        "saved     what those saved against the usual mix ({}: {})",
        mix_source(m.baseline.as_str(), m.baseline_samples),
        mix_text(&m.mix)
    );
    if !b.unknown_models.is_empty() {
        let _ = writeln!(out, "Not priced (left out of every cost): {}.", b.unknown_models.join(", "));
    }
    let _ = writeln!(
        out,
        "Costs at API list prices as of {}; a Claude Code subscription does not pay these.",
        b.prices_as_of
    );
    trim_line_ends(out)
}

/// The figures of a row in the order the Markdown and CSV columns name them.
fn figure_values(f: &Figures) -> [String; 19] {
    let opt = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_default();
    [
        f.requests.to_string(),
        f.input.to_string(),
        f.output.to_string(),
        f.cache_creation.to_string(),
        f.cache_write_5m.to_string(),
        f.cache_write_1h.to_string(),
        f.cache_read.to_string(),
        f.total_tokens.to_string(),
        format!("{:.6}", f.cost_usd),
        f.unpriced_requests.to_string(),
        f.sessions.to_string(),
        opt(f.prompts),
        opt(f.hinted_prompts),
        f.spawns.to_string(),
        f.hinted_spawns.to_string(),
        f.followed.to_string(),
        f.upgraded.to_string(),
        f.downgraded.to_string(),
        f.realised_usd.map(|v| format!("{v:.6}")).unwrap_or_default(),
    ]
}

const FIGURE_COLUMNS: [&str; 19] = [
    "requests",
    "input",
    "output",
    "cache_creation",
    "cache_write_5m",
    "cache_write_1h",
    "cache_read",
    "total_tokens",
    "cost_usd",
    "unpriced_requests",
    "sessions",
    "prompts",
    "hinted_prompts",
    "spawns",
    "hinted_spawns",
    "followed",
    "upgraded",
    "downgraded",
    "realised_usd",
];

/// Every row with its key whole (and its tier and project, where the view has them), the figures
/// as exact numbers, then the total.
fn breakdown_cells(b: &Breakdown) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let mut head = vec!["key"];
    let with_tier = matches!(b.by, View::Model | View::Agent);
    let with_project = b.by == View::Session;
    if with_tier {
        head.push("tier");
    }
    if with_project {
        head.push("project");
    }
    head.extend(FIGURE_COLUMNS);
    let line = |key: &str, tier: Option<&str>, project: Option<&str>, f: &Figures| {
        let mut cells = vec![key.to_string()];
        if with_tier {
            cells.push(tier.unwrap_or_default().to_string());
        }
        if with_project {
            cells.push(project.unwrap_or_default().to_string());
        }
        cells.extend(figure_values(f));
        cells
    };
    let mut rows: Vec<Vec<String>> =
        b.rows.iter().map(|r| line(&r.key, r.tier.as_deref(), r.project.as_deref(), &r.figures)).collect();
    rows.push(line("total", None, None, &b.total));
    (head, rows)
}

/// `1234567` → `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `--format md`: the table as Markdown (GitHub's flavour) to paste into an issue or a note, with
/// each key whole and exact token counts.
pub fn breakdown_markdown(b: &Breakdown) -> String {
    let view = b.by;
    let with_tier = matches!(view, View::Model | View::Agent);
    let with_project = view == View::Session;
    let mut head = vec![view.name()];
    head.extend(with_tier.then_some("tier"));
    head.extend(with_project.then_some("project"));
    let text_columns = head.len();
    head.extend(["requests", "input", "output", "cache write", "cache read", "cost", "hinted", "followed", "saved"]);
    let cell = |s: &str| s.replace('|', "\\|");
    let line = |key: &str, tier: Option<&str>, project: Option<&str>, f: &Figures| {
        let mut cells = vec![cell(key)];
        if with_tier {
            cells.push(tier.unwrap_or_default().to_string());
        }
        if with_project {
            cells.push(cell(project.unwrap_or_default()));
        }
        let saved = match f.realised_usd {
            Some(v) if f.followed > 0 => signed_money(v),
            Some(_) => "-".to_string(),
            None => "n/a".to_string(),
        };
        cells.extend([
            thousands(f.requests),
            thousands(f.input),
            thousands(f.output),
            thousands(f.cache_creation),
            thousands(f.cache_read),
            money(f.cost_usd),
            of(f.hinted_prompts, f.prompts),
            of(Some(f.followed), Some(f.hinted_spawns)),
            saved,
        ]);
        format!("| {} |", cells.join(" | "))
    };
    let mut out = format!("System-1 usage by {} ({}): {}\n\n", view.name(), b.timezone, period(&b.scope));
    let _ = writeln!(out, "| {} |", head.join(" | "));
    let rule: Vec<&str> = (0..head.len()).map(|i| if i < text_columns { "---" } else { "---:" }).collect();
    let _ = writeln!(out, "|{}|", rule.join("|"));
    for r in &b.rows {
        let _ = writeln!(out, "{}", line(&r.key, r.tier.as_deref(), r.project.as_deref(), &r.figures));
    }
    let _ = writeln!(out, "{}", line("**total**", None, None, &b.total));
    out
}

/// `--format csv`: RFC 4180 CSV, a header line then one line per row and the total, every figure
/// exact.
pub fn breakdown_csv(b: &Breakdown) -> String {
    let (head, rows) = breakdown_cells(b);
    let field = |s: &str| {
        if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
    };
    let mut out = String::new();
    let _ = write!(out, "{}\r\n", head.join(","));
    for r in &rows {
        let _ = write!(out, "{}\r\n", r.iter().map(|c| field(c)).collect::<Vec<_>>().join(","));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_easily() {
        assert_eq!(tokens(999), "999");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(2_500_000), "2.5M");
        assert_eq!(money(3.456), "$3.46");
        assert_eq!(money(-0.5), "-$0.5000");
        assert_eq!(money(0.00046), "$0.0005");
        assert_eq!(money(0.0), "$0.00");
        assert_eq!(money(1234567.0), "$1,234,567");
        assert_eq!(signed_money(2.0), "+$2.00");
        assert_eq!(pct(Some(0.625)), "62%");
        assert_eq!(pct(None), "n/a");
    }

    #[test]
    fn a_long_project_path_keeps_its_last_folders_whole() {
        let key = |p: &str| short_key(View::Project, p, None, None);
        assert_eq!(key("/home/u/w1"), "/home/u/w1");
        assert_eq!(key("/home/user/code/clients/web_app.v2"), "…/clients/web_app.v2");
        assert_eq!(key("/home/user/code/a-very-long-folder-name-indeed"), "…/a-very-long-folder-…");
        assert!(key("/home/user/code/a-very-long-folder-name-indeed").chars().count() <= KEY_WIDTH);
    }

    #[test]
    fn no_line_ends_in_blanks() {
        assert_eq!(trim_line_ends("a  \nb \n\n c".into()), "a\nb\n\n c");
    }
}
