//! One question's calibration, measured before and after: what `calibrate fit` prints, plots and
//! writes. Pure: it takes samples with raw probabilities and returns numbers.

use super::fit::{self, AtThreshold, Bin, Binning, Sample, TemperatureFit};

/// The fit and the measures of one question (or of one option count, for the fallback fit).
#[derive(Debug, Clone)]
pub struct QuestionFit {
    pub provider: String,
    pub model: String,
    /// The calibration key, or None for the option-count fit.
    pub question: Option<String>,
    pub options: usize,
    pub n: usize,
    /// Where the samples came from, e.g. "45 log + 50 seed".
    pub sources: String,
    pub accuracy: f64,
    pub fit: TemperatureFit,
    /// Whether n reached [`fit::MIN_N`]; below it the question is left to the option-count fit.
    pub own_fit: bool,
    /// The temperature the "after" figures use: the own fit, or the fallback's.
    pub applied_t: f64,
    pub binning: Binning,
    pub bins_before: Vec<Bin>,
    pub bins_after: Vec<Bin>,
    pub ece_before: f64,
    pub ece_after: f64,
    pub thresholds: Vec<AtThreshold>,
}

/// Measures `samples` before calibration and after temperature `applied` (when the question has
/// too few samples for its own fit), or after its own fit.
pub fn measure(
    provider: &str,
    model: &str,
    question: Option<&str>,
    samples: &[Sample],
    sources: String,
    fallback_t: Option<f64>,
) -> QuestionFit {
    let fit = fit::fit_temperature(samples);
    let own_fit = samples.len() >= fit::MIN_N;
    let applied_t = if own_fit { fit.temperature } else { fallback_t.unwrap_or(1.0) };
    let before: Vec<fit::Point> = samples.iter().map(|s| s.point(1.0)).collect();
    let after: Vec<fit::Point> = samples.iter().map(|s| s.point(applied_t)).collect();
    let (binning, k) = fit::auto_binning(samples.len());
    let bins_before = fit::bins(&before, binning, k);
    let bins_after = fit::bins(&after, binning, k);
    QuestionFit {
        provider: provider.to_string(),
        model: model.to_string(),
        question: question.map(String::from),
        options: samples.first().map(|s| s.probs.len()).unwrap_or(2),
        n: samples.len(),
        sources,
        accuracy: fit::accuracy(&before).unwrap_or(0.0),
        fit,
        own_fit,
        applied_t,
        binning,
        ece_before: fit::ece(&bins_before),
        ece_after: fit::ece(&bins_after),
        bins_before,
        bins_after,
        thresholds: fit::THRESHOLDS.iter().map(|&t| fit::at_threshold(&after, t)).collect(),
    }
}

impl QuestionFit {
    pub fn label(&self) -> String {
        match &self.question {
            Some(q) => q.clone(),
            None => format!("any {}-option question (fallback)", self.options),
        }
    }

    /// The printed block for this question.
    pub fn text(&self) -> String {
        let mut s = format!(
            "{}  [{}/{}]  n={} ({})  accuracy {:.1}%\n",
            self.label(),
            self.provider,
            self.model,
            self.n,
            self.sources,
            100.0 * self.accuracy
        );
        let t_line = if !self.own_fit {
            format!(
                "  too few for its own fit (< {}): the option-count fit applies, T = {:.3}\n",
                fit::MIN_N,
                self.applied_t
            )
        } else if !self.fit.improved {
            format!("  T = 1 kept: no temperature lowers the NLL ({:.4})\n", self.fit.nll_before)
        } else {
            let how = if self.fit.temperature < 1.0 {
                "sharpened: the engine was under-confident"
            } else {
                "softened: the engine was over-confident"
            };
            let clamp = match self.fit.clamped {
                Some(f) => format!(
                    ", clamped to [{}, {}]: the fit on these {} answers wanted T = {f:.3}",
                    fit::CLAMP.0,
                    fit::CLAMP.1,
                    self.n
                ),
                None => String::new(),
            };
            format!(
                "  T = {:.3} ({how}{clamp})  NLL {:.4} -> {:.4}\n",
                self.fit.temperature, self.fit.nll_before, self.fit.nll_after
            )
        };
        s.push_str(&t_line);
        let kind = match self.binning {
            Binning::EqualMass => "equal-mass",
            Binning::EqualWidth => "equal-width",
        };
        let counts: Vec<String> = self.bins_after.iter().map(|b| b.n.to_string()).collect();
        let answers = if counts == ["1"] { "answer" } else { "answers" };
        s.push_str(&format!(
            "  ECE {:.3} -> {:.3}  ({} of {} {answers})\n",
            self.ece_before,
            self.ece_after,
            crate::text::count(self.bins_after.len() as u64, &format!("{kind} bin")),
            counts.join("/")
        ));
        let row = |bins: &[Bin]| {
            bins.iter()
                .map(|b| format!("{:.2}-{:.2}: conf {:.2} acc {:.2}", b.lo, b.hi, b.confidence, b.accuracy))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        s.push_str(&format!("    before  {}\n    after   {}\n", row(&self.bins_before), row(&self.bins_after)));
        s.push_str("  threshold  coverage  accuracy (calibrated)\n");
        for t in &self.thresholds {
            s.push_str(&format!(
                "    {:.2}      {:>5.1}%    {}\n",
                t.threshold,
                100.0 * t.coverage,
                t.accuracy.map(|a| format!("{:.1}%", 100.0 * a)).unwrap_or_else(|| "-".into())
            ));
        }
        s
    }
}

/// The lowest threshold at which every question fit reaches `target` accuracy on what it covers (and
/// covers something). None when no threshold does.
pub fn choose_threshold(measured: &[&QuestionFit], target: f64) -> Option<f64> {
    if measured.is_empty() {
        return None;
    }
    fit::THRESHOLDS.iter().copied().find(|&t| {
        measured.iter().all(|r| {
            r.thresholds
                .iter()
                .find(|a| a.threshold == t)
                .is_some_and(|a| a.covered > 0 && a.accuracy.is_some_and(|acc| acc >= target - 1e-12))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(p: f64, right: bool) -> Sample {
        Sample { probs: vec![p, 1.0 - p], correct: if right { 0 } else { 1 } }
    }

    #[test]
    fn small_questions_use_the_fallback_temperature() {
        let few: Vec<Sample> = (0..5).map(|i| s(0.8, i < 4)).collect();
        let r = measure("mock", "m", Some("q"), &few, "5 seed".into(), Some(0.5));
        assert!(!r.own_fit);
        assert_eq!(r.applied_t, 0.5);
        // At T = 0.5, 0.8 becomes 0.64 / 0.68 = 0.941..; one bin, accuracy 0.8.
        assert!((r.ece_after - (0.64 / 0.68 - 0.8)).abs() < 1e-9);
        assert!((r.ece_before - 0.0).abs() < 1e-12);
        assert!(r.text().contains("too few for its own fit"));
    }

    #[test]
    fn a_clamped_fit_says_what_it_fitted() {
        // Right every time at 0.7: the NLL wants T at the search bound, 0.05; the clamp keeps 0.5.
        let always: Vec<Sample> = (0..30).map(|_| s(0.7, true)).collect();
        let r = measure("mock", "m", Some("q"), &always, "30 seed".into(), None);
        assert_eq!((r.applied_t, r.fit.temperature), (0.5, 0.5));
        assert!(
            r.text().contains(
                "T = 0.500 (sharpened: the engine was under-confident, clamped to [0.5, 5]: the fit on these 30 answers wanted T = 0.050)"
            ),
            "{}",
            r.text()
        );
        // At T = 0.5, 0.7 becomes 0.49 / 0.58; every answer is right, so the ECE is 1 - that.
        assert!((r.ece_after - (1.0 - 0.49 / 0.58)).abs() < 1e-9);
    }

    #[test]
    fn threshold_choice_needs_every_question() {
        // a: right at high confidence only; b: right everywhere.
        let a: Vec<Sample> = (0..20).map(|i| s(if i < 10 { 0.55 } else { 0.9 }, i >= 10 || i % 2 == 0)).collect();
        let b: Vec<Sample> = (0..20).map(|_| s(0.7, true)).collect();
        let ra = measure("mock", "m", Some("a"), &a, String::new(), None);
        let rb = measure("mock", "m", Some("b"), &b, String::new(), None);
        // ra: at 0.5 accuracy 15/20 = 0.75; from the first threshold above the low group's calibrated
        // confidence, only the high group (all right) is covered. rb's confidences rise to the bound.
        let t = choose_threshold(&[&ra, &rb], 0.85).expect("a threshold exists");
        let low = ra.thresholds.iter().find(|x| x.threshold == t).unwrap();
        assert!(low.accuracy.unwrap() >= 0.85);
        let before: Vec<f64> = fit::THRESHOLDS.iter().copied().filter(|&x| x < t).collect();
        for x in before {
            let at = ra.thresholds.iter().chain(rb.thresholds.iter()).filter(|a| a.threshold == x);
            assert!(at.clone().any(|a| a.accuracy.is_none_or(|acc| acc < 0.85) || a.covered == 0));
        }
        assert_eq!(choose_threshold(&[&ra], 1.01), None);
        assert_eq!(choose_threshold(&[], 0.85), None);
    }
}
