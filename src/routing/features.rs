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
use crate::gateway::{Answer, Ask, Budget, Gateway, Purpose, Query, Refusal};
use crate::providers::{EngineRequest, Question, Taught};
use crate::tier::Tier;

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

/// The tiers the tier head picks among (`[routing] tier_head`): the tiers the seed set labels.
pub const HEAD_TIERS: [Tier; 3] = [Tier::Haiku, Tier::Sonnet, Tier::Opus];

/// The question asked for `tier`'s head. Only the local engine's trained heads answer it for the
/// routing: asked directly, an engine judges difficulty badly (docs/routing.md#the-tier-head).
fn tier_question(tier: Tier) -> String {
    format!("Is {tier} the Claude model tier this task needs: the cheapest one that does it well?")
}

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

/// The tier head's answer: the tier whose head is likeliest, and its share of the heads'
/// probabilities (as `system1 study` measures it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadAnswer {
    pub tier: Tier,
    pub confidence: f64,
}

/// What asking the features gave.
#[derive(Debug, Clone)]
pub struct Asked {
    /// One entry per feature, or why there are none (the engine failed, timed out, is absent).
    pub features: Result<Vec<FeatureAnswer>, Refusal>,
    /// The tier head's answer, when it was asked (`[routing] tier_head`) and the local engine's
    /// trained heads answered for two tiers or more.
    pub tier_head: Option<HeadAnswer>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub latency_ms: f64,
    /// What went off this machine, for an engine hosted elsewhere.
    pub sent: Vec<crate::state::Sent>,
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

/// A yes/no question.
fn yes_no(key: String, text: String) -> Question {
    Question { key, text, options: vec!["yes".to_string(), "no".to_string()] }
}

/// The engine request for `text`: the text is the state, each feature one yes/no question.
pub fn request(text: &str) -> EngineRequest {
    EngineRequest {
        context: Some(Value::String(clip(text))),
        questions: QUESTIONS.iter().map(|(f, q)| yes_no(f.name().to_string(), q.to_string())).collect(),
    }
}

/// The tier head's answer from its heads' answers (P(yes) per tier of [`HEAD_TIERS`], in order):
/// the likeliest tier and its share of their sum, the cheaper tier on a tie. None unless two
/// tiers or more were answered.
fn head_answer(answers: &[Answer]) -> Option<HeadAnswer> {
    let ps: Vec<(Tier, f64)> = HEAD_TIERS
        .iter()
        .zip(answers)
        .filter_map(|(t, a)| match a {
            Answer::Decided { decision, confidence, .. } => {
                Some((*t, if decision == "yes" { *confidence } else { 1.0 - confidence }))
            }
            Answer::Abstained { .. } | Answer::Passed { .. } => None,
        })
        .collect();
    let total: f64 = ps.iter().map(|(_, p)| p).sum();
    if ps.len() < 2 || total <= 0.0 {
        return None;
    }
    let (tier, best) = ps.iter().fold(ps[0], |acc, x| if x.1 > acc.1 { *x } else { acc });
    Some(HeadAnswer { tier, confidence: best / total })
}

/// Whether `taught` holds a head for every tier of [`HEAD_TIERS`].
fn has_tier_heads(taught: &[Taught]) -> bool {
    HEAD_TIERS.iter().all(|t| taught.iter().any(|q| q.question == t.head_key()))
}

/// Asks the four features about `text` in one request to the gateway, within `budget`; with
/// `tier_head`, and a first engine of the chain taught the tier heads' questions for its model
/// (the local engine's trained heads), the tier head's questions in the same request (one
/// embedding answers them all).
pub fn ask(gateway: &Gateway, text: &str, budget: Budget, purpose: Purpose, rid: &str, tier_head: bool) -> Asked {
    let started = Instant::now();
    // Each question is calibrated by its key: the feature's name, or the tier head's.
    let EngineRequest { context, questions } = request(text);
    let mut ask = Ask { context, questions: questions.into_iter().map(Query::keyed).collect(), purpose, budget };
    // Only trained heads answer the tier for routing, and only for a model they were trained for:
    // an engine that answers any question would guess at the tier, and the questions passed on
    // would cost the hook a call.
    let heads = gateway.primary().filter(|p| tier_head && has_tier_heads(&p.taught()));
    if heads.is_some() {
        let heads = HEAD_TIERS.iter().map(|t| Query::keyed(yes_no(t.head_key(), tier_question(*t))));
        ask.questions.extend(heads);
    }
    let outcome = gateway.ask(&ask, rid);
    let latency_ms = crate::gateway::millis(started.elapsed());
    let (provider, model, sent) = match &outcome {
        Ok(a) => (a.provider.clone(), a.model.clone(), crate::gateway::response::sent(&a.attempts)),
        Err(r) => (None, None, crate::gateway::response::sent(r.attempts())),
    };
    // Trusted only when the engine with the heads answered the request alone: a question it
    // passed on (no head for its model) went to the next engine of the chain, which would only
    // guess.
    let tier_head = match (&outcome, heads) {
        (Ok(a), Some(heads)) if !a.attempts.is_empty() && a.attempts.iter().all(|t| t.provider == heads.name()) => {
            head_answer(a.answers.get(QUESTIONS.len()..).unwrap_or_default())
        }
        _ => None,
    };
    let features = outcome.map(|a| {
        QUESTIONS
            .iter()
            .zip(a.answers)
            .map(|(&(feature, _), a)| match a {
                Answer::Decided { decision, confidence, calibrated, .. } => {
                    FeatureAnswer { feature, answer: Some(decision == "yes"), confidence, calibrated }
                }
                Answer::Abstained { .. } | Answer::Passed { .. } => {
                    FeatureAnswer { feature, answer: None, confidence: 0.0, calibrated: false }
                }
            })
            .collect()
    });
    Asked { features, tier_head, provider, model, latency_ms, sent }
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
    fn the_tier_head_picks_the_likeliest_tier_by_its_share() {
        let yes = |p: f64| Answer::Decided {
            decision: if p >= 0.5 { "yes" } else { "no" }.into(),
            confidence: if p >= 0.5 { p } else { 1.0 - p },
            probabilities: None,
            calibrated: false,
            rationale: None,
            stability: None,
        };
        // P(yes) 0.2, 0.3, 0.5: opus, with half of the sum.
        let h = head_answer(&[yes(0.2), yes(0.3), yes(0.5)]).unwrap();
        assert_eq!(h.tier, Tier::Opus);
        assert!((h.confidence - 0.5).abs() < 1e-12, "{h:?}");
        // A tie goes to the cheaper tier; a tier without an answer is left out.
        let passed = Answer::Passed { reason: "no head".into(), causes: vec![crate::providers::PassCause::NoHead] };
        let h = head_answer(&[yes(0.4), passed.clone(), yes(0.4)]).unwrap();
        assert_eq!((h.tier, h.confidence), (Tier::Haiku, 0.5));
        assert_eq!(head_answer(&[yes(0.9), passed.clone(), passed]), None, "one tier is no choice");
        assert_eq!(Tier::of_head_key(&Tier::Sonnet.head_key()), Some(Tier::Sonnet));
        assert_eq!(Tier::of_head_key("read_only"), None);
    }

    #[test]
    fn long_text_keeps_head_and_tail() {
        let text = format!("START{}END", "é".repeat(20_000));
        let Some(Value::String(s)) = request(&text).context else { panic!("state is text") };
        assert!(s.starts_with("START") && s.ends_with("END"));
        assert!(s.chars().count() < MAX_STATE_CHARS + 10);
    }
}
