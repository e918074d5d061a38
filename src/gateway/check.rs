//! Answer checks: the gateway, not the adapter, judges what an engine said (the decision is one of
//! the options, the confidence and every probability lie in [0, 1], the probabilities cover exactly
//! the options and sum to 1), then calibration rescales it.

use serde_json::{Map, Value, json};

use super::{Answer, Gateway};
use crate::calibration;
use crate::providers::{EngineRequest, Failure, Provider, Question};

impl Gateway {
    /// Checks a provider's answers (the gateway, not the adapter, judges them) and calibrates them.
    pub(super) fn check_answers(
        &self,
        provider: &dyn Provider,
        request: &EngineRequest,
        cal_keys: &[String],
        values: Vec<Value>,
    ) -> Result<(Vec<Answer>, Option<String>), Failure> {
        if values.len() != request.questions.len() {
            return Err(Failure::Malformed(format!(
                "{} answers for {} questions",
                values.len(),
                request.questions.len()
            )));
        }
        let model = provider.model();
        let mut details = Vec::new();
        let mut answers = Vec::with_capacity(values.len());
        for (i, (q, v)) in request.questions.iter().zip(values).enumerate() {
            let (answer, detail) =
                check_one(q, &v).map_err(|e| Failure::Malformed(format!("question {:?}: {e}", q.key)))?;
            if let Some(d) = detail {
                details.push(d);
            }
            let key = cal_keys.get(i).map(String::as_str).unwrap_or(&q.key);
            answers.push(self.calibrate(provider.name(), &model, key, &q.options, answer));
        }
        Ok((answers, if details.is_empty() { None } else { Some(details.join("; ")) }))
    }

    fn calibrate(&self, provider: &str, model: &str, key: &str, options: &[String], answer: Answer) -> Answer {
        let Answer::Decided { decision, confidence, probabilities, rationale, .. } = answer else { return answer };
        let Some(fit) = self.calibration.find(provider, model, key, options.len()) else {
            return Answer::Decided { decision, confidence, probabilities, calibrated: false, rationale };
        };
        // Without reported probabilities only a two-option answer can be rescaled: the loser has the rest.
        let probs: Vec<f64> = match &probabilities {
            Some(p) => options.iter().map(|o| p.get(o).and_then(Value::as_f64).unwrap_or(0.0)).collect(),
            None if options.len() == 2 => {
                options.iter().map(|o| if *o == decision { confidence } else { 1.0 - confidence }).collect()
            }
            None => return Answer::Decided { decision, confidence, probabilities, calibrated: false, rationale },
        };
        let scaled = calibration::rescale(&probs, fit.temperature);
        let idx = options.iter().position(|o| *o == decision).unwrap_or(0);
        let map: Map<String, Value> =
            options.iter().zip(&scaled).map(|(o, p)| (o.clone(), json!(round6(*p)))).collect();
        Answer::Decided {
            decision,
            confidence: round6(scaled[idx]),
            probabilities: Some(map),
            calibrated: true,
            rationale,
        }
    }
}

/// Checks one raw answer against its question.
fn check_one(q: &Question, v: &Value) -> Result<(Answer, Option<String>), String> {
    let Value::Object(o) = v else { return Err(format!("answer is not an object: {}", short(v))) };
    let rationale = o.get("rationale").and_then(Value::as_str).map(String::from);
    let detail = o.get("detail").and_then(Value::as_str).map(String::from);
    if o.get("abstain").and_then(Value::as_bool) == Some(true) {
        return Ok((Answer::Abstained { rationale }, detail));
    }
    let decision = match o.get("decision") {
        Some(Value::String(d)) if q.options.contains(d) => d.clone(),
        Some(Value::String(d)) => return Err(format!("decision {d:?} is not one of the options")),
        other => {
            return Err(format!(
                "decision must be one of the options, got {}",
                other.map(short).unwrap_or("nothing".into())
            ));
        }
    };
    let confidence = match o.get("confidence").and_then(Value::as_f64) {
        Some(c) if (0.0..=1.0).contains(&c) => c,
        Some(c) => return Err(format!("confidence {c} is outside [0, 1]")),
        None => return Err("confidence is missing or not a number".to_string()),
    };
    let probabilities = match o.get("probabilities") {
        None | Some(Value::Null) => None,
        Some(Value::Object(p)) => {
            for (k, pv) in p {
                if !q.options.contains(k) {
                    return Err(format!("probabilities name {k:?}, which is not an option"));
                }
                match pv.as_f64() {
                    Some(x) if (0.0..=1.0).contains(&x) => {}
                    _ => return Err(format!("probability of {k:?} is not a number in [0, 1]")),
                }
            }
            if p.len() != q.options.len() {
                return Err(format!("probabilities cover {} of {} options", p.len(), q.options.len()));
            }
            let sum: f64 = p.values().filter_map(Value::as_f64).sum();
            if (sum - 1.0).abs() > 0.02 {
                return Err(format!("probabilities sum to {sum:.4}, not 1"));
            }
            // Report them in the caller's option order.
            Some(q.options.iter().map(|o| (o.clone(), p[o].clone())).collect())
        }
        Some(other) => return Err(format!("probabilities must be an object, got {}", short(other))),
    };
    Ok((Answer::Decided { decision, confidence, probabilities, calibrated: false, rationale }, detail))
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 { format!("{}…", s.chars().take(80).collect::<String>()) } else { s }
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::super::testing::q;
    use super::*;

    #[test]
    fn answers_are_checked_by_the_gateway() {
        let yn = q(&["yes", "no"]);
        assert!(check_one(&yn, &json!("x")).unwrap_err().contains("not an object"));
        assert!(
            check_one(&yn, &json!({"decision": "maybe", "confidence": 0.9}))
                .unwrap_err()
                .contains("not one of the options")
        );
        assert!(check_one(&yn, &json!({"decision": "yes", "confidence": 1.2})).unwrap_err().contains("outside"));
        assert!(check_one(&yn, &json!({"decision": "yes"})).unwrap_err().contains("missing"));
        assert!(
            check_one(&yn, &json!({"decision": "yes", "confidence": 0.9, "probabilities": {"yes": 0.9, "maybe": 0.1}}))
                .unwrap_err()
                .contains("not an option")
        );
        assert!(
            check_one(&yn, &json!({"decision": "yes", "confidence": 0.9, "probabilities": {"yes": 0.9, "no": 0.5}}))
                .unwrap_err()
                .contains("sum")
        );
        let (a, _) =
            check_one(&yn, &json!({"decision": "no", "confidence": 0.7, "probabilities": {"no": 0.7, "yes": 0.3}}))
                .expect("valid");
        let Answer::Decided { probabilities: Some(p), .. } = a else { panic!("decided") };
        assert_eq!(p.keys().collect::<Vec<_>>(), vec!["yes", "no"], "reported in option order");
        let (a, _) = check_one(&yn, &json!({"abstain": true, "rationale": "non-Latin"})).expect("valid");
        assert_eq!(a, Answer::Abstained { rationale: Some("non-Latin".into()) });
    }
}
