//! `calibrate fit --provider local --question "TEXT" --set FILE.jsonl`: teaches the local engine a
//! question of the user's own, yes/no or with a fixed set of options, from labelled examples, with
//! the same ridge logistic regression, leave-one-out temperature and clamp as the shipped heads
//! (for users: docs/calibration.md). A question with options gets one head per option, that option
//! against the rest, and answers with their probabilities normalised.
//!
//! A line of the set is `{"text": "..." | "context": {...} | "context": "...", "label": ...}`: the
//! label is `true`/`false` for a yes/no question (or the strings "yes"/"no"), else the option.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::calibrate::{self, FitOptions};
use super::crossval;
use super::fit::{self, Sample};
use super::heads;
use super::question_fit::{self, QuestionFit};
use crate::error::{Error, Result};
use crate::providers::local::heads::Head;
use crate::providers::{EngineRequest, Question};
use crate::text;
use crate::text::question_key;

/// The fewest examples a question is taught from (as for any fit of its own).
pub const MIN_EXAMPLES: usize = fit::MIN_N;
/// The most options a question is taught: the most a decision can ask
/// (`gateway::request::MAX_OPTIONS`). Each option is a head to fit, and a head to keep in the heads
/// file, so a set with thousands of labels would take minutes to fit and still could not be asked.
pub const MAX_OPTIONS: usize = crate::gateway::request::MAX_OPTIONS;
/// The fewest examples of each option: with one, the held-out answer for it comes from a head
/// that never saw the option, and its figures say nothing.
pub const MIN_PER_OPTION: usize = 2;

/// The labels of a set: yes/no, or one of a fixed set of options.
#[derive(Debug, Clone, PartialEq)]
pub enum Labels {
    YesNo(Vec<bool>),
    /// The options in the order they first appear, and each example's option.
    Options {
        options: Vec<String>,
        picks: Vec<usize>,
    },
}

/// A question's labelled examples, as the engine will read them.
#[derive(Debug, Clone)]
pub struct Set {
    pub question: String,
    /// What the engine reads for each example: its context as a request carries it.
    pub texts: Vec<String>,
    pub labels: Labels,
    /// The context keys the examples carry (empty: plain text).
    pub context: Vec<String>,
}

impl Labels {
    fn len(&self) -> usize {
        match self {
            Labels::YesNo(v) => v.len(),
            Labels::Options { picks, .. } => picks.len(),
        }
    }
}

/// Reads and checks a set: every line an example, at least [`MIN_EXAMPLES`], two answers or more.
pub fn read_set(path: &Path, question: &str) -> std::result::Result<Set, String> {
    let question = question.split_whitespace().collect::<Vec<_>>().join(" ");
    if question.is_empty() {
        return Err("--question is empty".into());
    }
    // A regular file of at most 64 MiB (a FIFO named here would hang the read).
    let body = crate::fsutil::read_text(path, 64 << 20, crate::fsutil::Links::Follow)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let at = |i: usize, what: String| format!("{} line {}: {what}", path.display(), i + 1);
    let mut contexts = Vec::new();
    let mut raw_labels = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    for (i, line) in body.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| at(i, format!("not JSON: {e}")))?;
        let Some(o) = v.as_object() else { return Err(at(i, "not a JSON object".into())) };
        let context = match (o.get("text"), o.get("context")) {
            (Some(Value::String(t)), None) => Value::String(t.clone()),
            (None, Some(c @ Value::String(_))) => c.clone(),
            (None, Some(c @ Value::Object(m))) if !m.is_empty() => {
                for k in m.keys() {
                    if !keys.contains(k) {
                        keys.push(k.clone());
                    }
                }
                c.clone()
            }
            (Some(_), Some(_)) => return Err(at(i, "has both \"text\" and \"context\"; give one".into())),
            _ => {
                return Err(at(i, "needs \"text\" (a string) or \"context\" (a non-empty object or a string)".into()));
            }
        };
        let label = match o.get("label") {
            Some(Value::Bool(b)) => Ok(*b),
            Some(Value::String(s)) if !s.trim().is_empty() => Err(s.trim().to_string()),
            _ => return Err(at(i, "needs \"label\": true, false or an option (a non-empty string)".into())),
        };
        contexts.push(context);
        raw_labels.push((i, label));
    }
    let (bools, strings): (Vec<_>, Vec<_>) = raw_labels.iter().partition(|(_, l)| l.is_ok());
    if let (Some((i, _)), false) = (strings.first(), bools.is_empty()) {
        return Err(at(*i, "an option label in a set of true/false labels: label a set one way".into()));
    }
    let all_yes_no =
        strings.iter().all(|(_, l)| matches!(l, Err(s) if ["yes", "no"].contains(&question_key(s).as_str())));
    let labels = if strings.is_empty() || all_yes_no {
        Labels::YesNo(
            raw_labels
                .iter()
                .map(|(_, l)| match l {
                    Ok(b) => *b,
                    Err(s) => question_key(s) == "yes",
                })
                .collect(),
        )
    } else {
        let mut options: Vec<String> = Vec::new();
        let mut picks = Vec::new();
        for (_, l) in &raw_labels {
            let Err(s) = l else { continue };
            let k = match options.iter().position(|o| question_key(o) == question_key(s)) {
                Some(k) => k,
                None => {
                    options.push(s.clone());
                    options.len() - 1
                }
            };
            picks.push(k);
        }
        Labels::Options { options, picks }
    };
    let n = labels.len();
    if n < MIN_EXAMPLES {
        return Err(format!(
            "{} has {n} labelled example{}; a question is taught from {MIN_EXAMPLES} or more",
            path.display(),
            if n == 1 { "" } else { "s" }
        ));
    }
    match &labels {
        Labels::YesNo(v) if v.iter().all(|y| *y == v[0]) => {
            return Err(format!(
                "{}: every label is {}; a head needs examples of both answers",
                path.display(),
                if v[0] { "yes" } else { "no" }
            ));
        }
        Labels::Options { options, .. } if options.len() < 2 => {
            return Err(format!(
                "{}: every label is {:?}; a head needs examples of two options or more",
                path.display(),
                options[0]
            ));
        }
        Labels::Options { options, .. } if options.len() > MAX_OPTIONS => {
            return Err(format!(
                "{} has {} options; a question is taught at most {MAX_OPTIONS}, the most a decision can ask",
                path.display(),
                options.len()
            ));
        }
        Labels::Options { options, picks } => {
            let mut counts = vec![0usize; options.len()];
            for p in picks {
                counts[*p] += 1;
            }
            let few = counts.iter().filter(|c| **c < MIN_PER_OPTION).count();
            if let Some(k) = counts.iter().position(|c| *c < MIN_PER_OPTION) {
                return Err(format!(
                    "{}: {} of the {} options ({:?} first) {} fewer than {MIN_PER_OPTION} examples; each option is \
                     taught from {MIN_PER_OPTION} or more",
                    path.display(),
                    few,
                    options.len(),
                    text::ellipsis(&options[k], 60),
                    if few == 1 { "has" } else { "have" }
                ));
            }
        }
        _ => {}
    }
    let options: Vec<String> = match &labels {
        Labels::YesNo(_) => vec!["yes".into(), "no".into()],
        Labels::Options { options, .. } => options.clone(),
    };
    let texts = contexts
        .into_iter()
        .map(|c| {
            crate::providers::local::state_text(&EngineRequest {
                context: Some(c),
                questions: vec![Question { key: "decision".into(), text: question.clone(), options: options.clone() }],
            })
        })
        .collect();
    keys.sort();
    Ok(Set { question, texts, labels, context: keys })
}

/// The heads for a set and each example's held-out answer (options in the question's order).
pub fn fit_set(
    model: &str,
    set: &Set,
    xs: &[Vec<f32>],
    source: &str,
    tick: &mut dyn FnMut(usize, usize),
) -> std::result::Result<(Vec<Head>, Vec<Sample>), String> {
    let finish = |mut h: Head, option: Option<String>| {
        h.source = source.to_string();
        h.context = set.context.clone();
        h.option = option;
        h
    };
    match &set.labels {
        Labels::YesNo(ys) => {
            let (head, p) = crossval::held_out(model, &set.question, xs, ys)?;
            let samples = p.iter().zip(ys).map(|(p, y)| Sample::yes_no(*p, *y)).collect();
            Ok((vec![finish(head, None)], samples))
        }
        Labels::Options { options, picks } => {
            let mut fitted = Vec::new();
            let mut per_option = Vec::new();
            for (k, o) in options.iter().enumerate() {
                tick(k, options.len());
                let ys: Vec<bool> = picks.iter().map(|p| *p == k).collect();
                let (head, p) = crossval::held_out(model, &set.question, xs, &ys)?;
                fitted.push(finish(head, Some(o.clone())));
                per_option.push(p);
            }
            let samples = picks
                .iter()
                .enumerate()
                .map(|(i, pick)| {
                    let ps: Vec<f64> = per_option.iter().map(|p| p[i]).collect();
                    let total: f64 = ps.iter().sum();
                    let probs =
                        ps.iter().map(|p| if total > 0.0 { p / total } else { 1.0 / ps.len() as f64 }).collect();
                    Sample { probs, correct: *pick }
                })
                .collect();
            Ok((fitted, samples))
        }
    }
}

/// `calibrate fit --question TEXT --set FILE`: only for the local engine.
pub fn run(a: &FitOptions) -> Result<i32> {
    let (Some(question), Some(path)) = (a.question.as_deref(), a.set.as_deref()) else {
        return Err(Error::usage("--question and --set go together"));
    };
    if !(0.0..=1.0).contains(&a.target_accuracy) {
        return Err(Error::usage("--target-accuracy must be between 0 and 1"));
    }
    let gateway = super::gateway_for(a.provider.as_deref())?;
    let primary = gateway.primary().map(|p| p.name()).unwrap_or("none");
    if primary != "local" {
        return Err(Error::usage(format!(
            "--question and --set teach the local engine, which learns from examples; the engine here is {primary}, which \
             answers any question as it is"
        ))
        .with_hint(format!(
            "add --provider local, or calibrate {primary}'s confidences with `{}`",
            text::command("calibrate fit")
        )));
    }
    if a.no_seeds {
        return Err(Error::usage("--no-seeds is for the routing features; a taught question uses only its --set"));
    }
    let set = read_set(path, question).map_err(Error::usage)?;
    let (name, model) = heads::configured_model().map_err(Error::failure)?;
    let mut tick = super::progress("examples");
    let cache: HashMap<&str, Vec<f32>> = set
        .texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            tick(i, set.texts.len());
            (t.as_str(), model.embed(t))
        })
        .collect();
    let xs: Vec<Vec<f32>> = set.texts.iter().map(|t| cache[t.as_str()].clone()).collect();
    let source = path.display().to_string();
    let mut tick = super::progress("option heads");
    let (fitted, samples) = fit_set(&name, &set, &xs, &source, &mut tick).map_err(Error::failure)?;
    let measured = question_fit::measure(
        "local",
        &name,
        Some(&set.question),
        &samples,
        format!("{} from {source}", samples.len()),
        None,
    );
    print(&set, &fitted, &measured, a)?;
    if let Some(plot) = &a.plot {
        let title =
            format!("Reliability of the local engine's held-out answers, before and after calibration ({name})");
        calibrate::write_plot(plot, std::slice::from_ref(&measured), &title)?;
    }
    if a.apply {
        let path = heads::write_heads(&fitted, "Fitted by `system1 calibrate fit` on this machine.")?;
        let what = if fitted.len() == 1 { "its head".to_string() } else { format!("its {} heads", fitted.len()) };
        outln!("\nWrote {what} to {} (it wins over a shipped head for this question).", path.display())?;
        let n = calibrate::write_fits(std::slice::from_ref(&measured))?;
        outln!("Wrote {n} fit to {}.", crate::paths::fitted_calibration().display())?;
    } else {
        outln!(
            "\nNothing written; add --apply to write the heads to {} and the fit.",
            crate::providers::local::local_heads_file().display()
        )?;
    }
    Ok(0)
}

fn print(set: &Set, fitted: &[Head], measured: &QuestionFit, a: &FitOptions) -> Result<()> {
    let kind = match &set.labels {
        Labels::YesNo(ys) => format!("yes/no, {} yes of {}", ys.iter().filter(|y| **y).count(), ys.len()),
        Labels::Options { options, picks } => {
            let counts: Vec<String> = options
                .iter()
                .enumerate()
                .map(|(k, o)| format!("{o} {}", picks.iter().filter(|p| **p == k).count()))
                .collect();
            format!("{} options: {}", options.len(), counts.join(", "))
        }
    };
    let context = if set.context.is_empty() {
        "an object with one text field (any key)".to_string()
    } else {
        format!("an object with {}", set.context.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", "))
    };
    outln!("Taught the local engine ({}) {:?} ({kind}); context: {context}.", measured.model, set.question)?;
    outln!(
        "Cross-validated accuracy {} on {} examples ({}).",
        text::pct(measured.accuracy, 1),
        measured.n,
        crossval::HOW
    )?;
    let heads: Vec<String> = fitted
        .iter()
        .map(|h| {
            let clamp = h
                .clamped
                .map(|c| {
                    format!(
                        " (its fit on all {} examples wanted {c:.3}, clamped to [{}, {}])",
                        h.n,
                        crate::tuning::fit::CLAMP.0,
                        crate::tuning::fit::CLAMP.1
                    )
                })
                .unwrap_or_default();
            match &h.option {
                Some(o) => format!("  head {o:?}: temperature {:.3}{clamp}", h.temperature),
                None => format!("  head: temperature {:.3}{clamp}", h.temperature),
            }
        })
        .collect();
    for h in heads {
        outln!("{h}")?;
    }
    outln!("\n{}", measured.text())?;
    match question_fit::choose_threshold(&[measured], a.target_accuracy) {
        Some(t) => outln!(
            "Threshold: {t:.2} is the lowest at which its held-out answers are at least {:.0}% accurate; pass \
             \"min_confidence\": {t:.2} with the question (or set [gateway] min_confidence).",
            100.0 * a.target_accuracy
        )?,
        None => outln!(
            "Threshold: none up to 0.90 makes its held-out answers {:.0}% accurate; more examples may.",
            100.0 * a.target_accuracy
        )?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A set file in a scratch folder of its own, removed when the first value drops.
    fn write(lines: &[String]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = crate::fsutil::scratch_dir();
        let p = dir.path().join("set.jsonl");
        std::fs::write(&p, lines.join("\n")).unwrap();
        (dir, p)
    }

    #[test]
    fn sets_are_checked_before_anything_is_fitted() {
        let yes_no: Vec<String> =
            (0..20).map(|i| format!(r#"{{"text": "item {i}", "label": {}}}"#, i % 3 == 0)).collect();
        let (_d, p) = write(&yes_no);
        let s = read_set(&p, "  Is   it  ok? ").unwrap();
        assert_eq!(s.question, "Is it ok?");
        assert!(matches!(&s.labels, Labels::YesNo(v) if v.len() == 20 && v[0] && !v[1]));
        assert_eq!((s.texts[1].as_str(), s.context.len()), ("item 1", 0));

        let (_d, p) = write(&yes_no[..19]);
        assert!(read_set(&p, "q").unwrap_err().contains("19 labelled examples; a question is taught from 20"));
        let one: Vec<String> = (0..20).map(|i| format!(r#"{{"text": "t{i}", "label": "red"}}"#)).collect();
        let (_d, p) = write(&one);
        assert!(read_set(&p, "q").unwrap_err().contains("every label is \"red\""));
        let all_no: Vec<String> = (0..20).map(|i| format!(r#"{{"text": "t{i}", "label": false}}"#)).collect();
        let (_d, p) = write(&all_no);
        assert!(read_set(&p, "q").unwrap_err().contains("every label is no"));

        let options: Vec<String> = (0..21)
            .map(|i| {
                format!(
                    r#"{{"context": {{"ticket": "t{i}", "team": "x"}}, "label": "{}"}}"#,
                    ["Red", "green", "blue"][i % 3]
                )
            })
            .collect();
        let (_d, p) = write(&options);
        let s = read_set(&p, "Which colour?").unwrap();
        assert_eq!(
            s.labels,
            Labels::Options {
                options: vec!["Red".into(), "green".into(), "blue".into()],
                picks: (0..21).map(|i| i % 3).collect()
            }
        );
        assert_eq!(s.context, vec!["team".to_string(), "ticket".to_string()]);
        assert_eq!(s.texts[0], "ticket: t0\nteam: x");

        let mut mixed = yes_no.clone();
        mixed[4] = r#"{"text": "x", "label": "maybe"}"#.into();
        let (_d, p) = write(&mixed);
        assert!(read_set(&p, "q").unwrap_err().contains("line 5: an option label in a set of true/false labels"));
        let mut bad = yes_no.clone();
        bad[2] = r#"{"text": "x"}"#.into();
        let (_d, p) = write(&bad);
        assert!(read_set(&p, "q").unwrap_err().contains("line 3: needs \"label\""));
        bad[2] = r#"{"prompt": "x", "label": true}"#.into();
        let (_d, p) = write(&bad);
        assert!(read_set(&p, "q").unwrap_err().contains("line 3: needs \"text\""));
        // "yes"/"no" strings are a yes/no question.
        let words: Vec<String> = (0..20)
            .map(|i| format!(r#"{{"text": "t{i}", "label": "{}"}}"#, if i % 2 == 0 { "Yes" } else { "no" }))
            .collect();
        let (_d, p) = write(&words);
        assert!(matches!(read_set(&p, "q").unwrap().labels, Labels::YesNo(_)));
        // Options: at most as many as a decision asks, each with two examples or more.
        let many: Vec<String> = (0..514).map(|i| format!(r#"{{"text": "t{i}", "label": "o{}"}}"#, i / 2)).collect();
        let (_d, p) = write(&many);
        assert!(read_set(&p, "q").unwrap_err().contains("has 257 options; a question is taught at most 256"));
        let (_d, p) = write(&many[..512]);
        assert!(matches!(read_set(&p, "q").unwrap().labels, Labels::Options { options, .. } if options.len() == 256));
        let mut single = many[..40].to_vec();
        single[39] = r#"{"text": "t39", "label": "lonely"}"#.into();
        single[37] = r#"{"text": "t37", "label": "alone"}"#.into();
        let (_d, p) = write(&single);
        let err = read_set(&p, "q").unwrap_err();
        assert!(err.contains("4 of the 22 options (\"o18\" first) have fewer than 2 examples"), "{err}");
    }

    #[test]
    fn option_heads_answer_with_held_out_normalised_probabilities() {
        // Three options along the first coordinate; the outer two separate linearly.
        let xs: Vec<Vec<f32>> = (0..60).map(|i| vec![(i % 3) as f32 - 1.0 + 0.01 * (i / 3) as f32, 0.1, 0.2]).collect();
        let set = Set {
            question: "Which?".into(),
            texts: (0..60).map(|i| format!("t{i}")).collect(),
            labels: Labels::Options {
                options: vec!["a".into(), "b".into(), "c".into()],
                picks: (0..60).map(|i| i % 3).collect(),
            },
            context: vec!["ticket".into()],
        };
        let (fitted, samples) = fit_set("m", &set, &xs, "set.jsonl", &mut |_, _| {}).unwrap();
        assert_eq!(fitted.iter().map(|h| h.option.clone().unwrap()).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert!(fitted.iter().all(|h| h.context == ["ticket"] && h.source == "set.jsonl" && h.question == "Which?"));
        for (i, s) in samples.iter().enumerate() {
            assert!((s.probs.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            if i % 3 != 1 {
                assert_eq!(s.top(1.0).0, s.correct, "sample {i}: {:?}", s.probs);
            }
        }
        // The held-out answer of option a for sample 0 is the held-out P(yes) of a's own head, normalised.
        let p: Vec<Vec<f64>> = (0..3)
            .map(|k| {
                crossval::held_out("m", "Which?", &xs, &(0..60).map(|i| i % 3 == k).collect::<Vec<_>>()).unwrap().1
            })
            .collect();
        let total = p[0][4] + p[1][4] + p[2][4];
        assert!((samples[4].probs[2] - p[2][4] / total).abs() < 1e-12);
    }
}
