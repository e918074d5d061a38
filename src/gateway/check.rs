//! Answer checks: the gateway, not the adapter, judges what an engine said (the decision is one of
//! the options, the confidence and every probability lie in [0, 1], the probabilities name each
//! option once and sum to 1), maps the answer to a reordered variant back to the caller's order,
//! and has calibration rescale it.

use super::{Answer, Gateway};
use crate::calibration;
use crate::providers::{EngineAnswer, Failure, Probabilities, Question};

/// A provider's answers once checked and calibrated, with the notes on how they were read (the
/// attempt's `detail`); or why they are malformed.
pub(super) type Checked = Result<(Vec<Answer>, Option<String>), Failure>;

/// How far the probabilities may sum from 1 (engines round to 4 decimals, and some renormalise).
const SUM_TOLERANCE: f64 = 0.02;

impl Gateway {
    /// Rescales a decided answer with the calibration fit for its question, when one applies.
    /// `options` are the options it was asked over (the finalists, after elimination rounds), so
    /// the fit for that many options is the one that matches.
    pub(super) fn calibrate(
        &self,
        provider: &str,
        model: &str,
        key: &str,
        options: &[String],
        answer: Answer,
    ) -> Answer {
        let Answer::Decided { decision, confidence, probabilities, rationale, stability, .. } = answer else {
            return answer;
        };
        let values: Option<Vec<f64>> = probabilities.as_ref().map(|p| p.iter().map(|(_, x)| x).collect());
        let answered = calibration::Answered {
            options: options.len(),
            decision: options.iter().position(|o| *o == decision).unwrap_or(0),
            confidence,
            probabilities: values.as_deref(),
        };
        match self.calibration.apply(provider, model, key, &answered) {
            Some(c) => Answer::Decided {
                decision,
                confidence: c.confidence,
                probabilities: Some(Probabilities::of(options, &c.probabilities)),
                calibrated: true,
                // The engine's rationale quotes its own numbers: the ones the answer carries follow,
                // so the two never seem to disagree.
                rationale: rationale.map(|r| {
                    format!("{r}; calibrated: {}", crate::providers::answers::listed(options, &c.probabilities))
                }),
                stability,
            },
            None => Answer::Decided { decision, confidence, probabilities, calibrated: false, rationale, stability },
        }
    }
}

/// Checks the answer to a reordered variant against the question as it was asked, then maps it
/// back: its probabilities in the order of `original`, the question as the caller gave it. (The
/// decision is an option's text, which no order changes.)
pub(super) fn check_variant(
    asked: &Question,
    original: &Question,
    answer: EngineAnswer,
) -> Result<(Answer, Option<String>), String> {
    match check_one(asked, answer)? {
        (Answer::Decided { decision, confidence, probabilities: Some(p), calibrated, rationale, stability }, d) => {
            let probabilities = Some(in_option_order(original, &p)?);
            Ok((Answer::Decided { decision, confidence, probabilities, calibrated, rationale, stability }, d))
        }
        other => Ok(other),
    }
}

/// Checks one engine answer against its question; the answer's `detail` comes back beside it.
pub(super) fn check_one(q: &Question, answer: EngineAnswer) -> Result<(Answer, Option<String>), String> {
    match answer {
        EngineAnswer::Abstained { rationale, detail } => Ok((Answer::Abstained { rationale, stability: None }, detail)),
        EngineAnswer::Passed { reason, cause } => Ok((Answer::Passed { reason, causes: vec![cause] }, None)),
        EngineAnswer::Decided { decision, confidence, probabilities, rationale, detail } => {
            if !q.options.contains(&decision) {
                return Err(format!("decision {} is not one of the options", shown(&decision)));
            }
            check_confidence(confidence)?;
            let probabilities = probabilities.map(|p| in_option_order(q, &p)).transpose()?;
            Ok((
                Answer::Decided { decision, confidence, probabilities, calibrated: false, rationale, stability: None },
                detail,
            ))
        }
    }
}

/// An option as an engine named it, quoted in a message: escaped and short, for it may be
/// anything the engine sent.
fn shown(option: &str) -> String {
    format!("\"{}\"", crate::text::printable(option, 100))
}

fn check_confidence(c: f64) -> Result<(), String> {
    if !c.is_finite() {
        Err("confidence is missing or not a number".to_string())
    } else if !(0.0..=1.0).contains(&c) {
        Err(format!("confidence {c} is outside [0, 1]"))
    } else {
        Ok(())
    }
}

/// The probabilities in the question's option order, once they are known to name each option
/// exactly once, each with a number in [0, 1], summing to 1.
fn in_option_order(q: &Question, p: &Probabilities) -> Result<Probabilities, String> {
    let mut by_option: Vec<Option<f64>> = vec![None; q.options.len()];
    for (k, x) in p.iter() {
        let Some(i) = q.options.iter().position(|o| o == k) else {
            return Err(format!("probabilities name {}, which is not an option", shown(k)));
        };
        if !(0.0..=1.0).contains(&x) {
            return Err(format!("probability of {} is not a number in [0, 1]", shown(k)));
        }
        if by_option[i].replace(x).is_some() {
            return Err(format!("probabilities name {} twice", shown(k)));
        }
    }
    let covered: Vec<f64> = by_option.iter().flatten().copied().collect();
    if covered.len() != q.options.len() {
        return Err(format!("probabilities cover {} of {} options", covered.len(), q.options.len()));
    }
    let sum: f64 = covered.iter().sum();
    if (sum - 1.0).abs() > SUM_TOLERANCE {
        return Err(format!("probabilities sum to {sum:.4}, not 1"));
    }
    Ok(Probabilities::of(&q.options, &covered))
}

#[cfg(test)]
mod tests {
    use super::super::testing::q;
    use super::*;

    fn decided(decision: &str, confidence: f64, probabilities: Option<&[(&str, f64)]>) -> EngineAnswer {
        EngineAnswer::Decided {
            decision: decision.to_string(),
            confidence,
            probabilities: probabilities.map(|p| p.iter().map(|(o, x)| (o.to_string(), *x)).collect()),
            rationale: None,
            detail: None,
        }
    }

    fn refused(answer: EngineAnswer) -> String {
        check_one(&q(&["yes", "no"]), answer).expect_err("malformed")
    }

    #[test]
    fn every_malformed_answer_is_refused_by_the_gateway() {
        assert_eq!(refused(decided("maybe", 0.9, None)), "decision \"maybe\" is not one of the options");
        assert_eq!(refused(decided("", 0.9, None)), "decision \"\" is not one of the options");
        assert_eq!(refused(decided("yes", 1.2, None)), "confidence 1.2 is outside [0, 1]");
        assert_eq!(refused(decided("yes", -0.1, None)), "confidence -0.1 is outside [0, 1]");
        assert_eq!(refused(decided("yes", f64::NAN, None)), "confidence is missing or not a number");
        assert_eq!(
            refused(decided("yes", 0.9, Some(&[("yes", 0.9), ("maybe", 0.1)]))),
            "probabilities name \"maybe\", which is not an option"
        );
        assert_eq!(
            refused(decided("yes", 0.9, Some(&[("yes", 1.5), ("no", -0.5)]))),
            "probability of \"yes\" is not a number in [0, 1]"
        );
        assert_eq!(
            refused(decided("yes", 0.9, Some(&[("yes", 0.9), ("no", f64::NAN)]))),
            "probability of \"no\" is not a number in [0, 1]"
        );
        assert_eq!(refused(decided("yes", 0.9, Some(&[("yes", 1.0)]))), "probabilities cover 1 of 2 options");
        assert_eq!(
            refused(decided("yes", 0.5, Some(&[("yes", 0.5), ("yes", 0.5)]))),
            "probabilities name \"yes\" twice"
        );
        assert_eq!(
            refused(decided("yes", 0.9, Some(&[("yes", 0.9), ("no", 0.5)]))),
            "probabilities sum to 1.4000, not 1"
        );
    }

    #[test]
    fn a_good_answer_passes_with_its_probabilities_in_option_order() {
        let yn = q(&["yes", "no"]);
        let (a, detail) =
            check_one(&yn, decided("no", 0.7, Some(&[("no", 0.7), ("yes", 0.3)])).with_detail("n".into()))
                .expect("valid");
        assert_eq!(detail.as_deref(), Some("n"));
        let Answer::Decided { probabilities: Some(p), calibrated: false, .. } = a else { panic!("decided") };
        assert_eq!(p.iter().collect::<Vec<_>>(), [("yes", 0.3), ("no", 0.7)], "reported in option order");
        // Within the tolerance of a rounding engine, the sum is 1.
        assert!(check_one(&yn, decided("yes", 0.5, Some(&[("yes", 0.505), ("no", 0.505)]))).is_ok());
        assert!(check_one(&yn, decided("yes", 0.8, None)).is_ok(), "probabilities are optional");
        let (a, _) = check_one(&yn, EngineAnswer::abstained("non-Latin".into())).expect("valid");
        assert_eq!(a, Answer::Abstained { rationale: Some("non-Latin".into()), stability: None });
    }

    #[test]
    fn a_variants_answer_is_checked_as_asked_and_mapped_back_to_the_callers_order() {
        let original = q(&["a", "b", "c"]);
        let reversed = q(&["c", "b", "a"]);
        // The engine names the options in the order it was shown them: c, b, a.
        let given = decided("b", 0.5, Some(&[("c", 0.2), ("b", 0.5), ("a", 0.3)]));
        let (a, _) = check_variant(&reversed, &original, given).expect("valid");
        let Answer::Decided { decision, probabilities: Some(p), .. } = a else { panic!("decided") };
        assert_eq!(decision, "b");
        assert_eq!(p.iter().collect::<Vec<_>>(), [("a", 0.3), ("b", 0.5), ("c", 0.2)], "back in a, b, c order");
        // Judged against the question as it was asked.
        let err = check_variant(&q(&["c", "b"]), &original, decided("a", 0.5, None)).expect_err("not asked");
        assert_eq!(err, "decision \"a\" is not one of the options");
    }
}
