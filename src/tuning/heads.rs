//! Fitting the local engine's trained heads: each question's labelled texts, embedded by the local
//! model exactly as the engine embeds a request's state, then a logistic head per question (the
//! math is in `providers::local::heads`). The seed sets give the shipped heads; `calibrate fit`
//! adds the user's labelled routing log and writes the result beside the install dir's calibration file.

use crate::feature::Feature;
use crate::fsutil;
use crate::providers::local::heads::{self, Head};
use crate::providers::local::model::Model;
use crate::providers::local::state_text;
use crate::routing::features;
use crate::text;

use super::calibrate::FitOptions;
use super::data::{self, RoutingItem};
use super::fit::Sample;
use super::question_fit::{self, QuestionFit};
use super::seeds::{self, DESTRUCTIVE_QUESTION};
use super::{crossval, rule_fit};

/// One question's labelled texts: the text the engine reads, and whether the answer is yes.
pub struct Examples {
    pub question: String,
    pub texts: Vec<String>,
    pub yes: Vec<bool>,
    pub source: String,
    /// The context keys the requests carry (none: the context is plain text).
    pub context: Vec<String>,
}

/// The examples of the four routing features from `items`, and of the destructive question from
/// its seed set.
pub fn examples(items: &[RoutingItem], source: &str) -> Result<Vec<Examples>, String> {
    let mut out = Vec::new();
    for f in Feature::ALL {
        let mut e = Examples {
            question: f.name().to_string(),
            texts: Vec::new(),
            yes: Vec::new(),
            source: source.into(),
            context: Vec::new(),
        };
        for item in items {
            if let Some(label) = item.labels.get(&f) {
                e.texts.push(state_text(&features::request(&item.text)));
                e.yes.push(*label);
            }
        }
        out.push(e);
    }
    let mut d = Examples {
        question: DESTRUCTIVE_QUESTION.to_string(),
        texts: Vec::new(),
        yes: Vec::new(),
        source: "calibration/destructive.jsonl".into(),
        context: vec!["command".into()],
    };
    for s in seeds::destructive()? {
        d.texts.push(state_text(&data::destructive_request(&s.command)));
        d.yes.push(s.destructive);
    }
    out.push(d);
    Ok(out)
}

/// The examples of the tier head's questions (`Tier::head_key`), one per tier of
/// `routing::features::HEAD_TIERS` that `items` label, each against the others, over the items
/// with a labelled tier. A tier no item (or every item) has is left out: its head cannot be fitted.
pub fn tier_examples(items: &[RoutingItem], source: &str) -> Vec<Examples> {
    let labelled: Vec<(String, crate::tier::Tier)> =
        items.iter().filter_map(|i| Some((state_text(&features::request(&i.text)), i.tier?))).collect();
    features::HEAD_TIERS
        .iter()
        .map(|t| Examples {
            question: t.head_key(),
            texts: labelled.iter().map(|(text, _)| text.clone()).collect(),
            yes: labelled.iter().map(|(_, tier)| tier == t).collect(),
            source: source.into(),
            context: Vec::new(),
        })
        .filter(|e| e.yes.iter().any(|y| *y) && !e.yes.iter().all(|y| *y))
        .collect()
}

/// The tier head: one head per set of [`tier_examples`], fitted on every example.
pub fn fit_tier_heads(
    name: &str,
    sets: &[Examples],
    cache: &std::collections::HashMap<String, Vec<f32>>,
) -> Result<Vec<Head>, String> {
    sets.iter().map(|s| Head::fit(name, &s.question, &embedded(s, cache), &s.yes, &s.source).map(|(h, _)| h)).collect()
}

/// Each distinct text of `sets` embedded once (texts repeat across the routing features).
/// `progress(done, total)` is called as texts are embedded.
pub fn embed(
    model: &Model,
    sets: &[&Examples],
    mut progress: impl FnMut(usize, usize),
) -> std::collections::HashMap<String, Vec<f32>> {
    let distinct: std::collections::BTreeSet<&str> =
        sets.iter().flat_map(|s| s.texts.iter().map(String::as_str)).collect();
    let total = distinct.len();
    distinct
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            progress(i, total);
            (t.to_string(), model.embed(t))
        })
        .collect()
}

/// One question's embedded examples, from the cache `embed` made.
pub fn embedded(s: &Examples, cache: &std::collections::HashMap<String, Vec<f32>>) -> Vec<Vec<f32>> {
    s.texts.iter().map(|t| cache[t.as_str()].clone()).collect()
}

fn with_context(mut head: Head, s: &Examples) -> Head {
    head.context = s.context.clone();
    head
}

/// The heads file for fitted heads.
pub fn file(fitted: &[Head], note: &str) -> heads::File {
    let mut f = heads::File::new(fitted.to_vec());
    f.note = Some(note.to_string());
    f
}

/// The local model the config names, loaded for fitting.
pub fn configured_model() -> Result<(String, Model), String> {
    let loaded = crate::config::load();
    let settings = loaded.provider_settings("local");
    let (name, dir, _) = crate::providers::local::configured(&settings);
    let max_tokens = settings.u64("max_tokens", 0, 0, 8192) as usize;
    let model = Model::load(&dir, max_tokens)
        .map_err(|e| format!("{e}; install the model with `{}`", text::command("engine install local")))?;
    Ok((name, model))
}

/// One line per head: its question, size and leave-one-out figures.
pub fn describe(fitted: &[Head]) -> Vec<String> {
    fitted
        .iter()
        .map(|h| {
            let q: String = h.question.chars().take(36).collect();
            let clamp = h.clamped.map(|c| format!(" (its fit wanted {c:.3}, clamped)")).unwrap_or_default();
            format!(
                "  {q:<36} n={:<4} yes={:<4} leave-one-out accuracy {:.3}  temperature {:.3}{clamp}",
                h.n, h.positives, h.loo_accuracy, h.temperature
            )
        })
        .collect()
}

/// What [`cross_validated`] gives, one of each per set.
pub struct CrossValidated {
    /// The heads as the engine will have them.
    pub heads: Vec<Head>,
    /// Their cross-validated answers, measured as `calibrate fit` measures any engine's.
    pub measured: Vec<QuestionFit>,
    /// Those answers: P(yes) per example, in the set's order.
    pub answers: Vec<Vec<f64>>,
}

/// Each set's head, and its cross-validated answers and their figures.
pub fn cross_validated(
    name: &str,
    sets: &[Examples],
    cache: &std::collections::HashMap<String, Vec<f32>>,
) -> Result<CrossValidated, String> {
    let mut fitted = Vec::new();
    let mut measured = Vec::new();
    let mut answers = Vec::new();
    for s in sets {
        let (mut head, p) = crossval::held_out(name, &s.question, &embedded(s, cache), &s.yes)?;
        head.source = s.source.clone();
        fitted.push(with_context(head, s));
        let samples: Vec<Sample> = p.iter().zip(&s.yes).map(|(p, y)| Sample::yes_no(*p, *y)).collect();
        let sources = format!("{} from {}", samples.len(), s.source);
        measured.push(question_fit::measure("local", name, Some(&s.question), &samples, sources, None));
        answers.push(p);
    }
    Ok(CrossValidated { heads: fitted, measured, answers })
}

/// The routing items of `items` with a labelled tier and all four feature labels, each with its
/// four cross-validated answers (from `answers`, as [`cross_validated`] gave them for the sets
/// [`examples`] made of `items`): what a rule learned from the tiers is fitted on.
pub fn rule_examples(items: &[RoutingItem], answers: &[Vec<f64>]) -> Vec<rule_fit::Example> {
    // The k-th item labelled for a feature is the k-th example of that feature's set.
    let mut next = [0usize; 4];
    let mut out = Vec::new();
    for item in items {
        let mut got = std::collections::BTreeMap::new();
        for (q, f) in Feature::ALL.iter().enumerate() {
            if item.labels.contains_key(f) {
                if let Some(p) = answers.get(q).and_then(|a| a.get(next[q])) {
                    // Yes on a tie, as the engine picks the first option.
                    got.insert(*f, if *p >= 0.5 { (true, *p) } else { (false, 1.0 - *p) });
                }
                next[q] += 1;
            }
        }
        if let Some(tier) = item.tier.filter(|_| got.len() == Feature::ALL.len()) {
            out.push(rule_fit::Example { answers: got, tier });
        }
    }
    out
}

/// Replaces the heads of the questions `fitted` answers in the local heads file (other questions'
/// heads stay), privately and atomically; returns the file's path.
pub fn write_heads(fitted: &[Head], note: &str) -> crate::error::Result<std::path::PathBuf> {
    use crate::error::{Context, Error};
    let path = crate::providers::local::local_heads_file();
    let mut kept = match fsutil::read_versioned::<heads::File>(&path) {
        Ok(f) => f.map(|f| f.heads).unwrap_or_default(),
        Err(fsutil::VersionedError::Unreadable(e)) => {
            return Err(Error::failure(format!("cannot read {}: {e}", path.display())));
        }
        Err(fsutil::VersionedError::Invalid(e)) => {
            return Err(Error::failure(format!("{}: {e}; fix or remove it first", path.display())));
        }
    };
    let replaced: std::collections::HashSet<(String, String)> =
        fitted.iter().map(|h| (h.model.clone(), crate::text::question_key(&h.question))).collect();
    kept.retain(|h| !replaced.contains(&(h.model.clone(), crate::text::question_key(&h.question))));
    kept.extend(fitted.iter().cloned());
    fsutil::write_versioned(&path, &file(&kept, note)).context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// `calibrate fit` with the local engine: fits a head per question on `items` (and the destructive
/// seed set), prints their leave-one-out figures and, measured on their cross-validated answers,
/// what `calibrate fit` prints for any engine (the temperatures, the ECE, the threshold for
/// `--target-accuracy`, the `--plot` diagram). With `--apply` it writes the heads to the local
/// heads file (where they win over the shipped ones), the fits and the routing threshold.
pub fn fit_command(items: &[RoutingItem], source: &str, a: &FitOptions) -> crate::error::Result<i32> {
    use crate::error::Error;

    let (name, model) = configured_model().map_err(Error::failure)?;
    let sets = examples(items, source).map_err(Error::failure)?;
    let tier_sets = tier_examples(items, source);
    let all_sets: Vec<&Examples> = sets.iter().chain(&tier_sets).collect();
    let cache = embed(&model, &all_sets, super::progress("texts"));
    let CrossValidated { heads: mut fitted, measured, answers } =
        cross_validated(&name, &sets, &cache).map_err(Error::failure)?;
    let tier_heads = fit_tier_heads(&name, &tier_sets, &cache).map_err(Error::failure)?;
    outln!(
        "Trained heads for the local engine ({name}), leave-one-out (approximate: one Newton step from the full fit):"
    )?;
    for line in describe(&fitted) {
        outln!("{line}")?;
    }
    if !tier_heads.is_empty() {
        outln!("The tier head ([routing] tier_head), one head per tier against the others:")?;
        for line in describe(&tier_heads) {
            outln!("{line}")?;
        }
    }
    // Written with the others; they get no calibration fit, as `study` measures them without one.
    fitted.extend(tier_heads);
    outln!("\nMeasured on their cross-validated answers ({}), as the gateway would calibrate them:\n", crossval::HOW)?;
    for r in &measured {
        outln!("{}", r.text())?;
    }
    let routing: Vec<&QuestionFit> =
        measured.iter().filter(|r| r.question.as_deref().and_then(Feature::named).is_some()).collect();
    let chosen = question_fit::choose_threshold(&routing, a.target_accuracy);
    let current = crate::config::load().config.routing.min_confidence;
    match chosen {
        Some(t) => outln!(
            "Routing threshold: {t:.2} is the lowest at which every feature is at least {:.0}% accurate on held-out answers (now {current:.2}).",
            100.0 * a.target_accuracy
        )?,
        None => outln!(
            "Routing threshold: no threshold up to 0.90 makes every feature {:.0}% accurate on held-out answers; [routing] min_confidence stays {current:.2}.",
            100.0 * a.target_accuracy
        )?,
    }
    let rule = super::calibrate::learned_rule(&rule_examples(items, &answers), chosen.unwrap_or(current))?;
    if let Some(path) = &a.plot {
        let title =
            format!("Reliability of the local engine's held-out answers, before and after calibration ({name})");
        super::calibrate::write_plot(path, &measured, &title)?;
    }
    if a.apply {
        let path = write_heads(&fitted, &format!("Fitted by `system1 calibrate fit` on {source}."))?;
        outln!("\nWrote {} (it wins over the shipped heads for these questions).", path.display())?;
        let n = super::calibrate::write_fits(&measured)?;
        outln!("Wrote {} to {}.", crate::text::count(n as u64, "fit"), crate::paths::fitted_calibration().display())?;
        super::calibrate::write_routing(chosen, rule.as_ref())?;
    } else {
        outln!(
            "\nNothing written; add --apply to write the heads to {}, the fits, the threshold and a learned rule that beats the configured one.",
            crate::providers::local::local_heads_file().display()
        )?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::study::shipped;

    /// The examples the shipped heads are fitted on: the two seed sets.
    fn seed_examples() -> Result<Vec<Examples>, String> {
        examples(&data::seed_items()?, "calibration/routing.jsonl")
    }

    /// The note the shipped heads file carries.
    const SHIPPED_NOTE: &str = "Trained heads for the local engine (all-MiniLM-L6-v2), fitted on the seed sets \
    calibration/routing.jsonl and calibration/destructive.jsonl; temperatures fitted on leave-one-out logits. \
    Regenerate with `SYSTEM1_WRITE_HEADS=1 scripts/test shipped_heads`; see calibration/README.md.";

    /// The shipped heads, and the shipped fits of `calibration/calibration.json`, are what the seed
    /// sets and the model give: a changed seed set, model or fitting code fails here until both
    /// files are regenerated (set SYSTEM1_WRITE_HEADS=1 to write them). The fits are measured on
    /// the heads' cross-validated answers, as `system1 study` measures the local engine.
    #[test]
    fn shipped_heads_and_fits_reproduce_from_the_seed_sets_and_the_model() {
        let Some(dir) = crate::providers::local::tests::model_dir() else { return };
        let model = Model::load(&dir, 0).expect("model");
        let sets = seed_examples().unwrap();
        // The tier head's too, fitted on the same prompts' labelled tiers (it has no calibration fit).
        let tier_sets = tier_examples(&data::seed_items().unwrap(), "calibration/routing.jsonl");
        assert_eq!(tier_sets.len(), 3, "the seed set labels haiku, sonnet and opus");
        let cache = embed(&model, &sets.iter().chain(&tier_sets).collect::<Vec<_>>(), |_, _| {});
        let name = crate::providers::local::DEFAULT_MODEL;
        let mut fitted: Vec<Head> = sets
            .iter()
            .map(|s| Head::fit(name, &s.question, &embedded(s, &cache), &s.yes, &s.source).unwrap().0)
            .collect();
        fitted.extend(fit_tier_heads(name, &tier_sets, &cache).unwrap());
        let fresh = file(&fitted, SHIPPED_NOTE);
        let embedded_sets: Vec<shipped::Embedded> = sets
            .iter()
            .map(|s| shipped::Embedded {
                question: &s.question,
                source: &s.source,
                xs: embedded(s, &cache),
                yes: s.yes.clone(),
            })
            .collect();
        let fits = shipped::fits(name, &embedded_sets, &crate::state::today()).unwrap();
        if std::env::var_os("SYSTEM1_WRITE_HEADS").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/calibration/local-heads.json");
            std::fs::write(path, serde_json::to_string_pretty(&fresh).unwrap() + "\n").unwrap();
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/calibration/calibration.json");
            std::fs::write(path, serde_json::to_string_pretty(&fits).unwrap() + "\n").unwrap();
            return;
        }
        let shipped = heads::File::parse(heads::SHIPPED).expect("shipped heads parse");
        let names = |f: &heads::File| f.heads.iter().map(|h| h.question.clone()).collect::<Vec<_>>();
        assert_eq!(names(&shipped), names(&fresh), "regenerate with SYSTEM1_WRITE_HEADS=1");
        for (s, f) in shipped.heads.iter().zip(&fresh.heads) {
            assert_eq!((s.n, s.positives, s.dims), (f.n, f.positives, f.dims), "{}: the seed set changed", s.question);
            let drift =
                s.weights.iter().zip(&f.weights).map(|(a, b)| (a - b).abs()).fold((s.bias - f.bias).abs(), f64::max);
            assert!(drift < 1e-3, "{}: weights moved by {drift}; regenerate with SYSTEM1_WRITE_HEADS=1", s.question);
            assert!(
                (s.temperature - f.temperature).abs() < 1e-3,
                "{}: temperature {} vs {}",
                s.question,
                s.temperature,
                f.temperature
            );
        }
        // The shipped fits: the same questions, temperatures and figures (the date aside).
        let shipped = crate::calibration::File::parse(crate::calibration::SHIPPED).expect("shipped fits parse");
        assert_eq!(shipped.note, fits.note);
        assert_eq!(shipped.fits.len(), fits.fits.len(), "regenerate with SYSTEM1_WRITE_HEADS=1");
        for (s, f) in shipped.fits.iter().zip(&fits.fits) {
            assert_eq!((&s.provider, &s.model, &s.question), (&f.provider, &f.model, &f.question));
            assert!(
                (s.temperature - f.temperature).abs() < 1e-3,
                "{:?}: T {} vs {}",
                s.question,
                s.temperature,
                f.temperature
            );
            for (k, v) in &f.extra {
                if k == "fitted_at" {
                    assert!(
                        s.extra.get(k).and_then(|d| d.as_str()).is_some_and(|d| d.len() == 10),
                        "{:?}: a date",
                        s.question
                    );
                    continue;
                }
                let same = match (s.extra.get(k), v) {
                    (Some(a), b) if a.is_number() => {
                        a.as_f64().zip(b.as_f64()).is_some_and(|(a, b)| (a - b).abs() < 2e-3)
                    }
                    (Some(a), b) => a == b,
                    (None, _) => false,
                };
                assert!(
                    same,
                    "{:?} {k}: shipped {:?}, measured {v}; regenerate with SYSTEM1_WRITE_HEADS=1",
                    s.question,
                    s.extra.get(k)
                );
            }
        }
    }
}
