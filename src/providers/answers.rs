//! Pieces every engine adapter shares: the answer to a choice, the rationale line,
//! yes/no detection, the state an engine reads, and the API-key handling. Engine-specific wire
//! formats stay in each adapter's own file.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Cause, EngineAnswer, EngineRequest, Failure, Probabilities};
use crate::config::Settings;

/// Rounds to 4 decimals, the precision engines report.
pub fn round4(x: f64) -> f64 {
    crate::text::round(x, 4)
}

/// `laya typed-decisions: block the merge=0.52, rerun the pipeline=0.48`.
pub fn rationale(engine: &str, model: &str, options: &[String], probs: &[f64]) -> String {
    format!("{engine} {model}: {}", listed(options, probs))
}

/// `block the merge=0.52, rerun the pipeline=0.48`: each option with its probability, two decimals.
pub fn listed(options: &[String], probs: &[f64]) -> String {
    options.iter().zip(probs).map(|(o, p)| format!("{o}={p:.2}")).collect::<Vec<_>>().join(", ")
}

/// The gateway's answer for a choice: the engine's own pick when it made one, else the most
/// probable option; the pick's probability as the confidence; every option's probability; and the
/// rationale. A pick that is not one of the options is passed on as it came, for the gateway to
/// refuse as malformed: it is never turned into an option here.
pub fn choice_answer(engine: &str, model: &str, options: &[String], probs: &[f64], pick: Option<&str>) -> EngineAnswer {
    let best = probs.iter().enumerate().fold(0, |b, (i, p)| if *p > probs[b] { i } else { b });
    let (decision, confidence) = match pick {
        Some(p) => match options.iter().position(|o| o == p) {
            Some(i) => (p.to_string(), probs.get(i).copied().unwrap_or(0.0)),
            None => (p.to_string(), 0.0),
        },
        None => (options.get(best).cloned().unwrap_or_default(), probs.get(best).copied().unwrap_or(0.0)),
    };
    EngineAnswer::Decided {
        decision,
        confidence,
        probabilities: Some(Probabilities::of(options, probs)),
        rationale: Some(rationale(engine, model, options, probs)),
        detail: None,
    }
}

/// The ids the questions go under in one engine request: their keys, unless two are equal (then
/// their positions, `q0`, `q1`, ...).
pub fn question_ids(request: &EngineRequest) -> Vec<String> {
    let keys: Vec<String> = request.questions.iter().map(|q| q.key.clone()).collect();
    if keys.iter().enumerate().any(|(i, k)| keys[..i].contains(k)) {
        (0..keys.len()).map(|i| format!("q{i}")).collect()
    } else {
        keys
    }
}

/// For options that are exactly yes and no (any order, any case): the indices of yes and no.
pub fn yes_no(options: &[String]) -> Option<(usize, usize)> {
    if options.len() != 2 {
        return None;
    }
    let lower: Vec<String> = options.iter().map(|o| o.trim().to_ascii_lowercase()).collect();
    match (lower[0].as_str(), lower[1].as_str()) {
        ("yes", "no") => Some((0, 1)),
        ("no", "yes") => Some((1, 0)),
        _ => None,
    }
}

/// What the engine reads as its state: the caller's context, or else the question itself, so that
/// a question without context is read in the engine's full window rather than only in the short
/// question head (laya caps instructions and options at 192 tokens). A text asked several times
/// (the groups of an elimination round, a question with its options reordered) is in it once, so
/// the state is the same however many times the question is asked.
pub fn state_of(request: &EngineRequest) -> Value {
    match &request.context {
        Some(c) if !c.is_null() => c.clone(),
        _ => {
            let mut texts: Vec<&str> = Vec::new();
            for q in &request.questions {
                if !texts.contains(&q.text.as_str()) {
                    texts.push(&q.text);
                }
            }
            Value::String(texts.join("\n"))
        }
    }
}

/// The API key from the environment (`SYSTEM1_<PROVIDER>_API_KEY`, mapped by the config loader to
/// the `api_key` setting; a key in the config file is rejected before an adapter sees it).
pub fn api_key(s: &Settings) -> Option<String> {
    let key = s.string("api_key", "");
    let key = key.trim();
    if key.is_empty() { None } else { Some(key.to_string()) }
}

/// The environment variable that holds engine `engine`'s API key.
pub fn key_var(engine: &str) -> String {
    format!("SYSTEM1_{}_API_KEY", engine.to_ascii_uppercase())
}

/// What a status other than 200 means where the adapters of keyed decision APIs (`systemone` and its
/// dialects, `decisions`) read it alike: a key missing or refused (401, 403) and a failing server
/// (5xx). `None` leaves the status to the adapter.
pub fn keyed_refusal(engine: &str, status: u16, key_set: bool, detail: &str) -> Option<(Cause, String)> {
    Some(match status {
        401 | 403 if !key_set => (
            Cause::Unauthorised,
            format!("the server wants an API key: it is missing; set {} or api_key_file ({detail})", key_var(engine)),
        ),
        401 | 403 => {
            (Cause::Unauthorised, format!("the server refused the API key: it is wrong or lacks access ({detail})"))
        }
        s if s >= 500 => (Cause::HttpStatus(s), format!("the server failed ({detail})")),
        _ => return None,
    })
}

/// The failure for an HTTP 401: says whether the key is missing or wrong, and where it goes.
pub fn auth_failure(engine: &str, key_set: bool, detail: &str) -> Failure {
    let var = key_var(engine);
    if key_set {
        Failure::new(Cause::Unauthorised, format!("{engine} refused the API key in {var}: it is wrong ({detail})"))
    } else {
        Failure::new(
            Cause::Unauthorised,
            format!("{engine} requires an API key: it is missing; set {var} to the server's key ({detail})"),
        )
    }
}

/// What one request to an engine gave: an answer to every question asked (answered or passed
/// on), or the questions it refused for the whole request's sake, by index, each with why.
pub enum Round {
    Answered(Vec<EngineAnswer>),
    Refused(Vec<(usize, String)>),
}

/// Asks `request` of a server that may refuse the whole request for some questions' sake: those
/// pass on to the next engine (`PassCause::Refused`, with the server's words) and the others are
/// asked again, until every question is settled or `timeout` is over. `ask` gets the questions
/// left (the whole request as it came, uncopied, in the first round: its context may be
/// megabytes), the time left and the deadline. Each round settles at least one question.
pub fn in_rounds(
    engine: &str,
    request: &EngineRequest,
    timeout: Duration,
    mut ask: impl FnMut(&EngineRequest, Duration, Instant) -> Result<Round, Failure>,
) -> Result<Vec<EngineAnswer>, Failure> {
    let deadline = Instant::now() + timeout;
    let n = request.questions.len();
    let mut out: Vec<Option<EngineAnswer>> = vec![None; n];
    loop {
        let left: Vec<usize> = (0..n).filter(|i| out[*i].is_none()).collect();
        if left.is_empty() {
            break;
        }
        let asked = if left.len() == n {
            std::borrow::Cow::Borrowed(request)
        } else {
            std::borrow::Cow::Owned(EngineRequest {
                context: request.context.clone(),
                questions: left.iter().map(|&i| request.questions[i].clone()).collect(),
            })
        };
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(Failure::timeout(timeout).prefixed(&format!("{engine}: ")));
        }
        match ask(&asked, remaining, deadline)? {
            Round::Answered(got) => left.iter().zip(got).for_each(|(&i, a)| out[i] = Some(a)),
            Round::Refused(refused) => {
                for (j, why) in refused {
                    if let Some(&i) = left.get(j) {
                        out[i] = Some(EngineAnswer::Passed { cause: super::PassCause::Refused, reason: why });
                    }
                }
            }
        }
    }
    Ok(out.into_iter().flatten().collect())
}

/// Time left before `deadline`, or a timeout failure when none is left.
pub fn remaining(deadline: Instant, timeout: Duration) -> Result<Duration, Failure> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() { Err(Failure::timeout(timeout)) } else { Ok(left) }
}

/// Refuses a request with more options than the engine takes, before anything is sent. The gateway
/// checks `capabilities().max_options` first; this keeps an adapter safe when it is called on its
/// own, and says why the engine has that limit.
pub fn check_option_limit(engine: &str, request: &EngineRequest, max: usize, why: &str) -> Result<(), Failure> {
    match request.questions.iter().find(|q| q.options.len() > max) {
        Some(q) => Err(Failure::new(
            Cause::OverLimit,
            format!("{engine}: {} options exceed the limit of {max}{why}", q.options.len()),
        )),
        None => Ok(()),
    }
}

/// The share of letters outside the Latin script (0 when there are no letters).
pub fn non_latin_share(parts: &[&str]) -> f64 {
    let (mut letters, mut other) = (0usize, 0usize);
    for c in parts.iter().flat_map(|p| p.chars()).filter(|c| c.is_alphabetic()) {
        letters += 1;
        if !is_latin(c) {
            other += 1;
        }
    }
    if letters == 0 { 0.0 } else { other as f64 / letters as f64 }
}

fn is_latin(c: char) -> bool {
    matches!(c as u32,
        0x41..=0x5A | 0x61..=0x7A | 0xAA | 0xBA | 0xC0..=0x24F | 0x250..=0x2AF | 0x1D00..=0x1DBF
        | 0x1E00..=0x1EFF | 0x2C60..=0x2C7F | 0xA720..=0xA7FF | 0xAB30..=0xAB6F | 0xFB00..=0xFB06
        | 0xFF21..=0xFF3A | 0xFF41..=0xFF5A)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn rationale_lists_every_option_with_two_decimals() {
        let opts = vec!["block the merge".to_string(), "rerun the pipeline".to_string()];
        assert_eq!(
            rationale("laya", "typed-decisions", &opts, &[0.5234, 0.4766]),
            "laya typed-decisions: block the merge=0.52, rerun the pipeline=0.48"
        );
    }

    #[test]
    fn choice_answer_takes_the_most_probable_option() {
        let opts = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let a = choice_answer("x", "m", &opts, &[0.2, 0.5, 0.3], None);
        assert_eq!(a.decision(), Some("b"));
        assert_eq!(a.confidence(), Some(0.5));
        assert_eq!(a.probabilities().and_then(|p| p.get("c")), Some(0.3));
        assert_eq!(
            choice_answer("x", "m", &opts, &[0.2, 0.5, 0.3], Some("c")).decision(),
            Some("c"),
            "the engine's pick"
        );
        assert_eq!(
            choice_answer("x", "m", &opts, &[0.2, 0.5, 0.3], Some("banana")).decision(),
            Some("banana"),
            "a pick that is no option is passed on for the gateway to refuse"
        );
    }

    #[test]
    fn question_ids_are_the_keys_unless_two_are_equal() {
        let request = |keys: &[&str]| EngineRequest {
            context: None,
            questions: keys
                .iter()
                .map(|k| super::super::Question { key: k.to_string(), text: "?".into(), options: vec![] })
                .collect(),
        };
        assert_eq!(question_ids(&request(&["design", "review"])), ["design", "review"]);
        assert_eq!(question_ids(&request(&["decision", "other", "decision"])), ["q0", "q1", "q2"]);
    }

    #[test]
    fn the_state_without_context_names_each_question_once() {
        let q = |text: &str| super::super::Question { key: "k".into(), text: text.into(), options: vec![] };
        let request =
            EngineRequest { context: None, questions: vec![q("Which?"), q("Which?"), q("Why?"), q("Which?")] };
        assert_eq!(state_of(&request), Value::String("Which?\nWhy?".into()));
        let request = EngineRequest { context: Some(json!({"a": 1})), questions: vec![q("Which?")] };
        assert_eq!(state_of(&request), json!({"a": 1}));
    }

    #[test]
    fn yes_no_in_either_order() {
        let v = |a: &str, b: &str| vec![a.to_string(), b.to_string()];
        assert_eq!(yes_no(&v("yes", "no")), Some((0, 1)));
        assert_eq!(yes_no(&v("No", "Yes")), Some((1, 0)));
        assert_eq!(yes_no(&v("yes", "maybe")), None);
    }
}
