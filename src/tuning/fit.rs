//! The calibration math: temperature scaling fitted on the negative log-likelihood, and the
//! measures `calibrate fit` and `evaluate` print (ECE with its bins, accuracy and coverage at a
//! threshold, AUROC).
//!
//! A sample is one answered question: the engine's raw probability per option and the index of the
//! option the teacher says is right. Scaling by temperature T gives q_i = p_i^b / sum_j p_j^b with
//! b = 1/T. The mean NLL, -log q_y = -b l_y + logsumexp(b l) with l = log p, is convex in b (a
//! log-sum-exp of functions linear in b, minus a linear term), so it has one minimum and a golden
//! section search finds it; the search runs on ln b, which keeps its unimodality and spreads the
//! bracket evenly between sharpening and softening. Scaling never reorders the options, so the
//! winner and the accuracy stay as they were; only the confidences move.

use crate::calibration::rescale;

/// The search runs over this range, so that the temperature the data asks for is known even when
/// the clamp then moves it.
pub const SEARCH_MIN: f64 = 0.05;
pub const SEARCH_MAX: f64 = 20.0;

/// A fitted temperature is clamped to this range, as Laya's own calibration does.
pub const CLAMP: (f64, f64) = crate::calibration::TEMPERATURE_RANGE;

/// Below this many samples a question gets no fit of its own; the option-count fit covers it.
pub const MIN_N: usize = 20;

/// Probabilities are floored here before the logarithm, so an engine's hard 0 stays finite.
const P_FLOOR: f64 = 1e-12;

/// One answered question with its teacher label.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The engine's raw (uncalibrated) probability of each option, in option order.
    pub probs: Vec<f64>,
    /// Index of the right option.
    pub correct: usize,
}

impl Sample {
    /// A yes/no answer (options in the order yes, no) with P(yes) `p_yes`, against the label `yes`.
    pub fn yes_no(p_yes: f64, yes: bool) -> Sample {
        Sample { probs: vec![p_yes, 1.0 - p_yes], correct: if yes { 0 } else { 1 } }
    }

    /// The winner and its confidence after scaling with temperature `t`.
    pub fn top(&self, t: f64) -> (usize, f64) {
        top(&rescale(&self.probs, t))
    }

    /// (confidence of the winner, whether the winner is right) at temperature `t`.
    pub fn point(&self, t: f64) -> Point {
        let (i, c) = self.top(t);
        Point { confidence: c, correct: i == self.correct }
    }
}

/// The index and value of the largest probability (the first one on ties, as the engines do).
pub fn top(p: &[f64]) -> (usize, f64) {
    let mut best = (0, f64::NEG_INFINITY);
    for (i, &x) in p.iter().enumerate() {
        if x > best.1 {
            best = (i, x);
        }
    }
    best
}

/// A confidence and whether the answer it belongs to was right.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub confidence: f64,
    pub correct: bool,
}

/// Mean negative log-likelihood of the right options at b = 1/T.
pub fn nll(samples: &[Sample], beta: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let total: f64 = samples
        .iter()
        .map(|s| {
            let logs: Vec<f64> = s.probs.iter().map(|&p| beta * p.max(P_FLOOR).ln()).collect();
            let max = logs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let lse = max + logs.iter().map(|l| (l - max).exp()).sum::<f64>().ln();
            lse - logs.get(s.correct).copied().unwrap_or(f64::NEG_INFINITY)
        })
        .sum();
    total / samples.len() as f64
}

/// The result of fitting one temperature.
#[derive(Debug, Clone, PartialEq)]
pub struct TemperatureFit {
    /// The temperature to apply: the fitted one, within [`CLAMP`].
    pub temperature: f64,
    /// The fitted temperature, when the clamp moved it.
    pub clamped: Option<f64>,
    pub nll_before: f64,
    /// The NLL at `temperature` (after the clamp).
    pub nll_after: f64,
    /// False when the search found nothing better than T = 1, which is then kept.
    pub improved: bool,
}

/// Fits T by golden-section search on ln(1/T) in [ln(1/SEARCH_MAX), ln(1/SEARCH_MIN)], then clamps
/// it to [`CLAMP`]. Keeps T = 1 unless the NLL improves on it by more than a rounding error.
pub fn fit_temperature(samples: &[Sample]) -> TemperatureFit {
    let before = nll(samples, 1.0);
    let keep =
        TemperatureFit { temperature: 1.0, clamped: None, nll_before: before, nll_after: before, improved: false };
    if samples.is_empty() {
        return keep;
    }
    let f = |u: f64| nll(samples, u.exp());
    let inv_phi = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = ((1.0 / SEARCH_MAX).ln(), (1.0 / SEARCH_MIN).ln());
    let mut c = b - inv_phi * (b - a);
    let mut d = a + inv_phi * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    while b - a > 1e-9 {
        if fc <= fd {
            b = d;
            d = c;
            fd = fc;
            c = b - inv_phi * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + inv_phi * (b - a);
            fd = f(d);
        }
    }
    let fitted = 1.0 / ((a + b) / 2.0).exp();
    let temperature = fitted.clamp(CLAMP.0, CLAMP.1);
    let after = nll(samples, 1.0 / temperature);
    // Relative tolerance: a flat NLL (all 50/50 answers) or an already calibrated engine keeps T = 1.
    // The NLL is convex, so a clamped optimum still improves on T = 1 when the fitted one does.
    if after < before - 1e-9 * before.abs().max(1.0) {
        let clamped = (temperature != fitted).then_some(fitted);
        TemperatureFit { temperature, clamped, nll_before: before, nll_after: after, improved: true }
    } else {
        keep
    }
}

/// How the reliability bins were cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binning {
    /// Each bin holds (about) the same number of answers; used for small samples, where fixed-width
    /// bins would leave most bins empty and a few bins of one or two answers.
    EqualMass,
    /// Ten bins of width 0.1 over [0, 1]; empty bins are dropped.
    EqualWidth,
}

/// One reliability bin: its confidence range, size, mean confidence and accuracy.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Bin {
    pub lo: f64,
    pub hi: f64,
    pub n: usize,
    pub confidence: f64,
    pub accuracy: f64,
}

/// Samples below this size are binned by equal mass.
pub const EQUAL_MASS_BELOW: usize = 100;

/// The default binning: equal mass, about ten answers a bin (at most ten bins) below
/// [`EQUAL_MASS_BELOW`] answers; ten equal-width bins from there on.
pub fn auto_binning(n: usize) -> (Binning, usize) {
    if n < EQUAL_MASS_BELOW { (Binning::EqualMass, (n / 10).clamp(1, 10)) } else { (Binning::EqualWidth, 10) }
}

/// The reliability bins of `points`.
pub fn bins(points: &[Point], binning: Binning, k: usize) -> Vec<Bin> {
    let mut sorted: Vec<Point> = points.to_vec();
    sorted.sort_by(|x, y| x.confidence.total_cmp(&y.confidence));
    let groups: Vec<&[Point]> = match binning {
        Binning::EqualMass => {
            let n = sorted.len();
            let k = k.clamp(1, n.max(1));
            // Bin i takes [i*n/k, (i+1)*n/k), so sizes differ by at most one; then each cut moves
            // past answers with the same confidence, which must share a bin (an engine that
            // always says 0.7 has one bin, not k bins that differ only by chance).
            let mut cuts: Vec<usize> = (0..=k).map(|i| i * n / k).collect();
            for c in cuts.iter_mut().take(k).skip(1) {
                while *c < n && *c > 0 && sorted[*c].confidence == sorted[*c - 1].confidence {
                    *c += 1;
                }
            }
            for i in 1..cuts.len() {
                cuts[i] = cuts[i].max(cuts[i - 1]);
            }
            cuts.windows(2).map(|w| &sorted[w[0]..w[1]]).filter(|g| !g.is_empty()).collect()
        }
        Binning::EqualWidth => {
            let k = k.max(1);
            let mut out = Vec::new();
            let mut start = 0;
            for i in 0..k {
                let hi = (i + 1) as f64 / k as f64;
                let mut end = start;
                // The last bin is closed on the right so that confidence 1.0 lands in it.
                while end < sorted.len() && (sorted[end].confidence < hi || i == k - 1) {
                    end += 1;
                }
                if end > start {
                    out.push(&sorted[start..end]);
                }
                start = end;
            }
            out
        }
    };
    groups
        .into_iter()
        .map(|g| {
            let n = g.len();
            Bin {
                lo: g[0].confidence,
                hi: g[n - 1].confidence,
                n,
                confidence: g.iter().map(|p| p.confidence).sum::<f64>() / n as f64,
                accuracy: g.iter().filter(|p| p.correct).count() as f64 / n as f64,
            }
        })
        .collect()
}

/// Expected calibration error: the size-weighted mean gap between confidence and accuracy.
pub fn ece(bins: &[Bin]) -> f64 {
    let n: usize = bins.iter().map(|b| b.n).sum();
    if n == 0 {
        return 0.0;
    }
    bins.iter().map(|b| b.n as f64 * (b.confidence - b.accuracy).abs()).sum::<f64>() / n as f64
}

/// Share of answers right.
pub fn accuracy(points: &[Point]) -> Option<f64> {
    if points.is_empty() {
        return None;
    }
    Some(points.iter().filter(|p| p.correct).count() as f64 / points.len() as f64)
}

/// At threshold `t`: the share of answers whose confidence reaches it (coverage), and the accuracy
/// of those (None when none do).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AtThreshold {
    pub threshold: f64,
    pub covered: usize,
    pub coverage: f64,
    pub accuracy: Option<f64>,
}

pub fn at_threshold(points: &[Point], t: f64) -> AtThreshold {
    // A tiny slack so that a confidence printed as 0.6 counts at threshold 0.6.
    let kept: Vec<Point> = points.iter().copied().filter(|p| p.confidence >= t - 1e-12).collect();
    AtThreshold {
        threshold: t,
        covered: kept.len(),
        coverage: if points.is_empty() { 0.0 } else { kept.len() as f64 / points.len() as f64 },
        accuracy: accuracy(&kept),
    }
}

/// The thresholds `calibrate fit` reports and chooses from.
pub const THRESHOLDS: [f64; 9] = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9];

/// Area under the ROC curve of `score` for telling positives from negatives: the probability that
/// a random positive scores above a random negative, ties counting half. None without both classes.
pub fn auroc(scored: &[(f64, bool)]) -> Option<f64> {
    let pos: Vec<f64> = scored.iter().filter(|(_, y)| *y).map(|(s, _)| *s).collect();
    let neg: Vec<f64> = scored.iter().filter(|(_, y)| !*y).map(|(s, _)| *s).collect();
    if pos.is_empty() || neg.is_empty() {
        return None;
    }
    // Rank-sum (Mann-Whitney U) with mid-ranks for ties: O(n log n).
    let mut all: Vec<(f64, bool)> = scored.to_vec();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut rank_sum_pos = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j < all.len() && all[j].0 == all[i].0 {
            j += 1;
        }
        let mid_rank = (i + 1 + j) as f64 / 2.0; // ranks i+1..=j
        rank_sum_pos += mid_rank * all[i..j].iter().filter(|(_, y)| *y).count() as f64;
        i = j;
    }
    let (np, nn) = (pos.len() as f64, neg.len() as f64);
    Some((rank_sum_pos - np * (np + 1.0) / 2.0) / (np * nn))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binary(p_winner: f64, winner_right: bool) -> Sample {
        Sample { probs: vec![p_winner, 1.0 - p_winner], correct: if winner_right { 0 } else { 1 } }
    }

    fn group(p: f64, n: usize, right: usize) -> Vec<Sample> {
        (0..n).map(|i| binary(p, i < right)).collect()
    }

    /// At T = 0.5 the probabilities (2/3, 1/3) become (0.8, 0.2) and (3/4, 1/4) become (0.9, 0.1);
    /// (4/7, 2/7, 1/7) becomes (16, 4, 1)/21. Each group below is right exactly that often, so the
    /// NLL gradient of every group vanishes at b = 2: the optimum is T = 0.5 exactly.
    fn known_half() -> Vec<Sample> {
        let mut s = group(2.0 / 3.0, 5, 4);
        s.extend(group(0.75, 10, 9));
        let three = |c| Sample { probs: vec![4.0 / 7.0, 2.0 / 7.0, 1.0 / 7.0], correct: c };
        s.extend((0..16).map(|_| three(0)));
        s.extend((0..4).map(|_| three(1)));
        s.push(three(2));
        s
    }

    /// The NLL derivative in b, computed by hand from its closed form: sum over samples of
    /// E_q[l] - l_y. Zero at the optimum.
    fn gradient(samples: &[Sample], beta: f64) -> f64 {
        samples
            .iter()
            .map(|s| {
                let l: Vec<f64> = s.probs.iter().map(|p| p.ln()).collect();
                let w: Vec<f64> = l.iter().map(|x| (beta * x).exp()).collect();
                let z: f64 = w.iter().sum();
                l.iter().zip(&w).map(|(x, wi)| x * wi / z).sum::<f64>() - l[s.correct]
            })
            .sum()
    }

    #[test]
    fn recovers_a_known_temperature() {
        let data = known_half();
        assert!(gradient(&data, 2.0).abs() < 1e-12, "the data set is built with its optimum at b = 2");
        let fit = fit_temperature(&data);
        assert!(fit.improved);
        assert!((fit.temperature - 0.5).abs() < 1e-6, "T = {}", fit.temperature);
        assert!(fit.nll_after < fit.nll_before);
        // Check the NLL value at the optimum against a direct computation from the scaled probabilities.
        let direct: f64 = data.iter().map(|s| -rescale(&s.probs, 0.5)[s.correct].ln()).sum::<f64>() / data.len() as f64;
        assert!((fit.nll_after - direct).abs() < 1e-9);
    }

    #[test]
    fn recovers_a_temperature_from_sampled_labels() {
        // Raw logit z on a grid; the true probability of the winner is sigmoid(z / T) with T = 2
        // (an over-confident engine). Labels drawn with a fixed-seed generator.
        let mut state: u64 = 0x9e3779b97f4a7c15;
        let mut uniform = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut data = Vec::new();
        for i in 0..20_000 {
            let z = 0.1 + 4.0 * (i % 100) as f64 / 100.0;
            let p = 1.0 / (1.0 + (-z).exp());
            let truth = 1.0 / (1.0 + (-z / 2.0).exp());
            data.push(binary(p, uniform() < truth));
        }
        let fit = fit_temperature(&data);
        assert!((fit.temperature - 2.0).abs() < 0.1, "T = {}", fit.temperature);
    }

    #[test]
    fn the_winner_never_changes() {
        let data = known_half();
        let fit = fit_temperature(&data);
        for s in &data {
            assert_eq!(s.top(1.0).0, s.top(fit.temperature).0);
        }
        for t in [SEARCH_MIN, 0.3, 3.0, SEARCH_MAX] {
            let p = [0.2, 0.5, 0.3];
            assert_eq!(top(&rescale(&p, t)).0, 1);
        }
    }

    #[test]
    fn keeps_t_1_when_nothing_improves() {
        // Right 4 times in 5 at confidence 0.8: already calibrated, the optimum is b = 1.
        let fit = fit_temperature(&group(0.8, 5, 4));
        assert_eq!(fit.temperature, 1.0);
        assert!(!fit.improved);
        // Every answer 50/50: the NLL does not depend on T at all.
        let fit = fit_temperature(&group(0.5, 30, 12));
        assert_eq!((fit.temperature, fit.improved), (1.0, false));
        assert_eq!(fit_temperature(&[]).temperature, 1.0);
    }

    #[test]
    fn separable_data_is_clamped_and_says_what_it_fitted() {
        // Always right at 0.7: the NLL falls all the way to the search bound; the clamp keeps 0.5.
        let fit = fit_temperature(&group(0.7, 20, 20));
        assert_eq!(fit.temperature, CLAMP.0);
        assert!((fit.clamped.unwrap() - SEARCH_MIN).abs() < 1e-6, "{fit:?}");
        assert!(fit.improved);
        // The NLL after is the one at the clamped T: -ln(0.7^2 / (0.7^2 + 0.3^2)).
        assert!((fit.nll_after + (0.49f64 / 0.58).ln()).abs() < 1e-12, "{fit:?}");
        // Right 3 times in 5 at 0.95: the fitted T solves sigmoid(logit(0.95) / T) = 0.6, far above 5.
        let fit = fit_temperature(&group(0.95, 20, 12));
        let want = (0.95f64 / 0.05).ln() / (0.6f64 / 0.4).ln();
        assert!(want > CLAMP.1);
        assert_eq!(fit.temperature, CLAMP.1);
        assert!((fit.clamped.unwrap() - want).abs() < 1e-6, "{fit:?} vs {want}");
        // Within the range nothing is clamped: right 3 in 4 at 2/3 fits T = logit(2/3) / logit(0.75).
        let fit = fit_temperature(&group(2.0 / 3.0, 20, 15));
        let want = 2f64.ln() / 3f64.ln();
        assert!((fit.temperature - want).abs() < 1e-6 && fit.clamped.is_none(), "{fit:?} vs {want}");
    }

    fn pt(c: f64, ok: bool) -> Point {
        Point { confidence: c, correct: ok }
    }

    #[test]
    fn ece_on_hand_computed_equal_mass_bins() {
        let pts = [pt(0.9, true), pt(0.55, false), pt(0.7, true), pt(0.95, true), pt(0.6, true), pt(0.8, false)];
        let b = bins(&pts, Binning::EqualMass, 2);
        // Sorted: 0.55 x, 0.6 v, 0.7 v | 0.8 x, 0.9 v, 0.95 v
        assert_eq!(b.len(), 2);
        assert_eq!((b[0].n, b[1].n), (3, 3));
        assert!((b[0].confidence - 0.6166666666666667).abs() < 1e-12);
        assert!((b[0].accuracy - 2.0 / 3.0).abs() < 1e-12);
        assert!((b[1].confidence - 0.8833333333333333).abs() < 1e-12);
        assert_eq!((b[0].lo, b[0].hi, b[1].lo, b[1].hi), (0.55, 0.7, 0.8, 0.95));
        // |0.61667 - 0.66667| = 0.05, |0.88333 - 0.66667| = 0.21667; weights 1/2 each.
        assert!((ece(&b) - (0.05 + 0.2166666666666667) / 2.0).abs() < 1e-12);
        // Uneven split: 7 points in 3 bins are 2, 2, 3.
        let seven: Vec<Point> = (0..7).map(|i| pt(0.5 + i as f64 * 0.05, true)).collect();
        let sizes: Vec<usize> = bins(&seven, Binning::EqualMass, 3).iter().map(|b| b.n).collect();
        assert_eq!(sizes, vec![2, 2, 3]);
        // Ties share a bin: 0.6 0.7 0.7 0.7 | 0.8 0.9 cut at 3 would split the 0.7s.
        let tied = [pt(0.6, true), pt(0.7, true), pt(0.7, false), pt(0.7, true), pt(0.8, true), pt(0.9, false)];
        let sizes: Vec<usize> = bins(&tied, Binning::EqualMass, 2).iter().map(|b| b.n).collect();
        assert_eq!(sizes, vec![4, 2]);
        let same: Vec<Point> = (0..30).map(|i| pt(0.7, i % 3 == 0)).collect();
        let b = bins(&same, Binning::EqualMass, 3);
        assert_eq!(b.len(), 1);
        assert!((ece(&b) - (0.7 - 1.0 / 3.0)).abs() < 1e-12);
    }

    #[test]
    fn ece_on_hand_computed_equal_width_bins() {
        let pts = [pt(0.62, true), pt(0.68, false), pt(0.91, true), pt(1.0, true)];
        let b = bins(&pts, Binning::EqualWidth, 10);
        assert_eq!(b.iter().map(|b| b.n).collect::<Vec<_>>(), vec![2, 2], "[0.6, 0.7) and [0.9, 1.0]");
        // Bin 1: conf 0.65, acc 0.5 -> 0.15; bin 2: conf 0.955, acc 1 -> 0.045.
        assert!((ece(&b) - (2.0 * 0.15 + 2.0 * 0.045) / 4.0).abs() < 1e-12);
    }

    #[test]
    fn small_samples_use_equal_mass_bins() {
        assert_eq!(auto_binning(45), (Binning::EqualMass, 4));
        assert_eq!(auto_binning(24), (Binning::EqualMass, 2));
        assert_eq!(auto_binning(5), (Binning::EqualMass, 1));
        assert_eq!(auto_binning(500), (Binning::EqualWidth, 10));
    }

    #[test]
    fn threshold_coverage_and_accuracy() {
        let pts = [pt(0.55, false), pt(0.6, true), pt(0.7, true), pt(0.8, false), pt(0.9, true)];
        let a = at_threshold(&pts, 0.6);
        assert_eq!(a.covered, 4);
        assert!((a.coverage - 0.8).abs() < 1e-12);
        assert_eq!(a.accuracy, Some(0.75));
        let a = at_threshold(&pts, 0.95);
        assert_eq!((a.covered, a.accuracy), (0, None));
    }

    #[test]
    fn auroc_by_hand() {
        // Positives 0.9, 0.6; negatives 0.7, 0.2. Pairs: (0.9>0.7) (0.9>0.2) (0.6<0.7) (0.6>0.2) = 3/4.
        let s = [(0.9, true), (0.6, true), (0.7, false), (0.2, false)];
        assert_eq!(auroc(&s), Some(0.75));
        // A tie between a positive and a negative counts half: pairs (0.5=0.5) 0.5, (0.5>0.1) 1 -> 0.75.
        assert_eq!(auroc(&[(0.5, true), (0.5, false), (0.1, false)]), Some(0.75));
        assert_eq!(auroc(&[(0.5, true), (0.4, true)]), None);
        assert_eq!(auroc(&[(0.1, true), (0.9, false)]), Some(0.0));
    }
}
