//! The labelled data `calibrate fit` learns from, and asking the engine about it.
//!
//! Two sources: the routing log's entries that carry feature labels, and the seed sets built into
//! the binary. Neither holds probabilities the fit can use: the log records *calibrated*
//! confidences (whatever fit was in force that day), and the seeds hold labels only. So the
//! engine is asked again, through the same code the hook uses (`routing::features::ask`) but on a
//! gateway with calibration switched off, which gives the raw probabilities a temperature is
//! fitted on, from the very model that is installed now.

use std::collections::BTreeMap;

use serde_json::json;

use super::fit::Sample;
use super::seeds::{self, DESTRUCTIVE_QUESTION};
use crate::feature::Feature;
use crate::gateway::{Answer, Ask, Budget, Gateway, Purpose, Query};
use crate::providers::{EngineRequest, Question};
use crate::routing::entry::Entry;
use crate::routing::features;
use crate::tier::Tier;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    Log,
    Seed,
}

/// A text with teacher labels for some routing features, and the tier it needed when known.
#[derive(Debug, Clone)]
pub struct RoutingItem {
    pub text: String,
    pub labels: BTreeMap<Feature, bool>,
    pub tier: Option<Tier>,
    pub origin: Origin,
}

/// The labelled routing entries of the log (entries with a prompt and at least one label).
pub fn log_items(entries: &[Entry]) -> Vec<RoutingItem> {
    entries
        .iter()
        .filter_map(|e| {
            let text = e.prompt.as_deref()?;
            let labels = e.feature_labels();
            (!labels.is_empty()).then(|| RoutingItem {
                text: text.to_string(),
                labels,
                tier: e.labelling.label_tier,
                origin: Origin::Log,
            })
        })
        .collect()
}

pub fn seed_items() -> Result<Vec<RoutingItem>, String> {
    Ok(seeds::routing()?
        .into_iter()
        .map(|s| RoutingItem { text: s.prompt, labels: s.labels, tier: Some(s.tier), origin: Origin::Seed })
        .collect())
}

/// One answered, labelled question.
#[derive(Debug, Clone)]
pub struct Labelled {
    pub provider: String,
    pub model: String,
    /// The calibration key: a feature name, or the destructive question's text.
    pub key: String,
    pub sample: Sample,
    pub origin: Origin,
    /// Which routing item (index into the list asked about), for per-prompt measures.
    pub item: Option<usize>,
}

/// What asking the engine gave, with what could not be used.
#[derive(Debug, Default)]
pub struct Answers {
    pub labelled: Vec<Labelled>,
    /// Items the engine failed on (no provider answered), with the reason.
    pub failed: Vec<String>,
    /// Single questions the engine abstained on.
    pub abstained: usize,
    /// The routing items the engine answered all four features of, with those answers (raw
    /// confidences): what a rule learned from the labelled tiers is fitted on.
    pub routing: Vec<Answered>,
}

/// One routing item's four answers, by the engine that gave them.
#[derive(Debug, Clone)]
pub struct Answered {
    /// Index into the items asked about.
    pub item: usize,
    pub provider: String,
    pub model: String,
    pub answers: BTreeMap<Feature, (bool, f64)>,
}

/// yes/no probabilities from a yes/no answer and its confidence.
fn yes_no(answer_yes: bool, confidence: f64) -> Vec<f64> {
    if answer_yes { vec![confidence, 1.0 - confidence] } else { vec![1.0 - confidence, confidence] }
}

/// Asks the four features about every routing item. `gateway` should have its calibration
/// switched off for fitting (and on for evaluating, where the hook's view is what counts).
pub fn ask_routing(gateway: &Gateway, items: &[RoutingItem], mut progress: impl FnMut(usize, usize)) -> Answers {
    let mut out = Answers::default();
    for (i, item) in items.iter().enumerate() {
        progress(i, items.len());
        let rid = format!("calibrate-{i}");
        let asked = features::ask(gateway, &item.text, Budget::Chain, Purpose::Check, &rid, false);
        let fs = match asked.features {
            Ok(fs) => fs,
            Err(e) => {
                out.failed.push(e.to_string());
                continue;
            }
        };
        let provider = asked.provider.unwrap_or_default();
        let model = asked.model.unwrap_or_default();
        let all: Option<BTreeMap<Feature, (bool, f64)>> =
            fs.iter().map(|f| f.answer.map(|a| (f.feature, (a, f.confidence)))).collect();
        if let Some(answers) = all.filter(|a| a.len() == Feature::ALL.len()) {
            out.routing.push(Answered { item: i, provider: provider.clone(), model: model.clone(), answers });
        }
        for f in fs {
            let Some(label) = item.labels.get(&f.feature) else { continue };
            let Some(answer) = f.answer else {
                out.abstained += 1;
                continue;
            };
            out.labelled.push(Labelled {
                provider: provider.clone(),
                model: model.clone(),
                key: f.feature.name().to_string(),
                sample: Sample { probs: yes_no(answer, f.confidence), correct: if *label { 0 } else { 1 } },
                origin: item.origin,
                item: Some(i),
            });
        }
    }
    out
}

/// The request for one command of the destructive set: the question as a `system1_decide` caller
/// would ask it, with the command in the context.
pub fn destructive_request(command: &str) -> EngineRequest {
    EngineRequest {
        context: Some(json!({"command": command})),
        questions: vec![Question {
            key: "decision".into(),
            text: DESTRUCTIVE_QUESTION.into(),
            options: vec!["yes".into(), "no".into()],
        }],
    }
}

/// The same as the gateway asks it: a check, calibrated by the question's text as
/// `system1_decide` calibrates it.
pub fn destructive_ask(command: &str) -> Ask {
    let EngineRequest { context, questions } = destructive_request(command);
    let questions = questions.into_iter().map(|q| Query::new(q, DESTRUCTIVE_QUESTION)).collect();
    Ask::new(context, questions, Purpose::Check)
}

/// Asks the destructive-command question about every seed command.
pub fn ask_destructive(gateway: &Gateway, mut progress: impl FnMut(usize, usize)) -> Result<Answers, String> {
    let seeds = seeds::destructive()?;
    let mut out = Answers::default();
    for (i, s) in seeds.iter().enumerate() {
        progress(i, seeds.len());
        let mut o = match gateway.ask(&destructive_ask(&s.command), &format!("calibrate-d{i}")) {
            Ok(o) => o,
            Err(refusal) => {
                out.failed.push(refusal.to_string());
                continue;
            }
        };
        let Some(Answer::Decided { decision, confidence, probabilities, .. }) = o.answers.pop() else {
            out.abstained += 1;
            continue;
        };
        let probs = match probabilities {
            Some(p) => vec![p.get("yes").unwrap_or(0.0), p.get("no").unwrap_or(0.0)],
            None => yes_no(decision == "yes", confidence),
        };
        out.labelled.push(Labelled {
            provider: o.provider.unwrap_or_default(),
            model: o.model.unwrap_or_default(),
            key: DESTRUCTIVE_QUESTION.to_string(),
            sample: Sample { probs, correct: if s.destructive { 0 } else { 1 } },
            origin: Origin::Seed,
            item: None,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_items_take_labelled_entries_only() {
        let entries: Vec<Entry> = [
            json!({"id": "1", "prompt": "a", "labels": {"read_only": true, "vibes": true}}),
            json!({"id": "2", "prompt": "b"}),
            json!({"id": "3", "prompt": "c", "labels": {}}),
            json!({"id": "4", "labels": {"design": true}}),
        ]
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
        let items = log_items(&entries);
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].labels.len(), 1, "unknown features are ignored");
        assert_eq!(yes_no(false, 0.8), vec![0.19999999999999996, 0.8]);
    }
}
