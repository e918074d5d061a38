//! Fitting the local engine's trained heads: each question's labelled texts, embedded by the local
//! model exactly as the engine embeds a request's state, then a logistic head per question (the
//! math is in `providers::local::heads`). The seed sets give the shipped heads; `calibrate fit`
//! adds the user's labelled routing log and writes the result beside the local calibration file.

use crate::feature::Feature;
use crate::providers::local::heads::{self, Head};
use crate::providers::local::model::Model;
use crate::providers::local::state_text;
use crate::routing::features;
use crate::text;

use super::data::{self, RoutingItem};
use super::seeds::{self, DESTRUCTIVE_QUESTION};

/// One question's labelled texts: the text the engine reads, and whether the answer is yes.
pub struct Examples {
    pub question: String,
    pub texts: Vec<String>,
    pub yes: Vec<bool>,
    pub source: String,
}

/// The examples of the four routing features from `items`, and of the destructive question from
/// its seed set.
pub fn examples(items: &[RoutingItem], source: &str) -> Result<Vec<Examples>, String> {
    let mut out = Vec::new();
    for f in Feature::ALL {
        let mut e =
            Examples { question: f.name().to_string(), texts: Vec::new(), yes: Vec::new(), source: source.into() };
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
    };
    for s in seeds::destructive()? {
        d.texts.push(state_text(&data::destructive_request(&s.command)));
        d.yes.push(s.destructive);
    }
    out.push(d);
    Ok(out)
}

/// Each distinct text of `sets` embedded once (texts repeat across the routing features).
/// `progress(done, total)` is called as texts are embedded.
pub fn embed(
    model: &Model,
    sets: &[Examples],
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

/// Embeds every example once and fits a head per question.
pub fn fit(
    model: &Model,
    name: &str,
    sets: &[Examples],
    progress: impl FnMut(usize, usize),
) -> Result<Vec<Head>, String> {
    let cache = embed(model, sets, progress);
    sets.iter().map(|s| Ok(Head::fit(name, &s.question, &embedded(s, &cache), &s.yes, &s.source)?.0)).collect()
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
            let clamp = h.clamped.map(|c| format!(" (fitted {c}, clamped)")).unwrap_or_default();
            format!(
                "  {q:<36} n={:<4} yes={:<4} leave-one-out accuracy {:.3}  temperature {:.3}{clamp}",
                h.n, h.positives, h.loo_accuracy, h.temperature
            )
        })
        .collect()
}

/// `calibrate fit` with the local engine: fits a head per question on `items` (and the destructive
/// seed set), prints their leave-one-out figures, and with `apply` writes them to the local heads
/// file, where they win over the shipped ones.
pub fn fit_command(items: &[RoutingItem], source: &str, apply: bool) -> crate::error::Result<i32> {
    use crate::error::{Context, Error};

    let (name, model) = configured_model().map_err(Error::failure)?;
    let sets = examples(items, source).map_err(Error::failure)?;
    let fitted = fit(&model, &name, &sets, super::progress("texts")).map_err(Error::failure)?;
    outln!(
        "Trained heads for the local engine ({name}), leave-one-out (approximate: one Newton step from the full fit):"
    )?;
    for line in describe(&fitted) {
        outln!("{line}")?;
    }
    let path = crate::providers::local::local_heads_file();
    if apply {
        let f = file(&fitted, &format!("Fitted by `system1 calibrate fit` on {source}."));
        let text = serde_json::to_string_pretty(&f).unwrap_or_default() + "\n";
        crate::fsutil::write_private(&path, text.as_bytes()).context(|| format!("cannot write {}", path.display()))?;
        outln!("Wrote {} (it wins over the shipped heads for these questions).", path.display())?;
    } else {
        outln!("Nothing written; add --apply to write {}.", path.display())?;
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
        let cache = embed(&model, &sets, |_, _| {});
        let name = crate::providers::local::DEFAULT_MODEL;
        let fitted: Vec<Head> = sets
            .iter()
            .map(|s| Head::fit(name, &s.question, &embedded(s, &cache), &s.yes, &s.source).unwrap().0)
            .collect();
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
