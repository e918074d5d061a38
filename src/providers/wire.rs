//! The System One wire format (`POST /v1/systemone`), written once for every engine that speaks
//! it: the request body (a `state` and a map of typed questions) and the reading of the answers.
//! The shapes are in docs/engines.md. Each dialect states only where it differs: Laya asks a
//! yes/no as a two-option choice and checks its checkpoint; von reads `noul_raw`; the `systemone`
//! provider holds answers to every rule of the API.
//!
//! Option names are matched after Unicode NFC on both sides: a server may hand back the bytes of a
//! name in another normal form (`é` as `e` plus a combining accent), which is the same name.

use serde_json::{Map, Value, json};
use unicode_normalization::UnicodeNormalization;

use super::answers;
use super::{EngineAnswer, EngineRequest, Question};

/// How a question goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// `noul`: the probability that the statement holds. For yes/no questions.
    Noul,
    /// `choice`: one of the options, with every option's probability.
    Choice,
}

impl Ask {
    pub fn type_name(self) -> &'static str {
        match self {
            Ask::Noul => "noul",
            Ask::Choice => "choice",
        }
    }
}

/// One question as it goes on the wire: a `noul` with the question as its instructions, or a
/// `choice` whose `criteria` map each option to its description (or `null`).
pub fn question(ask: Ask, q: &Question, descriptions: Option<&Map<String, Value>>) -> Value {
    match ask {
        Ask::Noul => json!({"type": "noul", "instructions": q.text}),
        Ask::Choice => {
            let criteria: Map<String, Value> = q
                .options
                .iter()
                .map(|o| {
                    let d = descriptions.and_then(|d| d.get(o)).filter(|d| !d.is_null()).cloned();
                    (o.clone(), d.unwrap_or(Value::Null))
                })
                .collect();
            json!({"type": "choice", "instructions": q.text, "criteria": criteria})
        }
    }
}

/// The request body: the state, the model when one is named, the questions by id.
pub fn body(state: Value, model: Option<&str>, questions: Map<String, Value>) -> Value {
    let mut body = Map::new();
    body.insert("state".into(), state);
    if let Some(m) = model.filter(|m| !m.is_empty()) {
        body.insert("model".into(), json!(m));
    }
    body.insert("questions".into(), Value::Object(questions));
    Value::Object(body)
}

/// The descriptions of the options, when the context carries them as a map keyed by option (as
/// the skill picker's does).
pub fn descriptions<'a>(request: &'a EngineRequest, options: &[String]) -> Option<&'a Map<String, Value>> {
    request
        .context
        .as_ref()?
        .as_object()?
        .values()
        .filter_map(Value::as_object)
        .find(|m| options.iter().any(|o| m.contains_key(o)))
}

/// The `answers` object of a reply, keyed by question id.
pub fn answers_of(reply: &Value) -> Option<&Map<String, Value>> {
    reply.get("answers").and_then(Value::as_object)
}

/// A name in NFC, the form names are compared in.
pub fn nfc(name: &str) -> String {
    name.nfc().collect()
}

/// A rule of the System One API that an answer breaks: its id as jevcompat's specification numbers
/// it (`choice.argmax`), and what was wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct Broken {
    pub rule: &'static str,
    pub what: String,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "breaks {} ({}): {}", self.rule, rule_text(self.rule), self.what)
    }
}

fn broken(rule: &'static str, what: String) -> Broken {
    Broken { rule, what }
}

/// What each rule promises, in a few words.
pub fn rule_text(rule: &str) -> &'static str {
    match rule {
        "http.json" => "a 200 body is JSON",
        "response.finite" => "no NaN or Infinity",
        "response.envelope" => "the answer has an `answers` object",
        "response.answer-ids" => "one answer per question id",
        "response.answer-type" => "each answer's type matches its question",
        "noul.answer" => "noul is a probability in [0, 1]",
        "choice.answer" => "a choice answer has its choice and probabilities",
        "choice.probability-keys" => "probability keys are exactly the option names",
        "choice.distribution" => "probabilities are in [0, 1] and sum to 1",
        "choice.argmax" => "choice is the most probable option",
        "confidence.range" => "confidence is in [0, 1]",
        _ => "a rule of the System One API",
    }
}

/// Why a 200 body that did not parse is not an answer: a NaN or Infinity (not JSON numbers), or
/// anything else that is not JSON.
pub fn unparsed(text: &str) -> Broken {
    let bare = |word: &str| {
        text.match_indices(word).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + word.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '"' || c == '_')
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '"' || c == '_')
        })
    };
    if bare("NaN") || bare("Infinity") {
        return broken("response.finite", "the body has a NaN or Infinity, which JSON has no numbers for".into());
    }
    let start: String = text.trim_start().chars().take(12).collect();
    broken("http.json", format!("the 200 body is not JSON (it starts with {start:?})"))
}

/// How strictly a reply is read.
#[derive(Debug, Clone, Copy)]
pub struct Reading {
    /// The probabilities must name exactly the options (else extra names are left aside).
    pub exact_keys: bool,
}

/// Each option's probability from a choice answer's `probabilities`, in option order, the keys
/// matched after NFC. Every value must be a finite number in [0, 1].
pub fn probabilities(answer: &Value, options: &[String], reading: Reading) -> Result<Vec<f64>, Broken> {
    let Some(probs) = answer.get("probabilities").and_then(Value::as_object) else {
        return Err(broken("choice.answer", "it has no probabilities".into()));
    };
    let wanted: Vec<String> = options.iter().map(|o| nfc(o)).collect();
    let mut got: Vec<Option<f64>> = vec![None; options.len()];
    for (k, v) in probs {
        let Some(i) = wanted.iter().position(|w| *w == nfc(k)) else {
            if reading.exact_keys {
                return Err(broken("choice.probability-keys", format!("it names {k:?}, which is not an option")));
            }
            continue;
        };
        let Some(x) = v.as_f64().filter(|x| x.is_finite()) else {
            return Err(broken("choice.distribution", format!("the probability of {k:?} is {v}, not a number")));
        };
        if !(0.0..=1.0).contains(&x) {
            return Err(broken("choice.distribution", format!("the probability of {k:?} is {x}, outside [0, 1]")));
        }
        if got[i].replace(x).is_some() {
            return Err(broken("choice.probability-keys", format!("it names {k:?} twice")));
        }
    }
    match options.iter().zip(&got).find(|(_, p)| p.is_none()) {
        Some((o, _)) => Err(broken("choice.probability-keys", format!("it has no probability for option {o:?}"))),
        None => Ok(got.into_iter().flatten().collect()),
    }
}

/// The decimals the values are rounded to, when that is fewer than 7.
fn decimals(values: &[f64]) -> Option<i32> {
    (0..7).find(|d| {
        let scale = 10f64.powi(*d);
        values.iter().all(|v| ((v * scale).round() - v * scale).abs() < 1e-9)
    })
}

/// How far probabilities may sum from 1: jevcompat's 0.05, plus half a unit of the last decimal
/// for each value when the values are rounded (to fewer than 7 decimals).
pub fn sum_tolerance(values: &[f64]) -> f64 {
    0.05 + decimals(values).map(|d| values.len() as f64 * 0.5 * 10f64.powi(-d)).unwrap_or(0.0)
}

/// A choice answer held to every rule of the API: its probabilities name exactly the options
/// (after NFC), each in [0, 1], summing to 1 within [`sum_tolerance`]; its choice is one of the
/// options and the most probable one (ties and rounding allowed); a `confidence`, which is not
/// used, is still a number in [0, 1]. Gives the chosen option's index and the probabilities in
/// option order.
pub fn strict_choice(answer: &Value, options: &[String]) -> Result<(usize, Vec<f64>), Broken> {
    let probs = probabilities(answer, options, Reading { exact_keys: true })?;
    let sum: f64 = probs.iter().sum();
    if (sum - 1.0).abs() > sum_tolerance(&probs) {
        return Err(broken("choice.distribution", format!("the probabilities sum to {sum:.4}, not 1")));
    }
    let pick = chosen(answer, options)?;
    let at = options.iter().position(|o| o == pick).unwrap_or(0);
    let slack = decimals(&probs).map(|d| 1.5 * 10f64.powi(-d)).unwrap_or(1e-9);
    let (best, top) =
        probs.iter().enumerate().fold((0, f64::NEG_INFINITY), |b, (i, p)| if *p > b.1 { (i, *p) } else { b });
    if probs[at] < top - slack {
        return Err(broken(
            "choice.argmax",
            format!("its choice {pick:?} has probability {}, below {:?} at {top}", probs[at], options[best]),
        ));
    }
    if let Some(c) = answer.get("confidence")
        && !c.as_f64().is_some_and(|c| (0.0..=1.0).contains(&c))
    {
        return Err(broken("confidence.range", format!("its confidence is {c}")));
    }
    Ok((at, probs))
}

/// The option the answer's `choice` names (matched after NFC), as the question has it.
pub fn chosen<'a>(answer: &Value, options: &'a [String]) -> Result<&'a String, Broken> {
    let Some(pick) = answer.get("choice").and_then(Value::as_str) else {
        return Err(broken("choice.answer", "it has no choice".into()));
    };
    let pick_nfc = nfc(pick);
    options
        .iter()
        .find(|o| nfc(o) == pick_nfc)
        .ok_or_else(|| broken("choice.answer", format!("its choice {pick:?} is not one of the options")))
}

/// A `noul` answer's probability, read from `field` (`noul`; von's `noul_raw`).
pub fn noul(answer: &Value, field: &str) -> Result<f64, Broken> {
    let Some(v) = answer.get(field) else {
        return Err(broken("noul.answer", format!("it has no {field}")));
    };
    match v.as_f64().filter(|x| x.is_finite()) {
        Some(p) if (0.0..=1.0).contains(&p) => Ok(p),
        Some(p) => Err(broken("noul.answer", format!("{field} is {p}, outside [0, 1]"))),
        None => Err(broken("noul.answer", format!("{field} is {v}, not a number"))),
    }
}

/// A yes/no question's answer from P(yes): yes when it is at least 0.5.
pub fn yes_no_answer(engine: &str, model: &str, options: &[String], p_yes: f64) -> Option<EngineAnswer> {
    let (yes, no) = answers::yes_no(options)?;
    let mut probs = vec![0.0; 2];
    probs[yes] = answers::round4(p_yes);
    probs[no] = answers::round4(1.0 - p_yes);
    let pick = if p_yes >= 0.5 { &options[yes] } else { &options[no] };
    Some(answers::choice_answer(engine, model, options, &probs, Some(pick)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    const STRICT: Reading = Reading { exact_keys: true };

    #[test]
    fn questions_and_body_as_the_api_defines_them() {
        let q = Question { key: "c".into(), text: "Which team?".into(), options: opts(&["infra", "app"]) };
        let d: Map<String, Value> = serde_json::from_value(json!({"infra": "servers"})).unwrap();
        assert_eq!(
            question(Ask::Choice, &q, Some(&d)),
            json!({"type": "choice", "instructions": "Which team?", "criteria": {"infra": "servers", "app": null}})
        );
        assert_eq!(question(Ask::Noul, &q, None), json!({"type": "noul", "instructions": "Which team?"}));
        let b = body(json!({"a": 1}), Some("jev-latest"), Map::new());
        assert_eq!(b, json!({"state": {"a": 1}, "model": "jev-latest", "questions": {}}));
        assert!(body(json!("s"), Some(""), Map::new()).get("model").is_none());
    }

    #[test]
    fn probabilities_are_matched_after_nfc_and_every_rule_is_named() {
        let o = opts(&["café", "tea"]);
        let nfd = json!({"probabilities": {"cafe\u{301}": 0.7, "tea": 0.3}});
        assert_eq!(probabilities(&nfd, &o, STRICT), Ok(vec![0.7, 0.3]));
        let rule = |a: Value| probabilities(&a, &o, STRICT).unwrap_err().rule;
        assert_eq!(rule(json!({"probabilities": {"Café": 0.7, "tea": 0.3}})), "choice.probability-keys");
        assert_eq!(rule(json!({"probabilities": {"café": 0.7}})), "choice.probability-keys");
        assert_eq!(rule(json!({"probabilities": {"café": 1.2, "tea": 0.3}})), "choice.distribution");
        assert_eq!(rule(json!({"probabilities": {"café": "x", "tea": 0.3}})), "choice.distribution");
        assert_eq!(rule(json!({})), "choice.answer");
        let lax = Reading { exact_keys: false };
        assert_eq!(
            probabilities(&json!({"probabilities": {"café": 0.7, "tea": 0.3, "x": 1}}), &o, lax),
            Ok(vec![0.7, 0.3])
        );
    }

    #[test]
    fn a_strict_choice_holds_every_rule() {
        let o = opts(&["a", "b", "c"]);
        let ok = json!({"choice": "b", "probabilities": {"a": 0.2, "b": 0.5, "c": 0.3}, "confidence": 0.25});
        assert_eq!(strict_choice(&ok, &o), Ok((1, vec![0.2, 0.5, 0.3])));
        let rule = |a: Value| strict_choice(&a, &o).unwrap_err().rule;
        assert_eq!(rule(json!({"choice": "c", "probabilities": {"a": 0.2, "b": 0.5, "c": 0.3}})), "choice.argmax");
        assert_eq!(
            rule(json!({"choice": "b", "probabilities": {"a": 0.3, "b": 0.7, "c": 0.3}})),
            "choice.distribution"
        );
        assert_eq!(
            rule(json!({"choice": "b", "probabilities": {"a": 0.2, "b": 0.5, "c": 0.3}, "confidence": 1.5})),
            "confidence.range"
        );
        assert_eq!(rule(json!({"probabilities": {"a": 0.2, "b": 0.5, "c": 0.3}})), "choice.answer");
        // A tie, and a pick that rounding put a unit below the top, are the most probable.
        assert!(strict_choice(&json!({"choice": "a", "probabilities": {"a": 0.5, "b": 0.5, "c": 0.0}}), &o).is_ok());
        assert!(
            strict_choice(&json!({"choice": "a", "probabilities": {"a": 0.4999, "b": 0.5, "c": 0.0001}}), &o).is_ok()
        );
    }

    #[test]
    fn the_sum_tolerance_grows_for_rounded_values() {
        assert_eq!(sum_tolerance(&[0.123456789, 0.876543211]), 0.05);
        assert!((sum_tolerance(&[0.33, 0.33, 0.33]) - 0.065).abs() < 1e-12);
        assert!((sum_tolerance(&[0.3, 0.7]) - 0.15).abs() < 1e-12);
    }

    #[test]
    fn a_body_that_is_not_json_says_why() {
        assert_eq!(unparsed(r#"{"a": 1, "x_debug": NaN}"#).rule, "response.finite");
        assert_eq!(unparsed(r#"{"a": -Infinity}"#).rule, "response.finite");
        assert_eq!(unparsed(")]}'\n{\"a\": 1}").rule, "http.json");
        assert_eq!(unparsed(r#"{"NaN": 1"#).rule, "http.json", "a key named NaN is no number");
        assert!(unparsed("<html>").to_string().starts_with("breaks http.json (a 200 body is JSON)"));
    }

    #[test]
    fn noul_and_choice_read_or_name_the_rule() {
        assert_eq!(noul(&json!({"noul": 0.25}), "noul"), Ok(0.25));
        assert_eq!(noul(&json!({"noul": 1.07}), "noul").unwrap_err().rule, "noul.answer");
        assert_eq!(noul(&json!({}), "noul").unwrap_err().rule, "noul.answer");
        let o = opts(&["café", "tea"]);
        assert_eq!(chosen(&json!({"choice": "cafe\u{301}"}), &o), Ok(&o[0]));
        assert_eq!(chosen(&json!({"choice": "milk"}), &o).unwrap_err().rule, "choice.answer");
        let a = yes_no_answer("e", "m", &opts(&["yes", "no"]), 0.5).unwrap();
        assert_eq!(a.decision(), Some("yes"), "yes at 0.5");
        let a = yes_no_answer("e", "m", &opts(&["no", "yes"]), 0.2).unwrap();
        assert_eq!((a.decision(), a.confidence()), (Some("no"), Some(0.8)));
    }
}
