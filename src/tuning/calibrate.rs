//! What `system1 calibrate` does: `pending` lists what waits for labels (JSON, so that Claude can
//! propose them), `label` records a person's labels on one log entry, `fit` fits the temperatures
//! from the labelled log plus the seed sets, learns a routing rule from their labelled tiers and,
//! with `apply`, writes the fits, the routing threshold, and the rule where it beats the configured one.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, json};

use super::data::{self, Labelled, Origin};
use super::question_fit::{self, QuestionFit};
use super::{apply, fit, labels, plot, rule_fit};
use crate::calibration::{Calibration, Fit};
use crate::config;
use crate::error::{Context, Error, Result};
use crate::feature::Feature;
use crate::routing::log;
use crate::tuning::study::figures::YesNo;
use crate::{fsutil, paths, text};

/// What `calibrate fit` was asked to do.
pub struct FitOptions {
    /// Write the fits to the install dir's calibration file and the chosen threshold to the config.
    pub apply: bool,
    /// Also write a reliability diagram (before and after) to this SVG file.
    pub plot: Option<PathBuf>,
    /// Ask this provider instead of the configured chain.
    pub provider: Option<String>,
    /// The routing threshold chosen is the lowest at which every feature is this accurate.
    pub target_accuracy: f64,
    /// Fit on the labelled log only, without the built-in seed sets.
    pub no_seeds: bool,
    /// With `set`: teach the local engine this question from the labelled examples in `set`.
    pub question: Option<String>,
    /// The JSON-lines file of labelled examples for `question`.
    pub set: Option<PathBuf>,
}

fn read_log() -> Result<log::Entries> {
    log::read_all().context(|| format!("cannot read {}", paths::routing_log().display()))
}

/// `calibrate pending`: the entries waiting for labels and the tally, as JSON on stdout.
pub fn pending(limit: usize) -> Result<i32> {
    // One entry at a time, keeping only what is shown: the log can be gigabytes.
    let mut scan = labels::PendingKept::default();
    log::for_each_entry(|e| scan.add(e, limit))
        .context(|| format!("cannot read {}", paths::routing_log().display()))?;
    let (list, _) = labels::pending(&scan.kept, limit);
    let tally = scan.tally;
    let out = json!({
        "log": paths::routing_log().display().to_string(),
        "tally": tally,
        "shown": list.len(),
        "entries": list,
        "how_to_label": "system1 calibrate label --id ID --feature read_only=true --feature design=false --feature review=false --feature specified=true --tier haiku [--outcome succeeded|failed] --by user",
    });
    outln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default())?;
    Ok(0)
}

/// `calibrate label`: records labels on one entry, under the log's lock.
pub fn label(id: &str, features: &[String], tier: Option<&str>, outcome: Option<&str>, by: &str) -> Result<i32> {
    let l = labels::Labels::parse(features, tier, outcome, by).map_err(Error::usage)?;
    log::update(id, |e| labels::label(e, id, &l))
        .context(|| format!("cannot update {}", paths::routing_log().display()))?
        .map_err(Error::failure)?;
    outln!("labelled {id}")?;
    Ok(0)
}

/// `calibrate fit`: asks the engine about every labelled item with calibration off, fits, prints,
/// and with `apply` writes the fits and the routing threshold.
pub fn fit(a: FitOptions) -> Result<i32> {
    if !(0.0..=1.0).contains(&a.target_accuracy) {
        return Err(Error::usage("--target-accuracy must be between 0 and 1"));
    }
    if a.question.is_some() || a.set.is_some() {
        return super::teach::run(&a);
    }
    let entries = read_log()?;
    let mut items = data::log_items(&entries.entries);
    let from_log = items.len();
    if !a.no_seeds {
        items.extend(data::seed_items().map_err(Error::failure)?);
    }
    let mut gateway = super::gateway_for(a.provider.as_deref())?;
    if gateway.primary().is_some_and(|p| p.name() == "local") {
        // The local engine learns: its heads carry their own temperatures, fitted out of sample.
        let source = if a.no_seeds {
            "the labelled log".to_string()
        } else {
            format!("{from_log} labelled log entries and the seed sets")
        };
        return super::heads::fit_command(&items, &source, &a);
    }
    // Raw probabilities: the fit must not be fitted on top of the fit in force.
    gateway.calibration = Calibration::default();
    let mut answers = data::ask_routing(&gateway, &items, super::progress("routing prompts"));
    if !a.no_seeds {
        let d = data::ask_destructive(&gateway, super::progress("commands")).map_err(Error::failure)?;
        answers.labelled.extend(d.labelled);
        answers.failed.extend(d.failed);
        answers.abstained += d.abstained;
    }
    if answers.labelled.is_empty() {
        let why = answers.failed.first().cloned().unwrap_or_else(|| "nothing is labelled yet".into());
        return Err(Error::failure(format!("no labelled answers to fit on: {why}")).with_hint(format!(
            "label some entries first (`{}`), and check the engine with `{}`",
            text::command("calibrate pending"),
            text::command("doctor")
        )));
    }
    let measured = measure_all(&answers.labelled);

    outln!(
        "Fitted on {}{} ({}). Engine failures: {}; abstentions: {}.\n",
        text::count_as(from_log as u64, "labelled log entry", "labelled log entries"),
        if a.no_seeds {
            String::new()
        } else {
            format!(" plus {} and the command set", text::count((items.len() - from_log) as u64, "seed prompt"))
        },
        text::count(answers.labelled.len() as u64, "answer"),
        answers.failed.len(),
        answers.abstained
    )?;
    for r in &measured {
        outln!("{}", r.text())?;
    }

    // The routing threshold, from the engine that answered most.
    let routing: Vec<&QuestionFit> = main_engine(&measured)
        .map(|(p, m)| {
            measured
                .iter()
                .filter(|r| r.provider == p && r.model == m)
                .filter(|r| r.question.as_deref().and_then(Feature::named).is_some())
                .collect()
        })
        .unwrap_or_default();
    let chosen = question_fit::choose_threshold(&routing, a.target_accuracy);
    let current = config::load().config.routing.min_confidence;
    match chosen {
        Some(t) => {
            let joint = joint_coverage(&answers.labelled, &measured, t);
            outln!(
                "Routing threshold: {t:.2} is the lowest at which every feature is at least {:.0}% accurate (now {current:.2}). \
                 At {t:.2}, all four features clear it on {:.0}% of prompts, so that is how often a hint could be given.",
                100.0 * a.target_accuracy,
                100.0 * joint
            )?;
        }
        None => outln!(
            "Routing threshold: no threshold up to 0.90 makes every feature {:.0}% accurate; [routing] min_confidence stays {current:.2}. \
             Hints should stay off for this engine (see `{}`).",
            100.0 * a.target_accuracy,
            text::command("evaluate")
        )?,
    }
    outln!("\nThese figures are measured on the data the fit was made on, with small samples: treat them as rough.")?;
    let examples = rule_examples(&items, &answers.routing, &measured);
    let rule = learned_rule(&examples, chosen.unwrap_or(current))?;

    if let Some(path) = &a.plot {
        let title = format!(
            "Reliability before and after calibration ({})",
            main_engine(&measured).map(|(p, m)| format!("{p}/{m}")).unwrap_or_default()
        );
        write_plot(path, &measured, &title)?;
    }

    if a.apply {
        let n = write_fits(&measured)?;
        outln!("\nWrote {} to {}.", text::count(n as u64, "fit"), paths::fitted_calibration().display())?;
        write_routing(chosen, rule.as_ref())?;
    } else {
        outln!(
            "\nNothing written. `{}` writes the fits, the threshold and a learned rule that beats the configured one.",
            text::command("calibrate fit --apply")
        )?;
    }
    Ok(0)
}

/// The items of `items` with a labelled tier that the engine answered all four features of, with
/// those answers calibrated by the temperatures just fitted (`measured`), as the hook would see them.
fn rule_examples(
    items: &[data::RoutingItem],
    answered: &[data::Answered],
    measured: &[QuestionFit],
) -> Vec<rule_fit::Example> {
    let temperature = |a: &data::Answered, f: Feature| {
        measured
            .iter()
            .find(|r| r.provider == a.provider && r.model == a.model && r.question.as_deref() == Some(f.name()))
            .map_or(1.0, |r| r.applied_t)
    };
    answered
        .iter()
        .filter_map(|a| {
            let tier = items.get(a.item)?.tier?;
            let answers = a
                .answers
                .iter()
                .map(|(f, (yes, c))| {
                    let y = YesNo { yes: *yes, confidence: *c }.calibrated(Some(temperature(a, *f)));
                    (*f, (y.yes, y.confidence))
                })
                .collect();
            Some(rule_fit::Example { answers, tier })
        })
        .collect()
}

/// The rule to write: what was learned, and the figures that let it replace the configured one.
pub(super) struct ToWrite {
    comparison: rule_fit::Comparison,
}

/// Learns a routing rule from `examples` and prints its cross-validated figures beside the
/// configured rule's on the same folds (a hint at `threshold`). Returns the rule `--apply` should
/// write: only one that beats the configured rule on held-out items, and differs from it.
pub(super) fn learned_rule(examples: &[rule_fit::Example], threshold: f64) -> Result<Option<ToWrite>> {
    let routing = config::load().config.routing;
    let Some(c) = rule_fit::compare(examples, &routing.rules, routing.default_tier, threshold) else {
        outln!(
            "\nRouting rule: none learned: {} a labelled tier and four answers; the cross-validation needs {}.",
            if examples.len() == 1 { "1 item has".to_string() } else { format!("{} items have", examples.len()) },
            rule_fit::FOLDS
        )?;
        return Ok(None);
    };
    outln!(
        "\nRouting rule learned from {} labelled tiers, {}-fold cross-validated (the same folds for both; a hint at {threshold:.2}):",
        c.items,
        c.folds
    )?;
    outln!("  {:<34} {}", "the configured rule", c.hand.summary())?;
    outln!("  {:<34} {}", "a rule learned from these labels", c.fitted.summary())?;
    outln!("The learned rule, fitted on every item:")?;
    for l in c.toml.lines() {
        outln!("  {l}")?;
    }
    let same = c.rule.rules == routing.rules && c.rule.default_tier == routing.default_tier;
    if same {
        outln!("It is the configured rule.")?;
        return Ok(None);
    }
    if !c.beats() {
        outln!(
            "It does not beat the configured rule on held-out items ({} against {}), so --apply leaves [routing] rules as they are.",
            text::pct(c.fitted.agreement, 1),
            text::pct(c.hand.agreement, 1)
        )?;
        return Ok(None);
    }
    Ok(Some(ToWrite { comparison: c }))
}

/// Writes the reliability diagram of `measured` to `path` (atomically) and says where.
pub(super) fn write_plot(path: &std::path::Path, measured: &[QuestionFit], title: &str) -> Result<()> {
    fsutil::write_atomically(path, plot::svg(measured, title).as_bytes())
        .context(|| format!("cannot write {}", path.display()))?;
    outln!("Reliability diagram: {}", path.display())?;
    Ok(())
}

/// Merges the fits of `measured` into the install dir's calibration file; returns how many it wrote.
pub(super) fn write_fits(measured: &[QuestionFit]) -> Result<usize> {
    let fits = fits_to_write(measured);
    let path = paths::fitted_calibration();
    // One that does not parse is an error: replacing it would lose whatever it held.
    let existing = match fsutil::read_versioned::<crate::calibration::File>(&path) {
        Ok(f) => f.map(|f| f.fits).unwrap_or_default(),
        Err(fsutil::VersionedError::Unreadable(e)) => {
            return Err(Error::failure(format!("cannot read {}: {e}", path.display())));
        }
        Err(fsutil::VersionedError::Invalid(e)) => {
            return Err(Error::failure(format!("{}: {e}; fix or remove it first", path.display())));
        }
    };
    let n = fits.len();
    fsutil::write_versioned(&path, &apply::merge_fitted(existing, fits))
        .context(|| format!("cannot write {}", path.display()))?;
    Ok(n)
}

/// Writes what `--apply` chose into `[routing]` of the config, in one edit of the file: the
/// threshold `t` (`min_confidence`) and the learned rule (rules and default tier, as data the user
/// can read and edit), changing only those keys, and says so. Nothing for neither.
pub(super) fn write_routing(t: Option<f64>, rule: Option<&ToWrite>) -> Result<()> {
    if t.is_none() && rule.is_none() {
        return Ok(());
    }
    let cfg_path = paths::config_file();
    let mut edited = match fsutil::read_small_file(&cfg_path, crate::config::MAX_CONFIG_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::failure(format!("cannot read {}: {e}", cfg_path.display()))),
    };
    if let Some(t) = t {
        edited = apply::set_routing_min_confidence(&edited, t).map_err(Error::failure)?;
    }
    if let Some(w) = rule {
        let c = &w.comparison;
        let day = chrono::Utc::now().format("%Y-%m-%d");
        let note = format!(
            "{day}, from {} labelled tiers; {} agreement held out, against {} for the rule it replaced (the same {} folds)",
            c.items,
            text::pct(c.fitted.agreement, 1),
            text::pct(c.hand.agreement, 1),
            c.folds
        );
        edited = apply::set_routing_rule(&edited, &c.rule.rules, c.rule.default_tier, &note).map_err(Error::failure)?;
    }
    fsutil::write_through(&cfg_path, edited.as_bytes()).context(|| format!("cannot write {}", cfg_path.display()))?;
    if let Some(t) = t {
        outln!("Set [routing] min_confidence = {t:.2} in {}.", cfg_path.display())?;
        if std::env::var_os("SYSTEM1_ROUTING_MIN_CONFIDENCE").is_some() {
            outln!("Note: SYSTEM1_ROUTING_MIN_CONFIDENCE is set in the environment and overrides the file.")?;
        }
    }
    if let Some(w) = rule {
        outln!(
            "Wrote the learned rule to [routing] in {} ({} agreement held out, against {}).",
            cfg_path.display(),
            text::pct(w.comparison.fitted.agreement, 1),
            text::pct(w.comparison.hand.agreement, 1)
        )?;
    }
    Ok(())
}

type Key = (String, String, String);

/// One fit per (provider, model, question), then one per (provider, model, option count) for
/// the fallback; questions below the minimum n are measured with the fallback's temperature.
fn measure_all(labelled: &[Labelled]) -> Vec<QuestionFit> {
    let mut by_q: BTreeMap<Key, Vec<&Labelled>> = BTreeMap::new();
    let mut by_options: BTreeMap<(String, String, usize), Vec<&Labelled>> = BTreeMap::new();
    for l in labelled {
        by_q.entry((l.provider.clone(), l.model.clone(), l.key.clone())).or_default().push(l);
        by_options.entry((l.provider.clone(), l.model.clone(), l.sample.probs.len())).or_default().push(l);
    }
    let sources = |ls: &[&Labelled]| {
        let log = ls.iter().filter(|l| l.origin == Origin::Log).count();
        format!("{log} log + {} seed", ls.len() - log)
    };
    let mut fallback: BTreeMap<(String, String, usize), QuestionFit> = BTreeMap::new();
    for ((p, m, k), ls) in &by_options {
        let samples: Vec<fit::Sample> = ls.iter().map(|l| l.sample.clone()).collect();
        let mut r = question_fit::measure(p, m, None, &samples, sources(ls), None);
        r.question = None;
        fallback.insert((p.clone(), m.clone(), *k), r);
    }
    let mut out = Vec::new();
    for ((p, m, q), ls) in &by_q {
        let samples: Vec<fit::Sample> = ls.iter().map(|l| l.sample.clone()).collect();
        let fb =
            fallback.get(&(p.clone(), m.clone(), samples[0].probs.len())).filter(|f| f.own_fit).map(|f| f.applied_t);
        out.push(question_fit::measure(p, m, Some(q), &samples, sources(ls), fb));
    }
    // Routing features first, in their usual order, then other questions, then the fallbacks.
    out.sort_by_key(|r| {
        let q = r.question.as_deref().unwrap_or("");
        (r.provider.clone(), r.model.clone(), Feature::named(q).map_or(99, |f| f as usize), q.to_string())
    });
    out.extend(fallback.into_values());
    out
}

/// The (provider, model) with the most answers.
fn main_engine(measured: &[QuestionFit]) -> Option<(String, String)> {
    let mut n: BTreeMap<(String, String), usize> = BTreeMap::new();
    for r in measured.iter().filter(|r| r.question.is_some()) {
        *n.entry((r.provider.clone(), r.model.clone())).or_default() += r.n;
    }
    n.into_iter().max_by_key(|(_, n)| *n).map(|(k, _)| k)
}

/// The share of routing prompts whose four calibrated confidences all reach `t`.
fn joint_coverage(labelled: &[Labelled], measured: &[QuestionFit], t: f64) -> f64 {
    let temp = |l: &Labelled| {
        measured
            .iter()
            .find(|r| r.provider == l.provider && r.model == l.model && r.question.as_deref() == Some(&l.key))
            .map(|r| r.applied_t)
            .unwrap_or(1.0)
    };
    let mut per_item: BTreeMap<usize, (usize, bool)> = BTreeMap::new();
    for l in labelled {
        let Some(i) = l.item else { continue };
        let e = per_item.entry(i).or_insert((0, true));
        e.0 += 1;
        e.1 &= l.sample.top(temp(l)).1 >= t - 1e-12;
    }
    let all: Vec<&(usize, bool)> = per_item.values().filter(|(n, _)| *n == Feature::ALL.len()).collect();
    if all.is_empty() { 0.0 } else { all.iter().filter(|(_, ok)| *ok).count() as f64 / all.len() as f64 }
}

/// The fits to write: every question with its own fit, and every option-count fallback with enough samples.
fn fits_to_write(measured: &[QuestionFit]) -> Vec<Fit> {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    measured
        .iter()
        .filter(|r| r.own_fit)
        .map(|r| {
            let mut extra = Map::new();
            extra.insert("n".into(), json!(r.n));
            extra.insert("accuracy".into(), json!(text::round(r.accuracy, 3)));
            extra.insert("ece_before".into(), json!(text::round(r.ece_before, 3)));
            extra.insert("ece_after".into(), json!(text::round(r.ece_after, 3)));
            if let Some(fitted) = r.fit.clamped.filter(|_| r.own_fit) {
                extra.insert("clamped".into(), json!(text::round(fitted, 4)));
            }
            extra.insert("source".into(), json!(format!("system1 calibrate fit ({})", r.sources)));
            extra.insert("fitted_at".into(), json!(now));
            Fit {
                provider: r.provider.clone(),
                model: r.model.clone(),
                question: r.question.clone(),
                options: if r.question.is_none() { Some(r.options) } else { None },
                temperature: text::round(r.applied_t, 4),
                extra,
            }
        })
        .collect()
}
