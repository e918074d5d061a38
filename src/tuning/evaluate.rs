//! The measures behind `system1 evaluate` and its READY verdict (for users: docs/calibration.md).
//! Pure: rows in (teacher labels, the engine's answers, the outcome), an evaluation out.
//!
//! - Per feature, against the teacher labels: accuracy, AUROC of the engine's probability of "yes",
//!   and coverage and accuracy at the routing threshold (what the hook would act on).
//! - The rule, on spawns with an outcome: *safety* is the share of failed spawns where the rule
//!   would have picked a higher tier than the one that ran; on successes, *agreement* is the share
//!   where it picks the same tier and *savings* the share where it picks a cheaper one. It is
//!   computed twice: on the engine's answers, and on the teacher labels (the rule's ceiling, so a
//!   weak rule and a weak engine can be told apart).
//! - READY only when every feature's accuracy at the threshold reaches its bar, the engine's safety
//!   reaches its bar, and enough failures are labelled for safety to mean something.

use std::collections::BTreeMap;

use serde::Serialize;

use super::fit::{self, Point};
use crate::config::Rule;
use crate::feature::Feature;
use crate::routing::entry::Outcome;
use crate::routing::rule;
use crate::tier::Tier;

/// One log entry as evaluate sees it.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub labels: BTreeMap<Feature, bool>,
    /// The engine's answer and calibrated confidence per feature; None for a feature it abstained
    /// on; an empty map when it failed altogether.
    pub engine: BTreeMap<Feature, Option<(bool, f64)>>,
    /// For spawns.
    pub outcome: Option<Outcome>,
    /// The tier that ran.
    pub outcome_tier: Option<Tier>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Bars {
    pub min_feature_accuracy: f64,
    pub min_safety: f64,
    pub min_failures: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FeatureScore {
    pub feature: Feature,
    /// Rows with a teacher label for this feature.
    pub labelled: usize,
    /// Of those, how many the engine answered.
    pub answered: usize,
    pub accuracy: Option<f64>,
    pub auroc: Option<f64>,
    pub coverage_at_threshold: f64,
    pub accuracy_at_threshold: Option<f64>,
    pub passes: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RuleScore {
    /// Failed spawns the rule could judge (all four answers known, tier that ran known).
    pub failures: usize,
    /// Of those, where the rule would have picked a higher tier.
    pub higher_on_failures: usize,
    pub safety: Option<f64>,
    pub successes: usize,
    pub same_on_successes: usize,
    pub cheaper_on_successes: usize,
    pub agreement: Option<f64>,
    pub savings: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Evaluation {
    pub threshold: f64,
    pub rows: usize,
    pub features: Vec<FeatureScore>,
    pub rule_engine: RuleScore,
    pub rule_teacher: RuleScore,
    /// Every failed spawn with an outcome in the log (what `--min-failures` counts).
    pub failures_labelled: usize,
    pub ready: bool,
    /// Why not READY, one line per bar missed.
    pub reasons: Vec<String>,
}

fn share(k: usize, n: usize) -> Option<f64> {
    (n > 0).then(|| k as f64 / n as f64)
}

/// How a spawn without all four answers counts.
#[derive(Clone, Copy, PartialEq)]
enum Unanswered {
    /// It counts, and the rule picks nothing: an engine that failed is judged on it.
    Counts,
    /// It is left out: a spawn nobody labelled says nothing about the rule.
    LeftOut,
}

fn rule_score(
    rows: &[Row],
    rules: &[Rule],
    default_tier: Tier,
    answers: impl Fn(&Row) -> Option<BTreeMap<Feature, bool>>,
    unanswered: Unanswered,
) -> RuleScore {
    let mut r = RuleScore {
        failures: 0,
        higher_on_failures: 0,
        safety: None,
        successes: 0,
        same_on_successes: 0,
        cheaper_on_successes: 0,
        agreement: None,
        savings: None,
    };
    for row in rows {
        let (Some(outcome), Some(ran)) = (row.outcome, row.outcome_tier) else {
            continue;
        };
        // Without all four answers the rule picks nothing: the spawn counts (when the engine's answers
        // are judged), and the pick is not higher.
        let picked = answers(row).map(|a| rule::choose(rules, default_tier, &a).0);
        if picked.is_none() && unanswered == Unanswered::LeftOut {
            continue;
        }
        match outcome {
            Outcome::Failed => {
                r.failures += 1;
                r.higher_on_failures += usize::from(picked.is_some_and(|p| p > ran));
            }
            Outcome::Succeeded => {
                r.successes += 1;
                r.same_on_successes += usize::from(picked == Some(ran));
                r.cheaper_on_successes += usize::from(picked.is_some_and(|p| p < ran));
            }
        }
    }
    r.safety = share(r.higher_on_failures, r.failures);
    r.agreement = share(r.same_on_successes, r.successes);
    r.savings = share(r.cheaper_on_successes, r.successes);
    r
}

pub fn evaluate(rows: &[Row], rules: &[Rule], default_tier: Tier, threshold: f64, bars: Bars) -> Evaluation {
    let mut features = Vec::new();
    for f in Feature::ALL {
        let mut points: Vec<Point> = Vec::new();
        let mut scored: Vec<(f64, bool)> = Vec::new();
        let mut labelled = 0;
        for row in rows {
            let Some(&label) = row.labels.get(&f) else { continue };
            labelled += 1;
            if let Some(Some((answer, confidence))) = row.engine.get(&f) {
                points.push(Point { confidence: *confidence, correct: *answer == label });
                scored.push((if *answer { *confidence } else { 1.0 - *confidence }, label));
            }
        }
        let at = fit::at_threshold(&points, threshold);
        // Coverage is over every labelled row: an abstention or a failure is not covered.
        let coverage = share(at.covered, labelled).unwrap_or(0.0);
        let passes = at.accuracy.is_some_and(|a| a >= bars.min_feature_accuracy - 1e-12);
        features.push(FeatureScore {
            feature: f,
            labelled,
            answered: points.len(),
            accuracy: fit::accuracy(&points),
            auroc: fit::auroc(&scored),
            coverage_at_threshold: coverage,
            accuracy_at_threshold: at.accuracy,
            passes,
        });
    }
    let engine_answers = |row: &Row| -> Option<BTreeMap<Feature, bool>> {
        Feature::ALL.iter().map(|f| Some((*f, row.engine.get(f).copied().flatten()?.0))).collect()
    };
    let teacher_answers = |row: &Row| -> Option<BTreeMap<Feature, bool>> {
        Feature::ALL.iter().map(|f| Some((*f, *row.labels.get(f)?))).collect()
    };
    let rule_engine = rule_score(rows, rules, default_tier, engine_answers, Unanswered::Counts);
    let rule_teacher = rule_score(rows, rules, default_tier, teacher_answers, Unanswered::LeftOut);
    let failures_labelled = rows.iter().filter(|r| r.outcome == Some(Outcome::Failed)).count();

    let mut reasons = Vec::new();
    for f in &features {
        if !f.passes {
            reasons.push(match f.accuracy_at_threshold {
                Some(a) => format!(
                    "{}: {:.1}% accurate at the threshold, below {:.0}%",
                    f.feature,
                    100.0 * a,
                    100.0 * bars.min_feature_accuracy
                ),
                None if f.labelled == 0 => format!("{}: no entry has a label for it", f.feature),
                None => format!("{}: no labelled answer reaches the threshold {threshold:.2}", f.feature),
            });
        }
    }
    match rule_engine.safety {
        Some(s) if s >= bars.min_safety - 1e-12 => {}
        Some(s) => reasons.push(format!("safety {:.1}% is below {:.0}%", 100.0 * s, 100.0 * bars.min_safety)),
        None => reasons.push("safety: no failed spawn with a known tier to judge the rule on".into()),
    }
    if failures_labelled < bars.min_failures {
        let labelled = crate::text::count(failures_labelled as u64, "failed spawn");
        reasons.push(format!("{labelled} labelled, fewer than {}", bars.min_failures));
    }
    Evaluation {
        threshold,
        rows: rows.len(),
        features,
        rule_engine,
        rule_teacher,
        failures_labelled,
        ready: reasons.is_empty(),
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::default_rules;

    fn row(labels: [bool; 4], engine: Option<[(bool, f64); 4]>, outcome: Option<(Outcome, Tier)>) -> Row {
        Row {
            labels: Feature::ALL.into_iter().zip(labels).collect(),
            engine: engine.map(|e| Feature::ALL.into_iter().zip(e.map(Some)).collect()).unwrap_or_default(),
            outcome: outcome.map(|o| o.0),
            outcome_tier: outcome.map(|o| o.1),
        }
    }

    const BARS: Bars = Bars { min_feature_accuracy: 0.85, min_safety: 0.95, min_failures: 2 };

    /// Four rows, features in the order read_only, design, review, specified.
    fn rows() -> Vec<Row> {
        vec![
            // Teacher: design -> opus. Engine agrees (design yes at 0.9). Failed on sonnet: both pick higher.
            row(
                [false, true, false, false],
                Some([(false, 0.8), (true, 0.9), (false, 0.7), (false, 0.6)]),
                Some((Outcome::Failed, Tier::Sonnet)),
            ),
            // Teacher: read-only, not specified -> sonnet. The engine wrongly says specified (0.55) -> haiku,
            // the tier that failed: not higher. The teacher's sonnet is higher.
            row(
                [true, false, false, false],
                Some([(true, 0.95), (false, 0.9), (false, 0.9), (true, 0.55)]),
                Some((Outcome::Failed, Tier::Haiku)),
            ),
            // Teacher: plain -> sonnet; the engine wrongly says read_only + specified -> haiku. Succeeded on
            // sonnet: the engine's pick is cheaper, the teacher's the same.
            row(
                [false, false, false, false],
                Some([(true, 0.6), (false, 0.9), (false, 0.8), (true, 0.7)]),
                Some((Outcome::Succeeded, Tier::Sonnet)),
            ),
            // The engine failed on this one; succeeded on opus. Teacher: review -> opus (the same).
            row([false, false, true, false], None, Some((Outcome::Succeeded, Tier::Opus))),
        ]
    }

    #[test]
    fn every_metric_by_hand() {
        let r = evaluate(&rows(), &default_rules(), Tier::Sonnet, 0.7, BARS);
        let f = |name: &str| r.features.iter().find(|x| x.feature.name() == name).unwrap().clone();
        // read_only: (no vs no, 0.8) right, (yes vs yes, 0.95) right, (yes vs no, 0.6) wrong: 2/3.
        let ro = f("read_only");
        assert_eq!((ro.labelled, ro.answered), (4, 3));
        assert!((ro.accuracy.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        // At 0.7 the 0.8 and 0.95 answers are covered (both right), 0.6 is not: coverage 2 of 4 labelled.
        assert_eq!((ro.coverage_at_threshold, ro.accuracy_at_threshold), (0.5, Some(1.0)));
        // P(yes): 0.2 (label no), 0.95 (yes), 0.4 (no). The positive beats both negatives: AUROC 1.
        assert_eq!(ro.auroc, Some(1.0));
        // specified: (no vs no, 0.6) right, (yes vs no, 0.55) wrong, (yes vs no, 0.7) wrong: 1/3.
        let sp = f("specified");
        assert!((sp.accuracy.unwrap() - 1.0 / 3.0).abs() < 1e-12);
        // At 0.7 only the 0.7 answer (wrong) is covered: accuracy 0, coverage 1 of 4.
        assert_eq!(sp.accuracy_at_threshold, Some(0.0));
        assert!((sp.coverage_at_threshold - 0.25).abs() < 1e-12);
        assert_eq!(sp.auroc, None, "no answered row is labelled specified");
        assert!(!sp.passes);
        // design: three right; P(yes) 0.9 (yes) vs 0.1, 0.1 (no): AUROC 1.
        assert_eq!((f("design").accuracy, f("design").auroc), (Some(1.0), Some(1.0)));
        assert_eq!(f("review").auroc, None, "the only review positive was not answered");
        assert!(f("review").passes && f("design").passes && f("read_only").passes);

        // The rule on the engine's answers: 2 failures, 1 picked higher: safety 1/2.
        let e = &r.rule_engine;
        assert_eq!((e.failures, e.higher_on_failures, e.safety), (2, 1, Some(0.5)));
        // Successes: row 3 picks haiku under sonnet (cheaper); row 4 has no engine answer (no pick).
        assert_eq!((e.successes, e.same_on_successes, e.cheaper_on_successes), (2, 0, 1));
        assert_eq!((e.agreement, e.savings), (Some(0.0), Some(0.5)));
        // The teacher's labels: both failures picked higher; both successes the same tier.
        let t = &r.rule_teacher;
        assert_eq!((t.higher_on_failures, t.safety), (2, Some(1.0)));
        assert_eq!((t.agreement, t.savings), (Some(1.0), Some(0.0)));
        assert_eq!(r.failures_labelled, 2);
        assert!(!r.ready);
        assert_eq!(r.reasons.len(), 2, "{:?}", r.reasons);
        assert!(r.reasons[0].starts_with("specified") && r.reasons[1].starts_with("safety 50.0%"));
    }

    /// Spawns with an outcome and no feature labels: the engine's side judges them, the teacher's
    /// side has nothing to judge (n/a, not "0 of 1 sent higher", which reads as an unsafe rule).
    #[test]
    fn spawns_without_labels_leave_the_ceiling_unmeasured() {
        let answers = Some([(false, 0.9), (true, 0.9), (false, 0.9), (false, 0.9)]);
        let mut rows = vec![
            row([false; 4], answers, Some((Outcome::Failed, Tier::Sonnet))),
            row([false; 4], answers, Some((Outcome::Succeeded, Tier::Opus))),
        ];
        for r in &mut rows {
            r.labels.clear();
        }
        let r = evaluate(&rows, &default_rules(), Tier::Sonnet, 0.7, BARS);
        let e = &r.rule_engine;
        assert_eq!((e.failures, e.higher_on_failures, e.successes, e.same_on_successes), (1, 1, 1, 1));
        let t = &r.rule_teacher;
        assert_eq!((t.failures, t.successes, t.safety, t.agreement, t.savings), (0, 0, None, None, None));
        assert!(r.features.iter().all(|f| f.labelled == 0 && f.accuracy.is_none()));
        assert!(r.reasons.iter().any(|x| x == "design: no entry has a label for it"), "{:?}", r.reasons);
    }

    /// `rows()` with the engine's two wrong answers put right: every bar holds.
    fn good() -> Vec<Row> {
        let mut good = rows();
        good[1].engine.insert(Feature::Specified, Some((false, 0.9)));
        good[2].engine.insert(Feature::ReadOnly, Some((false, 0.9)));
        good[2].engine.insert(Feature::Specified, Some((false, 0.9)));
        good
    }

    #[test]
    fn ready_on_both_sides_of_each_bar() {
        let rules = default_rules();
        let eval = |rows: &[Row], bars: Bars| evaluate(rows, &rules, Tier::Sonnet, 0.7, bars);
        let r = eval(&good(), BARS);
        assert!(r.ready, "{:?}", r.reasons);
        assert_eq!(r.rule_engine.safety, Some(1.0));
        // Feature bar: every feature is 100% right at the threshold, so even a bar of 1.0 holds...
        assert!(eval(&good(), Bars { min_feature_accuracy: 1.0, ..BARS }).ready);
        // ...and one wrong review answer (2 of 3 right at >= 0.7, 66.7%) misses 85% but meets 66%.
        let mut one_wrong = good();
        one_wrong[0].engine.insert(Feature::Review, Some((true, 0.9)));
        let r = eval(&one_wrong, BARS);
        assert!(!r.ready && r.reasons.iter().any(|x| x.starts_with("review: 66.7%")), "{:?}", r.reasons);
        assert!(eval(&one_wrong, Bars { min_feature_accuracy: 0.66, ..BARS }).ready);
        // Safety bar: the second failure ran on opus, above the rule's sonnet: safety 1/2.
        let mut unsafe_rows = good();
        unsafe_rows[1].outcome_tier = Some(Tier::Opus);
        let r = eval(&unsafe_rows, BARS);
        assert_eq!(r.rule_engine.safety, Some(0.5));
        assert!(!r.ready && r.reasons.iter().any(|x| x.starts_with("safety")));
        assert!(eval(&unsafe_rows, Bars { min_safety: 0.5, ..BARS }).ready);
        // Failures bar: 2 labelled; 3 needed fails, 2 holds.
        assert!(!eval(&good(), Bars { min_failures: 3, ..BARS }).ready);
        assert!(eval(&good(), Bars { min_failures: 2, ..BARS }).ready);
    }
}
