//! `system1_decide` requests: the limits of schema "1" and the check that runs at the edge (the MCP
//! tool, `system1 decide`) before the gateway sees the request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Map, Value};

pub const SCHEMA_VERSION: &str = "1";
pub const MAX_QUESTION_CHARS: usize = 8000;
pub const MIN_OPTIONS: usize = 2;
pub const MAX_OPTIONS: usize = 256;
pub const MAX_OPTION_CHARS: usize = 500;
pub const MAX_REQUEST_ID_CHARS: usize = 128;
pub const FIELDS: [&str; 6] = ["question", "options", "context", "min_confidence", "request_id", "schema_version"];

/// A request that passed validation: what `Gateway::decide` takes.
#[derive(Debug, Clone, PartialEq)]
pub struct DecideRequest {
    pub question: String,
    /// `None` means a yes/no question.
    pub options: Option<Vec<String>>,
    pub context: Option<Map<String, Value>>,
    pub min_confidence: Option<f64>,
    /// The caller's, or a new one.
    pub request_id: String,
    /// When validation began: the response's `latency_ms` counts from here.
    pub received: Instant,
}

/// A request that failed validation: what `Gateway::refuse` answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// The caller's when it could be read, so that even a refusal echoes it; else a new one.
    pub request_id: String,
    pub message: String,
    pub received: Instant,
}

/// A request id unique enough for logs: time, process and a counter.
pub fn new_request_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or(0);
    format!("s1-{:x}-{:x}-{n}", t, std::process::id())
}

/// Checks every rule of schema "1" (see [`check`]) and gives the request its id.
pub fn validate(args: &Value) -> Result<DecideRequest, Invalid> {
    let received = Instant::now();
    let request_id = request_id_of(args).unwrap_or_else(new_request_id);
    match check(args) {
        Ok(Checked { question, options, context, min_confidence }) => {
            Ok(DecideRequest { question, options, context, min_confidence, request_id, received })
        }
        Err(message) => Err(Invalid { request_id, message, received }),
    }
}

/// The fields of a valid request, before it has its id.
struct Checked {
    question: String,
    options: Option<Vec<String>>,
    context: Option<Map<String, Value>>,
    min_confidence: Option<f64>,
}

/// The request id to echo even when the rest of the request is invalid.
fn request_id_of(args: &Value) -> Option<String> {
    match args.get("request_id") {
        Some(Value::String(s)) if valid_request_id(s) => Some(s.clone()),
        _ => None,
    }
}

fn valid_request_id(s: &str) -> bool {
    let n = s.chars().count();
    (1..=MAX_REQUEST_ID_CHARS).contains(&n)
}

/// Checks every rule of schema "1". Optional fields may be `null`, meaning absent.
fn check(args: &Value) -> Result<Checked, String> {
    let Value::Object(obj) = args else { return Err("the request must be a JSON object".into()) };
    let unknown: Vec<&str> = obj.keys().map(String::as_str).filter(|k| !FIELDS.contains(k)).collect();
    if !unknown.is_empty() {
        return Err(format!("unknown field(s): {}; allowed: {}", unknown.join(", "), FIELDS.join(", ")));
    }
    let present = |k: &str| obj.get(k).filter(|v| !v.is_null());

    let question = question_of(obj.get("question"))?;
    let options = present("options").map(options_of).transpose()?;

    let context = match present("context") {
        None => None,
        Some(Value::Object(m)) => Some(m.clone()),
        Some(_) => return Err("context must be an object".into()),
    };

    let min_confidence = match present("min_confidence") {
        None => None,
        Some(v) => match v.as_f64() {
            Some(f) if (0.0..=1.0).contains(&f) => Some(f),
            _ => return Err("min_confidence must be a number from 0 to 1".into()),
        },
    };

    match present("request_id") {
        None => {}
        Some(Value::String(s)) if valid_request_id(s) => {}
        Some(_) => return Err(format!("request_id must be a string of 1 to {MAX_REQUEST_ID_CHARS} characters")),
    }

    match present("schema_version") {
        None => {}
        Some(Value::String(s)) if s == SCHEMA_VERSION => {}
        Some(other) => return Err(format!("schema_version {other} is not supported; use \"{SCHEMA_VERSION}\"")),
    }

    Ok(Checked { question, options, context, min_confidence })
}

fn question_of(v: Option<&Value>) -> Result<String, String> {
    match v {
        Some(Value::String(q)) if q.trim().is_empty() => Err("question must not be empty".into()),
        Some(Value::String(q)) if q.chars().count() > MAX_QUESTION_CHARS => {
            Err(format!("question has {} characters; at most {MAX_QUESTION_CHARS} are allowed", q.chars().count()))
        }
        Some(Value::String(q)) => Ok(q.clone()),
        None | Some(Value::Null) => Err("question is required".into()),
        Some(_) => Err("question must be a string".into()),
    }
}

fn options_of(v: &Value) -> Result<Vec<String>, String> {
    let Value::Array(items) = v else { return Err("options must be a list of strings".into()) };
    if items.len() < MIN_OPTIONS || items.len() > MAX_OPTIONS {
        return Err(format!("options must have {MIN_OPTIONS} to {MAX_OPTIONS} entries, got {}", items.len()));
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::String(s) = item else { return Err(format!("options[{i}] must be a string")) };
        if s.trim().is_empty() {
            return Err(format!("options[{i}] must not be empty"));
        }
        if s.chars().count() > MAX_OPTION_CHARS {
            return Err(format!("options[{i}] is longer than {MAX_OPTION_CHARS} characters"));
        }
        if out.contains(s) {
            return Err(format!("options[{i}] {s:?} is a duplicate; options must be unique"));
        }
        out.push(s.clone());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(v: Value) -> String {
        validate(&v).expect_err("should be invalid").message
    }

    #[test]
    fn accepts_a_minimal_and_a_full_request() {
        let r = validate(&json!({"question": "Ship it?"})).expect("valid");
        assert_eq!(r.options, None);
        assert!(r.request_id.starts_with("s1-"), "a new id: {}", r.request_id);
        let r = validate(&json!({"question": "Which?", "options": ["a", "b"], "context": {"k": 1},
            "min_confidence": 0.7, "request_id": "r-1", "schema_version": "1"}))
        .expect("valid");
        assert_eq!(r.options.as_deref(), Some(&["a".to_string(), "b".to_string()][..]));
        assert_eq!(r.min_confidence, Some(0.7));
        assert_eq!(r.request_id, "r-1");
        assert_eq!(r.context.map(Value::Object), Some(json!({"k": 1})));
        assert!(validate(&json!({"question": "q", "options": null, "context": null})).is_ok());
    }

    #[test]
    fn every_rule_is_enforced() {
        assert!(err(json!([])).contains("object"));
        assert!(err(json!({})).contains("required"));
        assert!(err(json!({"question": "  "})).contains("empty"));
        assert!(err(json!({"question": 3})).contains("string"));
        assert!(err(json!({"question": "x".repeat(8001)})).contains("8000"));
        assert!(validate(&json!({"question": "é".repeat(8000)})).is_ok(), "the limit counts characters, not bytes");
        assert!(err(json!({"question": "q", "options": ["a"]})).contains("2 to 256"));
        let many: Vec<String> = (0..257).map(|i| format!("o{i}")).collect();
        assert!(err(json!({"question": "q", "options": many})).contains("2 to 256"));
        assert!(err(json!({"question": "q", "options": ["a", "a"]})).contains("duplicate"));
        assert!(err(json!({"question": "q", "options": ["a", ""]})).contains("empty"));
        assert!(err(json!({"question": "q", "options": ["a", 1]})).contains("string"));
        assert!(err(json!({"question": "q", "options": ["a", "b".repeat(501)]})).contains("500"));
        assert!(err(json!({"question": "q", "options": "a,b"})).contains("list"));
        assert!(err(json!({"question": "q", "context": "x"})).contains("context"));
        assert!(err(json!({"question": "q", "min_confidence": 1.2})).contains("min_confidence"));
        assert!(err(json!({"question": "q", "min_confidence": "0.5"})).contains("min_confidence"));
        assert!(err(json!({"question": "q", "request_id": ""})).contains("request_id"));
        assert!(err(json!({"question": "q", "request_id": "r".repeat(129)})).contains("request_id"));
        assert!(err(json!({"question": "q", "schema_version": "2"})).contains("schema_version"));
        assert!(err(json!({"question": "q", "extra": 1})).contains("unknown field(s): extra"));
    }

    #[test]
    fn a_refusal_echoes_the_request_id_when_it_can_be_read() {
        let invalid = validate(&json!({"question": 3, "request_id": "r-7"})).expect_err("invalid");
        assert_eq!((invalid.request_id.as_str(), invalid.message.as_str()), ("r-7", "question must be a string"));
        let invalid = validate(&json!({"question": 3, "request_id": ""})).expect_err("invalid");
        assert!(invalid.request_id.starts_with("s1-"), "an unreadable id is replaced: {}", invalid.request_id);
        assert_ne!(new_request_id(), new_request_id());
    }
}
