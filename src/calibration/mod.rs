//! Confidence calibration, applied: one fitted temperature per (provider, model, question), with a
//! fit per option count for a question that has no fit of its own.
//!
//! File format (`calibration/calibration.json`, shipped inside the binary, and
//! `<install dir>/calibration.json`, fitted locally, which takes precedence):
//!
//! ```json
//! {"format": "system1-calibration", "version": 1,
//!  "fits": [{"provider": "local", "model": "all-MiniLM-L6-v2", "question": "read_only", "temperature": 1.02, "n": 281, ...},
//!           {"provider": "laya", "model": "typed-decisions", "options": 2, "temperature": 0.8, "n": 120, ...}]}
//! ```
//! A fit names either a `question` (the key the gateway asks under: a routing feature's name, or the
//! question text of a `system1_decide` call) or an `options` count. Extra fields (`n`, `accuracy`,
//! `ece_before`, `ece_after`, `source`, `fitted_at`) are kept and shown by `system1_capabilities`.
//! Rescaling is p_i^(1/T) / sum_j p_j^(1/T): it never changes which option wins.
//!
//! This is the runtime half, which the gateway uses and which imports nothing above it; fitting the
//! temperatures from labelled data is `crate::tuning`.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const FORMAT: &str = "system1-calibration";
pub const VERSION: u64 = 1;

/// The fits shipped with this build.
pub const SHIPPED: &str = include_str!("../../calibration/calibration.json");

/// The range a fitted temperature is clamped to, by `calibrate fit` and by the local engine's
/// trained heads: below 0.5 a fit on a small or separable sample turns a 0.24 top probability
/// into 0.99; above 5 it flattens every answer to a coin toss.
pub const TEMPERATURE_RANGE: (f64, f64) = (0.5, 5.0);

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Fit {
    pub provider: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<usize>,
    pub temperature: f64,
    /// Everything else the fit carries (n, accuracy, ECE, source, date).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct File {
    pub format: String,
    pub version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub fits: Vec<Fit>,
}

impl File {
    pub fn new(fits: Vec<Fit>) -> Self {
        File { format: FORMAT.to_string(), version: VERSION, note: None, fits }
    }

    pub fn parse(text: &str) -> Result<File, String> {
        crate::fsutil::parse_versioned(text)
    }
}

impl crate::fsutil::Versioned for File {
    const FORMAT: &'static str = FORMAT;
    const VERSION: u64 = VERSION;
    const WHAT: &'static str = "a calibration file";
    /// A fit is a few hundred bytes, and `calibrate fit` writes one per (provider, model, question
    /// or option count).
    const MAX_BYTES: u64 = 16 << 20;

    fn names(&self) -> (&str, u64) {
        (&self.format, self.version)
    }

    fn check(&self) -> Result<(), String> {
        for fit in &self.fits {
            if !(fit.temperature.is_finite() && fit.temperature > 0.0) {
                return Err(format!(
                    "temperature {} for {}/{} must be positive",
                    fit.temperature, fit.provider, fit.model
                ));
            }
            if fit.question.is_none() && fit.options.is_none() {
                return Err(format!(
                    "a fit for {}/{} names neither a question nor an option count",
                    fit.provider, fit.model
                ));
            }
        }
        Ok(())
    }
}

/// Where a loaded fit came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    Local,
    Shipped,
}

#[derive(Debug, Clone, Default)]
pub struct Calibration {
    /// Local fits first, so that a lookup finds them before the shipped ones.
    fits: Vec<(Origin, Fit)>,
    pub errors: Vec<String>,
}

impl Calibration {
    /// The shipped fits plus the install dir's file, when it exists. A broken one is reported and
    /// skipped; the shipped fits still apply. That file is `calibrate`'s own, read only when
    /// it is a regular file of at most 16 MiB in place: a FIFO there would hang every
    /// process that builds a gateway, a link to `/dev/zero` would fill its memory.
    pub fn load(path: &Path) -> Self {
        let mut cal = Calibration::default();
        match crate::fsutil::read_versioned::<File>(path) {
            Ok(Some(f)) => cal.fits.extend(f.fits.into_iter().map(|fit| (Origin::Local, fit))),
            Ok(None) => {}
            Err(e) => cal.errors.push(format!("{}: {e}", path.display())),
        }
        match File::parse(SHIPPED) {
            Ok(f) => cal.fits.extend(f.fits.into_iter().map(|fit| (Origin::Shipped, fit))),
            Err(e) => cal.errors.push(format!("shipped calibration: {e}")),
        }
        cal
    }

    #[cfg(test)]
    pub fn from_fits(fits: Vec<(Origin, Fit)>) -> Self {
        Calibration { fits, errors: Vec::new() }
    }

    /// The fit for this question: by question key first, then by option count. Fits for another
    /// provider or model never match.
    pub fn find(&self, provider: &str, model: &str, question: &str, n_options: usize) -> Option<&Fit> {
        self.find_with_origin(provider, model, question, n_options).map(|(_, f)| f)
    }

    /// [`Calibration::find`], with where the fit came from.
    pub fn find_with_origin(
        &self,
        provider: &str,
        model: &str,
        question: &str,
        n_options: usize,
    ) -> Option<(Origin, &Fit)> {
        let same_engine = |(_, f): &&(Origin, Fit)| f.provider == provider && f.model == model;
        let fits = || self.fits.iter().filter(same_engine);
        // The question as the local engine's heads match it (case and white space aside), so that
        // a wording a head answers gets that head's fit too; the exact wording first.
        fits()
            .find(|(_, f)| f.question.as_deref() == Some(question))
            .or_else(|| {
                let key = crate::text::question_key(question);
                fits().find(|(_, f)| f.question.as_deref().is_some_and(|q| crate::text::question_key(q) == key))
            })
            .or_else(|| fits().find(|(_, f)| f.question.is_none() && f.options == Some(n_options)))
            .map(|(o, f)| (*o, f))
    }

    pub fn loaded(&self) -> impl Iterator<Item = &(Origin, Fit)> {
        self.fits.iter()
    }

    /// Applies the fit for this question, if one matches, to an answer of `provider`'s `model`.
    /// Without reported probabilities only a two-option answer can be rescaled (the other option
    /// has the rest); any other answer without them stays as it is (`None`).
    pub fn apply(&self, provider: &str, model: &str, question: &str, answer: &Answered) -> Option<Calibrated> {
        let fit = self.find(provider, model, question, answer.options)?;
        let completed: Vec<f64>;
        let probabilities = match answer.probabilities {
            Some(p) => p,
            None if answer.options == 2 => {
                let c = answer.confidence;
                completed = (0..2).map(|i| if i == answer.decision { c } else { 1.0 - c }).collect();
                &completed
            }
            None => return None,
        };
        let scaled: Vec<f64> =
            rescale(probabilities, fit.temperature).into_iter().map(|p| crate::text::round(p, 6)).collect();
        Some(Calibrated { confidence: scaled.get(answer.decision).copied().unwrap_or(0.0), probabilities: scaled })
    }
}

/// A checked answer, as calibration reads it.
#[derive(Debug, Clone, Copy)]
pub struct Answered<'a> {
    /// How many options the question had.
    pub options: usize,
    /// The index of the option picked.
    pub decision: usize,
    pub confidence: f64,
    /// Every option's probability, in option order, when the engine reported them.
    pub probabilities: Option<&'a [f64]>,
}

/// An answer after its fit: the picked option's probability and every option's, to 6 decimals.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibrated {
    pub confidence: f64,
    pub probabilities: Vec<f64>,
}

/// Rescales probabilities with temperature `t`: p_i^(1/t), renormalised. Zeros stay zero.
pub fn rescale(probabilities: &[f64], t: f64) -> Vec<f64> {
    let beta = 1.0 / t;
    // Work in log space, shifted by the largest log-probability, so tiny p do not underflow to 0/0.
    let logs: Vec<f64> =
        probabilities.iter().map(|&p| if p > 0.0 { beta * p.ln() } else { f64::NEG_INFINITY }).collect();
    let max = logs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return probabilities.to_vec();
    }
    let exps: Vec<f64> = logs.iter().map(|l| (l - max).exp()).collect();
    let sum: f64 = exps.iter().sum();
    exps.iter().map(|e| e / sum).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(question: Option<&str>, options: Option<usize>, model: &str, t: f64) -> Fit {
        Fit {
            provider: "laya".into(),
            model: model.into(),
            question: question.map(String::from),
            options,
            temperature: t,
            extra: Map::new(),
        }
    }

    /// The temperature the shipped file has for the local engine's `question`.
    fn shipped_t(question: &str) -> Option<f64> {
        let f = File::parse(SHIPPED).expect("shipped calibration parses");
        f.fits.iter().find(|x| x.question.as_deref() == Some(question)).map(|x| x.temperature)
    }

    /// Only measured fits ship: for the local engine, one per question it answers, each with its
    /// provenance and its figures before and after. (`tuning::heads` checks the figures.)
    #[test]
    fn shipped_fits_are_measured_with_their_provenance() {
        let f = File::parse(SHIPPED).expect("shipped calibration parses");
        let questions: Vec<&str> = f.fits.iter().filter_map(|x| x.question.as_deref()).collect();
        assert_eq!(questions, ["read_only", "design", "review", "specified", "Is this shell command destructive?"]);
        for fit in &f.fits {
            assert_eq!((fit.provider.as_str(), fit.model.as_str()), ("local", "all-MiniLM-L6-v2"), "{fit:?}");
            assert!((TEMPERATURE_RANGE.0..=TEMPERATURE_RANGE.1).contains(&fit.temperature), "{fit:?}");
            for key in ["engine", "data_set", "n", "fitted_at", "answers", "accuracy", "ece_before", "ece_after"] {
                assert!(fit.extra.contains_key(key), "{key} in {fit:?}");
            }
        }
    }

    #[test]
    fn a_fit_matches_its_question_as_the_heads_do() {
        let cal = Calibration::from_fits(vec![
            (Origin::Local, fit(Some("Is this shell command destructive?"), None, "m", 0.7)),
            (Origin::Local, fit(Some("Ship it?"), None, "m", 0.8)),
            (Origin::Local, fit(Some("ship  IT?"), None, "m", 0.9)),
        ]);
        let t = |q: &str| cal.find("laya", "m", q, 2).map(|f| f.temperature);
        assert_eq!(t("  is this SHELL command\tdestructive? "), Some(0.7));
        assert_eq!(t("Is this shell command destructive"), None, "punctuation is part of the question");
        assert_eq!(t("ship  IT?"), Some(0.9), "the exact wording first");
        assert_eq!(t("SHIP IT?"), Some(0.8));
    }

    #[test]
    fn question_fit_beats_option_count_and_local_beats_shipped() {
        let cal = Calibration::from_fits(vec![
            (Origin::Local, fit(Some("design"), None, "typed-decisions", 0.5)),
            (Origin::Shipped, fit(Some("design"), None, "typed-decisions", 0.31)),
            (Origin::Shipped, fit(None, Some(2), "typed-decisions", 0.9)),
        ]);
        assert_eq!(cal.find("laya", "typed-decisions", "design", 2).map(|f| f.temperature), Some(0.5));
        assert_eq!(cal.find("laya", "typed-decisions", "other question", 2).map(|f| f.temperature), Some(0.9));
        assert!(cal.find("laya", "typed-decisions", "other question", 3).is_none());
        assert!(cal.find("laya", "english", "design", 2).is_none(), "a fit for another model is ignored");
        assert!(cal.find("von", "typed-decisions", "design", 2).is_none());
    }

    #[test]
    fn a_local_file_is_loaded_before_the_shipped_fits_and_a_broken_one_is_reported() {
        let _tmp = crate::fsutil::scratch_dir();
        let dir = _tmp.path().to_path_buf();
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("calibration.json");
        let file = File::new(vec![fit(Some("design"), None, "typed-decisions", 0.5)]);
        std::fs::write(&path, serde_json::to_string(&file).expect("encode")).expect("write");
        let cal = Calibration::load(&path);
        assert!(cal.errors.is_empty(), "{:?}", cal.errors);
        assert_eq!(cal.find("laya", "typed-decisions", "design", 2).map(|f| f.temperature), Some(0.5));
        assert_eq!(cal.find("laya", "typed-decisions", "review", 2), None, "no fit is shipped for Laya");
        let review = cal.find("local", "all-MiniLM-L6-v2", "review", 2).map(|f| f.temperature);
        assert_eq!(review, shipped_t("review"), "shipped");
        assert_eq!(cal.loaded().next().map(|(o, _)| *o), Some(Origin::Local));

        for broken in [
            "{",
            r#"{"format": "other", "version": 1, "fits": []}"#,
            r#"{"format": "system1-calibration", "version": 2, "fits": []}"#,
            r#"{"format": "system1-calibration", "version": 1, "fits": [{"provider": "laya", "model": "m", "question": "q", "temperature": 0}]}"#,
        ] {
            std::fs::write(&path, broken).expect("write");
            let cal = Calibration::load(&path);
            assert_eq!(cal.errors.len(), 1, "{broken}: {:?}", cal.errors);
            assert!(cal.loaded().all(|(o, _)| *o == Origin::Shipped), "{broken}");
            assert_eq!(cal.find("laya", "typed-decisions", "design", 2), None, "{broken}");
            assert_eq!(cal.find("local", "all-MiniLM-L6-v2", "design", 2).map(|f| f.temperature), shipped_t("design"));
        }
        let _ = std::fs::remove_dir_all(&dir);
        let cal = Calibration::load(&dir.join("missing.json"));
        assert!(cal.errors.is_empty(), "a missing fits file is not an error");
    }

    /// The shipped file was written as `calibrate fit --apply` writes the install dir's (pretty,
    /// with a final newline): read and written back through the versioned-file wrapper, not a byte
    /// changes.
    #[test]
    fn a_fits_file_read_and_written_back_is_the_same_bytes() {
        let _tmp = crate::fsutil::scratch_dir();
        let dir = _tmp.path().to_path_buf();
        let path = dir.join("calibration.json");
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(&path, SHIPPED).expect("write");
        let file = crate::fsutil::read_versioned::<File>(&path).expect("reads").expect("is there");
        crate::fsutil::write_versioned(&path, &file).expect("writes");
        assert_eq!(std::fs::read_to_string(&path).expect("read back"), SHIPPED);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_fit_applies_to_an_answer_with_probabilities_or_with_two_options() {
        let cal = Calibration::from_fits(vec![
            (Origin::Shipped, fit(Some("design"), None, "typed-decisions", 0.5)),
            (Origin::Shipped, fit(None, Some(3), "typed-decisions", 2.0)),
        ]);
        let apply = |question: &str, options: usize, decision: usize, confidence: f64, p: Option<&[f64]>| {
            let answer = Answered { options, decision, confidence, probabilities: p };
            cal.apply("laya", "typed-decisions", question, &answer)
        };
        // T = 0.5 squares: 0.36 / 0.52 and 0.16 / 0.52, to 6 decimals.
        let two = Calibrated { confidence: 0.692308, probabilities: vec![0.692308, 0.307692] };
        assert_eq!(apply("design", 2, 0, 0.6, Some(&[0.6, 0.4])), Some(two.clone()));
        assert_eq!(apply("design", 2, 0, 0.6, None), Some(two), "the other option has the rest");
        let flipped = apply("design", 2, 1, 0.6, None).expect("fit");
        assert_eq!(flipped.probabilities, [0.307692, 0.692308], "the rest goes to the option not picked");
        // The option-count fit (T = 2, square roots: 0.69282, 0.6 and 0.4 over 1.69282), for the
        // option the engine picked.
        let three = apply("other", 3, 1, 0.36, Some(&[0.48, 0.36, 0.16])).expect("fit");
        assert_eq!(three.probabilities, [0.40927, 0.354438, 0.236292]);
        assert_eq!(three.confidence, 0.354438);
        assert_eq!(apply("other", 3, 0, 0.5, None), None, "three options without probabilities stay as they are");
        assert_eq!(apply("other", 4, 0, 0.5, Some(&[0.4, 0.3, 0.2, 0.1])), None, "no fit for four options");
        let other_model = Answered { options: 2, decision: 0, confidence: 0.6, probabilities: None };
        assert_eq!(cal.apply("laya", "english", "design", &other_model), None);
    }

    #[test]
    fn rescaling_sharpens_or_softens_but_keeps_the_winner() {
        let p = [0.6, 0.3, 0.1];
        let sharp = rescale(&p, 0.5);
        // p^2 / sum(p^2) = 0.36/0.46, 0.09/0.46, 0.01/0.46
        assert!((sharp[0] - 0.36 / 0.46).abs() < 1e-12);
        assert!((sharp[2] - 0.01 / 0.46).abs() < 1e-12);
        let soft = rescale(&p, 2.0);
        assert!(soft[0] < 0.6 && soft[0] > soft[1] && soft[1] > soft[2]);
        assert!((soft.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(rescale(&[1.0, 0.0], 0.3), vec![1.0, 0.0]);
        assert_eq!(rescale(&p, 1.0).iter().map(|x| (x * 1e9).round()).collect::<Vec<_>>(), vec![6e8, 3e8, 1e8]);
    }
}
