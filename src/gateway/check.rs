//! Answer checks: the gateway, not the adapter, judges what an engine said (the decision is one of
//! the options, the confidence and every probability lie in [0, 1], the probabilities name each
//! option once and sum to 1), then calibration rescales it.

use super::{Answer, Gateway};
use crate::calibration;
use crate::providers::{EngineAnswer, EngineRequest, Failure, Probabilities, Provider, Question};

/// A provider's answers once checked and calibrated, with the notes on how they were read (the
/// attempt's `detail`); or why they are malformed.
pub(super) type Checked = Result<(Vec<Answer>, Option<String>), Failure>;

/// How far the probabilities may sum from 1 (engines round to 4 decimals, and some renormalise).
const SUM_TOLERANCE: f64 = 0.02;

impl Gateway {
    /// Checks a provider's answers (the gateway, not the adapter, judges them) and calibrates them.
    pub(super) fn check_answers(
        &self,
        provider: &dyn Provider,
        request: &EngineRequest,
        cal_keys: &[String],
        given: Vec<EngineAnswer>,
    ) -> Checked {
        if given.len() != request.questions.len() {
            return Err(Failure::Malformed(format!(
                "{} answers for {} questions",
                given.len(),
                request.questions.len()
            )));
        }
        let model = provider.model();
        let mut details = Vec::new();
        let mut answers = Vec::with_capacity(given.len());
        for (i, (q, a)) in request.questions.iter().zip(given).enumerate() {
            let (answer, detail) =
                check_one(q, a).map_err(|e| Failure::Malformed(format!("question {:?}: {e}", q.key)))?;
            if let Some(d) = detail {
                details.push(d);
            }
            let key = cal_keys.get(i).map(String::as_str).unwrap_or(&q.key);
            answers.push(self.calibrate(provider.name(), &model, key, &q.options, answer));
        }
        Ok((answers, if details.is_empty() { None } else { Some(details.join("; ")) }))
    }

    /// Rescales a decided answer with the calibration fit for its question, when one applies.
    fn calibrate(&self, provider: &str, model: &str, key: &str, options: &[String], answer: Answer) -> Answer {
        let Answer::Decided { decision, confidence, probabilities, rationale, .. } = answer else { return answer };
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
                rationale,
            },
            None => Answer::Decided { decision, confidence, probabilities, calibrated: false, rationale },
        }
    }
}

/// Checks one engine answer against its question; the answer's `detail` comes back beside it.
fn check_one(q: &Question, answer: EngineAnswer) -> Result<(Answer, Option<String>), String> {
    match answer {
        EngineAnswer::Abstained { rationale, detail } => Ok((Answer::Abstained { rationale }, detail)),
        EngineAnswer::Decided { decision, confidence, probabilities, rationale, detail } => {
            if !q.options.contains(&decision) {
                return Err(format!("decision {decision:?} is not one of the options"));
            }
            check_confidence(confidence)?;
            let probabilities = probabilities.map(|p| in_option_order(q, &p)).transpose()?;
            Ok((Answer::Decided { decision, confidence, probabilities, calibrated: false, rationale }, detail))
        }
    }
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
            return Err(format!("probabilities name {k:?}, which is not an option"));
        };
        if !(0.0..=1.0).contains(&x) {
            return Err(format!("probability of {k:?} is not a number in [0, 1]"));
        }
        if by_option[i].replace(x).is_some() {
            return Err(format!("probabilities name {k:?} twice"));
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
        assert_eq!(a, Answer::Abstained { rationale: Some("non-Latin".into()) });
    }
}
