//! The report as a terminal table: the System-1 figures first (what the user asked), then usage by
//! model, then the price note and the calibrate offer. Plain text, no colour, fits 100 columns.

use std::fmt::Write;

use super::spawns::{Group, SpawnSection, cells_text};
use super::{Part, Report, Savings, TierRow, TokenTotals};
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
        let whole = x.round() as u64;
        let s = whole.to_string();
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        format!("{sign}${out}")
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

/// An RFC 3339 moment for the header: the date alone at midnight UTC, else to the minute.
fn moment(rfc3339: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => {
            let t = t.with_timezone(&chrono::Utc);
            if t.format("%H:%M:%S").to_string() == "00:00:00" {
                t.format("%Y-%m-%d").to_string()
            } else {
                t.format("%Y-%m-%d %H:%M UTC").to_string()
            }
        }
        Err(_) => rfc3339.to_string(),
    }
}

fn group_line(out: &mut String, name: &str, g: &Group) {
    let outcomes = if g.labelled > 0 {
        format!("{} of {} succeeded", g.succeeded, g.labelled)
    } else {
        "none labelled".to_string()
    };
    let _ = writeln!(
        out,
        "  {name:<22} {:>6} {:>9} {:>5} {:>6} {:>6}   {outcomes}",
        g.spawns,
        format!("{} of {}", g.on_rule_tier, g.compared),
        pct(g.agreement),
        g.above_rule_tier,
        g.below_rule_tier,
    );
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
            if e.not_priced > 0 { format!("; {} not priced", e.not_priced) } else { String::new() }
        );
    }
    if s.skipped_lines > 0 {
        let _ = writeln!(out, "  skipped {} of the log: not an entry", text::count(s.skipped_lines, "line"));
    }
}

pub fn table(r: &Report) -> String {
    let mut out = String::new();
    header(&mut out, r);
    reach_and_adherence(&mut out, r);
    tiers(&mut out, &r.subagents_by_tier);
    savings(&mut out, &r.savings);
    spawn_section(&mut out, &r.spawns);
    usage(&mut out, r);
    prices_and_next(&mut out, r);
    out
}

/// The period and project the report covers, its sessions, and what was read.
fn header(out: &mut String, r: &Report) {
    let when = |key: &str| r.scope.get(key).and_then(|v| v.as_str()).map(moment);
    let mut period = match (when("since"), when("until")) {
        (None, None) => "all history".to_string(),
        (Some(s), None) => format!("since {s}"),
        (None, Some(u)) => format!("until {u}"),
        (Some(s), Some(u)) => format!("{s} to {u}"),
    };
    if let Some(days) = r.scope.get("days").and_then(|v| v.as_u64()) {
        period = format!("the last {} ({period})", text::count(days, "day"));
    }
    if let Some(project) = r.scope.get("project").and_then(|v| v.as_str()) {
        period.push_str(&format!(", projects matching {project:?}"));
    }
    let _ = writeln!(out, "System-1 usage report: {period}, {}", text::count(r.totals.sessions, "session"));
    let rd = &r.read;
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
    let a = &r.adherence;
    let _ = writeln!(
        out,
        "Adherence   {} of hinted spawns ran on the hinted tier ({} of {}: {} upgraded, {} downgraded{})",
        pct(a.share),
        a.followed,
        a.hinted_spawns,
        a.upgraded,
        a.downgraded,
        if a.unknown > 0 { format!(", {} unknown", a.unknown) } else { String::new() }
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
                s.baseline,
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
    let _ = writeln!(out, "\nAll usage                 requests    tokens       cost");
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
}
