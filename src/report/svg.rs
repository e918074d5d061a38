//! `--svg FILE`: the report as one hand-written SVG picture. Three headline figures across the top
//! (reach, adherence, net), subagent cost by tier as bars on the left, and the savings as a small
//! waterfall on the right (realised, minus the overhead, gives the net; missed drawn as an outline
//! beside it, money left on the table). Self-contained: no scripts, no external fonts or images.

use std::fmt::Write;

use super::render::{money, pct, tokens};
use super::spawns::SpawnSection;
use super::{Report, Savings, TierRow};
use crate::text::xml_escape;
use crate::tier::Tier;

const W: f64 = 880.0;
const H: f64 = 640.0;
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
    let _ = writeln!(
        o,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="Inter, Segoe UI, Helvetica, Arial, sans-serif">"##
    );
    let _ = writeln!(o, r##"<rect width="{W}" height="{H}" rx="14" fill="#fbfbfd"/>"##);
    title(&mut o, r);
    cards(&mut o, r);
    tier_bars(&mut o, &r.subagents_by_tier);
    waterfall(&mut o, &r.savings);
    spawn_band(&mut o, &r.spawns, 492.0);
    footer(&mut o, r);
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
            net.map(signed).unwrap_or_else(|| "n/a".into()),
            "realised savings minus hint overhead".to_string(),
            match net {
                Some(n) if n < 0.0 => BAD,
                Some(_) => GOOD,
                None => MUTED,
            },
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
        ("realised", 0.0, realised, GOOD, false),
        ("overhead", realised, after, BAD, false),
        ("net", 0.0, after, NET, false),
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

/// The price note along the bottom.
fn footer(o: &mut String, r: &Report) {
    text(
        o,
        (32.0, H - 18.0),
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
}
