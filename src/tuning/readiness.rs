//! What `system1 evaluate --provider P` does, read-only: asks engine P the four routing features for
//! every routing-log entry that has feature labels or an outcome, through the hook's own code and
//! with the calibration in force, and prints the measures and the READY verdict (`evaluate` has the
//! definitions).

use std::collections::BTreeMap;

use serde_json::json;

use super::crossval;
use super::data::{self, RoutingItem};
use super::evaluate::{self, Bars, Evaluation, Row, RuleScore};
use crate::error::{Context, Error, Result};
use crate::feature::Feature;
use crate::gateway::{Budget, Gateway, Purpose};
use crate::routing::entry::Entry;
use crate::routing::{features, log};
use crate::{engine_servers, paths, text};

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
    /// Print the evaluation as JSON.
    pub json: bool,
}

/// The labels and outcome of a log entry, if it has any.
fn row_of(e: &Entry) -> Option<(String, Row)> {
    let text = e.prompt.clone()?;
    let labels = e.feature_labels();
    if labels.is_empty() && e.judged.outcome.is_none() {
        return None;
    }
    Some((
        text,
        Row { labels, engine: BTreeMap::new(), outcome: e.judged.outcome, outcome_tier: e.judged.outcome_tier },
    ))
}

/// `system1 evaluate`: asks `opts.provider` the features of every labelled entry, measures, and
/// prints the evaluation (text or JSON) with the verdict.
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
    let mut first_failure: Option<String> = None;
    let mut tick = super::progress("entries");
    let n = rows.len();
    for (i, (text, row)) in rows.iter_mut().enumerate() {
        tick(i, n);
        let rid = format!("evaluate-{i}");
        let asked = features::ask(&gateway, text, Budget::Chain, Purpose::Check, &rid, false);
        match asked.features {
            Ok(fs) => {
                for f in fs {
                    row.engine.insert(f.feature, f.answer.map(|a| (a, f.confidence)));
                }
                if engine.0.is_none() {
                    engine = (asked.provider, asked.model);
                }
            }
            Err(why) => {
                failed += 1;
                first_failure.get_or_insert(why.to_string());
            }
        }
    }
    if failed == n {
        // Not a verdict on the engine: it never answered, so there is nothing to judge.
        let why = first_failure.unwrap_or_else(|| "no answer".into());
        let mut e = Error::failure(format!("{} is not answering, so nothing was evaluated: {why}", args.provider));
        if let Some((_, fix)) = down_and_fix(&gateway) {
            e = e.with_hint(fix);
        }
        return Err(e);
    }
    let held_out = if gateway.primary().is_some_and(|p| p.name() == "local") {
        Some(hold_out_local(&gateway, &entries.entries, &mut rows).map_err(Error::failure)?)
    } else {
        None
    };
    let cfg = gateway.loaded.config.routing.clone();
    let bars = Bars {
        min_feature_accuracy: args.min_feature_accuracy,
        min_safety: args.min_safety,
        min_failures: args.min_failures,
    };
    let rows: Vec<Row> = rows.into_iter().map(|(_, r)| r).collect();
    let evaluation = evaluate::evaluate(&rows, &cfg.rules, cfg.default_tier, cfg.min_confidence, bars);
    let engine_name =
        format!("{}/{}", engine.0.as_deref().unwrap_or(&args.provider), engine.1.as_deref().unwrap_or("?"));
    let down = if failed > 0 { down_and_fix(&gateway) } else { None };
    if args.json {
        let out = json!({
            "provider": args.provider,
            "engine": engine_name,
            "engine_failures": failed,
            "engine_down": down.as_ref().map(|(detail, fix)| json!({"detail": detail, "fix": fix})),
            "held_out": held_out,
            "verdict": if evaluation.ready { "READY" } else { "NOT READY" },
            "bars": bars,
            "report": evaluation,
        });
        outln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default())?;
    } else {
        if let Some(h) = &held_out {
            outln!("{}", h.text())?;
        }
        out!("{}", text(&evaluation, &engine_name, failed, bars))?;
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
    Some((failure.detail.clone(), engine_servers::fix::engine_fix(provider.as_ref(), failure)))
}

/// What the local engine's held-out answers replaced.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HeldOut {
    /// Labelled entries the heads in effect may have been fitted on, whose answers were replaced by
    /// held-out ones.
    pub entries: usize,
    /// How the held-out answers were made.
    pub how: &'static str,
    /// Features that could not be held out, and why (their fitted-on answers are left unanswered).
    pub notes: Vec<String>,
}

impl HeldOut {
    fn text(&self) -> String {
        let mut s = if self.entries == 0 {
            "The local engine's heads were not fitted on any of these entries: its answers are its own.".to_string()
        } else {
            format!(
                "The local engine's heads were fitted on {} of these entries: their answers are held out ({}; \
                 fitted as the heads are, on the seed sets and the labelled log), never the answers of a head that saw them.",
                self.entries, self.how
            )
        };
        for n in &self.notes {
            s.push_str(&format!("\n  {n}"));
        }
        s
    }
}

/// For the local engine: every labelled answer on an entry its heads may have been fitted on (a
/// seed text, or any labelled entry once `calibrate fit --apply` wrote local heads) is replaced by
/// the held-out answer of a head fitted as they were (the seed sets and the labelled log), with
/// the calibration in force applied, so that no answer a head learned is scored.
fn hold_out_local(
    gateway: &Gateway,
    entries: &[Entry],
    rows: &mut [(String, Row)],
) -> std::result::Result<HeldOut, String> {
    let log_items = data::log_items(entries);
    let local_heads = crate::providers::local::local_heads_file().exists();
    let known = super::study::sets::head_training_texts(local_heads, &log_items)?;
    let fitted_on: Vec<usize> =
        (0..rows.len()).filter(|&i| !rows[i].1.labels.is_empty() && known.contains(&rows[i].0)).collect();
    let mut out = HeldOut { entries: fitted_on.len(), how: crossval::HOW, notes: Vec::new() };
    if fitted_on.is_empty() {
        return Ok(out);
    }
    // The training set: the seed prompts, then the labelled log (a log label wins over a seed's).
    let mut items: Vec<RoutingItem> = data::seed_items()?;
    for l in log_items {
        match items.iter_mut().find(|i| i.text == l.text) {
            Some(i) => i.labels.extend(l.labels),
            None => items.push(l),
        }
    }
    let (name, model) = super::heads::configured_model()?;
    let mut tick = super::progress("texts to hold out");
    let xs: Vec<Vec<f32>> = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            tick(i, items.len());
            model.embed(&crate::providers::local::state_text(&features::request(&item.text)))
        })
        .collect();
    for f in Feature::ALL {
        let idx: Vec<usize> = (0..items.len()).filter(|&i| items[i].labels.contains_key(&f)).collect();
        let ex: Vec<Vec<f32>> = idx.iter().map(|&i| xs[i].clone()).collect();
        let ys: Vec<bool> = idx.iter().filter_map(|&i| items[i].labels.get(&f).copied()).collect();
        let p = match crossval::held_out(&name, f.name(), &ex, &ys) {
            Ok((_, p)) => Some(p),
            Err(e) => {
                out.notes.push(format!("{f}: not held out ({e}); its answers on those entries are left out"));
                None
            }
        };
        let fit = gateway.calibration.find("local", &name, f.name(), 2).map(|f| f.temperature);
        for &r in &fitted_on {
            let (text, row) = &mut rows[r];
            if !row.labels.contains_key(&f) {
                continue;
            }
            let at = idx.iter().position(|&i| items[i].text == *text);
            let answer = p.as_ref().zip(at).map(|(p, k)| {
                let probs = vec![p[k], 1.0 - p[k]];
                let probs = fit.map_or(probs.clone(), |t| crate::calibration::rescale(&probs, t));
                (probs[0] >= probs[1], probs[0].max(probs[1]))
            });
            row.engine.insert(f, answer);
        }
    }
    Ok(out)
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
