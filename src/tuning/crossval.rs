//! Held-out answers of the local engine's trained heads, for measuring them on the very data they
//! were fitted on (the seed sets, the labelled log) without flattering them.
//!
//! A head's answer to an example it was trained on is better than its answer to a new prompt
//! would be. So each example gets the answer of a head that did not see it: its weights are the
//! leave-one-out weights (the one-Newton-step approximation the heads' own figures use, within a
//! few percent of a refit, at the cost of one fit instead of n), and its temperature, which the
//! engine fits on those leave-one-out logits, is fitted again on every fold but the example's own
//! (example i is in fold i mod [`FOLDS`]). Weights and temperature are then both held out, and the
//! answers can be measured, and calibrated, like any engine's.
//!
//! The same recipe gives a direct tier head: one head per tier (is the tier this one?) over the
//! same embedding, their held-out probabilities normalised, the largest one the pick.

use crate::calibration::TEMPERATURE_RANGE;
use crate::providers::local::heads::{self, Head};
use crate::tier::Tier;

/// The folds the temperature is held out over.
pub const FOLDS: usize = 10;

/// What the output says about answers made this way.
pub const HOW: &str = "cross-validated: leave-one-out weights, temperature fitted on the other 9 of 10 folds";

/// The head fitted on all examples (as the engine has it), and each example's held-out P(yes).
pub fn held_out(model: &str, question: &str, xs: &[Vec<f32>], ys: &[bool]) -> Result<(Head, Vec<f64>), String> {
    let (head, loo) = Head::fit(model, question, xs, ys, "cross-validation")?;
    let temperatures: Vec<f64> = (0..FOLDS)
        .map(|fold| {
            let (z, y): (Vec<f64>, Vec<bool>) =
                loo.iter().zip(ys).enumerate().filter(|(i, _)| i % FOLDS != fold).map(|(_, (z, y))| (*z, *y)).unzip();
            if z.is_empty() {
                return head.temperature;
            }
            heads::fit_temperature(&z, &y).clamp(TEMPERATURE_RANGE.0, TEMPERATURE_RANGE.1)
        })
        .collect();
    let p = loo.iter().enumerate().map(|(i, z)| heads::sigmoid(z / temperatures[i % FOLDS])).collect();
    Ok((head, p))
}

/// A direct tier head's answer: the tier picked and its share of the tiers' probabilities.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TierAnswer {
    pub tier: Tier,
    pub confidence: f64,
}

/// Held-out answers of a direct tier head for each example: one head per tier that the examples
/// use (against all the others), each held out as [`held_out`] does, normalised across tiers.
#[cfg(test)]
pub fn tier_held_out(model: &str, xs: &[Vec<f32>], tiers: &[Tier]) -> Result<Vec<TierAnswer>, String> {
    let every: Vec<Option<usize>> = (0..xs.len()).map(Some).collect();
    tier_answers(model, xs, tiers, xs, &every)
}

/// The tier whose head is likeliest, of `used` (P(this tier) per head, in the same order), and its
/// share of their probabilities.
fn pick(used: &[Tier], ps: impl Iterator<Item = f64>) -> TierAnswer {
    let ps: Vec<f64> = ps.collect();
    let total: f64 = ps.iter().sum();
    // The first tier on a tie: the cheaper one, as the rule's order would have it.
    let (k, best) =
        ps.iter().enumerate().fold((0, f64::NEG_INFINITY), |acc, (k, p)| if *p > acc.1 { (k, *p) } else { acc });
    TierAnswer { tier: used[k], confidence: if total > 0.0 { best / total } else { 0.0 } }
}

/// A direct tier head fitted on labelled examples (`train_xs`, `train_tiers`: the seed set and
/// the labelled log, as the engine's own heads are), answering the items `xs`: an item that is
/// training example `i` (`in_train[k] == Some(i)`) gets that example's held-out answer, as
/// a head fitted on the examples alone would have it, and any other the answer of the heads fitted on every example.
/// Fitting on the studied items alone instead would measure a head trained on a few dozen
/// prompts, not the one the seed set gives.
pub fn tier_answers(
    model: &str,
    train_xs: &[Vec<f32>],
    train_tiers: &[Tier],
    xs: &[Vec<f32>],
    in_train: &[Option<usize>],
) -> Result<Vec<TierAnswer>, String> {
    let used: Vec<Tier> = Tier::ALL.into_iter().filter(|t| train_tiers.contains(t)).collect();
    if used.len() < 2 {
        return Err(format!("a tier head needs examples of two tiers or more; these have {}", used.len()));
    }
    let mut per_tier: Vec<Vec<f64>> = Vec::new();
    for t in &used {
        let ys: Vec<bool> = train_tiers.iter().map(|x| x == t).collect();
        let (head, held) = held_out(model, &format!("tier is {t}"), train_xs, &ys)?;
        per_tier.push(
            xs.iter()
                .zip(in_train)
                .map(|(x, i)| i.and_then(|i| held.get(i).copied()).unwrap_or_else(|| head.p_yes(x)))
                .collect(),
        );
    }
    Ok((0..xs.len()).map(|k| pick(&used, per_tier.iter().map(|p| p[k]))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two noisy clusters in 3 dimensions, the label given by the first coordinate.
    fn clusters(n: usize) -> (Vec<Vec<f32>>, Vec<bool>) {
        let mut state = 7u64;
        let mut rnd = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let xs: Vec<Vec<f32>> =
            (0..n).map(|i| vec![if i % 2 == 0 { 0.4 } else { -0.4 } + rnd(), rnd(), rnd()]).collect();
        let ys = xs.iter().map(|x| x[0] > 0.0).collect();
        (xs, ys)
    }

    #[test]
    fn held_out_answers_use_the_leave_one_out_logits_and_each_folds_temperature() {
        let (xs, ys) = clusters(60);
        let (head, p) = held_out("m", "q", &xs, &ys).unwrap();
        let (again, loo) = Head::fit("m", "q", &xs, &ys, "cross-validation").unwrap();
        assert_eq!(head, again, "the head is the engine's own fit");
        // Example 3 is in fold 3: its temperature is fitted on every other fold's logits, by hand here.
        let (z, y): (Vec<f64>, Vec<bool>) =
            loo.iter().zip(&ys).enumerate().filter(|(i, _)| i % 10 != 3).map(|(_, (z, y))| (*z, *y)).unzip();
        let t = heads::fit_temperature(&z, &y).clamp(0.5, 5.0);
        assert!((p[3] - heads::sigmoid(loo[3] / t)).abs() < 1e-12);
        assert!((p[13] - heads::sigmoid(loo[13] / t)).abs() < 1e-12, "the same fold, the same temperature");
        // Held out means no better than the in-sample answers, and still right on separable clusters.
        let right = |ps: &[f64]| ps.iter().zip(&ys).filter(|(p, y)| (**p > 0.5) == **y).count();
        let in_sample: Vec<f64> = xs.iter().map(|x| head.p_yes(x)).collect();
        assert!(right(&p) <= right(&in_sample));
        assert!(right(&p) >= 50, "{} of 60", right(&p));
    }

    #[test]
    fn a_tier_head_picks_the_likeliest_tier() {
        // Three tiers along the first coordinate: haiku low, sonnet middle, opus high.
        let xs: Vec<Vec<f32>> = (0..60).map(|i| vec![(i % 3) as f32 - 1.0 + 0.01 * (i / 3) as f32, 0.1, 0.2]).collect();
        let tiers: Vec<Tier> = (0..60).map(|i| [Tier::Haiku, Tier::Sonnet, Tier::Opus][i % 3]).collect();
        let answers = tier_held_out("m", &xs, &tiers).unwrap();
        // The two outer tiers separate linearly; the middle one (one linear head against both
        // sides) cannot, so only the outer ones are required right.
        for (a, t) in answers.iter().zip(&tiers) {
            assert!((0.0..=1.0).contains(&a.confidence));
            if *t != Tier::Sonnet {
                assert_eq!(a.tier, *t);
            }
        }
        assert!(tier_held_out("m", &xs, &[Tier::Opus; 60]).unwrap_err().contains("two tiers"));
    }

    #[test]
    fn a_tier_head_answers_new_items_with_the_heads_fitted_on_every_example() {
        let xs: Vec<Vec<f32>> = (0..60).map(|i| vec![(i % 3) as f32 - 1.0 + 0.01 * (i / 3) as f32, 0.1, 0.2]).collect();
        let tiers: Vec<Tier> = (0..60).map(|i| [Tier::Haiku, Tier::Sonnet, Tier::Opus][i % 3]).collect();
        let held = tier_held_out("m", &xs, &tiers).unwrap();
        // Two training examples (as held out) and two new items far out on either side.
        let ask = vec![xs[4].clone(), vec![-3.0, 0.1, 0.2], xs[9].clone(), vec![3.0, 0.1, 0.2]];
        let got = tier_answers("m", &xs, &tiers, &ask, &[Some(4), None, Some(9), None]).unwrap();
        assert_eq!((got[0], got[2]), (held[4], held[9]), "a training example keeps its held-out answer");
        assert_eq!((got[1].tier, got[3].tier), (Tier::Haiku, Tier::Opus));
        // The new items' answers are the full fit's: the heads fitted on every example, by hand.
        let full: Vec<f64> = [Tier::Haiku, Tier::Sonnet, Tier::Opus]
            .iter()
            .map(|t| {
                let ys: Vec<bool> = tiers.iter().map(|x| x == t).collect();
                held_out("m", &format!("tier is {t}"), &xs, &ys).unwrap().0.p_yes(&ask[3])
            })
            .collect();
        assert!((got[3].confidence - full[2] / full.iter().sum::<f64>()).abs() < 1e-12, "{:?} {full:?}", got[3]);
    }
}
