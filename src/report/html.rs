//! `report --html FILE`: the report as one page to open from disk, send, or print to PDF: the
//! summary figures, the charts (the summary and the one by day, as inline SVG), the views by day,
//! session, project and subagent type, and the what-if when one was asked for. Nothing is fetched:
//! no script, no stylesheet, font or image from elsewhere, no URL at all. Totals only, as in every
//! view: no prompt, hint or brief text.
//!
//! Each figure's cell names where the JSON output has it and carries its exact value
//! (`data-json="report:/savings/net_usd" data-value="0.0348"`; `day:/rows/0/cost_usd` is `--by day
//! --json`'s), so the page can be held to `--json` figure by figure.

use std::fmt::Write;

use serde::Serialize;

use super::breakdown::{Breakdown, View};
use super::render::{money, pct, period, tokens};
use super::{Report, svg};
use crate::text::{self, xml_escape};

/// The views the page shows, in order, each with the JSON source name its cells cite.
pub const VIEWS: [View; 4] = [View::Day, View::Session, View::Project, View::Agent];

const STYLE: &str = "\
body{font-family:Inter,'Segoe UI',Helvetica,Arial,sans-serif;color:#1d2330;background:#fff;margin:24px auto;max-width:960px;padding:0 16px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #e5e7eb;padding-bottom:4px}
p.sub{color:#6b7280;margin:0 0 16px}p.note{color:#6b7280;font-size:12px}
table{border-collapse:collapse;width:100%;font-size:13px;margin:6px 0 12px}
th,td{padding:3px 8px;border-bottom:1px solid #eef0f3;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}tr.total td{font-weight:700;border-top:1px solid #9ca3af}
.good{color:#1f7a6f}.bad{color:#c2410c}
svg{max-width:100%;height:auto;display:block;margin:8px 0}
@page{size:A4;margin:12mm}
@media print{body{margin:0;max-width:none}section{break-inside:avoid-page}h2{break-after:avoid}tr{break-inside:avoid}}
";

/// A JSON value as `--json` writes it (what `data-value` carries).
fn exact(v: impl Serialize) -> String {
    serde_json::to_string(&v).unwrap_or_default()
}

/// A figure's cell: what people read, and where `--json` has it with its exact value. An absent
/// figure (`None`) cites nothing.
fn cell(o: &mut String, src: &str, pointer: &str, value: Option<impl Serialize>, shown: &str, class: &str) {
    match value {
        Some(v) => {
            let _ = write!(
                o,
                r#"<td class="n{class}" data-json="{src}:{pointer}" data-value="{}">{}</td>"#,
                xml_escape(&exact(v)),
                xml_escape(shown)
            );
        }
        None => {
            let _ = write!(o, r#"<td class="n{class}">{}</td>"#, xml_escape(shown));
        }
    }
}

fn signed(x: f64) -> String {
    if x > 0.0 { format!("+{}", money(x)) } else { money(x) }
}

/// ` good` or ` bad`, for money that saved or cost.
fn tone(x: Option<f64>) -> &'static str {
    match x {
        Some(v) if v < 0.0 => " bad",
        Some(v) if v > 0.0 => " good",
        _ => "",
    }
}

/// An inline SVG for the page: an `<svg>` in HTML needs no namespace, and leaving it out keeps the
/// page free of any URL.
fn inline(svg: &str) -> String {
    svg.replacen(r#" xmlns="http://www.w3.org/2000/svg""#, "", 1)
}

/// The page: `report` (built with its what-if, if any) and the breakdowns of [`VIEWS`], in order.
pub fn render(r: &Report, views: &[Breakdown]) -> String {
    let mut o = String::new();
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let title = format!("System-1 report: {}", period(&r.scope));
    let _ = writeln!(o, "<title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>", xml_escape(&title));
    let _ = writeln!(o, "<h1>Is System-1 worth it?</h1>");
    let _ = writeln!(
        o,
        "<p class=\"sub\">{}, {}; read from {}.</p>",
        xml_escape(&period(&r.scope)),
        text::count(r.totals.sessions, "session"),
        text::count(r.read.files, "transcript file")
    );
    summary(&mut o, r);
    engines(&mut o, &r.engines);
    o.push_str("<section id=\"charts\">\n<h2>Charts</h2>\n");
    o.push_str(&inline(&svg::render(r)));
    if let Some(day) = views.iter().find(|b| b.by == View::Day) {
        o.push_str(&inline(&svg::over_time(day)));
    }
    o.push_str("</section>\n");
    if let Some(w) = &r.what_if {
        what_if(&mut o, w);
    }
    for b in views {
        view(&mut o, b);
    }
    let _ = writeln!(
        o,
        "<p class=\"note\">Costs at API list prices as of {} ({}); a Claude Code subscription does not pay these. \
         Totals only: no prompt text.</p>",
        xml_escape(&r.prices.as_of),
        xml_escape(&r.prices.source)
    );
    o.push_str("</body>\n</html>\n");
    o
}

/// One line of the summary table: a name, then cells.
fn row(o: &mut String, name: &str, cells: impl FnOnce(&mut String), what: &str) {
    let _ = write!(o, "<tr><th>{}</th>", xml_escape(name));
    cells(o);
    let _ = writeln!(o, "<td>{}</td></tr>", xml_escape(what));
}

fn summary(o: &mut String, r: &Report) {
    let s = &r.savings;
    let (reach, a) = (&r.reach, &r.adherence);
    o.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n<table>\n");
    let src = "report";
    row(
        o,
        "Reach",
        |o| cell(o, src, "/reach/share", reach.share, &pct(reach.share), ""),
        &format!("{} of {} got a routing hint", reach.hinted_prompts, text::count(reach.prompts, "prompt")),
    );
    row(
        o,
        "Prompts",
        |o| cell(o, src, "/reach/prompts", Some(reach.prompts), &reach.prompts.to_string(), ""),
        "prompts typed in scope",
    );
    row(
        o,
        "Hinted prompts",
        |o| cell(o, src, "/reach/hinted_prompts", Some(reach.hinted_prompts), &reach.hinted_prompts.to_string(), ""),
        "prompts whose turn got a routing hint",
    );
    row(
        o,
        "Adherence",
        |o| cell(o, src, "/adherence/share", a.share, &pct(a.share), ""),
        &format!(
            "{} of {} ran on the hinted tier; {} upgraded, {} downgraded, {} never ran",
            a.followed,
            text::count(a.hinted_spawns, "hinted spawn"),
            a.upgraded,
            a.downgraded,
            a.not_run
        ),
    );
    row(
        o,
        "Followed",
        |o| cell(o, src, "/adherence/followed", Some(a.followed), &a.followed.to_string(), ""),
        "hinted spawns that ran on the hinted tier",
    );
    row(
        o,
        "Realised savings",
        |o| {
            let shown = s.realised_usd.map(signed).unwrap_or_else(|| "n/a".into());
            cell(o, src, "/savings/realised_usd", s.realised_usd, &shown, tone(s.realised_usd))
        },
        &format!("spawns that followed a hint, against the usual mix ({}: {})", s.mix_source(), s.mix_text()),
    );
    row(
        o,
        "Missed savings",
        |o| cell(o, src, "/savings/missed_usd", Some(s.missed_usd), &money(s.missed_usd), ""),
        "what spawns upgraded past a hint cost over the hinted tier",
    );
    row(
        o,
        "Hint overhead",
        |o| {
            cell(o, src, "/savings/hint_overhead_usd", Some(s.hint_overhead_usd), &signed(-s.hint_overhead_usd), " bad")
        },
        &format!("{} hint tokens, written once and re-read from the cache", tokens(s.hint_tokens)),
    );
    row(
        o,
        "Net",
        |o| {
            let shown = s.net_usd.map(signed).unwrap_or_else(|| "n/a".into());
            cell(o, src, "/savings/net_usd", s.net_usd, &shown, tone(s.net_usd))
        },
        "realised savings minus the hint overhead",
    );
    for (name, pointer, part) in [
        ("Cost, all", "/totals/all", &r.totals.all),
        ("Cost, main threads", "/totals/main", &r.totals.main),
        ("Cost, subagents", "/totals/subagents", &r.totals.subagents),
    ] {
        row(
            o,
            name,
            |o| cell(o, src, &format!("{pointer}/cost_usd"), Some(part.cost_usd), &money(part.cost_usd), ""),
            &format!("{} at API list prices", text::count(part.requests, "request")),
        );
    }
    o.push_str("</table>\n<table>\n<tr><th>Subagents by tier</th><th class=\"n\">spawns</th><th class=\"n\">requests</th><th class=\"n\">cost</th></tr>\n");
    for (i, t) in r.subagents_by_tier.iter().enumerate() {
        let _ = write!(o, "<tr><td>{}</td>", xml_escape(&t.tier));
        cell(o, src, &format!("/subagents_by_tier/{i}/spawns"), Some(t.spawns), &t.spawns.to_string(), "");
        cell(o, src, &format!("/subagents_by_tier/{i}/requests"), Some(t.requests), &t.requests.to_string(), "");
        cell(o, src, &format!("/subagents_by_tier/{i}/cost_usd"), Some(t.cost_usd), &money(t.cost_usd), "");
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n</section>\n");
}

/// The decisions each engine made and what the hosted ones cost; nothing when none was recorded.
fn engines(o: &mut String, e: &super::engines::Engines) {
    if e.engines.is_empty() {
        return;
    }
    let src = "report";
    o.push_str("<section id=\"engines\">\n<h2>Decisions by engine</h2>\n<table>\n");
    o.push_str("<tr><th>Engine</th><th class=\"n\">hooks</th><th class=\"n\">tools</th><th class=\"n\">sent to it</th><th class=\"n\">input tokens</th><th class=\"n\">cost</th></tr>\n");
    for (i, r) in e.engines.iter().enumerate() {
        let at = |field: &str| format!("/engines/engines/{i}/{field}");
        let _ = write!(o, "<tr><td>{}</td>", xml_escape(&r.provider));
        cell(o, src, &at("hooks"), Some(r.hooks), &r.hooks.to_string(), "");
        cell(o, src, &at("tools"), Some(r.tools), &r.tools.to_string(), "");
        match &r.hosted {
            Some(h) => {
                let sent = h.decisions_sent.to_string();
                cell(o, src, &at("hosted/decisions_sent"), Some(h.decisions_sent), &sent, "");
                cell(o, src, &at("hosted/input_tokens"), Some(h.input_tokens), &h.input_tokens.to_string(), "");
                let shown = h.usd.map(money).unwrap_or_else(|| "unpriced".to_string());
                cell(o, src, &at("hosted/usd"), h.usd, &shown, "");
            }
            None => o.push_str("<td class=\"n\">-</td><td class=\"n\">-</td><td class=\"n\">-</td>"),
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
    let _ = writeln!(
        o,
        "<p class=\"note\">Hosted engines: {} at their published prices; the prompts and contexts of the decisions sent to them left this machine.</p>",
        xml_escape(&money(e.hosted_usd))
    );
    o.push_str("</section>\n");
}

fn what_if(o: &mut String, w: &super::what_if::WhatIf) {
    let src = "report";
    let _ = writeln!(
        o,
        "<section id=\"what-if\">\n<h2>What routing would have done with [routing] enforce = \"{}\"</h2>\n<p class=\"note\">{}</p>\n<table>",
        xml_escape(&w.mode),
        xml_escape(&format!("{}; repriced: {}.", w.estimate, super::what_if::REPRICED))
    );
    let lines: [(&str, &str, f64, String, &str); 5] = [
        ("Spawns", "/what_if/spawns", w.spawns as f64, w.spawns.to_string(), "subagent spawns in scope"),
        (
            "Changed",
            "/what_if/changed",
            w.changed as f64,
            w.changed.to_string(),
            "set to another tier than they ran on",
        ),
        ("Cost as they ran", "/what_if/cost_usd", w.cost_usd, money(w.cost_usd), "the priced spawns"),
        (
            "Projected",
            "/what_if/projected_cost_usd",
            w.projected_cost_usd,
            money(w.projected_cost_usd),
            "the same spawns on the tiers it would set",
        ),
        (
            "Saves",
            "/what_if/savings_usd",
            w.savings_usd,
            signed(w.savings_usd),
            "as they ran minus projected; an estimate",
        ),
    ];
    for (name, pointer, value, shown, what) in lines {
        let class = if pointer.ends_with("savings_usd") { tone(Some(value)) } else { "" };
        // Counts are integers in the JSON.
        row(
            o,
            name,
            |o| {
                if pointer.ends_with("_usd") {
                    cell(o, src, pointer, Some(value), &shown, class)
                } else {
                    cell(o, src, pointer, Some(value as u64), &shown, class)
                }
            },
            what,
        );
    }
    let rw = &w.rewrites;
    let _ = writeln!(
        o,
        "</table>\n<p class=\"note\">Rewrites: {} filled (the call named no model and ran on its parent's tier), {} raised, {} lowered (only set lowers a named model); {} not priced (no subagent transcript read, or no price for a model it ran on or would).</p>",
        rw.filled, rw.raised, rw.lowered, w.not_priced
    );
    if w.changed > 0 {
        for (name, line) in [
            ("Effort", super::render::what_if_effort(w)),
            ("Provider", super::render::what_if_providers(w)),
            ("Prices", super::render::what_if_prices(w)),
        ] {
            let _ = writeln!(o, "<p class=\"note\">{name}: {}.</p>", xml_escape(&line));
        }
    }
    o.push_str("</section>\n");
}

/// One view as a table: its rows and the total.
fn view(o: &mut String, b: &Breakdown) {
    let name = b.by.name();
    let _ = writeln!(
        o,
        "<section id=\"by-{name}\">\n<h2>By {name}</h2>\n<table>\n<tr><th>{name}</th><th class=\"n\">requests</th><th class=\"n\">tokens</th><th class=\"n\">cost</th><th class=\"n\">hinted</th><th class=\"n\">followed</th><th class=\"n\">saved</th></tr>"
    );
    let line = |o: &mut String, key: &str, pointer: &str, f: &super::breakdown::Figures, total: bool| {
        let _ = write!(o, "<tr{}><td>{}</td>", if total { " class=\"total\"" } else { "" }, xml_escape(key));
        cell(o, name, &format!("{pointer}/requests"), Some(f.requests), &f.requests.to_string(), "");
        cell(o, name, &format!("{pointer}/total_tokens"), Some(f.total_tokens), &tokens(f.total_tokens), "");
        cell(o, name, &format!("{pointer}/cost_usd"), Some(f.cost_usd), &money(f.cost_usd), "");
        match (f.hinted_prompts, f.prompts) {
            (Some(h), Some(p)) => cell(o, name, &format!("{pointer}/hinted_prompts"), Some(h), &format!("{h}/{p}"), ""),
            _ => cell(o, name, "", None::<u64>, "-", ""),
        }
        cell(
            o,
            name,
            &format!("{pointer}/followed"),
            Some(f.followed),
            &format!("{}/{}", f.followed, f.hinted_spawns),
            "",
        );
        let saved = f.realised_usd.filter(|_| f.followed > 0);
        cell(
            o,
            name,
            &format!("{pointer}/realised_usd"),
            saved,
            &saved.map(signed).unwrap_or_else(|| "-".into()),
            tone(saved),
        );
        o.push_str("</tr>\n");
    };
    for (i, r) in b.rows.iter().enumerate() {
        let key = match (&r.tier, &r.project) {
            (Some(t), _) => format!("{} ({t})", r.key),
            (None, Some(p)) => format!("{} ({p})", r.key),
            _ => r.key.clone(),
        };
        line(o, &key, &format!("/rows/{i}"), &r.figures, false);
    }
    line(o, "total", "/total", &b.total, true);
    o.push_str("</table>\n</section>\n");
}
