//! OpenAI's Decisions API on the wire (`POST /v1/decisions`), written once for both sides: the
//! `decisions` provider writes requests and reads answers with it, and `system1 serve` reads
//! requests and writes answers with it, so the two cannot drift apart. The shapes follow the
//! types of the official `openai` Python SDK 3.51.0 (docs/engines.md#openai-decisions-api):
//!
//! - request: `{model, input, questions: [...]}`; `input` a string or an ordered list of messages,
//!   tool calls and their outputs; each question `{type: "predicate" | "choice" | "score",
//!   instructions, name?}`, a choice with `choices: [{value, description?}]` (2 to 255, unique; a
//!   value is a string or a boolean, and `"true"` and `true` are two values), a score with
//!   `levels: [{label, description?}]`;
//! - answer: `{model, answers: [...], usage}`, one answer per question in question order:
//!   `{type: "predicate", name?, probability}`, `{type: "choice", name?, choice, probabilities:
//!   [{value, probability}], confidence}`, `{type: "score", name?, score, probabilities: [{label,
//!   value, probability}], confidence}`, or `{type: "refusal", name?}` for a question the model
//!   declines (the others still answered).
//!
//! Reading is strict on both sides: a request that breaks the API's rules is refused with where
//! and why; an answer that breaks them (a probability that is not a finite number in [0, 1],
//! probabilities that do not sum to 1, a choice that is not an option or not the most probable,
//! an answer to a question nobody asked) is refused whole, never half-used.

use serde_json::{Map, Value, json};

use super::super::wire::sum_tolerance;

/// The API's limits, as the SDK documents them.
pub const MAX_QUESTIONS: usize = 400;
pub const MIN_CHOICES: usize = 2;
pub const MAX_CHOICES: usize = 255;
pub const MIN_LEVELS: usize = 2;
pub const MAX_LEVELS: usize = 255;

/// A choice's value: text or a boolean, two different things even with the same spelling.
#[derive(Debug, Clone, PartialEq)]
pub enum ChoiceValue {
    Text(String),
    Flag(bool),
}

impl ChoiceValue {
    fn from_json(v: &Value) -> Option<Self> {
        match v {
            Value::String(s) => Some(ChoiceValue::Text(s.clone())),
            Value::Bool(b) => Some(ChoiceValue::Flag(*b)),
            _ => None,
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            ChoiceValue::Text(s) => json!(s),
            ChoiceValue::Flag(b) => json!(b),
        }
    }
}

impl std::fmt::Display for ChoiceValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChoiceValue::Text(s) => write!(f, "{s:?}"),
            ChoiceValue::Flag(b) => write!(f, "{b}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub value: ChoiceValue,
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    pub label: String,
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// How likely the statement in the instructions holds.
    Predicate,
    Choice(Vec<Choice>),
    /// Ordered levels; a level's value is its index.
    Score(Vec<Level>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub name: Option<String>,
    /// The instructions as one text (parts joined).
    pub instructions: String,
    pub kind: Kind,
}

impl Question {
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            Kind::Predicate => "predicate",
            Kind::Choice(_) => "choice",
            Kind::Score(_) => "score",
        }
    }

    /// The option names an engine reads for this question, one per choice or level in order: `yes`
    /// and `no` for a predicate; a choice's text values as they are and a boolean as `true` /
    /// `false` (`true (boolean)` when a text value is spelled `true` too); a score's labels. Both
    /// sides of the wire name the options the same way through this.
    pub fn engine_options(&self) -> Vec<String> {
        match &self.kind {
            Kind::Predicate => vec!["yes".into(), "no".into()],
            Kind::Choice(choices) => {
                let texts: Vec<&str> = choices
                    .iter()
                    .filter_map(|c| match &c.value {
                        ChoiceValue::Text(s) => Some(s.as_str()),
                        ChoiceValue::Flag(_) => None,
                    })
                    .collect();
                choices
                    .iter()
                    .map(|c| match &c.value {
                        ChoiceValue::Text(s) => s.clone(),
                        ChoiceValue::Flag(b) if texts.contains(&b.to_string().as_str()) => format!("{b} (boolean)"),
                        ChoiceValue::Flag(b) => b.to_string(),
                    })
                    .collect()
            }
            Kind::Score(levels) => levels.iter().map(|l| l.label.clone()).collect(),
        }
    }

    /// Each option's description, by engine option name, for the options that have one.
    pub fn descriptions(&self) -> Vec<(String, String)> {
        let described: Vec<Option<&String>> = match &self.kind {
            Kind::Predicate => Vec::new(),
            Kind::Choice(c) => c.iter().map(|c| c.description.as_ref()).collect(),
            Kind::Score(l) => l.iter().map(|l| l.description.as_ref()).collect(),
        };
        self.engine_options()
            .into_iter()
            .zip(described)
            .filter_map(|(o, d)| d.filter(|d| !d.trim().is_empty()).map(|d| (o, d.clone())))
            .collect()
    }

    fn to_json(&self) -> Value {
        let mut q = Map::new();
        q.insert("type".into(), json!(self.type_name()));
        q.insert("instructions".into(), json!(self.instructions));
        if let Some(n) = &self.name {
            q.insert("name".into(), json!(n));
        }
        let described = |key: &str, v: Value, d: &Option<String>| {
            let mut m = Map::new();
            m.insert(key.into(), v);
            if let Some(d) = d {
                m.insert("description".into(), json!(d));
            }
            Value::Object(m)
        };
        match &self.kind {
            Kind::Predicate => {}
            Kind::Choice(choices) => {
                let list = choices.iter().map(|c| described("value", c.value.to_json(), &c.description)).collect();
                q.insert("choices".into(), Value::Array(list));
            }
            Kind::Score(levels) => {
                let list = levels.iter().map(|l| described("label", json!(l.label), &l.description)).collect();
                q.insert("levels".into(), Value::Array(list));
            }
        }
        Value::Object(q)
    }
}

/// What every question is asked about.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    Text(String),
    /// Messages, tool calls and outputs, in order, as sent.
    Items(Vec<Value>),
}

impl Input {
    /// The input as the text an engine reads: a string as it is; items one per line, a message as
    /// `role: text`, a tool call as `call name(arguments)`, an output as `output: text`.
    pub fn text(&self) -> String {
        match self {
            Input::Text(s) => s.clone(),
            Input::Items(items) => items.iter().map(item_text).filter(|t| !t.is_empty()).collect::<Vec<_>>().join("\n"),
        }
    }
}

fn item_text(item: &Value) -> String {
    let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
    match s("type") {
        "function_call" | "custom_tool_call" => {
            let args = if s("type") == "function_call" { s("arguments") } else { s("input") };
            format!("call {}({args})", s("name"))
        }
        "function_call_output" | "custom_tool_call_output" => {
            format!("output: {}", item.get("output").map(parts_text).unwrap_or_default())
        }
        _ => {
            let text = item.get("content").map(parts_text).unwrap_or_default();
            if s("role").is_empty() { text } else { format!("{}: {text}", s("role")) }
        }
    }
}

/// Text or a list of parts as text: `input_text` / `output_text` parts' text, a refusal's words, an
/// `input_json` part's data as compact JSON; other parts (images) are not read.
pub fn parts_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.trim().to_string(),
        Value::Array(parts) => parts.iter().map(parts_text).filter(|t| !t.is_empty()).collect::<Vec<_>>().join(" "),
        Value::Object(p) => match p.get("type").and_then(Value::as_str) {
            Some("input_json") => p.get("data").map(Value::to_string).unwrap_or_default(),
            _ => ["text", "refusal"]
                .iter()
                .find_map(|k| p.get(*k).and_then(Value::as_str))
                .map(|t| t.trim().to_string())
                .unwrap_or_default(),
        },
        _ => String::new(),
    }
}

/// A request to `POST /v1/decisions`.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub model: String,
    pub input: Input,
    pub questions: Vec<Question>,
}

/// One way a request breaks the API's rules: where (`questions[1].choices`, as the API's errors
/// name a parameter) and what.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub param: String,
    pub message: String,
}

fn problem(param: impl Into<String>, message: impl Into<String>) -> Problem {
    Problem { param: param.into(), message: message.into() }
}

impl Request {
    pub fn to_json(&self) -> Value {
        let input = match &self.input {
            Input::Text(s) => json!(s),
            Input::Items(items) => Value::Array(items.clone()),
        };
        let questions: Vec<Value> = self.questions.iter().map(Question::to_json).collect();
        json!({"model": self.model, "input": input, "questions": questions})
    }

    /// Reads a request body, held to the API's rules; every problem found, each with its place.
    /// Unknown top-level fields (`prompt_cache_key`, `safety_identifier`, ...) are left aside.
    pub fn from_json(body: &Value) -> Result<Request, Vec<Problem>> {
        let Value::Object(obj) = body else {
            return Err(vec![problem("", "the body must be a JSON object")]);
        };
        let mut problems = Vec::new();
        let model = match obj.get("model") {
            Some(Value::String(m)) if !m.trim().is_empty() => m.clone(),
            Some(Value::String(_)) | None => {
                problems.push(problem("model", "model is required"));
                String::new()
            }
            Some(_) => {
                problems.push(problem("model", "model must be a string"));
                String::new()
            }
        };
        let input = match obj.get("input") {
            Some(Value::String(s)) => Input::Text(s.clone()),
            Some(Value::Array(items)) if items.iter().all(Value::is_object) => Input::Items(items.clone()),
            Some(Value::Array(_)) => {
                problems
                    .push(problem("input", "each item of input must be an object (a message, a call or an output)"));
                Input::Text(String::new())
            }
            None => {
                problems.push(problem("input", "input is required"));
                Input::Text(String::new())
            }
            Some(_) => {
                problems.push(problem("input", "input must be a string or a list of items"));
                Input::Text(String::new())
            }
        };
        let mut questions = Vec::new();
        match obj.get("questions") {
            Some(Value::Array(qs)) if qs.is_empty() => {
                problems.push(problem("questions", "questions must hold at least one question"))
            }
            Some(Value::Array(qs)) if qs.len() > MAX_QUESTIONS => problems.push(problem(
                "questions",
                format!("questions holds {}; at most {MAX_QUESTIONS} are allowed", qs.len()),
            )),
            Some(Value::Array(qs)) => {
                for (i, q) in qs.iter().enumerate() {
                    match question(&format!("questions[{i}]"), q) {
                        Ok(q) => questions.push(q),
                        Err(p) => problems.push(p),
                    }
                }
                let mut seen: Vec<&str> = Vec::new();
                for (i, n) in questions.iter().enumerate().filter_map(|(i, q)| Some((i, q.name.as_deref()?))) {
                    if seen.contains(&n) {
                        problems.push(problem(format!("questions[{i}].name"), format!("the name {n:?} is used twice")));
                    }
                    seen.push(n);
                }
            }
            None => problems.push(problem("questions", "questions is required")),
            Some(_) => problems.push(problem("questions", "questions must be a list")),
        }
        if problems.is_empty() { Ok(Request { model, input, questions }) } else { Err(problems) }
    }
}

fn question(at: &str, q: &Value) -> Result<Question, Problem> {
    let Value::Object(q) = q else { return Err(problem(at, "a question must be an object")) };
    let name = match q.get("name") {
        None | Some(Value::Null) => None,
        Some(Value::String(n)) => Some(n.clone()),
        Some(_) => return Err(problem(format!("{at}.name"), "name must be a string")),
    };
    let instructions = match q.get("instructions") {
        Some(v @ (Value::String(_) | Value::Array(_))) => parts_text(v),
        None => return Err(problem(format!("{at}.instructions"), "instructions are required")),
        Some(_) => return Err(problem(format!("{at}.instructions"), "instructions must be text or a list of parts")),
    };
    if instructions.is_empty() {
        return Err(problem(format!("{at}.instructions"), "instructions must hold some text"));
    }
    let described = |v: &Map<String, Value>, at: &str| match v.get("description") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(d)) => Ok(Some(d.clone())),
        Some(_) => Err(problem(format!("{at}.description"), "a description must be a string")),
    };
    let kind = match q.get("type").and_then(Value::as_str) {
        Some("predicate") => Kind::Predicate,
        Some("choice") => {
            let Some(Value::Array(list)) = q.get("choices") else {
                return Err(problem(format!("{at}.choices"), "a choice question needs a list of choices"));
            };
            if list.len() < MIN_CHOICES || list.len() > MAX_CHOICES {
                let msg = format!("a choice question takes {MIN_CHOICES} to {MAX_CHOICES} choices, got {}", list.len());
                return Err(problem(format!("{at}.choices"), msg));
            }
            let mut choices: Vec<Choice> = Vec::with_capacity(list.len());
            for (j, c) in list.iter().enumerate() {
                let at = format!("{at}.choices[{j}]");
                let Value::Object(c) = c else { return Err(problem(at, "a choice must be an object")) };
                let Some(value) = c.get("value").and_then(ChoiceValue::from_json) else {
                    return Err(problem(format!("{at}.value"), "a choice's value must be a string or a boolean"));
                };
                if matches!(&value, ChoiceValue::Text(s) if s.trim().is_empty()) {
                    return Err(problem(format!("{at}.value"), "a choice's value must not be empty"));
                }
                if choices.iter().any(|o| o.value == value) {
                    return Err(problem(format!("{at}.value"), format!("the choice {value} is given twice")));
                }
                choices.push(Choice { value, description: described(c, &at)? });
            }
            Kind::Choice(choices)
        }
        Some("score") => {
            let Some(Value::Array(list)) = q.get("levels") else {
                return Err(problem(format!("{at}.levels"), "a score question needs a list of levels"));
            };
            if list.len() < MIN_LEVELS || list.len() > MAX_LEVELS {
                let msg = format!("a score question takes {MIN_LEVELS} to {MAX_LEVELS} levels, got {}", list.len());
                return Err(problem(format!("{at}.levels"), msg));
            }
            let mut levels: Vec<Level> = Vec::with_capacity(list.len());
            for (j, l) in list.iter().enumerate() {
                let at = format!("{at}.levels[{j}]");
                let Value::Object(l) = l else { return Err(problem(at, "a level must be an object")) };
                let Some(label) = l.get("label").and_then(Value::as_str).filter(|s| !s.trim().is_empty()) else {
                    return Err(problem(format!("{at}.label"), "a level needs a label"));
                };
                if levels.iter().any(|o| o.label == label) {
                    return Err(problem(format!("{at}.label"), format!("the level {label:?} is given twice")));
                }
                levels.push(Level { label: label.to_string(), description: described(l, &at)? });
            }
            Kind::Score(levels)
        }
        Some(other) => {
            let msg = format!("unknown question type {other:?}; the types are predicate, choice and score");
            return Err(problem(format!("{at}.type"), msg));
        }
        None => return Err(problem(format!("{at}.type"), "a question needs a type: predicate, choice or score")),
    };
    Ok(Question { name, instructions, kind })
}

/// One answer, as the API has it.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The probability that the statement holds.
    Predicate { name: Option<String>, probability: f64 },
    /// `probabilities` in the question's choice order.
    Choice { name: Option<String>, choice: ChoiceValue, probabilities: Vec<f64>, confidence: f64 },
    /// `probabilities` in level order; `score` is Σ index · probability.
    Score { name: Option<String>, score: f64, probabilities: Vec<f64>, confidence: f64 },
    /// The model declines this question.
    Refusal { name: Option<String> },
}

impl Answer {
    /// The answer to `q` from each option's probability (in [`Question::engine_options`] order),
    /// the pick being the most probable (the engine's pick among equals). `confidence` is the
    /// pick's probability.
    pub fn from_probabilities(q: &Question, values: &[f64], pick: Option<usize>) -> Answer {
        let name = q.name.clone();
        let top = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let best = match pick {
            Some(i) if values.get(i) == Some(&top) => i,
            _ => values.iter().position(|v| *v == top).unwrap_or(0),
        };
        match &q.kind {
            Kind::Predicate => Answer::Predicate { name, probability: values.first().copied().unwrap_or(0.5) },
            Kind::Choice(choices) => Answer::Choice {
                name,
                choice: choices[best.min(choices.len() - 1)].value.clone(),
                probabilities: values.to_vec(),
                confidence: top,
            },
            Kind::Score(_) => Answer::Score {
                name,
                score: crate::text::round(values.iter().enumerate().map(|(i, p)| i as f64 * p).sum(), 4),
                probabilities: values.to_vec(),
                confidence: top,
            },
        }
    }

    pub fn refusal(q: &Question) -> Answer {
        Answer::Refusal { name: q.name.clone() }
    }

    fn to_json(&self, q: &Question) -> Value {
        match self {
            Answer::Predicate { name, probability } => {
                json!({"type": "predicate", "name": name, "probability": probability})
            }
            Answer::Choice { name, choice, probabilities, confidence } => {
                let Kind::Choice(choices) = &q.kind else { return json!({"type": "refusal", "name": name}) };
                let probs: Vec<Value> = choices
                    .iter()
                    .zip(probabilities)
                    .map(|(c, p)| json!({"value": c.value.to_json(), "probability": p}))
                    .collect();
                json!({"type": "choice", "name": name, "choice": choice.to_json(), "probabilities": probs,
                       "confidence": confidence})
            }
            Answer::Score { name, score, probabilities, confidence } => {
                let Kind::Score(levels) = &q.kind else { return json!({"type": "refusal", "name": name}) };
                let probs: Vec<Value> = levels
                    .iter()
                    .zip(probabilities)
                    .enumerate()
                    .map(|(i, (l, p))| json!({"label": l.label, "value": i, "probability": p}))
                    .collect();
                json!({"type": "score", "name": name, "score": score, "probabilities": probs, "confidence": confidence})
            }
            Answer::Refusal { name } => json!({"type": "refusal", "name": name}),
        }
    }
}

/// A whole reply: the answers in question order, and the token counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub model: String,
    pub answers: Vec<Answer>,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Response {
    /// The reply body for `questions` (the request's, in its order).
    pub fn to_json(&self, questions: &[Question]) -> Value {
        let answers: Vec<Value> = self.answers.iter().zip(questions).map(|(a, q)| a.to_json(q)).collect();
        json!({
            "model": self.model,
            "answers": answers,
            "usage": {
                "input_tokens": self.input_tokens,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": self.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": self.input_tokens + self.output_tokens,
            },
        })
    }
}

/// What a reply says about one question asked.
#[derive(Debug, Clone, PartialEq)]
pub enum Got {
    Answer(Answer),
    /// The reply has no answer for it.
    Missing,
}

/// Reads a reply to `questions` (as they were sent): one entry per question, in order. Answers are
/// matched by order and, where they carry one, by name: a named answer belongs to the question of
/// that name, which must come after the one answered before it; an unnamed one to the next
/// question. Any answer that breaks the API's rules makes the whole reply unusable (`Err`, what is
/// wrong); a question left without an answer is `Missing`.
pub fn read_reply(reply: &Value, questions: &[Question]) -> Result<Vec<Got>, String> {
    let Some(answers) = reply.get("answers").and_then(Value::as_array) else {
        return Err("the reply has no `answers` list".into());
    };
    if answers.len() > questions.len() {
        return Err(format!("the reply has {} answers to {} questions", answers.len(), questions.len()));
    }
    let mut out = vec![Got::Missing; questions.len()];
    let mut next = 0;
    for (i, a) in answers.iter().enumerate() {
        let at = match a.get("name") {
            None | Some(Value::Null) => next,
            Some(Value::String(n)) => {
                match (next..questions.len()).find(|j| questions[*j].name.as_deref() == Some(n)) {
                    Some(j) => j,
                    None => {
                        return Err(format!(
                            "answer {i} names {n:?}, which was not asked there (answers come in question order)"
                        ));
                    }
                }
            }
            Some(other) => return Err(format!("answer {i} has the name {other}, not a string")),
        };
        let Some(q) = questions.get(at) else {
            return Err(format!("answer {i} is one more than the questions asked"));
        };
        out[at] =
            Got::Answer(read_answer(a, q).map_err(|e| format!("the answer to question {at} ({}) {e}", q.type_name()))?);
        next = at + 1;
    }
    Ok(out)
}

fn finite_probability(v: Option<&Value>, what: &str) -> Result<f64, String> {
    match v {
        None => Err(format!("has no {what}")),
        Some(v) => match v.as_f64().filter(|x| x.is_finite()) {
            Some(p) if (0.0..=1.0).contains(&p) => Ok(p),
            Some(p) => Err(format!("has {what} {p}, outside [0, 1]")),
            None => Err(format!("has {what} {v}, not a number")),
        },
    }
}

fn read_answer(a: &Value, q: &Question) -> Result<Answer, String> {
    let name = a.get("name").and_then(Value::as_str).map(String::from);
    let said = a.get("type").and_then(Value::as_str).unwrap_or("");
    if said == "refusal" {
        return Ok(Answer::Refusal { name });
    }
    if said != q.type_name() {
        return Err(format!("says type {said:?}"));
    }
    // The probability of each option, in the question's order, each given exactly once.
    let spread = |keyed: &dyn Fn(&Value) -> Option<usize>, n: usize| -> Result<Vec<f64>, String> {
        let Some(list) = a.get("probabilities").and_then(Value::as_array) else {
            return Err("has no probabilities list".into());
        };
        let mut got: Vec<Option<f64>> = vec![None; n];
        for p in list {
            let Some(at) = keyed(p) else { return Err(format!("gives a probability for {p}, which is not an option")) };
            let x = finite_probability(p.get("probability"), "a probability")?;
            if got[at].replace(x).is_some() {
                return Err(format!("gives option {at} two probabilities"));
            }
        }
        let values: Vec<f64> = got.iter().flatten().copied().collect();
        if values.len() != n {
            return Err(format!("gives probabilities for {} of {n} options", values.len()));
        }
        let sum: f64 = values.iter().sum();
        if (sum - 1.0).abs() > sum_tolerance(&values) {
            return Err(format!("has probabilities that sum to {sum:.4}, not 1"));
        }
        Ok(values)
    };
    let most_probable = |values: &[f64], at: usize| {
        let top = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        values[at] >= top - 1e-6
    };
    let confidence = || finite_probability(a.get("confidence"), "confidence");
    match &q.kind {
        Kind::Predicate => {
            Ok(Answer::Predicate { name, probability: finite_probability(a.get("probability"), "probability")? })
        }
        Kind::Choice(choices) => {
            let index = |v: &Value| ChoiceValue::from_json(v).and_then(|v| choices.iter().position(|c| c.value == v));
            let probabilities = spread(&|p: &Value| p.get("value").and_then(index), choices.len())?;
            let Some(at) = a.get("choice").and_then(index) else {
                return Err(format!(
                    "chooses {}, which is not one of the choices",
                    a.get("choice").unwrap_or(&Value::Null)
                ));
            };
            if !most_probable(&probabilities, at) {
                return Err(format!("chooses {}, which is not the most probable choice", choices[at].value));
            }
            Ok(Answer::Choice { name, choice: choices[at].value.clone(), probabilities, confidence: confidence()? })
        }
        Kind::Score(levels) => {
            let index = |p: &Value| {
                let at =
                    p.get("label").and_then(Value::as_str).and_then(|l| levels.iter().position(|x| x.label == l))?;
                (p.get("value").and_then(Value::as_u64) == Some(at as u64)).then_some(at)
            };
            let probabilities = spread(&index, levels.len())?;
            let score =
                a.get("score").and_then(Value::as_f64).filter(|s| s.is_finite()).ok_or("has no finite score")?;
            Ok(Answer::Score { name, score, probabilities, confidence: confidence()? })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(values: &[Value]) -> Question {
        let choices = values
            .iter()
            .map(|v| Choice { value: ChoiceValue::from_json(v).expect("value"), description: None })
            .collect();
        Question { name: Some("c".into()), instructions: "Which?".into(), kind: Kind::Choice(choices) }
    }

    fn predicate(name: &str) -> Question {
        Question { name: Some(name.into()), instructions: "Does it hold?".into(), kind: Kind::Predicate }
    }

    #[test]
    fn a_request_goes_out_and_comes_back_the_same() {
        let mut c = choice(&[json!("fix"), json!(true), json!("true")]);
        if let Kind::Choice(cs) = &mut c.kind {
            cs[0].description = Some("a bug fix".into());
        }
        let r = Request {
            model: "gpt-6-luna".into(),
            input: Input::Text("The build broke.".into()),
            questions: vec![predicate("p"), c],
        };
        let body = r.to_json();
        assert_eq!(
            body["questions"][1],
            json!({"type": "choice", "instructions": "Which?", "name": "c",
                   "choices": [{"value": "fix", "description": "a bug fix"}, {"value": true}, {"value": "true"}]})
        );
        assert_eq!(Request::from_json(&body), Ok(r.clone()));
        assert_eq!(r.questions[1].engine_options(), ["fix", "true (boolean)", "true"]);
        assert_eq!(r.questions[1].descriptions(), [("fix".to_string(), "a bug fix".to_string())]);
    }

    #[test]
    fn a_request_that_breaks_the_rules_says_where() {
        let params = |body: Value| -> Vec<String> {
            Request::from_json(&body).expect_err("refused").into_iter().map(|p| p.param).collect()
        };
        assert_eq!(params(json!({"input": "x", "questions": [{"type": "predicate", "instructions": "a"}]})), ["model"]);
        assert_eq!(params(json!({"model": "m", "input": 3, "questions": []})), ["input", "questions"]);
        let one = |q: Value| params(json!({"model": "m", "input": "x", "questions": [q]}));
        assert_eq!(one(json!({"type": "boolean", "instructions": "a"})), ["questions[0].type"]);
        assert_eq!(one(json!({"type": "predicate"})), ["questions[0].instructions"]);
        assert_eq!(
            one(json!({"type": "choice", "instructions": "a", "choices": [{"value": "x"}]})),
            ["questions[0].choices"]
        );
        assert_eq!(
            one(json!({"type": "choice", "instructions": "a", "choices": [{"value": "x"}, {"value": "x"}]})),
            ["questions[0].choices[1].value"]
        );
        assert_eq!(
            one(json!({"type": "choice", "instructions": "a", "choices": [{"value": "x"}, {"value": 3}]})),
            ["questions[0].choices[1].value"]
        );
        assert_eq!(
            one(json!({"type": "score", "instructions": "a", "levels": [{"label": "low"}]})),
            ["questions[0].levels"]
        );
        let twice = json!({"model": "m", "input": "x", "questions": [
            {"type": "predicate", "instructions": "a", "name": "n"}, {"type": "predicate", "instructions": "b", "name": "n"}]});
        assert_eq!(params(twice), ["questions[1].name"]);
        // Parts and messages are read as text.
        let r = Request::from_json(&json!({"model": "m", "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Rename a file."}]},
            {"type": "function_call", "call_id": "c1", "name": "mv", "arguments": "{}"}],
            "questions": [{"type": "predicate", "instructions": [{"type": "input_text", "text": "Is it safe?"}]}]}))
        .expect("valid");
        assert_eq!(r.input.text(), "user: Rename a file.\ncall mv({})");
        assert_eq!(r.questions[0].instructions, "Is it safe?");
    }

    #[test]
    fn answers_are_matched_by_name_and_order_and_held_to_the_rules() {
        let qs = vec![predicate("a"), choice(&[json!("x"), json!(false)]), predicate("b")];
        let good = json!({"answers": [
            {"type": "predicate", "name": "a", "probability": 0.25},
            {"type": "choice", "name": "c", "choice": false, "confidence": 0.7,
             "probabilities": [{"value": "x", "probability": 0.3}, {"value": false, "probability": 0.7}]},
            {"type": "refusal", "name": "b"}]});
        let got = read_reply(&good, &qs).expect("read");
        assert_eq!(got[0], Got::Answer(Answer::Predicate { name: Some("a".into()), probability: 0.25 }));
        assert!(matches!(&got[1], Got::Answer(Answer::Choice { choice: ChoiceValue::Flag(false), .. })));
        assert_eq!(got[2], Got::Answer(Answer::Refusal { name: Some("b".into()) }));
        // A named answer may skip a question, which is then missing.
        let skip = json!({"answers": [{"type": "predicate", "name": "b", "probability": 0.9}]});
        assert_eq!(read_reply(&skip, &qs).expect("read")[..2], [Got::Missing, Got::Missing]);
        let broken = |answers: Value| read_reply(&json!({"answers": answers}), &qs).expect_err("broken");
        let c = |probs: Value, pick: Value| {
            json!([{"type": "predicate", "probability": 0.5},
                   {"type": "choice", "choice": pick, "confidence": 0.5, "probabilities": probs}])
        };
        assert!(
            broken(c(json!([{"value": "x", "probability": 0.6}, {"value": false, "probability": 0.6}]), json!("x")))
                .contains("sum to")
        );
        assert!(
            broken(c(json!([{"value": "x", "probability": 0.6}, {"value": "false", "probability": 0.4}]), json!("x")))
                .contains("not an option")
        );
        assert!(
            broken(c(json!([{"value": "x", "probability": 0.6}, {"value": false, "probability": 0.4}]), json!("y")))
                .contains("not one of")
        );
        assert!(
            broken(c(json!([{"value": "x", "probability": 0.4}, {"value": false, "probability": 0.6}]), json!("x")))
                .contains("most probable")
        );
        assert!(broken(c(json!([{"value": "x", "probability": 1.0}]), json!("x"))).contains("1 of 2"));
        assert!(broken(json!([{"type": "predicate", "probability": "NaN"}])).contains("not a number"));
        assert!(broken(json!([{"type": "predicate", "probability": 1.5}])).contains("outside"));
        assert!(broken(json!([{"type": "choice", "probability": 0.5}])).contains("type"));
        assert!(broken(json!([{"type": "predicate", "name": "zz", "probability": 0.5}])).contains("not asked"));
        assert!(broken(json!([{"type": "predicate", "name": "b", "probability": 0.5}, {"type": "predicate", "name": "a", "probability": 0.5}])).contains("not asked"));
        assert!(read_reply(&json!({"answers": [1, 2, 3, 4]}), &qs).expect_err("too many").contains("4 answers"));
        assert!(read_reply(&json!({}), &qs).is_err());
    }

    #[test]
    fn an_answer_written_is_an_answer_read() {
        let qs = vec![
            predicate("p"),
            choice(&[json!("x"), json!(true)]),
            Question {
                name: None,
                instructions: "How bad?".into(),
                kind: Kind::Score(vec![
                    Level { label: "minor".into(), description: None },
                    Level { label: "major".into(), description: Some("data lost".into()) },
                ]),
            },
        ];
        let answers = vec![
            Answer::from_probabilities(&qs[0], &[0.8, 0.2], Some(0)),
            Answer::from_probabilities(&qs[1], &[0.35, 0.65], None),
            Answer::from_probabilities(&qs[2], &[0.25, 0.75], Some(1)),
        ];
        let body = Response { model: "system1".into(), answers: answers.clone(), input_tokens: 9, output_tokens: 3 }
            .to_json(&qs);
        assert_eq!(body["usage"]["total_tokens"], 12);
        assert_eq!(body["answers"][2]["probabilities"][1], json!({"label": "major", "value": 1, "probability": 0.75}));
        let read: Vec<Answer> = read_reply(&body, &qs)
            .expect("read")
            .into_iter()
            .map(|g| match g {
                Got::Answer(a) => a,
                Got::Missing => panic!("missing"),
            })
            .collect();
        assert_eq!(read, answers);
        assert_eq!(
            answers[2],
            Answer::Score { name: None, score: 0.75, probabilities: vec![0.25, 0.75], confidence: 0.75 }
        );
    }
}
