//! The System One API as this server speaks it: a `POST /v1/systemone` body checked into typed
//! questions, the questions turned into the gateway's engine questions, and the gateway's answers
//! turned back into the API's answers (probabilities, `confidence` by the API's reference formula,
//! `score` as the expectation over the levels). The shapes are described in docs/serve.md.

use serde_json::{Map, Value, json};

use crate::gateway::{Answer, Ask, Purpose, Query};
use crate::providers::Question;
use crate::text;

/// The API's documented option range for a choice is 2 to 255; more are answered through the
/// gateway's elimination rounds, up to this many (a bound on the work one request can ask for).
pub const MAX_CHOICE_OPTIONS: usize = 1024;
pub const MIN_LEVELS: usize = 2;
pub const MAX_LEVELS: usize = 10;
/// More questions than any client asks at once; a bound on one request's work.
pub const MAX_QUESTIONS: usize = 64;
/// An option or level name the engine reads; longer ones are refused (the gateway's own limit).
pub const MAX_OPTION_CHARS: usize = crate::gateway::request::MAX_OPTION_CHARS;

/// The model names a request may give: this server's own, and the official SDKs' default alias.
pub const MODEL: &str = "system1";
pub const ALIAS: &str = "jev-latest";

/// One validation failure, as the API reports it in `detail[]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Where in the body: `["body", "questions", "q", "criteria"]`.
    pub loc: Vec<Value>,
    pub msg: String,
    pub kind: &'static str,
}

impl Problem {
    fn at(loc: &[&str], msg: impl Into<String>, kind: &'static str) -> Self {
        let mut l = vec![json!("body")];
        l.extend(loc.iter().map(|s| json!(s)));
        Problem { loc: l, msg: msg.into(), kind }
    }

    pub fn to_json(&self) -> Value {
        json!({"loc": self.loc, "msg": self.msg, "type": self.kind})
    }
}

/// Why a request is refused before any engine is asked.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// 422 with `detail[]`.
    Invalid(Vec<Problem>),
    /// A model this server does not serve: 404 `api_usage_error`.
    UnknownModel(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// The probability that the statement holds, asked as `yes` / `no`.
    Noul,
    /// Each option as the client named it.
    Choice(Vec<String>),
    /// The levels as the client gave them (echoed in `legend`), with the names the engine reads.
    Score { levels: Vec<Value>, names: Vec<String> },
}

#[derive(Debug, Clone, PartialEq)]
pub struct SoQuestion {
    pub id: String,
    pub kind: Kind,
    /// The question as the engine reads it: instructions, and for a noul its criteria.
    pub text: String,
    /// Option name → its description as text, for the options that have one.
    pub descriptions: Vec<(String, String)>,
}

/// A request that passed validation.
#[derive(Debug, Clone, PartialEq)]
pub struct SoRequest {
    pub state: Value,
    pub questions: Vec<SoQuestion>,
}

/// Checks a parsed body. Unknown top-level fields are ignored, as the API asks.
pub fn validate(body: &Value) -> Result<SoRequest, Refusal> {
    let Value::Object(obj) = body else {
        return Err(Refusal::Invalid(vec![Problem::at(
            &[],
            "the body must be a JSON object",
            "model_attributes_type",
        )]));
    };
    let mut problems = Vec::new();
    match obj.get("model") {
        None | Some(Value::Null) => {}
        Some(Value::String(m)) if m == MODEL || m == ALIAS => {}
        Some(Value::String(m)) => return Err(Refusal::UnknownModel(m.clone())),
        Some(_) => problems.push(Problem::at(&["model"], "model must be a string", "string_type")),
    }
    let state = match obj.get("state") {
        None => {
            problems.push(Problem::at(&["state"], "state is required", "missing"));
            Value::Null
        }
        Some(v @ (Value::String(_) | Value::Object(_) | Value::Array(_))) => v.clone(),
        Some(_) => {
            problems.push(Problem::at(&["state"], "state must be a string, an object or an array", "state_type"));
            Value::Null
        }
    };
    let mut questions = Vec::new();
    match obj.get("questions") {
        None => problems.push(Problem::at(&["questions"], "questions is required", "missing")),
        Some(Value::Object(qs)) if qs.is_empty() => {
            problems.push(Problem::at(&["questions"], "questions must hold at least one question", "too_short"))
        }
        Some(Value::Object(qs)) if qs.len() > MAX_QUESTIONS => problems.push(Problem::at(
            &["questions"],
            format!("questions holds {} questions; at most {MAX_QUESTIONS} are allowed", qs.len()),
            "too_long",
        )),
        Some(Value::Object(qs)) => {
            for (id, q) in qs {
                match question(id, q) {
                    Ok(q) => questions.push(q),
                    Err(p) => problems.push(p),
                }
            }
        }
        Some(_) => {
            problems.push(Problem::at(&["questions"], "questions must be an object of id → question", "dict_type"))
        }
    }
    if problems.is_empty() { Ok(SoRequest { state, questions }) } else { Err(Refusal::Invalid(problems)) }
}

fn question(id: &str, q: &Value) -> Result<SoQuestion, Problem> {
    let at = |rest: &[&str], msg: String, kind: &'static str| {
        let mut loc = vec!["questions", id];
        loc.extend_from_slice(rest);
        Problem::at(&loc, msg, kind)
    };
    if id.trim().is_empty() {
        return Err(at(&[], "a question id must not be empty".into(), "string_too_short"));
    }
    let Value::Object(q) = q else { return Err(at(&[], "a question must be an object".into(), "dict_type")) };
    let instructions = q.get("instructions").map(text_of).unwrap_or_default();
    let criteria = q.get("criteria").filter(|c| !c.is_null());
    match q.get("type").and_then(Value::as_str) {
        Some("noul") => {
            let mut sides = Vec::new();
            match criteria {
                None => {}
                Some(Value::Object(c)) => {
                    for (k, v) in c {
                        match k.as_str() {
                            "true" | "false" => {
                                let t = text_of(v);
                                if !t.is_empty() {
                                    sides.push(format!("{}: {t}", if k == "true" { "yes" } else { "no" }));
                                }
                            }
                            _ => {
                                return Err(at(
                                    &["criteria", k],
                                    format!("a noul's criteria name only \"true\" and \"false\", not {k:?}"),
                                    "extra_forbidden",
                                ));
                            }
                        }
                    }
                }
                Some(_) => {
                    return Err(at(
                        &["criteria"],
                        "a noul's criteria must be null or an object with \"true\" and/or \"false\"".into(),
                        "dict_type",
                    ));
                }
            }
            let text = match (instructions.is_empty(), sides.is_empty()) {
                (false, true) => instructions,
                (false, false) => format!("{instructions} ({})", sides.join("; ")),
                (true, false) => format!("Does this hold? {}", sides.join("; ")),
                (true, true) => "Does this hold?".to_string(),
            };
            Ok(SoQuestion { id: id.to_string(), kind: Kind::Noul, text, descriptions: Vec::new() })
        }
        Some("choice") => {
            let Some(Value::Object(c)) = criteria else {
                return Err(at(
                    &["criteria"],
                    "a choice's criteria must be an object of option → description".into(),
                    "dict_type",
                ));
            };
            if c.len() < 2 || c.len() > MAX_CHOICE_OPTIONS {
                return Err(at(
                    &["criteria"],
                    format!("a choice needs 2 to {MAX_CHOICE_OPTIONS} options, got {}", c.len()),
                    if c.len() < 2 { "too_short" } else { "too_long" },
                ));
            }
            let mut options = Vec::with_capacity(c.len());
            let mut descriptions = Vec::new();
            for (name, d) in c {
                if name.trim().is_empty() {
                    return Err(at(&["criteria"], "an option name must not be empty".into(), "string_too_short"));
                }
                if name.chars().count() > MAX_OPTION_CHARS {
                    return Err(at(
                        &["criteria", name],
                        format!("an option name may have at most {MAX_OPTION_CHARS} characters"),
                        "string_too_long",
                    ));
                }
                let d = text_of(d);
                if !d.is_empty() {
                    descriptions.push((name.clone(), d));
                }
                options.push(name.clone());
            }
            let text = if instructions.is_empty() { "Which option fits best?".to_string() } else { instructions };
            Ok(SoQuestion { id: id.to_string(), kind: Kind::Choice(options), text, descriptions })
        }
        Some("score") => {
            let Some(Value::Array(levels)) = criteria else {
                return Err(at(
                    &["criteria"],
                    "a score's criteria must be a list of level descriptions".into(),
                    "list_type",
                ));
            };
            if levels.len() < MIN_LEVELS || levels.len() > MAX_LEVELS {
                return Err(at(
                    &["criteria"],
                    format!("a score needs {MIN_LEVELS} to {MAX_LEVELS} levels, got {}", levels.len()),
                    if levels.len() < MIN_LEVELS { "too_short" } else { "too_long" },
                ));
            }
            let mut texts = Vec::with_capacity(levels.len());
            for (i, l) in levels.iter().enumerate() {
                let t = text_of(l);
                if t.is_empty() {
                    return Err(at(&["criteria", &i.to_string()], "a level must have a description".into(), "missing"));
                }
                texts.push(t);
            }
            let names = level_names(&texts);
            let descriptions = names.iter().cloned().zip(texts).filter(|(n, t)| n != t).collect();
            let text = if instructions.is_empty() { "Which level fits best?".to_string() } else { instructions };
            Ok(SoQuestion {
                id: id.to_string(),
                kind: Kind::Score { levels: levels.clone(), names },
                text,
                descriptions,
            })
        }
        Some(other) => Err(at(
            &["type"],
            format!("unknown question type {other:?}; the types are noul, choice and score"),
            "literal_error",
        )),
        None => Err(at(&["type"], "a question needs a type: noul, choice or score".into(), "missing")),
    }
}

/// The names a score's levels go to the engine under: the levels' own text when every one is
/// distinct and short enough to be an option, else `level 0` .. `level n-1` (their descriptions
/// then travel beside them, as a choice's do).
fn level_names(texts: &[String]) -> Vec<String> {
    let usable =
        texts.iter().enumerate().all(|(i, t)| t.chars().count() <= MAX_OPTION_CHARS && !texts[..i].contains(t));
    if usable { texts.to_vec() } else { (0..texts.len()).map(|i| format!("level {i}")).collect() }
}

/// Structured text (instructions, descriptions, levels) as the one line an engine reads: a string
/// as it is; an object's fields as `key: value`; an array's items; each joined by `; `.
pub fn text_of(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.trim().to_string(),
        Value::Bool(_) | Value::Number(_) => v.to_string(),
        Value::Array(items) => items.iter().map(text_of).filter(|t| !t.is_empty()).collect::<Vec<_>>().join("; "),
        Value::Object(m) => m
            .iter()
            .filter_map(|(k, v)| {
                let t = text_of(v);
                (!t.is_empty()).then(|| format!("{k}: {t}"))
            })
            .collect::<Vec<_>>()
            .join("; "),
    }
}

impl SoRequest {
    /// What the gateway is asked: every question in one engine request, each calibrated by its
    /// text, as `system1_decide` keys a question. Option descriptions go in the context as a map
    /// per question keyed by its options, the convention engines already read them by (the skill
    /// picker's); a state that is not an object is then kept under `state`.
    pub fn ask(&self) -> Ask {
        let questions: Vec<Query> = self
            .questions
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let question = Question {
                    // The engine's id is the position, never the client's id: renaming a question
                    // must not change its answer (a key could otherwise match a trained head by name).
                    key: format!("q{}", i + 1),
                    text: q.text.clone(),
                    options: q.engine_options(),
                };
                Query::new(question, q.text.trim())
            })
            .collect();
        let maps: Vec<(String, Value)> = self
            .questions
            .iter()
            .enumerate()
            .filter(|(_, q)| !q.descriptions.is_empty())
            .map(|(i, q)| {
                let m: Map<String, Value> =
                    q.descriptions.iter().map(|(o, d)| (o.clone(), Value::String(d.clone()))).collect();
                (format!("x_options_q{}", i + 1), Value::Object(m))
            })
            .collect();
        let context = if maps.is_empty() {
            self.state.clone()
        } else {
            let mut obj = match &self.state {
                Value::Object(o) => o.clone(),
                other => {
                    let mut o = Map::new();
                    o.insert("state".into(), other.clone());
                    o
                }
            };
            obj.extend(maps);
            Value::Object(obj)
        };
        Ask::new(Some(context), questions, Purpose::Use)
    }

    /// A token count for `usage`: the engines do not report one through the gateway, so it is
    /// estimated as one token per four characters of what the engine reads (state, questions and
    /// options), and one output token per question.
    pub fn usage(&self) -> (u64, u64) {
        let state = match &self.state {
            Value::String(s) => s.chars().count(),
            other => other.to_string().chars().count(),
        };
        let questions: usize = self
            .questions
            .iter()
            .map(|q| {
                q.text.chars().count()
                    + q.engine_options().iter().map(|o| o.chars().count() + 1).sum::<usize>()
                    + q.descriptions.iter().map(|(_, d)| d.chars().count()).sum::<usize>()
            })
            .sum();
        (((state + questions) as u64).div_ceil(4), self.questions.len() as u64)
    }
}

impl SoQuestion {
    fn engine_options(&self) -> Vec<String> {
        match &self.kind {
            Kind::Noul => vec!["yes".to_string(), "no".to_string()],
            Kind::Choice(options) => options.clone(),
            Kind::Score { names, .. } => names.clone(),
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self.kind {
            Kind::Noul => "noul",
            Kind::Choice(_) => "choice",
            Kind::Score { .. } => "score",
        }
    }

    /// The API's answer to this question from the gateway's: `Err` with the engine's reason when
    /// it did not answer (never a made-up answer).
    pub fn answer(&self, answer: &Answer) -> Result<Value, String> {
        let (decision, confidence, probabilities) = match answer {
            Answer::Decided { decision, confidence, probabilities, .. } => (decision, *confidence, probabilities),
            Answer::Abstained { rationale, .. } => {
                let why = rationale.as_deref().unwrap_or("no reason given");
                return Err(format!("the engine abstained: {why}"));
            }
            Answer::Passed { reason, .. } => return Err(format!("no engine in the chain answers it: {reason}")),
        };
        let options = self.engine_options();
        let (values, estimated) = distribution(&options, decision, confidence, probabilities.as_ref());
        let mut out = Map::new();
        out.insert("type".into(), json!(self.type_name()));
        match &self.kind {
            Kind::Noul => {
                out.insert("noul".into(), json!(values[0]));
            }
            Kind::Choice(names) => {
                let best = argmax(&values, options.iter().position(|o| o == decision));
                out.insert("choice".into(), json!(names[best]));
                let probs: Map<String, Value> = names.iter().zip(&values).map(|(n, p)| (n.clone(), json!(p))).collect();
                out.insert("probabilities".into(), Value::Object(probs));
                out.insert("confidence".into(), json!(round4(choice_confidence(&values))));
            }
            Kind::Score { levels, .. } => {
                let score: f64 = values.iter().enumerate().map(|(i, p)| i as f64 * p).sum();
                out.insert("score".into(), json!(round4(score)));
                let legend: Map<String, Value> = levels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| (i.to_string(), if l.is_string() { l.clone() } else { json!(text_of(l)) }))
                    .collect();
                out.insert("legend".into(), Value::Object(legend));
                let probs: Map<String, Value> =
                    values.iter().enumerate().map(|(i, p)| (i.to_string(), json!(p))).collect();
                out.insert("probabilities".into(), Value::Object(probs));
                let mode = argmax(&values, options.iter().position(|o| o == decision));
                out.insert("confidence".into(), json!(round4(score_confidence(&values, mode))));
            }
        }
        if estimated {
            out.insert("x_probabilities_estimated".into(), json!(true));
        }
        Ok(Value::Object(out))
    }
}

fn round4(x: f64) -> f64 {
    text::round(x, 4)
}

/// Each engine option's probability, rounded to 4 decimals, and whether they were estimated: an
/// engine that reports only its pick and confidence gets the rest spread evenly over the others.
pub(super) fn distribution(
    options: &[String],
    decision: &str,
    confidence: f64,
    probabilities: Option<&crate::providers::Probabilities>,
) -> (Vec<f64>, bool) {
    if let Some(p) = probabilities
        && options.iter().all(|o| p.get(o).is_some_and(f64::is_finite))
    {
        return (options.iter().map(|o| round4(p.get(o).unwrap_or(0.0).clamp(0.0, 1.0))).collect(), false);
    }
    let n = options.len().max(2) as f64;
    let rest = ((1.0 - confidence) / (n - 1.0)).max(0.0);
    let values = options.iter().map(|o| round4(if o == decision { confidence } else { rest })).collect();
    (values, true)
}

/// The index of the largest value; the engine's own pick among equals.
fn argmax(values: &[f64], pick: Option<usize>) -> usize {
    let top = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match pick {
        Some(i) if values.get(i) == Some(&top) => i,
        _ => values.iter().position(|v| *v == top).unwrap_or(0),
    }
}

/// The API's reference confidence for a choice of n options: (p_max − 1/n) / (1 − 1/n).
pub fn choice_confidence(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    if n <= 1.0 {
        return 1.0;
    }
    let top = values.iter().copied().fold(0.0, f64::max);
    ((top - 1.0 / n) / (1.0 - 1.0 / n)).clamp(0.0, 1.0)
}

/// The API's reference confidence for a score: 1 − spread / spread of the uniform distribution,
/// where spread = Σ p_i·|i − mode|.
pub fn score_confidence(values: &[f64], mode: usize) -> f64 {
    let n = values.len();
    if n <= 1 {
        return 1.0;
    }
    let centre = (n as f64 - 1.0) / 2.0;
    let uniform: f64 = (0..n).map(|i| (i as f64 - centre).abs()).sum::<f64>() / n as f64;
    let spread: f64 = values.iter().enumerate().map(|(i, p)| p * (i as f64 - mode as f64).abs()).sum();
    (1.0 - spread / uniform).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::Probabilities;

    fn refused(body: Value) -> Vec<Problem> {
        match validate(&body) {
            Err(Refusal::Invalid(p)) => p,
            other => panic!("refused: {other:?}"),
        }
    }

    fn decided(options: &[&str], probs: &[f64], decision: &str) -> Answer {
        let options: Vec<String> = options.iter().map(|s| s.to_string()).collect();
        Answer::Decided {
            decision: decision.into(),
            confidence: probs.iter().copied().fold(0.0, f64::max),
            probabilities: Some(Probabilities::of(&options, probs)),
            calibrated: false,
            rationale: None,
            stability: None,
        }
    }

    #[test]
    fn every_question_type_and_state_shape_is_read() {
        let body = json!({"model": "jev-latest", "state": ["a", "b"], "seed": 7, "questions": {
            "🎯": {"type": "noul", "instructions": {"task": "Refund?"}, "criteria": {"true": ["refund", "chargeback"]}},
            "c": {"type": "choice", "instructions": "Team?", "criteria": {"Billing": null, "Tech": {"owns": ["bugs"]}}},
            "s": {"type": "score", "criteria": [{"label": "Calm"}, "Angry"]}}});
        let r = validate(&body).expect("valid");
        assert_eq!(r.questions.len(), 3);
        assert_eq!(r.questions[0].text, "task: Refund? (yes: refund; chargeback)");
        assert_eq!(r.questions[1].kind, Kind::Choice(vec!["Billing".into(), "Tech".into()]));
        assert_eq!(r.questions[1].descriptions, [("Tech".to_string(), "owns: bugs".to_string())]);
        let er = r.ask();
        assert_eq!(er.questions[2].question.options, ["label: Calm", "Angry"]);
        assert_eq!(er.questions[0].question.key, "q1", "the engine never sees the client's id");
        assert_eq!(er.questions[0].calibration, "task: Refund? (yes: refund; chargeback)");
        let ctx = er.context.expect("context");
        assert_eq!(ctx["state"], json!(["a", "b"]), "a non-object state is kept whole: {ctx}");
        assert_eq!(ctx["x_options_q2"], json!({"Tech": "owns: bugs"}));
        for state in [json!("text"), json!({"k": 1})] {
            let r = validate(&json!({"state": state, "questions": {"q": {"type": "noul"}}})).expect("valid");
            assert_eq!(r.ask().context, Some(state), "no descriptions: the state as given");
        }
    }

    #[test]
    fn invalid_requests_are_refused_with_where_and_why() {
        assert_eq!(refused(json!([]))[0].loc, [json!("body")]);
        let p = refused(json!({"questions": {}}));
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(p[0].loc, [json!("body"), json!("state")]);
        assert_eq!(p[1].kind, "too_short");
        let q = |q: Value| refused(json!({"state": "x", "questions": {"q": q}}))[0].clone();
        assert_eq!(q(json!({"instructions": "x"})).loc, [json!("body"), json!("questions"), json!("q"), json!("type")]);
        assert!(q(json!({"type": "boolean"})).msg.contains("boolean"));
        assert!(q(json!({"type": "choice", "criteria": {}})).msg.contains("2 to"));
        assert!(q(json!({"type": "choice", "criteria": {"a": null}})).msg.contains("got 1"));
        assert!(q(json!({"type": "score", "criteria": {"0": "a", "1": "b"}})).msg.contains("list"));
        assert!(q(json!({"type": "score", "criteria": ["a", null]})).msg.contains("description"));
        let eleven: Vec<String> = (0..11).map(|i| format!("L{i}")).collect();
        assert!(q(json!({"type": "score", "criteria": eleven})).msg.contains("2 to 10"));
        assert!(q(json!({"type": "noul", "criteria": {"maybe": "x"}})).msg.contains("maybe"));
        assert_eq!(refused(json!({"state": 3, "questions": {"q": {"type": "noul"}}}))[0].kind, "state_type");
        assert_eq!(refused(json!({"state": "x", "questions": {"": {"type": "noul"}}}))[0].kind, "string_too_short");
        let many: Map<String, Value> = (0..300).map(|i| (format!("o{i}"), Value::Null)).collect();
        assert!(validate(&json!({"state": "x", "questions": {"q": {"type": "choice", "criteria": many}}})).is_ok());
        assert_eq!(
            validate(&json!({"model": "gpt", "state": "x", "questions": {"q": {"type": "noul"}}})),
            Err(Refusal::UnknownModel("gpt".into()))
        );
    }

    #[test]
    fn answers_carry_the_reference_confidence_and_the_expectation() {
        let r = validate(&json!({"state": "x", "questions": {
            "n": {"type": "noul"},
            "c": {"type": "choice", "criteria": {"A": null, "B": null, "C": null, "D": null}},
            "s": {"type": "score", "criteria": ["minor", "moderate", "major", "critical"]}}}))
        .expect("valid");
        let n = r.questions[0].answer(&decided(&["yes", "no"], &[0.2, 0.8], "no")).expect("answered");
        assert_eq!(n, json!({"type": "noul", "noul": 0.2}));
        let c = r.questions[1].answer(&decided(&["A", "B", "C", "D"], &[0.1, 0.7, 0.1, 0.1], "B")).expect("answered");
        assert_eq!(c["choice"], "B");
        // (0.7 - 1/4) / (1 - 1/4) = 0.6
        assert_eq!(c["confidence"], json!(0.6));
        let s = r.questions[2]
            .answer(&decided(&["minor", "moderate", "major", "critical"], &[0.04, 0.76, 0.17, 0.03], "moderate"))
            .expect("answered");
        assert_eq!(s["score"], json!(1.19));
        assert_eq!(s["legend"], json!({"0": "minor", "1": "moderate", "2": "major", "3": "critical"}));
        // spread = 0.04 + 0.17 + 0.06 = 0.27; uniform spread of 4 levels = 1.0
        assert_eq!(s["confidence"], json!(0.73));
        assert_eq!(s["probabilities"], json!({"0": 0.04, "1": 0.76, "2": 0.17, "3": 0.03}));
        let abstained = Answer::Abstained { rationale: Some("no head".into()), stability: None };
        assert_eq!(r.questions[0].answer(&abstained), Err("the engine abstained: no head".to_string()));
        let passed =
            Answer::Passed { reason: "local: no head".into(), causes: vec![crate::providers::PassCause::NoHead] };
        assert_eq!(
            r.questions[0].answer(&passed),
            Err("no engine in the chain answers it: local: no head".to_string())
        );
    }

    #[test]
    fn a_pick_without_probabilities_spreads_the_rest_and_says_so() {
        let r = validate(&json!({"state": "x", "questions": {"c": {"type": "choice", "criteria": {"A": null, "B": null, "C": null}}}}))
            .expect("valid");
        let a = Answer::Decided {
            decision: "C".into(),
            confidence: 0.8,
            probabilities: None,
            calibrated: false,
            rationale: None,
            stability: None,
        };
        let c = r.questions[0].answer(&a).expect("answered");
        assert_eq!(c["probabilities"], json!({"A": 0.1, "B": 0.1, "C": 0.8}));
        assert_eq!((c["choice"].clone(), c["x_probabilities_estimated"].clone()), (json!("C"), json!(true)));
    }
}
