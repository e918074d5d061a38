//! `--svg FILE`: the report as one hand-written SVG picture. Three headline figures across the top
//! (reach, adherence, net), subagent cost by tier as bars on the left, and the savings as a small
//! waterfall on the right (realised, minus the overhead, gives the net; missed drawn as an outline
//! beside it, money left on the table), each sum in the colour of its sign (green saves, red
//! costs). Self-contained: no scripts, no external fonts or images. [`over_time`] draws a
//! `--by day|week|month` breakdown.

use std::fmt::Write;

use super::breakdown::{Breakdown, Row};
use super::render::{money, pct, tokens};
use super::spawns::SpawnSection;
use super::{Report, Savings, TierRow};
use crate::text::xml_escape;
use crate::tier::Tier;

const W: f64 = 880.0;
/// With the routing log's band; without it the picture ends below the savings.
const H: f64 = 640.0;
const H_WITHOUT_SPAWNS: f64 = 540.0;
const INK: &str = "#1d2330";
const MUTED: &str = "#6b7280";
const GRID: &str = "#e5e7eb";
const GOOD: &str = "#2a9d8f";
const BAD: &str = "#e76f51";
const NET: &str = "#264653";

/// One colour per tier, in `Tier::ALL` order: a tier added to the table needs one here too.
const TIER_COLOURS: [&str; Tier::COUNT] = ["#8ecae6", "#219ebc", "#023047", "#6a4c93"];
/// What no model id names.
const UNKNOWN_COLOUR: &str = "#adb5bd";

fn tier_colour(tier: &str) -> &'static str {
    Tier::named(tier).map_or(UNKNOWN_COLOUR, |t| TIER_COLOURS[t.index()])
}

fn text(out: &mut String, (x, y): (f64, f64), size: f64, fill: &str, anchor: &str, weight: u32, s: &str) {
    let _ = writeln!(
        out,
        r##"<text x="{x:.1}" y="{y:.1}" font-size="{size}" fill="{fill}" text-anchor="{anchor}" font-weight="{weight}">{}</text>"##,
        xml_escape(s)
    );
}

fn signed(x: f64) -> String {
    if x > 0.0 { format!("+{}", money(x)) } else { money(x) }
}

/// The routing log's spawns: how often record-only and enforced spawns ran on the rule's tier
/// (bars, left), and what the rewrites did (right).
fn spawn_band(o: &mut String, s: &SpawnSection, y: f64) {
    text(o, (32.0, y), 15.0, INK, "start", 700, "Spawns in the routing log");
    if s.read_error.is_some() || s.spawns == 0 {
        let why = if s.read_error.is_some() { "the routing log could not be read" } else { "none logged" };
        text(o, (32.0, y + 24.0), 12.0, MUTED, "start", 400, why);
        return;
    }
    let bar_w = 200.0;
    for (i, (name, g)) in [("record only", &s.record_only), ("enforced", &s.enforced)].iter().enumerate() {
        let by = y + 16.0 + i as f64 * 44.0;
        text(o, (32.0, by + 17.0), 13.0, INK, "start", 600, name);
        let _ = writeln!(
            o,
            r##"<rect x="124" y="{by:.1}" width="{bar_w}" height="24" rx="5" fill="{GRID}" opacity="0.5"/>"##
        );
        let w = g.agreement.map_or(0.0, |a| (a * bar_w).max(2.0));
        let _ = writeln!(o, r##"<rect x="124" y="{by:.1}" width="{w:.1}" height="24" rx="5" fill="{NET}"/>"##);
        text(
            o,
            (124.0 + bar_w + 10.0, by + 17.0),
            12.0,
            INK,
            "start",
            600,
            &format!("{} on the rule's tier ({} of {})", pct(g.agreement), g.on_rule_tier, g.compared),
        );
    }
    let rw = &s.rewrites;
    let e = &s.enforced_savings;
    let lines = [
        format!(
            "{} ({} filled, {} raised, {} lowered)",
            crate::text::count(rw.made, "rewrite"),
            rw.filled,
            rw.raised,
            rw.lowered
        ),
        format!("{} of {} checked did not take effect ({})", rw.not_taken, rw.checked, pct(rw.not_taken_share)),
        format!("enforced savings {} ({} priced)", signed(e.usd), e.spawns_priced),
    ];
    for (i, line) in lines.iter().enumerate() {
        let colour = if i == 1 && rw.not_taken > 0 { BAD } else { INK };
        text(o, (560.0, y + 33.0 + i as f64 * 22.0), 12.5, colour, "start", 600, line);
    }
}

pub fn render(r: &Report) -> String {
    let mut o = String::new();
    // A band that would only say "none logged" is one line under the savings instead.
    let band = r.spawns.spawns > 0 || r.spawns.read_error.is_some();
    let h = if band { H } else { H_WITHOUT_SPAWNS };
    let _ = writeln!(
        o,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="Inter, Segoe UI, Helvetica, Arial, sans-serif">"##
    );
    let _ = writeln!(o, r##"<rect width="{W}" height="{h}" rx="14" fill="#fbfbfd"/>"##);
    title(&mut o, r);
    cards(&mut o, r);
    tier_bars(&mut o, &r.subagents_by_tier);
    waterfall(&mut o, &r.savings);
    if band {
        spawn_band(&mut o, &r.spawns, 492.0);
    } else {
        text(
            &mut o,
            (32.0, h - 44.0),
            11.5,
            MUTED,
            "start",
            400,
            "Spawns in the routing log: none logged (the agent hook logs spawns in [routing] log_dirs repos)",
        );
    }
    footer(&mut o, r, h);
    o.push_str("</svg>\n");
    o
}

/// The question, and the period with its counts under it.
fn title(o: &mut String, r: &Report) {
    text(o, (32.0, 46.0), 24.0, INK, "start", 700, "Is System-1 worth it?");
    let period = super::render::period(&r.scope);
    text(
        o,
        (32.0, 70.0),
        13.0,
        MUTED,
        "start",
        400,
        &format!(
            "{period} · {} · {} · {}",
            crate::text::count(r.totals.sessions, "session"),
            crate::text::count(r.reach.prompts, "prompt"),
            crate::text::count(r.adherence.spawns, "subagent spawn")
        ),
    );
}

/// The three headline cards: reach, adherence, net.
fn cards(o: &mut String, r: &Report) {
    let net = r.savings.net_usd;
    let cards = [
        (
            "reach",
            pct(r.reach.share),
            format!(
                "{} of {} · {} of long ones",
                r.reach.hinted_prompts,
                crate::text::count(r.reach.prompts, "prompt"),
                pct(r.reach.share_of_long)
            ),
            INK,
        ),
        (
            "adherence",
            pct(r.adherence.share),
            format!(
                "{} of {} followed",
                r.adherence.followed,
                crate::text::count(r.adherence.hinted_spawns, "hinted spawn")
            ),
            INK,
        ),
        (
            "net",
            net.map(headline).unwrap_or_else(|| "n/a".into()),
            "realised savings minus hint overhead".to_string(),
            net.map_or(MUTED, sign_colour),
        ),
    ];
    for (i, (label, big, small, colour)) in cards.iter().enumerate() {
        let x = 32.0 + i as f64 * 276.0;
        let _ = writeln!(o, r##"<rect x="{x}" y="90" width="260" height="86" rx="10" fill="white" stroke="{GRID}"/>"##);
        text(o, (x + 16.0, 112.0), 12.0, MUTED, "start", 600, &label.to_uppercase());
        text(o, (x + 16.0, 148.0), 30.0, colour, "start", 700, big);
        text(o, (x + 16.0, 166.0), 11.5, MUTED, "start", 400, small);
    }
}

/// Left: subagent cost by tier, one bar each.
fn tier_bars(o: &mut String, rows: &[TierRow]) {
    let (lx, ly) = (32.0, 214.0);
    text(o, (lx, ly), 15.0, INK, "start", 700, "Subagent cost by tier");
    let max_cost = rows.iter().map(|t| t.cost_usd).fold(0.0, f64::max);
    let bar_w = 250.0;
    for (i, t) in rows.iter().enumerate() {
        let y = ly + 22.0 + i as f64 * 50.0;
        text(o, (lx, y + 17.0), 13.0, INK, "start", 600, &t.tier);
        let w = if max_cost > 0.0 { (t.cost_usd / max_cost * bar_w).max(2.0) } else { 2.0 };
        let _ = writeln!(
            o,
            r##"<rect x="{:.1}" y="{y:.1}" width="{bar_w}" height="24" rx="5" fill="{GRID}" opacity="0.5"/>"##,
            lx + 64.0
        );
        let _ = writeln!(
            o,
            r##"<rect x="{:.1}" y="{y:.1}" width="{w:.1}" height="24" rx="5" fill="{}"/>"##,
            lx + 64.0,
            tier_colour(&t.tier)
        );
        text(o, (lx + 64.0 + bar_w + 10.0, y + 17.0), 13.0, INK, "start", 700, &money(t.cost_usd));
        text(
            o,
            (lx + 64.0, y + 38.0),
            11.0,
            MUTED,
            "start",
            400,
            &format!(
                "{} · {} · {} tokens",
                crate::text::count(t.spawns, "spawn"),
                crate::text::count(t.requests, "request"),
                tokens(t.tokens.total)
            ),
        );
    }
}

/// Right: the savings waterfall (realised, minus the overhead, gives the net; missed as an outline).
fn waterfall(o: &mut String, s: &Savings) {
    let (rx, ry) = (470.0, 214.0);
    text(o, (rx, ry), 15.0, INK, "start", 700, "Savings at API list prices");
    let realised = s.realised_usd.unwrap_or(0.0);
    let after = realised - s.hint_overhead_usd;
    let levels = [0.0, realised, after, s.missed_usd];
    let hi = levels.iter().copied().fold(0.0, f64::max);
    let lo = levels.iter().copied().fold(0.0, f64::min);
    let span = if hi - lo > 0.0 { hi - lo } else { 1.0 };
    let (top, height) = (ry + 40.0, 150.0);
    let y_of = |v: f64| top + (hi - v) / span * height;
    let zero = y_of(0.0);
    let _ = writeln!(
        o,
        r##"<line x1="{rx}" x2="{:.1}" y1="{zero:.1}" y2="{zero:.1}" stroke="{MUTED}" stroke-width="1"/>"##,
        rx + 370.0
    );
    let col_w = 64.0;
    let bars = [
        ("realised", 0.0, realised, sign_colour(realised), false),
        ("overhead", realised, after, BAD, false),
        ("net", 0.0, after, if after < 0.0 { BAD } else { NET }, false),
        ("missed", 0.0, s.missed_usd, BAD, true),
    ];
    // Waterfall connectors: realised's top leads into the overhead step, whose foot leads into net.
    for (i, level) in [(0, realised), (1, after)] {
        let x1 = rx + 10.0 + i as f64 * 90.0 + col_w;
        let y = y_of(level);
        let _ = writeln!(
            o,
            r##"<line x1="{x1:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{MUTED}" stroke-width="1" stroke-dasharray="3 3"/>"##,
            x1 + 90.0 - col_w
        );
    }
    for (i, (label, from, to, colour, outline)) in bars.iter().enumerate() {
        let x = rx + 10.0 + i as f64 * 90.0;
        let (y1, y2) = (y_of(from.max(*to)), y_of(from.min(*to)));
        let h = (y2 - y1).max(1.5);
        if *outline {
            let _ = writeln!(
                o,
                r##"<rect x="{x:.1}" y="{y1:.1}" width="{col_w}" height="{h:.1}" rx="4" fill="none" stroke="{colour}" stroke-width="2" stroke-dasharray="5 4"/>"##
            );
        } else {
            let _ = writeln!(
                o,
                r##"<rect x="{x:.1}" y="{y1:.1}" width="{col_w}" height="{h:.1}" rx="4" fill="{colour}"/>"##
            );
        }
        let value = match *label {
            "realised" => s.realised_usd.map(signed).unwrap_or_else(|| "n/a".into()),
            "overhead" => signed(-s.hint_overhead_usd),
            "net" => s.net_usd.map(signed).unwrap_or_else(|| "n/a".into()),
            _ => money(s.missed_usd),
        };
        text(o, (x + col_w / 2.0, y1 - 6.0), 12.0, INK, "middle", 700, &value);
        text(o, (x + col_w / 2.0, top + height + 22.0), 12.0, MUTED, "middle", 600, label);
    }
    if s.realised_usd.is_some() {
        let mix = s.mix_text();
        text(
            o,
            (rx, top + height + 44.0),
            11.0,
            MUTED,
            "start",
            400,
            &format!("usual mix ({}): {}", s.mix_source(), mix),
        );
    }
}

/// The price note along the bottom of a picture `h` high.
fn footer(o: &mut String, r: &Report, h: f64) {
    text(
        o,
        (32.0, h - 18.0),
        10.5,
        MUTED,
        "start",
        400,
        &format!(
            "API list prices as of {}; a Claude Code subscription does not pay these. Totals only, no prompt text.",
            r.prices.as_of
        ),
    );
}

/// The money on a headline card: whole cents (a card is read at a glance), `<$0.01` for less.
fn headline(x: f64) -> String {
    if x != 0.0 && x.abs() < 0.005 {
        return if x < 0.0 { "-<$0.01".into() } else { "+<$0.01".into() };
    }
    let cents = format!("${:.2}", x.abs());
    match x {
        x if x > 0.0 => format!("+{cents}"),
        x if x < 0.0 => format!("-{cents}"),
        _ => cents,
    }
}

/// The colour a sum of money means: green where it saves, red where it costs.
fn sign_colour(x: f64) -> &'static str {
    if x < 0.0 { BAD } else { GOOD }
}

/// `--by day|week|month --svg FILE`: the breakdown over time, one column per period. Cost by tier
/// as stacked bars (top); the realised savings as a bar from zero, green where they saved and red
/// where they cost, with the missed savings as a red outline beside it (middle); hint reach as a
/// dot on 0 to 100% (bottom). Self-contained, like the summary chart.
pub fn over_time(b: &Breakdown) -> String {
    const TW: f64 = 880.0;
    const TH: f64 = 620.0;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{TW}" height="{TH}" viewBox="0 0 {TW} {TH}" font-family="Inter, Segoe UI, Helvetica, Arial, sans-serif">"##
    );
    let _ = writeln!(o, r##"<rect width="{TW}" height="{TH}" rx="14" fill="#fbfbfd"/>"##);
    let view = b.by.name();
    text(&mut o, (32.0, 46.0), 24.0, INK, "start", 700, &format!("System-1 by {view}"));
    text(
        &mut o,
        (32.0, 70.0),
        13.0,
        MUTED,
        "start",
        400,
        &format!(
            "{} ({}) · {} · {} · {}",
            super::render::period(&b.scope),
            b.timezone,
            crate::text::count(b.total.sessions, "session"),
            money(b.total.cost_usd),
            crate::text::count(b.total.spawns, "subagent spawn")
        ),
    );
    let rows: Vec<&Row> = b.rows.iter().collect();
    let footer_y = TH - 14.0;
    let note = format!(
        "API list prices as of {}; a Claude Code subscription does not pay these. Totals only, no prompt text.",
        b.prices_as_of
    );
    if rows.is_empty() {
        text(&mut o, (32.0, 120.0), 14.0, MUTED, "start", 400, "nothing in this period");
        text(&mut o, (32.0, footer_y), 10.5, MUTED, "start", 400, &note);
        o.push_str("</svg>\n");
        return o;
    }
    let (left, right) = (104.0, TW - 32.0);
    let slot = (right - left) / rows.len() as f64;
    let bar = (slot * 0.72).clamp(1.0, 44.0);
    let x_of = |i: usize| left + slot * (i as f64 + 0.5);
    let axis = |o: &mut String, y: f64, label: &str| {
        let _ = writeln!(o, r##"<line x1="{left}" x2="{right}" y1="{y:.1}" y2="{y:.1}" stroke="{GRID}"/>"##);
        text(o, (left - 8.0, y + 4.0), 10.5, MUTED, "end", 400, label);
    };

    // Cost by tier, stacked, cheapest tier at the foot.
    let (top, h) = (118.0, 170.0);
    text(&mut o, (32.0, top - 16.0), 15.0, INK, "start", 700, "Cost by tier");
    let names: Vec<&str> = Tier::ALL.iter().map(|t| t.name()).chain([super::figures::UNKNOWN_TIER]).collect();
    let max_cost = rows.iter().map(|r| r.figures.cost_usd).fold(0.0, f64::max);
    axis(&mut o, top, &money(max_cost));
    axis(&mut o, top + h, "$0");
    for (i, r) in rows.iter().enumerate() {
        let mut y = top + h;
        for name in &names {
            let c = r.figures.cost_by_tier.get(*name).copied().unwrap_or(0.0);
            if c <= 0.0 || max_cost <= 0.0 {
                continue;
            }
            let bh = c / max_cost * h;
            let _ = writeln!(
                o,
                r##"<rect x="{:.1}" y="{:.1}" width="{bar:.1}" height="{bh:.1}" fill="{}"><title>{} {name} {}</title></rect>"##,
                x_of(i) - bar / 2.0,
                y - bh,
                tier_colour(name),
                xml_escape(&r.key),
                money(c)
            );
            y -= bh;
        }
    }
    let present: Vec<&str> =
        names.iter().copied().filter(|n| rows.iter().any(|r| r.figures.cost_by_tier.contains_key(*n))).collect();
    for (k, name) in present.iter().enumerate() {
        let x = TW - 32.0 - (present.len() - k) as f64 * 84.0;
        let _ = writeln!(
            o,
            r##"<rect x="{x:.1}" y="{:.1}" width="12" height="12" rx="2" fill="{}"/>"##,
            top - 27.0,
            tier_colour(name)
        );
        text(&mut o, (x + 17.0, top - 17.0), 11.5, INK, "start", 600, name);
    }

    // Savings: realised from zero (green saved, red cost), missed as an outline beside it.
    let (top2, h2) = (342.0, 120.0);
    text(&mut o, (32.0, top2 - 16.0), 15.0, INK, "start", 700, "Savings");
    text(
        &mut o,
        (110.0, top2 - 16.0),
        11.5,
        MUTED,
        "start",
        400,
        "realised: green where following hints saved, red where it cost · missed: outline, upgrades past a hint",
    );
    let realised: Vec<f64> = rows.iter().map(|r| r.figures.realised_usd.unwrap_or(0.0)).collect();
    let missed: Vec<f64> = rows.iter().map(|r| r.figures.missed_usd).collect();
    let hi = realised.iter().chain(&missed).copied().fold(0.0, f64::max);
    let lo = realised.iter().copied().fold(0.0, f64::min);
    let span = if hi - lo > 0.0 { hi - lo } else { 1.0 };
    let y_of = |v: f64| top2 + (hi - v) / span * h2;
    axis(&mut o, top2, &signed(hi));
    if lo < 0.0 {
        axis(&mut o, top2 + h2, &signed(lo));
    }
    let zero = y_of(0.0);
    let _ = writeln!(o, r##"<line x1="{left}" x2="{right}" y1="{zero:.1}" y2="{zero:.1}" stroke="{MUTED}"/>"##);
    let half = bar / 2.0;
    for (i, r) in rows.iter().enumerate() {
        let (v, m) = (realised[i], missed[i]);
        if v != 0.0 {
            let (y1, y2) = (y_of(v.max(0.0)), y_of(v.min(0.0)));
            let _ = writeln!(
                o,
                r##"<rect x="{:.1}" y="{y1:.1}" width="{half:.1}" height="{:.1}" fill="{}"><title>{} realised {}</title></rect>"##,
                x_of(i) - half,
                (y2 - y1).max(1.0),
                sign_colour(v),
                xml_escape(&r.key),
                signed(v)
            );
        }
        if m > 0.0 {
            let y1 = y_of(m);
            let _ = writeln!(
                o,
                r##"<rect x="{:.1}" y="{y1:.1}" width="{half:.1}" height="{:.1}" fill="none" stroke="{BAD}" stroke-width="1.5" stroke-dasharray="3 2"><title>{} missed {}</title></rect>"##,
                x_of(i),
                (zero - y1).max(1.0),
                xml_escape(&r.key),
                money(m)
            );
        }
    }

    // Hint reach: the share of prompts that got a routing hint, where there were prompts.
    let (top3, h3) = (508.0, 60.0);
    text(&mut o, (32.0, top3 - 14.0), 15.0, INK, "start", 700, "Hint reach");
    text(&mut o, (130.0, top3 - 14.0), 11.5, MUTED, "start", 400, "prompts that got a routing hint");
    axis(&mut o, top3, "100%");
    axis(&mut o, top3 + h3, "0%");
    let mut points = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let (Some(p), Some(hinted)) = (r.figures.prompts, r.figures.hinted_prompts) else { continue };
        if p == 0 {
            continue;
        }
        let share = hinted as f64 / p as f64;
        let (x, y) = (x_of(i), top3 + (1.0 - share) * h3);
        points.push(format!("{x:.1},{y:.1}"));
        let _ = writeln!(
            o,
            r##"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{NET}"><title>{} {} of {}</title></circle>"##,
            xml_escape(&r.key),
            hinted,
            crate::text::count(p, "prompt")
        );
    }
    if points.len() > 1 {
        let _ =
            writeln!(o, r##"<polyline points="{}" fill="none" stroke="{NET}" stroke-width="1.5"/>"##, points.join(" "));
    }

    // Period labels under the last panel, at most about ten.
    let every = rows.len().div_ceil(10);
    for (i, r) in rows.iter().enumerate().filter(|(i, _)| i % every == 0) {
        text(&mut o, (x_of(i), top3 + h3 + 18.0), 10.5, MUTED, "middle", 400, &r.key);
    }
    text(&mut o, (32.0, footer_y), 10.5, MUTED, "start", 400, &note);
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tier_has_a_colour_of_its_own() {
        let mut colours: Vec<&str> = Tier::ALL.iter().map(|t| tier_colour(t.name())).collect();
        colours.push(tier_colour("unknown"));
        let n = colours.len();
        colours.sort();
        colours.dedup();
        assert_eq!(colours.len(), n, "{colours:?}");
    }

    #[test]
    fn a_headline_is_in_whole_cents_and_a_sum_in_the_colour_of_its_sign() {
        assert_eq!(headline(0.0348), "+$0.03");
        assert_eq!(headline(-0.51), "-$0.51");
        assert_eq!(headline(0.001), "+<$0.01");
        assert_eq!(headline(0.0), "$0.00");
        assert_eq!((sign_colour(-0.51), sign_colour(0.2)), (BAD, GOOD));
    }

    #[test]
    fn realised_savings_below_zero_are_a_red_bar() {
        let s = Savings {
            baseline: "unhinted spawns".into(),
            baseline_samples: 4,
            mix: Default::default(),
            tier_models: Default::default(),
            realised_usd: Some(-0.51),
            followed_spawns_priced: 2,
            missed_usd: 0.0,
            upgraded_spawns_priced: 0,
            hint_tokens: 100,
            hint_overhead_usd: 0.01,
            net_usd: Some(-0.52),
        };
        let mut o = String::new();
        waterfall(&mut o, &s);
        let bars: Vec<&str> = o.lines().filter(|l| l.starts_with("<rect")).collect();
        assert!(bars[0].contains(&format!("fill=\"{BAD}\"")), "realised: {}", bars[0]);
        assert!(bars[2].contains(&format!("fill=\"{BAD}\"")), "net: {}", bars[2]);
        assert!(!o.contains(GOOD), "{o}");
    }
}
