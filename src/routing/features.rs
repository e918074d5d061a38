//! The four routing features: yes/no questions about what a prompt's text shows, asked in one
//! engine request (one `Question` per feature; the ollama adapter answers them one call each).
//!
//! A decision model reads properties off the text well and judges difficulty badly, so the engine
//! is asked what the task *is* (read-only? design? review? fully specified?) and the rule, which
//! the user owns, turns the answers into a tier. Each question's key is the feature's name, which
//! is also its calibration key.

use std::time::Instant;

use serde_json::{Map, Value};

use super::entry::{LoggedAnswer, PerFeature};
use crate::feature::Feature;
use crate::gateway::{Answer, Gateway};
use crate::providers::{EngineRequest, Question};

/// The question asked for each feature, in `Feature::ALL` order.
pub const QUESTIONS: [(Feature, &str); 4] = [
    (
        Feature::ReadOnly,
        "Can this task be done by only reading, searching, running read-only commands or explaining, \
         without creating or changing any file, code, setting or system?",
    ),
    (
        Feature::Design,
        "Does this task ask for a design: choosing an architecture, an API, a data model, an algorithm \
         or a plan where several approaches must be weighed?",
    ),
    (
        Feature::Review,
        "Does this task ask to review, audit or critique existing work, such as code, a diff, a pull \
         request, a design or a document, and judge its quality or find its problems?",
    ),
    (
        Feature::Specified,
        "Is the task fully specified: does the text say exactly what to do and where, so that no \
         open decision is left to whoever does it?",
    ),
];

/// Engines read a bounded window; the middle of a very long prompt matters least.
const MAX_STATE_CHARS: usize = 8000;

/// One feature's answer: `answer` is `None` when the engine abstained on it.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureAnswer {
    pub feature: Feature,
    pub answer: Option<bool>,
    /// The calibrated confidence of the answer (0 when abstained).
    pub confidence: f64,
    pub calibrated: bool,
}

/// What asking the features gave.
#[derive(Debug, Clone)]
pub struct Asked {
    /// One entry per feature, or the reason there are none (the engine failed, timed out, is absent).
    pub features: Result<Vec<FeatureAnswer>, String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub latency_ms: f64,
}

impl Asked {
    /// The answers as the routing log keeps them; `None` when there are none.
    pub fn logged(&self) -> Option<PerFeature<LoggedAnswer>> {
        let fs = self.features.as_ref().ok()?;
        Some(
            fs.iter()
                .map(|f| (f.feature, LoggedAnswer { answer: f.answer, confidence: f.confidence, other: Map::new() }))
                .collect(),
        )
    }
}

/// The engine request for `text`: the text is the state, each feature one yes/no question.
pub fn request(text: &str) -> EngineRequest {
    EngineRequest {
        context: Some(Value::String(clip(text))),
        questions: QUESTIONS
            .iter()
            .map(|(feature, question)| Question {
                key: feature.name().to_string(),
                text: question.to_string(),
                options: vec!["yes".to_string(), "no".to_string()],
            })
            .collect(),
    }
}

/// Asks the four features about `text` in one `run_chain` call, within `deadline`.
pub fn ask(gateway: &Gateway, text: &str, deadline: Option<Instant>, rid: &str) -> Asked {
    let started = Instant::now();
    let keys: Vec<String> = QUESTIONS.iter().map(|(f, _)| f.name().to_string()).collect();
    let outcome = gateway.run_chain(&request(text), &keys, deadline, rid);
    let latency_ms = crate::gateway::millis(started.elapsed());
    let features = match outcome.answers {
        Some(answers) => Ok(QUESTIONS
            .iter()
            .zip(answers)
            .map(|(&(feature, _), a)| match a {
                Answer::Decided { decision, confidence, calibrated, .. } => {
                    FeatureAnswer { feature, answer: Some(decision == "yes"), confidence, calibrated }
                }
                Answer::Abstained { .. } | Answer::Passed { .. } => {
                    FeatureAnswer { feature, answer: None, confidence: 0.0, calibrated: false }
                }
            })
            .collect()),
        None => Err(outcome.failure.map(|f| f.message).unwrap_or_else(|| "no engine answered".to_string())),
    };
    Asked { features, provider: outcome.provider, model: outcome.model, latency_ms }
}

/// Keeps the head and the tail of an over-long text, cut at character boundaries.
fn clip(text: &str) -> String {
    let n = text.chars().count();
    if n <= MAX_STATE_CHARS {
        return text.to_string();
    }
    let head: String = text.chars().take(MAX_STATE_CHARS * 3 / 4).collect();
    let tail: String = text.chars().skip(n - MAX_STATE_CHARS / 4).collect();
    format!("{head}\n[…]\n{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_question_per_feature_in_order() {
        let r = request("Explain how the cache works");
        let keys: Vec<&str> = r.questions.iter().map(|q| q.key.as_str()).collect();
        assert_eq!(keys, Feature::ALL.map(Feature::name));
        assert_eq!(QUESTIONS.map(|(f, _)| f), Feature::ALL, "asked in the features' order");
        assert!(r.questions.iter().all(|q| q.options == ["yes", "no"]));
        assert_eq!(r.context, Some(Value::String("Explain how the cache works".into())));
    }

    #[test]
    fn long_text_keeps_head_and_tail() {
        let text = format!("START{}END", "é".repeat(20_000));
        let Some(Value::String(s)) = request(&text).context else { panic!("state is text") };
        assert!(s.starts_with("START") && s.ends_with("END"));
        assert!(s.chars().count() < MAX_STATE_CHARS + 10);
    }
}
