//! A routing rule learned from labels: a short ordered list of `{ when = {...}, tier }` over the
//! four features' answers, in the same form as the hand-written one (`[routing] rules`), chosen to
//! maximise agreement with the labelled tiers, and measured by cross-validation on items it was
//! not fitted on, beside the hand-written rule on the same items (docs/routing.md#a-rule-learned-from-labels).
//!
//! The fit is greedy: starting from no rule and the most common tier as the default, it appends
//! the rule (one or two conditions, and a tier) that most raises agreement on the training items,
//! the default then being the most common tier among the items no rule matches, until no rule
//! gains at least [`MIN_GAIN`] items or the list has [`MAX_RULES`]. A short list stays one a
//! person can read and edit, and the gain floor keeps it from fitting a handful of items.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::Rule;
use crate::feature::Feature;
use crate::routing::rule;
use crate::tier::Tier;

/// The most rules a fitted list has.
pub const MAX_RULES: usize = 5;
/// The fewest training items a rule must add to the agreement to be kept.
pub const MIN_GAIN: usize = 3;
/// Folds of the cross-validation.
pub const FOLDS: usize = 10;

/// One labelled item: the engine's answers (each with its confidence) and the labelled tier.
#[derive(Debug, Clone)]
pub struct Example {
    pub answers: BTreeMap<Feature, (bool, f64)>,
    pub tier: Tier,
}

impl Example {
    fn picks(&self) -> BTreeMap<Feature, bool> {
        self.answers.iter().map(|(f, a)| (*f, a.0)).collect()
    }
}

/// A rule list and its default tier.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    pub rules: Vec<Rule>,
    pub default_tier: Tier,
}

impl Fitted {
    pub fn choose(&self, e: &Example) -> (Tier, rule::Chosen) {
        rule::choose(&self.rules, self.default_tier, &e.picks())
    }

    /// Whether the hook would give the hint: the answers that decided the tier clear `threshold`.
    pub fn hinted(&self, e: &Example, threshold: f64) -> bool {
        let (_, chosen) = self.choose(e);
        rule::deciding(&self.rules, chosen, &e.answers).iter().all(|f| e.answers[f].1 >= threshold - 1e-12)
    }

    /// The list as `[routing]` takes it.
    pub fn toml(&self) -> String {
        if self.rules.is_empty() {
            return format!("default_tier = \"{}\"\nrules = []\n", self.default_tier);
        }
        let mut s = format!("default_tier = \"{}\"\nrules = [\n", self.default_tier);
        for r in &self.rules {
            let when: Vec<String> = r.when.iter().map(|(f, v)| format!("{f} = {v}")).collect();
            s.push_str(&format!("  {{ when = {{ {} }}, tier = \"{}\" }},\n", when.join(", "), r.tier));
        }
        s.push_str("]\n");
        s
    }
}

/// The conditions a rule may have: one feature's answer, or two.
fn conditions() -> Vec<BTreeMap<Feature, bool>> {
    let mut out = Vec::new();
    for (i, a) in Feature::ALL.iter().enumerate() {
        for va in [true, false] {
            out.push([(*a, va)].into());
            for b in &Feature::ALL[i + 1..] {
                for vb in [true, false] {
                    out.push([(*a, va), (*b, vb)].into());
                }
            }
        }
    }
    out
}

/// The most common tier of `tiers`, the cheaper one on a tie; `fallback` when there are none.
fn majority(tiers: impl Iterator<Item = Tier>, fallback: Tier) -> Tier {
    let mut counts: BTreeMap<Tier, usize> = BTreeMap::new();
    for t in tiers {
        *counts.entry(t).or_default() += 1;
    }
    counts.iter().rev().max_by_key(|(_, k)| **k).map_or(fallback, |(t, _)| *t)
}

/// Fits a list on `train`.
pub fn fit(train: &[&Example]) -> Fitted {
    let tiers: Vec<Tier> = {
        let mut t: Vec<Tier> = train.iter().map(|e| e.tier).collect();
        t.sort();
        t.dedup();
        t
    };
    let overall = majority(train.iter().map(|e| e.tier), Tier::Sonnet);
    let picks: Vec<BTreeMap<Feature, bool>> = train.iter().map(|e| e.picks()).collect();
    let holds =
        |when: &BTreeMap<Feature, bool>, p: &BTreeMap<Feature, bool>| when.iter().all(|(f, v)| p.get(f) == Some(v));
    // Items no rule of the list has matched yet.
    let mut open: Vec<usize> = (0..train.len()).collect();
    let mut fitted = Fitted { rules: Vec::new(), default_tier: overall };
    let agree_open = |open: &[usize], tier: Tier| open.iter().filter(|&&i| train[i].tier == tier).count();
    // Agreement is counted over every item: `settled` is what the rules so far got right on the
    // items they matched (those items are no longer open), `current` that plus the open items'.
    let mut settled = 0;
    let mut current = agree_open(&open, overall);
    let candidates = conditions();
    while fitted.rules.len() < MAX_RULES {
        // (agreement, the items the rule gets wrong, the rule, the default after it). Of rules that
        // agree as often, the one that gets fewer of its own items wrong goes first: a rule that
        // takes items of another tier along locks them into its tier for every later rule.
        let mut best: Option<(usize, usize, Rule, Tier)> = None;
        for when in &candidates {
            let (hit, rest): (Vec<usize>, Vec<usize>) = open.iter().partition(|&&i| holds(when, &picks[i]));
            if hit.is_empty() || rest.is_empty() {
                continue;
            }
            let default = majority(rest.iter().map(|&i| train[i].tier), overall);
            let rest_agree = agree_open(&rest, default);
            for &tier in &tiers {
                let right = agree_open(&hit, tier);
                let (score, wrong) = (settled + right + rest_agree, hit.len() - right);
                if score >= current + MIN_GAIN && best.as_ref().is_none_or(|b| (score, b.1) > (b.0, wrong)) {
                    best = Some((score, wrong, Rule { when: when.clone(), tier }, default));
                }
            }
        }
        let Some((score, _, r, default)) = best else { break };
        settled += open.iter().filter(|&&i| holds(&r.when, &picks[i]) && train[i].tier == r.tier).count();
        open.retain(|&i| !holds(&r.when, &picks[i]));
        fitted.rules.push(r);
        fitted.default_tier = default;
        current = score;
    }
    fitted
}

/// The fold of item `i`: items are dealt round-robin, so each fold is a fixed, spread-out slice.
fn fold_of(i: usize) -> usize {
    i % FOLDS
}

/// A rule's figures on held-out items.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Held {
    pub agreement: f64,
    /// The share of items the hint would be given on.
    pub hint_rate: f64,
    /// How often the hinted ones agree; None when none is hinted.
    pub hinted_agreement: Option<f64>,
}

impl Held {
    /// `54.4%; hint on 75.1% of items, 55.5% agree`.
    pub fn summary(&self) -> String {
        use crate::text::pct;
        format!(
            "{}; hint on {} of items, {} agree",
            pct(self.agreement, 1),
            pct(self.hint_rate, 1),
            self.hinted_agreement.map(|v| pct(v, 1)).unwrap_or_else(|| "n/a".into())
        )
    }
}

/// The learned rule against the hand-written one, both measured on the same held-out folds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub items: usize,
    pub folds: usize,
    pub fitted: Held,
    pub hand: Held,
    /// The list fitted on every item: the one to use.
    #[serde(skip)]
    pub rule: Fitted,
    /// The same as `[routing]` lines.
    pub toml: String,
}

impl Comparison {
    /// Whether the learned rule agrees with the labels more often than the configured one on the
    /// held-out folds: the only case in which it should replace it.
    pub fn beats(&self) -> bool {
        self.fitted.agreement > self.hand.agreement + 1e-9
    }
}

fn held(picks: &[(Tier, bool)], examples: &[Example]) -> Held {
    let n = examples.len().max(1) as f64;
    let agree = picks.iter().zip(examples).filter(|((t, _), e)| *t == e.tier).count();
    let hinted: Vec<bool> =
        picks.iter().zip(examples).filter(|((_, h), _)| *h).map(|((t, _), e)| *t == e.tier).collect();
    Held {
        agreement: agree as f64 / n,
        hint_rate: hinted.len() as f64 / n,
        hinted_agreement: (!hinted.is_empty())
            .then(|| hinted.iter().filter(|a| **a).count() as f64 / hinted.len() as f64),
    }
}

/// Fits on all but each fold in turn and predicts that fold; the hand rule (`hand`, `hand_default`)
/// predicts the same items. `None` below [`FOLDS`] items.
pub fn compare(examples: &[Example], hand: &[Rule], hand_default: Tier, threshold: f64) -> Option<Comparison> {
    if examples.len() < FOLDS {
        return None;
    }
    let hand = Fitted { rules: hand.to_vec(), default_tier: hand_default };
    let mut fitted_picks = vec![(Tier::Sonnet, false); examples.len()];
    for k in 0..FOLDS {
        let train: Vec<&Example> =
            examples.iter().enumerate().filter(|(i, _)| fold_of(*i) != k).map(|(_, e)| e).collect();
        let f = fit(&train);
        for (i, e) in examples.iter().enumerate().filter(|(i, _)| fold_of(*i) == k) {
            fitted_picks[i] = (f.choose(e).0, f.hinted(e, threshold));
        }
    }
    let hand_picks: Vec<(Tier, bool)> =
        examples.iter().map(|e| (hand.choose(e).0, hand.hinted(e, threshold))).collect();
    let all: Vec<&Example> = examples.iter().collect();
    let rule = fit(&all);
    Some(Comparison {
        items: examples.len(),
        folds: FOLDS,
        fitted: held(&fitted_picks, examples),
        hand: held(&hand_picks, examples),
        toml: rule.toml(),
        rule,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::default_rules;

    fn ex(ro: bool, de: bool, rv: bool, sp: bool, tier: Tier) -> Example {
        Example { answers: Feature::ALL.into_iter().zip([ro, de, rv, sp].map(|v| (v, 0.9))).collect(), tier }
    }

    #[test]
    fn the_fit_finds_the_rule_the_labels_follow() {
        // Tiers made by a known list: specified and not read_only -> haiku (an edit fully stated),
        // design -> opus, else sonnet. Twenty of each kind.
        let mut examples = Vec::new();
        for i in 0..20 {
            let odd = i % 2 == 1;
            examples.push(ex(false, false, false, true, Tier::Haiku));
            examples.push(ex(odd, true, false, false, Tier::Opus));
            examples.push(ex(odd, false, false, false, Tier::Sonnet));
        }
        let all: Vec<&Example> = examples.iter().collect();
        let f = fit(&all);
        assert!(examples.iter().all(|e| f.choose(e).0 == e.tier), "{}", f.toml());
        assert!(f.rules.len() <= 3, "{}", f.toml());
        // Held out, it is as right; the hand rule sends the edits to sonnet and agrees on the rest.
        let c = compare(&examples, &default_rules(), Tier::Sonnet, 0.6).unwrap();
        assert_eq!(c.fitted.agreement, 1.0);
        assert!((c.hand.agreement - 40.0 / 60.0).abs() < 1e-12, "{:?}", c.hand);
        assert_eq!((c.fitted.hint_rate, c.fitted.hinted_agreement), (1.0, Some(1.0)));
        assert!(c.toml.starts_with("default_tier = \"sonnet\"\nrules = [\n"), "{}", c.toml);
    }

    #[test]
    fn noise_below_the_gain_floor_adds_no_rule() {
        // All sonnet but two haiku items: no rule gains three items.
        let mut examples: Vec<Example> =
            (0..30).map(|i| ex(i % 2 == 0, false, false, i % 3 == 0, Tier::Sonnet)).collect();
        examples.push(ex(true, true, true, true, Tier::Haiku));
        examples.push(ex(true, true, true, true, Tier::Haiku));
        let all: Vec<&Example> = examples.iter().collect();
        let f = fit(&all);
        assert_eq!((f.rules.len(), f.default_tier), (0, Tier::Sonnet), "{}", f.toml());
        assert!(compare(&examples[..5], &default_rules(), Tier::Sonnet, 0.6).is_none(), "too few to fold");
    }

    #[test]
    fn the_hint_needs_the_deciding_answers_sure() {
        let mut e = ex(true, true, false, false, Tier::Opus);
        e.answers.insert(Feature::ReadOnly, (true, 0.55));
        let hand = Fitted { rules: default_rules(), default_tier: Tier::Sonnet };
        assert!(hand.hinted(&e, 0.6), "design decides alone");
        e.answers.insert(Feature::Design, (true, 0.55));
        assert!(!hand.hinted(&e, 0.6));
    }
}
