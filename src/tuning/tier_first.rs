//! The direct tier head as the rule's first step, measured by nested cross-validation: on each of
//! [`FOLDS`] folds, the head is fitted on the other folds only, the confidence at which it takes
//! over from the rule is chosen on those same folds (from the head's held-out answers there), and
//! only then are the fold's items routed: the head's tier where it is that sure, else the rule's.
//! Nothing about the fold being scored is seen before it is scored, so the figures say what the
//! combination would do on prompts it never met (docs/routing.md#the-tier-head).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::Rule;
use crate::tier::Tier;
use crate::tuning::crossval::{self, TierAnswer};
use crate::tuning::rule_fit::{Example, Fitted, Held};

/// Folds of the outer cross-validation: the same items in the same folds as the learned rule's
/// comparison (item `i` in fold `i % FOLDS`).
pub const FOLDS: usize = crate::tuning::rule_fit::FOLDS;

/// The confidences the head may be trusted from, tried inside the training folds: `None` is
/// "never" (the rule alone), which the choice may always fall back to.
pub const CANDIDATES: [Option<f64>; 12] = [
    Some(0.40),
    Some(0.45),
    Some(0.50),
    Some(0.55),
    Some(0.60),
    Some(0.65),
    Some(0.70),
    Some(0.75),
    Some(0.80),
    Some(0.85),
    Some(0.90),
    None,
];

/// One labelled item: its embedding, the engine's four answers (calibration applied, as the hook
/// has them) and the labelled tier.
pub struct Item {
    pub x: Vec<f32>,
    pub example: Example,
}

/// What the head decides and what the rule decides, for one item.
pub(crate) fn route(
    rule: &Fitted,
    e: &Example,
    head: TierAnswer,
    from: Option<f64>,
    threshold: f64,
) -> (Tier, bool, bool) {
    match from {
        Some(t) if head.confidence >= t - 1e-12 => (head.tier, true, true),
        _ => (rule.choose(e).0, rule.hinted(e, threshold), false),
    }
}

/// The combination at one trust level, over items it did not see.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Combined {
    /// The confidence from which the head decides; None: never (the rule alone).
    pub from: Option<f64>,
    pub held: Held,
    /// The share of items the head decided, and how often it agreed there.
    pub head_share: f64,
    pub head_agreement: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measured {
    pub items: usize,
    pub folds: usize,
    /// `[routing] tier_head_min_confidence`, the level the config has.
    pub configured: f64,
    /// The rule alone, on the same items.
    pub rule: Held,
    /// The head alone (its pick on every item), held out.
    pub head_alone: f64,
    /// The trust level chosen inside each fold's training folds, and the combination with it.
    pub chosen: Combined,
    pub chosen_per_fold: Vec<Option<f64>>,
    /// Each fixed trust level, for the record: reading the best of these off this table would be
    /// choosing on the scored folds, which `chosen` does not do.
    pub fixed: Vec<Combined>,
}

pub(crate) fn combined(picks: &[(Tier, bool, bool)], examples: &[&Example], from: Option<f64>) -> Combined {
    let n = examples.len().max(1) as f64;
    let agree = |i: usize| picks[i].0 == examples[i].tier;
    let hinted: Vec<usize> = (0..picks.len()).filter(|&i| picks[i].1).collect();
    let by_head: Vec<usize> = (0..picks.len()).filter(|&i| picks[i].2).collect();
    let share = |v: &[usize]| (!v.is_empty()).then(|| v.iter().filter(|&&i| agree(i)).count() as f64 / v.len() as f64);
    Combined {
        from,
        held: Held {
            agreement: (0..picks.len()).filter(|&i| agree(i)).count() as f64 / n,
            hint_rate: hinted.len() as f64 / n,
            hinted_agreement: share(&hinted),
        },
        head_share: by_head.len() as f64 / n,
        head_agreement: share(&by_head),
    }
}

/// The trust level that agrees most often on `items` (held-out head answers `heads`); of equal
/// ones the highest, where the head decides least.
pub(crate) fn choose(rule: &Fitted, items: &[&Example], heads: &[TierAnswer], threshold: f64) -> Option<f64> {
    let mut best: (usize, Option<f64>) = (0, None);
    for from in CANDIDATES {
        let right = items.iter().zip(heads).filter(|(e, h)| route(rule, e, **h, from, threshold).0 == e.tier).count();
        // Candidates rise, `None` last: `>=` keeps the highest of equals.
        if right >= best.0 {
            best = (right, from);
        }
    }
    best.1
}

/// One outer fold: the items it scores, the items it trains on, and the tier head's answers for
/// both from heads fitted on the training items (and the never-scored extra examples) only. The
/// training items' answers are held out within them (leave-one-out, as [`crossval::tier_answers`]
/// gives them), so whatever is chosen from those answers is chosen without the fold's items.
pub struct Fold {
    pub train: Vec<usize>,
    pub test: Vec<usize>,
    pub train_heads: Vec<TierAnswer>,
    pub test_heads: Vec<TierAnswer>,
}

/// The fold of each of `n` items. Seed 0 deals them round-robin (item `i` in fold `i % FOLDS`, the
/// folds `study` has always used); any other seed shuffles them first (a fixed generator, so a
/// seed always gives the same folds), to see how much a figure owes to one split.
pub fn dealt(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    if seed != 0 {
        let mut state = seed;
        for i in (1..n).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            order.swap(i, ((state >> 33) % (i as u64 + 1)) as usize);
        }
    }
    let mut fold = vec![0; n];
    for (position, &i) in order.iter().enumerate() {
        fold[i] = position % FOLDS;
    }
    fold
}

/// The [`FOLDS`] outer folds of `items` as `fold` deals them, each with its own tier heads. `extra`
/// are labelled examples that are never scored (the labelled log beside the seed set): every
/// fold's heads are fitted on them too.
pub fn folds(model: &str, items: &[Item], extra: &[(Vec<f32>, Tier)], fold: &[usize]) -> Result<Vec<Fold>, String> {
    let mut out = Vec::with_capacity(FOLDS);
    for k in 0..FOLDS {
        let (train, test): (Vec<usize>, Vec<usize>) = (0..items.len()).partition(|&i| fold[i] != k);
        let mut xs: Vec<Vec<f32>> = train.iter().map(|&i| items[i].x.clone()).collect();
        let mut tiers: Vec<Tier> = train.iter().map(|&i| items[i].example.tier).collect();
        for (x, t) in extra {
            xs.push(x.clone());
            tiers.push(*t);
        }
        // One fit answers both: the training items held out (for choosing), the fold's items new.
        let ask: Vec<Vec<f32>> = train.iter().chain(&test).map(|&i| items[i].x.clone()).collect();
        let in_train: Vec<Option<usize>> =
            (0..train.len()).map(Some).chain(std::iter::repeat_n(None, test.len())).collect();
        let mut answers = crossval::tier_answers(model, &xs, &tiers, &ask, &in_train)?;
        let test_heads = answers.split_off(train.len());
        out.push(Fold { train, test, train_heads: answers, test_heads });
    }
    Ok(out)
}

/// Measures the head first and then the rule (`rules`, `default_tier`, hints at `threshold`) on
/// `items` by nested cross-validation, on `folds` (from [`folds`]).
pub fn measure_on(
    items: &[Item],
    folds: &[Fold],
    rules: &[Rule],
    default_tier: Tier,
    threshold: f64,
    configured: f64,
) -> Result<Measured, String> {
    let rule = Fitted { rules: rules.to_vec(), default_tier };
    let examples: Vec<&Example> = items.iter().map(|i| &i.example).collect();
    // The head's held-out answer for each item, from the fold's head.
    let mut heads: Vec<Option<TierAnswer>> = vec![None; items.len()];
    let mut chosen_per_fold = Vec::with_capacity(folds.len());
    let mut chosen_picks: Vec<(Tier, bool, bool)> = vec![(default_tier, false, false); items.len()];
    for f in folds {
        let train_examples: Vec<&Example> = f.train.iter().map(|&i| examples[i]).collect();
        let from = choose(&rule, &train_examples, &f.train_heads, threshold);
        chosen_per_fold.push(from);
        for (&i, &h) in f.test.iter().zip(&f.test_heads) {
            heads[i] = Some(h);
            chosen_picks[i] = route(&rule, examples[i], h, from, threshold);
        }
    }
    let heads: Vec<TierAnswer> = heads.into_iter().map(|h| h.ok_or("an item in no fold")).collect::<Result<_, _>>()?;
    let fixed = CANDIDATES
        .iter()
        .map(|&from| {
            let picks: Vec<(Tier, bool, bool)> =
                examples.iter().zip(&heads).map(|(e, h)| route(&rule, e, *h, from, threshold)).collect();
            combined(&picks, &examples, from)
        })
        .collect::<Vec<_>>();
    let rule_alone = fixed.last().map(|c| c.held.clone()).ok_or("no trust levels")?;
    let head_alone = heads.iter().zip(&examples).filter(|(h, e)| h.tier == e.tier).count() as f64 / items.len() as f64;
    Ok(Measured {
        items: items.len(),
        folds: folds.len(),
        configured,
        rule: rule_alone,
        head_alone,
        chosen: combined(&chosen_picks, &examples, None),
        chosen_per_fold,
        fixed,
    })
}

/// Per-fold choices in words, e.g. `0.60 x7, never x3`.
pub fn describe_choices(per_fold: &[Option<f64>]) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for c in per_fold {
        *counts.entry(c.map_or("never".to_string(), |t| format!("{t:.2}"))).or_default() += 1;
    }
    counts.iter().map(|(k, n)| format!("{k} x{n}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::default_rules;
    use crate::feature::Feature;

    /// Three tiers along the first coordinate, and answers that send every item to the default tier.
    fn items(n: usize) -> Vec<Item> {
        (0..n)
            .map(|i| Item {
                x: vec![(i % 3) as f32 - 1.0 + 0.01 * (i / 3) as f32, 0.1, 0.2],
                example: Example {
                    answers: Feature::ALL.into_iter().map(|f| (f, (false, 0.9))).collect(),
                    tier: [Tier::Haiku, Tier::Sonnet, Tier::Opus][i % 3],
                },
            })
            .collect()
    }

    #[test]
    fn a_sure_head_goes_first_and_the_rule_keeps_the_rest() {
        let items = items(60);
        let folds = folds("m", &items, &[], &dealt(items.len(), 0)).unwrap();
        let m = measure_on(&items, &folds, &default_rules(), Tier::Sonnet, 0.6, 0.6).unwrap();
        // The rule alone says sonnet everywhere: a third agree, every hint given.
        assert!((m.rule.agreement - 1.0 / 3.0).abs() < 1e-12, "{m:?}");
        assert_eq!(m.rule.hint_rate, 1.0);
        // The outer tiers separate linearly, so the head is trusted in every fold and gets them right.
        assert!(m.chosen_per_fold.iter().all(Option::is_some), "{m:?}");
        assert!(m.chosen.held.agreement > m.rule.agreement + 0.3, "{m:?}");
        assert!(m.chosen.head_share > 0.0 && m.chosen.held.hint_rate == 1.0, "{m:?}");
        // "never" is the rule alone; every fixed level has its figures.
        assert_eq!(m.fixed.len(), CANDIDATES.len());
        assert_eq!(m.fixed.last().map(|c| (c.from, c.head_share)), Some((None, 0.0)));
        assert_eq!(describe_choices(&[Some(0.6), None, Some(0.6)]), "0.60 x2, never x1");
    }
}
