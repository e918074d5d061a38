//! How `system1 study` reads to a person: the figures on stdout and the pictures of `--svg`.

use super::figures::{Covered, QuestionFigures, TierFigures};
use super::{EngineResult, SetResult, StudyResult};
use crate::calibration::Origin;
use crate::routing::rule::Chosen;
use crate::text::{count, pct};
use crate::tuning::plot::{self, EnginePoint, Panel};
use crate::tuning::seeds::DESTRUCTIVE_QUESTION;

fn share(x: Option<f64>) -> String {
    x.map(|v| pct(v, 1)).unwrap_or_else(|| "n/a".into())
}

fn ece(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "n/a".into())
}

fn ms(x: Option<f64>) -> String {
    match x {
        Some(v) if v >= 100.0 => format!("{v:.0} ms"),
        Some(v) => format!("{v:.1} ms"),
        None => "n/a".into(),
    }
}

/// A question as the table names it: the destructive question by its set's name.
pub fn short(q: &str) -> &str {
    if q == DESTRUCTIVE_QUESTION { "destructive" } else { q }
}

pub fn engine_name(e: &EngineResult) -> String {
    format!("{}/{}", e.provider, e.model)
}

pub fn render(r: &StudyResult) -> String {
    let sets: Vec<String> = r
        .sets
        .iter()
        .map(|x| {
            if x.name == x.source {
                format!("{} ({})", x.name, count(x.items as u64, "item"))
            } else {
                format!("{} ({}, {})", x.name, x.source, count(x.items as u64, "item"))
            }
        })
        .collect();
    let mut s = format!(
        "Study of {} on {}.\nEach item is asked once with calibration off; \"on\" applies the fit in force to the same answers. Nothing is written.\n",
        count(r.engines.len() as u64, "engine"),
        sets.join(" and ")
    );
    for e in &r.engines {
        s.push_str(&format!("\n== {} ==\n", engine_name(e)));
        for set in &e.sets {
            s.push_str(&set_block(set));
        }
    }
    if !r.left_out.is_empty() {
        s.push_str("\nLeft out:\n");
        for l in &r.left_out {
            s.push_str(&format!("  {}: {}\n", l.provider, l.why));
        }
    }
    s.push_str("\nSide by side, every question pooled:\n");
    s.push_str(&format!(
        "  {:<32} {:>8} {:>9} {:>12} {:>12}  {}\n",
        "engine", "answered", "accuracy", "p50 latency", "p95 latency", "ECE off -> on"
    ));
    for e in &r.engines {
        let o = &e.overall;
        s.push_str(&format!(
            "  {:<32} {:>8} {:>9} {:>12} {:>12}  {} -> {}\n",
            engine_name(e),
            o.answered,
            share(o.accuracy),
            ms(o.latency.p50_ms),
            ms(o.latency.p95_ms),
            ece(o.ece_off),
            ece(o.ece_on)
        ));
    }
    s
}

fn set_block(set: &SetResult) -> String {
    let mut s = format!(
        "{}: {}, {} failed{}; latency per decision p50 {}, p95 {}\n",
        set.set,
        count(set.items as u64, "item"),
        set.failed,
        set.first_failure.as_ref().map(|f| format!(" (first: {f})")).unwrap_or_default(),
        ms(set.latency.p50_ms),
        ms(set.latency.p95_ms)
    );
    if let Some(how) = &set.cross_validated {
        s.push_str(&format!("  Answers {how}.\n"));
    }
    let thr = set.questions.first().map(|q| q.threshold).unwrap_or(0.0);
    s.push_str(&format!(
        "  {:<12} {:>9} {:>8} {:>5}   {:^26}   {:^26}   {:<17} {}\n",
        "", "", "", "", "calibration off", "calibration on", "", ""
    ));
    let at = format!("@{thr:.2}");
    s.push_str(&format!(
        "  {:<12} {:>9} {:>8} {:>5}   {:>6} {:>9} {:>9}   {:>6} {:>9} {:>9}   {:<17} {}\n",
        "question",
        "answered",
        "accuracy",
        "AUROC",
        "ECE",
        format!("cov{at}"),
        format!("acc{at}"),
        "ECE",
        format!("cov{at}"),
        format!("acc{at}"),
        "fit in force",
        "fit on this set"
    ));
    for q in &set.questions {
        s.push_str(&question_row(q));
    }
    if let Some(t) = &set.tiers {
        s.push_str(&tier_block(t));
    }
    s
}

fn question_row(q: &QuestionFigures) -> String {
    let in_force = match q.fit_in_force {
        Some(f) => format!(
            "T {:.3} {}",
            f.temperature,
            match f.origin {
                Origin::Local => "local",
                Origin::Shipped => "shipped",
            }
        ),
        None => "none".to_string(),
    };
    let here = match &q.fit_here {
        Some(h) => match h.clamped {
            Some(c) => format!("T {:.3} (clamped from {c:.3}), ECE {}", h.temperature, ece(h.ece_after)),
            None => format!("T {:.3}, ECE {}", h.temperature, ece(h.ece_after)),
        },
        None => format!("too few answers (< {})", crate::tuning::fit::MIN_N),
    };
    format!(
        "  {:<12} {:>9} {:>8} {:>5}   {:>6} {:>9} {:>9}   {:>6} {:>9} {:>9}   {:<17} {}\n",
        short(&q.question),
        format!("{}/{}", q.answered, q.labelled),
        share(q.accuracy),
        q.auroc.map(|a| format!("{a:.2}")).unwrap_or_else(|| "n/a".into()),
        ece(q.off.ece),
        pct(q.off.coverage, 1),
        share(q.off.accuracy_at_threshold),
        ece(q.on.ece),
        pct(q.on.coverage, 1),
        share(q.on.accuracy_at_threshold),
        in_force,
        here
    )
}

fn covered(c: &Covered) -> String {
    format!("{} of items, {} agree", pct(c.coverage, 1), share(c.agreement))
}

fn tier_block(t: &TierFigures) -> String {
    let e = &t.rule_on_engine;
    let mut s = format!(
        "  The tier, against the labelled tier of {} items (a hint needs the answers that decided it at {:.2} or more):\n",
        t.n, t.threshold
    );
    s.push_str(&format!(
        "    {:<36} {:>7}  ({} with four answers); hint off: {}; on: {}\n",
        "rule on the engine's answers",
        share(e.agreement),
        e.picked,
        covered(&e.off),
        covered(&e.on)
    ));
    if let Some(h) = &t.tier_head {
        s.push_str(&format!(
            "    {:<36} {:>7}  ({} answered); at {:.2}: {}\n",
            "direct tier head (held out)",
            share(h.agreement),
            h.answered,
            t.threshold,
            covered(&h.at_threshold)
        ));
    }
    s.push_str(&format!(
        "    {:<36} {:>7}  ({} with all four labels)\n",
        "rule on the labels (its ceiling)",
        share(t.rule_on_labels),
        t.labelled_features
    ));
    if let Some(c) = &t.best_constant {
        s.push_str(&format!("    {:<36} {:>7}\n", format!("best constant tier ({})", c.tier), pct(c.agreement, 1)));
    }
    if let Some(l) = &t.learned {
        let line = |h: &crate::tuning::rule_fit::Held| h.summary();
        s.push_str(&format!(
            "  Cross-validated ({} folds, {} items, calibration on), the same folds for both:\n    {:<36} {}\n    {:<36} {}\n",
            l.folds,
            l.items,
            "the configured rule",
            line(&l.hand),
            "a rule learned from these labels",
            line(&l.fitted)
        ));
        s.push_str("  The learned rule, fitted on every item (for [routing] in the config):\n");
        for row in l.toml.lines() {
            s.push_str(&format!("    {row}\n"));
        }
    }
    if let Some(m) = &t.head_first {
        s.push_str(&head_first_block(m));
    }
    if let Some(m) = &t.rule_choice {
        s.push_str(&rule_choice_block(m));
    }
    if t.per_rule.iter().any(|r| r.decided > 0) {
        s.push_str(&format!(
            "  Each rule on the engine's answers:\n    {:<44} {:>7} {:>7} {:>7} {:>7}\n",
            "rule", "decided", "agree", "hinted", "agree"
        ));
        for r in &t.per_rule {
            let name = match r.rule {
                Chosen::Rule(n) => format!("{n}: {} -> {}", r.when, r.tier),
                Chosen::Default => format!("default ({}) -> {}", r.when, r.tier),
                Chosen::Head => format!("the tier head -> {}", r.tier),
            };
            s.push_str(&format!(
                "    {:<44} {:>7} {:>7} {:>7} {:>7}\n",
                name,
                r.decided,
                share(r.agreement),
                r.hinted,
                share(r.hinted_agreement)
            ));
        }
    }
    s
}

fn head_first_block(m: &crate::tuning::tier_first::Measured) -> String {
    let mut s = format!(
        "  The tier head first, then the rule (nested: {} folds, {} items; each fold's head fitted on the other folds, and where it decides chosen on them too):\n",
        m.folds, m.items
    );
    let head = |c: &crate::tuning::tier_first::Combined| {
        format!(
            "{}; the head decided {} of items, {} agree",
            c.held.summary(),
            pct(c.head_share, 1),
            share(c.head_agreement)
        )
    };
    s.push_str(&format!("    {:<36} {}\n", "the configured rule alone", m.rule.summary()));
    s.push_str(&format!("    {:<36} {}\n", "the head alone (its pick everywhere)", pct(m.head_alone, 1)));
    s.push_str(&format!(
        "    {:<36} {} (chosen per fold: {})\n",
        "head first where sure, then the rule",
        head(&m.chosen),
        crate::tuning::tier_first::describe_choices(&m.chosen_per_fold)
    ));
    s.push_str(
        "    at each fixed confidence (for the record; picking the best here would choose on the scored folds):\n",
    );
    for c in &m.fixed {
        let Some(from) = c.from else { continue };
        let mark = if (from - m.configured).abs() < 1e-9 { " (tier_head_min_confidence)" } else { "" };
        s.push_str(&format!("      from {from:.2}{mark}: {}\n", head(c)));
    }
    s
}

fn rule_choice_block(m: &crate::tuning::rule_choice::Measured) -> String {
    let mut s = format!(
        "  The rule chosen among candidates (nested: on each of the {} folds chosen on the others, each candidate scored there by an inner cross-validation; {} items):\n",
        m.folds, m.items
    );
    s.push_str(&format!("    {:<36} {}\n", "the configured rule", m.configured.held.summary()));
    s.push_str(&format!(
        "    {:<36} {} ({} items gained, {} lost; chosen per fold: {})\n",
        "the rule chosen",
        m.chosen.held.summary(),
        m.gained,
        m.lost,
        crate::tuning::rule_choice::describe_choices(&m.chosen_per_fold)
    ));
    s.push_str("    each candidate (for the record; picking the best here would choose on the scored folds):\n");
    for (c, e) in &m.each {
        s.push_str(&format!("      {:<34} {}\n", c.name(), e.held.summary()));
    }
    s
}

/// The `--svg` document: the accuracy-latency chart and a reliability diagram per engine.
pub fn svg(r: &StudyResult) -> String {
    let points: Vec<EnginePoint> = r
        .engines
        .iter()
        .filter_map(|e| {
            Some(EnginePoint {
                label: engine_name(e),
                latency_ms: e.overall.latency.p50_ms?,
                accuracy: e.overall.accuracy?,
            })
        })
        .collect();
    let panels: Vec<Panel> = r
        .engines
        .iter()
        .map(|e| Panel {
            title: engine_name(e),
            subtitle: format!(
                "{}, accuracy {}, ECE off {} → on {}",
                count(e.overall.answered as u64, "answer"),
                share(e.overall.accuracy),
                ece(e.overall.ece_off),
                ece(e.overall.ece_on)
            ),
            options: 2,
            before: &e.overall.bins_off,
            after: &e.overall.bins_on,
        })
        .collect();
    // A file by its name alone: the picture has room for a line.
    let sets: Vec<String> = r
        .sets
        .iter()
        .map(|s| {
            let name = std::path::Path::new(&s.name).file_name().map(|n| n.to_string_lossy().to_string());
            format!("{} ({})", name.unwrap_or_else(|| s.name.clone()), count(s.items as u64, "item"))
        })
        .collect();
    plot::study(
        "Accuracy against median latency per decision",
        &format!("every question of {} pooled; each point one engine", sets.join(" and ")),
        &points,
        &panels,
    )
}
