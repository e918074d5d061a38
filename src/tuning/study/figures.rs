//! The figures `system1 study` prints, from answers already collected: pure, so that every one
//! can be computed by hand in a test.
//!
//! Per question, against the labels: accuracy and AUROC (neither changes with calibration, which
//! never reorders), and with calibration off and on, the ECE and the coverage and accuracy at the
//! threshold; beside them the temperature a fit on this set would have. Per routing set, against
//! the labelled tier: the rule on the engine's answers (and where the hint would be given), the
//! rule on the labels (its ceiling), the best constant tier, and a direct tier head when there is
//! one. Latency is per decision (one engine request: the four routing features are one).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::calibration::{Origin, rescale};
use crate::config::Rule;
use crate::feature::Feature;
use crate::routing::rule;
use crate::tier::Tier;
use crate::tuning::crossval::TierAnswer;
use crate::tuning::fit::{self, Bin, Point, Sample};
use crate::tuning::rule_fit;

/// A yes/no answer: which, and the probability the engine gave it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct YesNo {
    pub yes: bool,
    pub confidence: f64,
}

impl YesNo {
    /// The answer for P(yes) = `p` (yes on a tie, as the engines pick the first option).
    pub fn from_p_yes(p: f64) -> YesNo {
        if p >= 0.5 { YesNo { yes: true, confidence: p } } else { YesNo { yes: false, confidence: 1.0 - p } }
    }

    pub fn p_yes(self) -> f64 {
        if self.yes { self.confidence } else { 1.0 - self.confidence }
    }

    /// The same answer after temperature `t` (none: as it is).
    pub fn calibrated(self, t: Option<f64>) -> YesNo {
        match t {
            Some(t) => {
                let c = rescale(&[self.confidence, 1.0 - self.confidence], t)[0];
                YesNo { yes: self.yes, confidence: c }
            }
            None => self,
        }
    }

    fn point(self, label: bool) -> Point {
        Point { confidence: self.confidence, correct: self.yes == label }
    }
}

/// The fit the gateway applies to a question: its temperature and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct InForce {
    pub temperature: f64,
    pub origin: Origin,
}

/// One question's labelled items and the engine's answers to them (None: it abstained or failed).
pub struct QuestionData {
    pub question: String,
    pub threshold: f64,
    pub fit: Option<InForce>,
    pub items: Vec<(bool, Option<YesNo>)>,
}

/// The figures at the threshold and the ECE, for one side (calibration off or on).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    /// None when nothing was answered.
    pub ece: Option<f64>,
    /// The share of labelled items answered at or above the threshold.
    pub coverage: f64,
    /// The accuracy of those; None when none were.
    pub accuracy_at_threshold: Option<f64>,
    /// Reliability bins (equal mass below 100 answers, ten equal-width bins from there).
    pub bins: Vec<Bin>,
}

/// What a fit on this set would be (what `calibrate fit` would write).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitHere {
    pub temperature: f64,
    /// The fitted temperature when the clamp moved it.
    pub clamped: Option<f64>,
    pub ece_after: Option<f64>,
    /// The mean negative log-likelihood of the labels at T = 1 and at the fit (what the fit lowers).
    pub nll_before: f64,
    pub nll_after: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionFigures {
    pub question: String,
    pub labelled: usize,
    pub answered: usize,
    pub accuracy: Option<f64>,
    pub auroc: Option<f64>,
    pub threshold: f64,
    pub fit_in_force: Option<InForce>,
    pub off: Side,
    pub on: Side,
    /// None below the answers a fit needs.
    pub fit_here: Option<FitHere>,
}

fn share(k: usize, n: usize) -> Option<f64> {
    (n > 0).then(|| k as f64 / n as f64)
}

/// ECE with the usual bins; None without points.
fn ece_of(points: &[Point]) -> (Option<f64>, Vec<Bin>) {
    if points.is_empty() {
        return (None, Vec::new());
    }
    let (binning, k) = fit::auto_binning(points.len());
    let bins = fit::bins(points, binning, k);
    (Some(fit::ece(&bins)), bins)
}

fn side(points: &[Point], labelled: usize, threshold: f64) -> Side {
    let at = fit::at_threshold(points, threshold);
    let (ece, bins) = ece_of(points);
    Side { ece, coverage: share(at.covered, labelled).unwrap_or(0.0), accuracy_at_threshold: at.accuracy, bins }
}

pub fn question(d: &QuestionData) -> QuestionFigures {
    let answered: Vec<(bool, YesNo)> = d.items.iter().filter_map(|(l, a)| a.map(|a| (*l, a))).collect();
    let t_on = d.fit.map(|f| f.temperature);
    let off: Vec<Point> = answered.iter().map(|(l, a)| a.point(*l)).collect();
    let on: Vec<Point> = answered.iter().map(|(l, a)| a.calibrated(t_on).point(*l)).collect();
    let scored: Vec<(f64, bool)> = answered.iter().map(|(l, a)| (a.p_yes(), *l)).collect();
    let fit_here = (answered.len() >= fit::MIN_N).then(|| {
        let samples: Vec<Sample> = answered
            .iter()
            .map(|(l, a)| Sample { probs: vec![a.p_yes(), 1.0 - a.p_yes()], correct: usize::from(!*l) })
            .collect();
        let f = fit::fit_temperature(&samples);
        let after: Vec<Point> = samples.iter().map(|s| s.point(f.temperature)).collect();
        FitHere {
            temperature: f.temperature,
            clamped: f.clamped,
            ece_after: ece_of(&after).0,
            nll_before: f.nll_before,
            nll_after: f.nll_after,
        }
    });
    QuestionFigures {
        question: d.question.clone(),
        labelled: d.items.len(),
        answered: answered.len(),
        accuracy: fit::accuracy(&off),
        auroc: fit::auroc(&scored),
        threshold: d.threshold,
        fit_in_force: d.fit,
        off: side(&off, d.items.len(), d.threshold),
        on: side(&on, d.items.len(), d.threshold),
        fit_here,
    }
}

/// One routing item with a labelled tier.
pub struct TierItem {
    pub tier: Tier,
    pub labels: BTreeMap<Feature, bool>,
    /// The engine's four answers, calibration off; None unless it answered all four.
    pub engine: Option<BTreeMap<Feature, YesNo>>,
    /// A direct tier head's answer, when the engine has one.
    pub head: Option<TierAnswer>,
}

pub struct TierData {
    pub rules: Vec<Rule>,
    pub default_tier: Tier,
    /// `[routing] min_confidence`: a hint is given only when every answer that decided the tier clears it.
    pub threshold: f64,
    /// The fit in force per feature.
    pub fits: BTreeMap<Feature, Option<f64>>,
    pub items: Vec<TierItem>,
    pub has_head: bool,
}

/// Where the hint would be given: the share of items covered, and how often the pick agrees there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Covered {
    pub coverage: f64,
    pub agreement: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleOnEngine {
    /// Items where the engine answered all four features (the rule can pick).
    pub picked: usize,
    /// The share of those where the rule's tier is the labelled one.
    pub agreement: Option<f64>,
    pub off: Covered,
    pub on: Covered,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Constant {
    pub tier: Tier,
    pub agreement: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TierHead {
    pub answered: usize,
    pub agreement: Option<f64>,
    pub at_threshold: Covered,
}

/// One rule of the list (or the default tier) on the engine's answers: the prompts it decided,
/// how often its tier was the labelled one, and the same where the hint would be given
/// (calibration on), so that a user sees which rule to change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleFigures {
    /// The rule's 1-based number, or `"default"`.
    pub rule: rule::Chosen,
    /// Its condition in words (`design`, `read_only and specified`; the default: `no rule matched`).
    pub when: String,
    pub tier: Tier,
    pub decided: usize,
    pub agreement: Option<f64>,
    pub hinted: usize,
    pub hinted_agreement: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TierFigures {
    /// Items with a labelled tier.
    pub n: usize,
    pub threshold: f64,
    pub rule_on_engine: RuleOnEngine,
    /// Items with all four feature labels, and the rule's agreement on them (its ceiling).
    pub labelled_features: usize,
    pub rule_on_labels: Option<f64>,
    /// The tier labelled most often, and how often; the cheaper tier on a tie.
    pub best_constant: Option<Constant>,
    pub tier_head: Option<TierHead>,
    /// Each rule, then the default, on the engine's answers.
    pub per_rule: Vec<RuleFigures>,
    /// A rule learned from these labels against the configured one, both cross-validated on the
    /// same folds (calibration on); None below the folds' count of answered items.
    pub learned: Option<rule_fit::Comparison>,
    /// The direct tier head as the rule's first step, by nested cross-validation (the local
    /// engine only).
    pub head_first: Option<crate::tuning::tier_first::Measured>,
    /// The rule chosen among candidates by nested cross-validation, on the same folds (the local
    /// engine only).
    pub rule_choice: Option<crate::tuning::rule_choice::Measured>,
}

fn covered(hits: &[(bool, bool)], n: usize) -> Covered {
    let kept: Vec<bool> = hits.iter().filter(|(c, _)| *c).map(|(_, agree)| *agree).collect();
    Covered {
        coverage: share(kept.len(), n).unwrap_or(0.0),
        agreement: share(kept.iter().filter(|a| **a).count(), kept.len()),
    }
}

pub fn tiers(d: &TierData) -> TierFigures {
    let n = d.items.len();
    let choose = |answers: &BTreeMap<Feature, bool>| rule::choose(&d.rules, d.default_tier, answers).0;
    // (whether the deciding answers clear the threshold off, on; whether the rule agrees)
    let mut engine: Vec<(bool, bool, bool)> = Vec::new();
    // Per rule (the default last): decided, agreeing; hinted (calibration on), agreeing.
    let mut per_rule = vec![[0usize; 4]; d.rules.len() + 1];
    let mut on_labels: Vec<bool> = Vec::new();
    let mut head: Vec<(bool, bool)> = Vec::new();
    for item in &d.items {
        if let Some(answers) = &item.engine {
            let picks: BTreeMap<Feature, bool> = answers.iter().map(|(f, a)| (*f, a.yes)).collect();
            let (tier, chosen) = rule::choose(&d.rules, d.default_tier, &picks);
            // As the hook: only the answers that decided the tier must clear the threshold.
            let clears = |on: bool| {
                let sure: BTreeMap<Feature, (bool, f64)> = answers
                    .iter()
                    .map(|(f, a)| {
                        let t = if on { d.fits.get(f).copied().flatten() } else { None };
                        (*f, (a.yes, a.calibrated(t).confidence))
                    })
                    .collect();
                rule::deciding(&d.rules, chosen, &sure).iter().all(|f| sure[f].1 >= d.threshold - 1e-12)
            };
            engine.push((clears(false), clears(true), tier == item.tier));
            let slot = match chosen {
                rule::Chosen::Rule(n) => n - 1,
                // The rule alone never gives the head's pick.
                rule::Chosen::Default | rule::Chosen::Head => d.rules.len(),
            };
            let agrees = usize::from(tier == item.tier);
            let hinted = usize::from(clears(true));
            let r = &mut per_rule[slot];
            *r = [r[0] + 1, r[1] + agrees, r[2] + hinted, r[3] + hinted * agrees];
        }
        if Feature::ALL.iter().all(|f| item.labels.contains_key(f)) {
            on_labels.push(choose(&item.labels) == item.tier);
        }
        if let Some(h) = item.head {
            head.push((h.confidence >= d.threshold - 1e-12, h.tier == item.tier));
        }
    }
    // The items the engine answered, with the fits in force applied: what the learned rule and the
    // configured one are both measured on.
    let examples: Vec<rule_fit::Example> = d
        .items
        .iter()
        .filter_map(|item| {
            let answers = item.engine.as_ref()?;
            let answers = answers
                .iter()
                .map(|(f, a)| (*f, (a.yes, a.calibrated(d.fits.get(f).copied().flatten()).confidence)))
                .collect();
            Some(rule_fit::Example { answers, tier: item.tier })
        })
        .collect();
    let learned = rule_fit::compare(&examples, &d.rules, d.default_tier, d.threshold);
    let agree = |v: &[bool]| share(v.iter().filter(|a| **a).count(), v.len());
    let agreements: Vec<bool> = engine.iter().map(|e| e.2).collect();
    let mut counts: BTreeMap<Tier, usize> = BTreeMap::new();
    for item in &d.items {
        *counts.entry(item.tier).or_default() += 1;
    }
    // Ties go to the cheaper tier: max_by_key keeps the last maximum, so iterate from the top.
    let best_constant = counts
        .iter()
        .rev()
        .max_by_key(|(_, k)| **k)
        .map(|(t, k)| Constant { tier: *t, agreement: *k as f64 / n as f64 });
    let head_agree: Vec<bool> = head.iter().map(|h| h.1).collect();
    TierFigures {
        n,
        threshold: d.threshold,
        rule_on_engine: RuleOnEngine {
            picked: engine.len(),
            agreement: agree(&agreements),
            off: covered(&engine.iter().map(|e| (e.0, e.2)).collect::<Vec<_>>(), n),
            on: covered(&engine.iter().map(|e| (e.1, e.2)).collect::<Vec<_>>(), n),
        },
        labelled_features: on_labels.len(),
        rule_on_labels: agree(&on_labels),
        best_constant,
        tier_head: d.has_head.then(|| TierHead {
            answered: head.len(),
            agreement: agree(&head_agree),
            at_threshold: covered(&head, n),
        }),
        per_rule: per_rule
            .iter()
            .enumerate()
            .map(|(i, [decided, agreeing, hinted, hinted_agreeing])| {
                let (chosen, when, tier) = match d.rules.get(i) {
                    Some(r) => (rule::Chosen::Rule(i + 1), rule::describe(r), r.tier),
                    None => (rule::Chosen::Default, "no rule matched".to_string(), d.default_tier),
                };
                RuleFigures {
                    rule: chosen,
                    when,
                    tier,
                    decided: *decided,
                    agreement: share(*agreeing, *decided),
                    hinted: *hinted,
                    hinted_agreement: share(*hinted_agreeing, *hinted),
                }
            })
            .collect(),
        learned,
        head_first: None,
        rule_choice: None,
    }
}

/// Latency per decision, over the decisions an engine answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Latency {
    pub decisions: usize,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
}

/// The nearest-rank percentile: the smallest value with at least `p` of the values at or below it.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

pub fn latency(ms: &[f64]) -> Latency {
    Latency { decisions: ms.len(), p50_ms: percentile(ms, 0.5), p95_ms: percentile(ms, 0.95) }
}

/// An engine's figures over every question of every set: the point on the accuracy-latency chart
/// and its reliability diagram.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overall {
    pub answered: usize,
    pub accuracy: Option<f64>,
    pub latency: Latency,
    pub ece_off: Option<f64>,
    pub ece_on: Option<f64>,
    pub bins_off: Vec<Bin>,
    pub bins_on: Vec<Bin>,
}

/// Pools every question's answers (`(label, answer, fit in force)`) and every decision's latency.
pub fn overall(answers: &[(bool, YesNo, Option<f64>)], latencies: &[f64]) -> Overall {
    let off: Vec<Point> = answers.iter().map(|(l, a, _)| a.point(*l)).collect();
    let on: Vec<Point> = answers.iter().map(|(l, a, t)| a.calibrated(*t).point(*l)).collect();
    let (ece_off, bins_off) = ece_of(&off);
    let (ece_on, bins_on) = ece_of(&on);
    Overall {
        answered: answers.len(),
        accuracy: fit::accuracy(&off),
        latency: latency(latencies),
        ece_off,
        ece_on,
        bins_off,
        bins_on,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::default_rules;

    fn yn(yes: bool, c: f64) -> Option<YesNo> {
        Some(YesNo { yes, confidence: c })
    }

    #[test]
    fn a_question_by_hand() {
        // Labels and answers: right at 0.9, 0.8, 0.6; wrong at 0.7; one abstention.
        let d = QuestionData {
            question: "q".into(),
            threshold: 0.75,
            fit: Some(InForce { temperature: 0.5, origin: Origin::Shipped }),
            items: vec![
                (true, yn(true, 0.9)),
                (false, yn(false, 0.8)),
                (true, yn(true, 0.6)),
                (true, yn(false, 0.7)),
                (false, None),
            ],
        };
        let f = question(&d);
        assert_eq!((f.labelled, f.answered), (5, 4));
        assert_eq!(f.accuracy, Some(0.75));
        // P(yes) 0.9, 0.2, 0.6, 0.3 for labels yes, no, yes, yes: pairs (0.9>0.2) (0.6>0.2) (0.3>0.2) = 1.
        assert_eq!(f.auroc, Some(1.0));
        // Off: four answers, one equal-mass bin: mean confidence 0.75, accuracy 0.75: ECE 0.
        assert!(f.off.ece.unwrap().abs() < 1e-12);
        // At 0.75: 0.9 and 0.8 (both right) of 5 labelled.
        assert_eq!((f.off.coverage, f.off.accuracy_at_threshold), (0.4, Some(1.0)));
        // On, T = 0.5 squares the odds: 0.9 -> 81/82, 0.8 -> 16/17, 0.6 -> 9/13, 0.7 -> 49/58.
        let on = [81.0 / 82.0, 16.0 / 17.0, 9.0 / 13.0, 49.0 / 58.0];
        let mean = on.iter().sum::<f64>() / 4.0;
        assert!((f.on.ece.unwrap() - (mean - 0.75)).abs() < 1e-12);
        // 0.7 becomes 0.845: covered, and wrong. 0.6 -> 0.692 is not.
        assert_eq!(f.on.coverage, 0.6);
        assert!((f.on.accuracy_at_threshold.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(f.fit_here, None, "4 answers are too few for a fit");
    }

    #[test]
    fn a_fit_here_is_what_calibrate_fit_would_fit() {
        // 20 answers at 0.7, 15 right: T = logit(0.7) / logit(0.75).
        let items: Vec<(bool, Option<YesNo>)> = (0..20).map(|i| (i < 15, yn(true, 0.7))).collect();
        let f = question(&QuestionData { question: "q".into(), threshold: 0.6, fit: None, items });
        let h = f.fit_here.unwrap();
        let want = (0.7f64 / 0.3).ln() / 3f64.ln();
        assert!((h.temperature - want).abs() < 1e-6 && h.clamped.is_none(), "{h:?} vs {want}");
        assert!(h.ece_after.unwrap() < 1e-6, "calibrated to 0.75 on a set right 75% of the time");
        assert_eq!(f.off, f.on, "no fit in force: on is off");
    }

    fn labels(ro: bool, de: bool, rv: bool, sp: bool) -> BTreeMap<Feature, bool> {
        Feature::ALL.into_iter().zip([ro, de, rv, sp]).collect()
    }

    fn answers(v: [(bool, f64); 4]) -> Option<BTreeMap<Feature, YesNo>> {
        Some(Feature::ALL.into_iter().zip(v.map(|(yes, confidence)| YesNo { yes, confidence })).collect())
    }

    #[test]
    fn tiers_by_hand() {
        // The default rules: read_only and specified -> haiku; design -> opus; review -> opus;
        // otherwise sonnet (see config::default_rules).
        let items = vec![
            // Labelled haiku, labels say haiku; the engine says read_only + specified: haiku, agrees.
            TierItem {
                tier: Tier::Haiku,
                labels: labels(true, false, false, true),
                engine: answers([(true, 0.9), (false, 0.9), (false, 0.9), (true, 0.65)]),
                head: Some(TierAnswer { tier: Tier::Haiku, confidence: 0.8 }),
            },
            // Labelled opus (design); the engine misses design: sonnet, disagrees.
            TierItem {
                tier: Tier::Opus,
                labels: labels(false, true, false, false),
                engine: answers([(false, 0.9), (false, 0.55), (false, 0.9), (false, 0.9)]),
                head: Some(TierAnswer { tier: Tier::Opus, confidence: 0.5 }),
            },
            // Labelled sonnet, but its labels give haiku (the rule's ceiling misses it); no engine answer.
            TierItem { tier: Tier::Sonnet, labels: labels(true, false, false, true), engine: None, head: None },
            // Labelled sonnet, plain labels: sonnet. The engine says plain too, confidently.
            TierItem {
                tier: Tier::Sonnet,
                labels: labels(false, false, false, false),
                engine: answers([(false, 0.8), (false, 0.8), (false, 0.8), (false, 0.8)]),
                head: Some(TierAnswer { tier: Tier::Haiku, confidence: 0.9 }),
            },
        ];
        let mut fits: BTreeMap<Feature, Option<f64>> = Feature::ALL.into_iter().map(|f| (f, None)).collect();
        fits.insert(Feature::Specified, Some(0.5));
        let d = TierData {
            rules: default_rules(),
            default_tier: Tier::Sonnet,
            threshold: 0.7,
            fits,
            items,
            has_head: true,
        };
        let f = tiers(&d);
        assert_eq!(f.n, 4);
        let e = &f.rule_on_engine;
        // Three items answered: agree, disagree, agree.
        assert_eq!(e.picked, 3);
        assert!((e.agreement.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        // Off at 0.7: item 1 has specified at 0.65 (no), item 2 design at 0.55 (no), item 4 clears: 1 of 4, agreeing.
        assert_eq!((e.off.coverage, e.off.agreement), (0.25, Some(1.0)));
        // On: specified at T = 0.5 makes 0.65 into 0.775, so item 1 clears too: 2 of 4, both agree.
        assert_eq!((e.on.coverage, e.on.agreement), (0.5, Some(1.0)));
        // The rule on the labels: haiku (yes), opus (yes), haiku vs sonnet (no), sonnet (yes).
        assert_eq!((f.labelled_features, f.rule_on_labels), (4, Some(0.75)));
        // Sonnet twice, haiku once, opus once.
        assert_eq!(f.best_constant, Some(Constant { tier: Tier::Sonnet, agreement: 0.5 }));
        let h = f.tier_head.unwrap();
        // Right, right, wrong (haiku for sonnet): 2 of 3. At 0.7: 0.8 (right) and 0.9 (wrong).
        assert_eq!(h.answered, 3);
        assert!((h.agreement.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!((h.at_threshold.coverage, h.at_threshold.agreement), (0.5, Some(0.5)));
        // Per rule on the engine's answers: rule 3 (haiku) decided item 1, agreeing and hinted on;
        // the default decided items 2 (disagreeing, not hinted) and 4 (agreeing, hinted).
        let by = |i: usize| {
            (f.per_rule[i].decided, f.per_rule[i].agreement, f.per_rule[i].hinted, f.per_rule[i].hinted_agreement)
        };
        assert_eq!(f.per_rule.len(), 4);
        assert_eq!((by(0), by(1)), ((0, None, 0, None), (0, None, 0, None)));
        assert_eq!(by(2), (1, Some(1.0), 1, Some(1.0)));
        assert_eq!(by(3), (2, Some(0.5), 1, Some(1.0)));
        assert_eq!((f.per_rule[2].when.as_str(), f.per_rule[2].tier), ("read_only and specified", Tier::Haiku));
        assert_eq!((f.per_rule[3].rule, f.per_rule[3].tier), (rule::Chosen::Default, Tier::Sonnet));
    }

    #[test]
    fn a_tie_for_the_best_constant_goes_to_the_cheaper_tier() {
        let item = |tier| TierItem { tier, labels: BTreeMap::new(), engine: None, head: None };
        let d = TierData {
            rules: default_rules(),
            default_tier: Tier::Sonnet,
            threshold: 0.7,
            fits: BTreeMap::new(),
            items: vec![item(Tier::Opus), item(Tier::Haiku), item(Tier::Opus), item(Tier::Haiku)],
            has_head: false,
        };
        let f = tiers(&d);
        assert_eq!(f.best_constant, Some(Constant { tier: Tier::Haiku, agreement: 0.5 }));
        assert_eq!((f.rule_on_engine.picked, f.rule_on_engine.agreement, f.rule_on_labels), (0, None, None));
        assert_eq!(f.tier_head, None);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let ms = [40.0, 10.0, 30.0, 20.0];
        // p50: rank ceil(2) = 2 -> 20; p95: rank ceil(3.8) = 4 -> 40.
        assert_eq!((percentile(&ms, 0.5), percentile(&ms, 0.95)), (Some(20.0), Some(40.0)));
        let twenty: Vec<f64> = (1..=20).map(f64::from).collect();
        // p95 of 1..20: rank 19.
        assert_eq!(percentile(&twenty, 0.95), Some(19.0));
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(latency(&[5.0]), Latency { decisions: 1, p50_ms: Some(5.0), p95_ms: Some(5.0) });
    }

    #[test]
    fn overall_pools_every_answer() {
        let a = |yes, c| YesNo { yes, confidence: c };
        let o = overall(
            &[(true, a(true, 0.8), None), (false, a(true, 0.6), Some(2.0)), (false, a(false, 0.9), None)],
            &[3.0, 1.0],
        );
        assert!((o.accuracy.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        // Off: one bin, mean 0.7667, accuracy 0.6667. On: 0.6 at T = 2 becomes sqrt(.6)/(sqrt(.6)+sqrt(.4)).
        assert!((o.ece_off.unwrap() - (2.3 / 3.0 - 2.0 / 3.0)).abs() < 1e-12);
        let soft = 0.6f64.sqrt() / (0.6f64.sqrt() + 0.4f64.sqrt());
        assert!((o.ece_on.unwrap() - ((0.8 + soft + 0.9) / 3.0 - 2.0 / 3.0)).abs() < 1e-12);
        assert_eq!(o.latency.p50_ms, Some(1.0));
    }
}
