//! Measuring the local engine's zero-shot temperature: the labelled choice questions of
//! [calibration/choices.jsonl](../../calibration/choices.jsonl), the similarities the engine
//! starts from, the temperature that fits them, and the figures shipped beside it in
//! [calibration/zero-shot.json](../../calibration/zero-shot.json), which the engine reads
//! (`providers::local::zero_shot`).
//!
//! The figures are measured three ways: at the old fixed temperature (0.05), at the fitted one
//! (on every answer, so in-sample), and held out by question: each question's answers at the
//! temperature fitted on the other questions' answers, which is what a question nobody measured
//! gets.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::fit::{self, Point, Sample};
use crate::providers::local::zero_shot::{self, Measured};

/// The labelled choice questions, built into the binary.
pub const CHOICES: &str = include_str!("../../calibration/choices.jsonl");
/// Where that set lives in the repository.
pub const CHOICES_PATH: &str = "calibration/choices.jsonl";

/// The thresholds the figures report coverage and accuracy at.
pub const THRESHOLDS: [f64; 5] = [0.5, 0.6, 0.8, 0.9, 0.99];

/// One labelled choice question: a text, a question, its options and the right one.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChoiceItem {
    pub id: String,
    pub question: String,
    pub options: Vec<String>,
    pub text: String,
    pub answer: String,
}

impl ChoiceItem {
    /// The index of the right option.
    pub fn correct(&self) -> Option<usize> {
        self.options.iter().position(|o| *o == self.answer)
    }
}

/// The items of a choice set in JSON lines; an item whose answer is not one of its options is an error.
pub fn parse(text: &str) -> Result<Vec<ChoiceItem>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let item: ChoiceItem = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        if item.correct().is_none() || item.options.len() < 2 {
            return Err(format!("line {}: {:?} needs two or more options, its answer among them", i + 1, item.id));
        }
        out.push(item);
    }
    Ok(out)
}

/// One answered item: the option similarities and the right option, under its question.
#[derive(Debug, Clone)]
pub struct Answered {
    pub question: String,
    pub similarities: Vec<f64>,
    pub correct: usize,
}

impl Answered {
    /// The sample whose probabilities are the softmax of the similarities at temperature 1, so
    /// that rescaling it by T gives the softmax at temperature T.
    fn sample(&self) -> Sample {
        let max = self.similarities.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let exps: Vec<f64> = self.similarities.iter().map(|s| (s - max).exp()).collect();
        let sum: f64 = exps.iter().sum();
        Sample { probs: exps.iter().map(|e| e / sum).collect(), correct: self.correct }
    }
}

/// The temperature with the least negative log-likelihood of the right options.
pub fn fit_temperature(answered: &[&Answered]) -> f64 {
    let samples: Vec<Sample> = answered.iter().map(|a| a.sample()).collect();
    let f = fit::fit_temperature(&samples);
    // The clamp of the calibration fits is for rescaling probabilities an engine already made; here
    // the temperature is the engine's own, so the search's optimum is taken as it is.
    f.clamped.unwrap_or(f.temperature)
}

fn round(x: f64) -> f64 {
    crate::text::round(x, 4)
}

/// Accuracy, ECE, NLL, mean confidence and the thresholds' coverage and accuracy of `points`.
fn figures(points: &[Point], nll: f64) -> Value {
    let (binning, k) = fit::auto_binning(points.len());
    let ece = fit::ece(&fit::bins(points, binning, k));
    let mean = points.iter().map(|p| p.confidence).sum::<f64>() / points.len().max(1) as f64;
    let at: Map<String, Value> = THRESHOLDS
        .iter()
        .map(|&t| {
            let a = fit::at_threshold(points, t);
            let wrong = a.covered - points.iter().filter(|p| p.correct && p.confidence >= t - 1e-12).count();
            (format!("{t}"), json!({"coverage": round(a.coverage), "accuracy": a.accuracy.map(round), "wrong": wrong}))
        })
        .collect();
    json!({"ece": round(ece), "nll": round(nll), "mean_confidence": round(mean), "at_threshold": at})
}

/// Points and mean NLL of `answered` at temperature `t`.
fn at(answered: &[&Answered], t: f64) -> (Vec<Point>, f64) {
    let samples: Vec<Sample> = answered.iter().map(|a| a.sample()).collect();
    (samples.iter().map(|s| s.point(t)).collect(), fit::nll(&samples, 1.0 / t))
}

/// The measurement of `model` on `answered`: its fitted temperature and the figures.
pub fn measure(model: &str, answered: &[Answered]) -> Measured {
    let all: Vec<&Answered> = answered.iter().collect();
    let temperature = round(fit_temperature(&all));
    let (before, nll_before) = at(&all, zero_shot::UNMEASURED);
    let (after, nll_after) = at(&all, temperature);
    // Held out by question: each question's answers at the temperature the others give.
    let mut by_question: BTreeMap<&str, Vec<&Answered>> = BTreeMap::new();
    for a in answered {
        by_question.entry(a.question.as_str()).or_default().push(a);
    }
    let (mut held, mut nll_held, mut temps, mut per_question) = (Vec::new(), 0.0, Vec::new(), Map::new());
    for (q, own) in &by_question {
        let others: Vec<&Answered> = answered.iter().filter(|a| a.question != *q).collect();
        let t = fit_temperature(&others);
        temps.push(t);
        let (points, nll) = at(own, t);
        let mean = points.iter().map(|p| p.confidence).sum::<f64>() / points.len().max(1) as f64;
        per_question.insert(
            q.to_string(),
            json!({"n": points.len(), "accuracy": fit::accuracy(&points).map(round), "mean_confidence": round(mean)}),
        );
        held.extend(points);
        nll_held += nll * own.len() as f64;
    }
    nll_held /= answered.len().max(1) as f64;
    let lo = temps.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = temps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let accuracy = fit::accuracy(&after).map(round);
    let mut figures_map = Map::new();
    figures_map.insert("questions".into(), json!(by_question.len()));
    figures_map.insert("accuracy".into(), json!(accuracy));
    figures_map.insert("chance".into(), json!(round(chance(answered))));
    figures_map.insert("before".into(), {
        let mut v = figures(&before, nll_before);
        v["temperature"] = json!(zero_shot::UNMEASURED);
        v
    });
    figures_map.insert("after".into(), figures(&after, nll_after));
    figures_map.insert("held_out".into(), {
        let mut v = figures(&held, nll_held);
        v["how"] = json!("each question's answers at the temperature fitted on the other questions");
        v["temperatures"] = json!([round(lo), round(hi)]);
        v["by_question"] = Value::Object(per_question);
        v
    });
    Measured {
        model: model.to_string(),
        temperature,
        set: CHOICES_PATH.to_string(),
        n: answered.len(),
        figures: figures_map,
    }
}

/// The accuracy of a uniform guess: the mean of 1/options.
fn chance(answered: &[Answered]) -> f64 {
    answered.iter().map(|a| 1.0 / a.similarities.len() as f64).sum::<f64>() / answered.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::providers::{EngineRequest, Question};

    #[test]
    fn the_shipped_set_parses_and_each_answer_is_an_option() {
        let items = parse(CHOICES).expect("choices.jsonl");
        assert!(items.len() >= 100, "{}", items.len());
        let mut ids: Vec<&str> = items.iter().map(|i| i.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), items.len(), "ids are unique");
    }

    #[test]
    fn the_fitted_temperature_softens_a_sharp_engine_that_is_often_wrong() {
        // Right half the time with a margin of 0.1 between two options: T = 0.05 says 0.88.
        let answered: Vec<Answered> = (0..40)
            .map(|i| Answered { question: format!("q{}", i % 4), similarities: vec![0.5, 0.4], correct: i % 2 })
            .collect();
        let all: Vec<&Answered> = answered.iter().collect();
        assert!(fit_temperature(&all) > 1.0, "a coin toss wants a flat softmax");
    }

    /// The shipped measurement is what the set and the model give: a changed set, model or
    /// engine fails here until `calibration/zero-shot.json` is regenerated
    /// (`SYSTEM1_WRITE_HEADS=1 scripts/test zero_shot`).
    #[test]
    fn shipped_zero_shot_temperature_reproduces_from_the_set_and_the_model() {
        let Some(dir) = crate::providers::local::tests::model_dir() else { return };
        let name = crate::providers::local::DEFAULT_MODEL;
        let engine = crate::providers::local::tests::provider(&dir);
        let items = parse(CHOICES).unwrap();
        let answered: Vec<Answered> = items
            .iter()
            .map(|item| {
                let request = EngineRequest {
                    context: Some(json!({"text": item.text})),
                    questions: vec![Question {
                        key: "q".into(),
                        text: item.question.clone(),
                        options: item.options.clone(),
                    }],
                };
                let sims = engine.zero_shot_similarities(&request, Duration::from_secs(60)).expect("similarities");
                Answered {
                    question: item.question.clone(),
                    similarities: sims[0].clone(),
                    correct: item.correct().unwrap(),
                }
            })
            .collect();
        let fresh = zero_shot::File {
            format: zero_shot::FORMAT.into(),
            version: zero_shot::VERSION,
            note: Some(NOTE.into()),
            measured: vec![measure(name, &answered)],
        };
        if std::env::var_os("SYSTEM1_WRITE_HEADS").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/calibration/zero-shot.json");
            std::fs::write(path, serde_json::to_string_pretty(&fresh).unwrap() + "\n").unwrap();
            return;
        }
        let shipped = zero_shot::File::parse(zero_shot::SHIPPED).unwrap();
        assert_eq!(shipped.note, fresh.note);
        let (s, f) = (&shipped.measured[0], &fresh.measured[0]);
        assert_eq!((&s.model, &s.set, s.n), (&f.model, &f.set, f.n), "regenerate with SYSTEM1_WRITE_HEADS=1");
        assert!((s.temperature - f.temperature).abs() < 2e-3, "T {} vs {}", s.temperature, f.temperature);
        assert_eq!(s.figures.get("accuracy"), f.figures.get("accuracy"), "regenerate with SYSTEM1_WRITE_HEADS=1");
        // What min_confidence promises: on questions the temperature was not fitted on, the answers
        // at or above a threshold are right at least that often.
        for (t, a) in f.figures["held_out"]["at_threshold"].as_object().unwrap() {
            let (t, acc) = (t.parse::<f64>().unwrap(), a["accuracy"].as_f64());
            assert!(acc.is_none_or(|acc| acc >= t), "held out at {t}: accuracy {acc:?}");
        }
    }

    const NOTE: &str = "The local engine's zero-shot temperature per model, fitted on the negative log-likelihood \
    of the right options of calibration/choices.jsonl; figures before (at the earlier fixed 0.05), after (in-sample) \
    and held out by question. Regenerate with `SYSTEM1_WRITE_HEADS=1 scripts/test zero_shot`; see docs/engines.md.";
}
