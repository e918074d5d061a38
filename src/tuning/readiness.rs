//! What `system1 evaluate --provider P` does, read-only: asks engine P the four routing features for
//! every routing-log entry that has feature labels or an outcome, through the hook's own code and
//! with the calibration in force, and prints the measures and the READY verdict (`evaluate` has the
//! definitions).

use std::collections::BTreeMap;

use serde_json::json;

use super::evaluate::{self, Bars, Evaluation, Row, RuleScore};
use crate::error::{Context, Error, Result};
use crate::gateway::Gateway;
use crate::routing::entry::Entry;
use crate::routing::{features, log};
use crate::{paths, servers, text};

/// What `system1 evaluate` was asked.
pub struct Options {
    /// The engine to evaluate; only it is asked, no fallback.
    pub provider: String,
    /// Every feature must be at least this accurate at the routing threshold.
    pub min_feature_accuracy: f64,
    /// The share of failed spawns where the rule must pick a higher tier than the one that ran.
    pub min_safety: f64,
    /// At least this many failed spawns must be labelled.
    pub min_failures: usize,
    /// Print the report as JSON.
    pub json: bool,
}

/// The labels and outcome of a log entry, if it has any.
fn row_of(e: &Entry) -> Option<(String, Row)> {
    let text = e.prompt.clone()?;
    let labels = e.feature_labels();
    if labels.is_empty() && e.outcome.is_none() {
        return None;
    }
    Some((text, Row { labels, engine: BTreeMap::new(), outcome: e.outcome, outcome_tier: e.outcome_tier }))
}

/// `system1 evaluate`: asks `opts.provider` the features of every labelled entry, measures, and
/// prints the report (text or JSON) with the verdict.
pub fn run(args: Options) -> Result<i32> {
    for (name, v) in [("--min-feature-accuracy", args.min_feature_accuracy), ("--min-safety", args.min_safety)] {
        if !(0.0..=1.0).contains(&v) {
            return Err(Error::usage(format!("{name} must be between 0 and 1")));
        }
    }
    let gateway = super::gateway_for(Some(&args.provider))?;
    if args.provider == "local" && !args.json {
        // The local engine's heads were fitted on labelled data; their leave-one-out figures are
        // the honest accuracy on it (what follows is measured on the log, which they may include).
        if let Some(p) = gateway.primary() {
            let heads = crate::providers::local::heads_in_force(&p.model());
            outln!("Trained heads of the local engine ({}), leave-one-out on the data each was fitted on:", p.model())?;
            for line in super::heads::describe(&heads) {
                outln!("{line}")?;
            }
            outln!("")?;
        }
    }
    let entries = log::read_all().context(|| format!("cannot read {}", paths::routing_log().display()))?;
    let mut rows: Vec<(String, Row)> = entries.entries.iter().filter_map(row_of).collect();
    if rows.is_empty() {
        return Err(Error::failure("no routing-log entry has feature labels or an outcome yet").with_hint(format!(
            "run `{}` and label entries with /system1:calibrate first",
            text::command("outcomes --apply")
        )));
    }
    let mut engine = (None, None);
    let mut failed = 0;
    let mut tick = super::progress("entries");
    let n = rows.len();
    for (i, (text, row)) in rows.iter_mut().enumerate() {
        tick(i, n);
        let asked = features::ask(&gateway, text, None, &format!("evaluate-{i}"));
        match asked.features {
            Ok(fs) => {
                for f in fs {
                    row.engine.insert(f.feature, f.answer.map(|a| (a, f.confidence)));
                }
                if engine.0.is_none() {
                    engine = (asked.provider, asked.model);
                }
            }
            Err(_) => failed += 1,
        }
    }
    let cfg = gateway.loaded.config.routing.clone();
    let bars = Bars {
        min_feature_accuracy: args.min_feature_accuracy,
        min_safety: args.min_safety,
        min_failures: args.min_failures,
    };
    let rows: Vec<Row> = rows.into_iter().map(|(_, r)| r).collect();
    let report = evaluate::evaluate(&rows, &cfg.rules, cfg.default_tier, cfg.min_confidence, bars);
    let engine_name =
        format!("{}/{}", engine.0.as_deref().unwrap_or(&args.provider), engine.1.as_deref().unwrap_or("?"));
    let down = if failed > 0 { down_and_fix(&gateway) } else { None };
    if args.json {
        let out = json!({
            "provider": args.provider,
            "engine": engine_name,
            "engine_failures": failed,
            "engine_down": down.as_ref().map(|(detail, fix)| json!({"detail": detail, "fix": fix})),
            "verdict": if report.ready { "READY" } else { "NOT READY" },
            "bars": bars,
            "report": report,
        });
        outln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default())?;
    } else {
        out!("{}", text(&report, &engine_name, failed, bars))?;
        if let Some((detail, fix)) = down {
            outln!("\nThe engine does not answer its health probe ({detail}): to fix it, {fix}.")?;
        }
    }
    Ok(0)
}

/// When some entries went unanswered: whether the engine is down, in words, and the fix for why.
fn down_and_fix(gateway: &Gateway) -> Option<(String, String)> {
    let provider = gateway.primary()?;
    let probe = provider.health(gateway.timeout);
    let failure = probe.failure()?;
    Some((failure.detail.clone(), servers::fix::engine_fix(provider.as_ref(), failure)))
}

/// A share, or `n/a` when there was nothing to take it of (nothing labelled, nothing answered).
fn pct(x: Option<f64>) -> String {
    x.map(|v| text::pct(v, 1)).unwrap_or_else(|| "n/a".into())
}

fn rule_line(name: &str, k: usize, n: usize, share: Option<f64>) -> String {
    if n == 0 {
        return format!("{name} n/a");
    }
    format!("{name} {k}/{n} {}", pct(share))
}

fn rule_block(r: &RuleScore) -> [String; 3] {
    [
        rule_line("", r.higher_on_failures, r.failures, r.safety),
        rule_line("", r.same_on_successes, r.successes, r.agreement),
        rule_line("", r.cheaper_on_successes, r.successes, r.savings),
    ]
}

pub fn text(r: &Evaluation, engine: &str, failed: usize, bars: Bars) -> String {
    let mut s = format!(
        "Engine {engine} on {} labelled log entries ({} the engine could not answer); routing threshold {:.2}\n\n",
        r.rows, failed, r.threshold
    );
    s.push_str(&format!(
        "{:<10} {:>8} {:>8} {:>9} {:>6} {:>14} {:>14}\n",
        "feature", "labelled", "answered", "accuracy", "AUROC", "coverage@thr", "accuracy@thr"
    ));
    for f in &r.features {
        let labelled = f.labelled > 0;
        s.push_str(&format!(
            "{:<10} {:>8} {:>8} {:>9} {:>6} {:>14} {:>14}  {}\n",
            f.feature.name(),
            f.labelled,
            f.answered,
            pct(f.accuracy),
            f.auroc.map(|a| format!("{a:.2}")).unwrap_or_else(|| "n/a".into()),
            if labelled { format!("{:.1}%", 100.0 * f.coverage_at_threshold) } else { "n/a".into() },
            pct(f.accuracy_at_threshold),
            if f.passes {
                "ok"
            } else if labelled {
                "below the bar"
            } else {
                "nothing labelled"
            }
        ));
    }
    let e = rule_block(&r.rule_engine);
    let t = rule_block(&r.rule_teacher);
    s.push_str(&format!(
        "\nThe rule, on spawns with an outcome   {:>22}   {:>22}\n",
        "engine's answers", "teacher labels (ceiling)"
    ));
    for (i, name) in ["safety (failures it sends higher)", "agreement on successes", "savings on successes (cheaper)"]
        .iter()
        .enumerate()
    {
        s.push_str(&format!("  {name:<35} {:>22}   {:>22}\n", e[i].trim(), t[i].trim()));
    }
    if r.rule_teacher.failures + r.rule_teacher.successes == 0 {
        s.push_str("  (n/a on the teacher labels: no spawn with an outcome has all four feature labels)\n");
    }
    s.push_str(&format!("\nFailed spawns labelled: {}\n", r.failures_labelled));
    s.push_str(&format!("\nVerdict: {}\n", if r.ready { "READY" } else { "NOT READY" }));
    for why in &r.reasons {
        s.push_str(&format!("  - {why}\n"));
    }
    s.push_str(&format!(
        "Bars: --min-feature-accuracy {} --min-safety {} --min-failures {}\n",
        bars.min_feature_accuracy, bars.min_safety, bars.min_failures
    ));
    if r.ready {
        s.push_str("Hints can go on: set [routing] hint = true (or /system1:calibrate applies it).\n");
    }
    s
}
