//! Typed reads from one config section (a TOML table merged from the file and the environment).
//!
//! Every getter takes the TOML type from the file, and from the environment (whose overrides are
//! all strings) the same value written as text; a value of another type is an error naming the key
//! and the type it needs (`enabled = "yes"` in the file is not a boolean). Each getter checks the
//! range and records the value and where it came from, so that `system1 config show` can print the
//! effective config with its sources, invalid values marked, without a second description of the
//! keys.

use std::cell::RefCell;
use std::collections::BTreeMap;

use toml::{Table, Value};

use crate::text;

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Default,
    File,
    Env(String),
    /// An API key read from the file `api_key_file` names.
    KeyFile(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => write!(f, "default"),
            Source::File => write!(f, "file"),
            Source::Env(var) => write!(f, "env {var}"),
            Source::KeyFile(path) => write!(f, "key file {path}"),
        }
    }
}

/// One key as it was resolved: dotted name, value as TOML text, source.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub key: String,
    pub value: String,
    pub source: Source,
    /// Whether the value in effect is the default (also when a file or the environment spells it out).
    pub is_default: bool,
    /// For a value that was refused: what the key needs and the default that applies instead (the
    /// `value` is then the one given).
    pub invalid: Option<String>,
}

/// A section of the config being read. Errors are collected, not returned, so one pass reports
/// every broken key at once.
pub struct Settings {
    section: String,
    table: Table,
    sources: BTreeMap<String, Source>,
    read: RefCell<Vec<String>>,
    /// Keys whose value was refused, with what they need.
    refused: RefCell<BTreeMap<String, String>>,
    pub resolved: RefCell<Vec<Resolved>>,
    pub errors: RefCell<Vec<String>>,
}

impl Settings {
    pub fn new(section: &str, table: Table, sources: BTreeMap<String, Source>) -> Self {
        Self {
            section: section.to_string(),
            table,
            sources,
            read: RefCell::new(Vec::new()),
            refused: RefCell::new(BTreeMap::new()),
            resolved: RefCell::new(Vec::new()),
            errors: RefCell::new(Vec::new()),
        }
    }

    pub fn section(&self) -> &str {
        &self.section
    }

    /// A string value as given, without reading it (an absent or non-string value is empty): for
    /// deciding what reads the section, which then reads the key itself.
    pub fn peek_string(&self, key: &str) -> String {
        self.table.get(key).and_then(Value::as_str).unwrap_or_default().trim().to_string()
    }

    pub fn has(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    fn dotted(&self, key: &str) -> String {
        format!("{}.{key}", self.section)
    }

    fn source(&self, key: &str) -> Source {
        self.sources.get(key).cloned().unwrap_or(Source::File)
    }

    fn where_(&self, key: &str) -> String {
        match self.source(key) {
            Source::Env(var) => format!(" (from {var})"),
            _ => String::new(),
        }
    }

    /// ` (from SYSTEM1_X)` when `key` came from the environment, else nothing: for error messages.
    pub fn origin(&self, key: &str) -> String {
        self.where_(key)
    }

    pub fn error(&self, message: String) {
        self.errors.borrow_mut().push(message);
    }

    fn bad(&self, key: &str, expected: &str, got: &Value) {
        let shown = if is_secret(key) { "a value that is not shown".to_string() } else { short(got) };
        self.error(format!("{} must be {expected}, got {shown}{}", self.dotted(key), self.where_(key)));
        self.refused.borrow_mut().insert(key.to_string(), expected.to_string());
    }

    /// Whether `key` came from the environment, where every value is text.
    fn is_env(&self, key: &str) -> bool {
        matches!(self.source(key), Source::Env(_))
    }

    fn note(&self, key: &str, value: String, from_table: bool, is_default: bool) {
        self.read.borrow_mut().push(key.to_string());
        let source = if from_table { self.source(key) } else { Source::Default };
        // A refused value is shown as given, with the default that applies instead.
        let (value, invalid) = match (self.refused.borrow().get(key), self.raw(key)) {
            (Some(expected), Some(given)) => {
                (given.to_string(), Some(format!("invalid: must be {expected}; the default {value} applies")))
            }
            _ => (value, None),
        };
        // Secrets are never shown, only whether one is set.
        let value = if is_secret(key) && value != "\"\"" { "\"<set>\"".to_string() } else { value };
        let invalid = if is_secret(key) { invalid.map(|_| "invalid".to_string()) } else { invalid };
        let is_default = is_default && invalid.is_none();
        self.resolved.borrow_mut().push(Resolved { key: self.dotted(key), value, source, is_default, invalid });
    }

    fn raw(&self, key: &str) -> Option<&Value> {
        self.table.get(key)
    }

    pub fn string(&self, key: &str, default: &str) -> String {
        let v = match self.raw(key) {
            None => default.to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                self.bad(key, "a string", other);
                default.to_string()
            }
        };
        // An endpoint's password is as secret as a key.
        self.note(key, Value::String(crate::text::without_userinfo(&v)).to_string(), self.has(key), v == default);
        v
    }

    pub fn bool(&self, key: &str, default: bool) -> bool {
        let v = match self.raw(key) {
            None => default,
            Some(Value::Boolean(b)) => *b,
            Some(Value::String(s)) if self.is_env(key) => match s.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => true,
                "0" | "false" | "no" | "off" | "" => false,
                _ => {
                    self.bad(key, "true or false", &Value::String(s.clone()));
                    default
                }
            },
            Some(other) => {
                self.bad(key, "true or false", other);
                default
            }
        };
        self.note(key, v.to_string(), self.has(key), v == default);
        v
    }

    /// A number within `[min, max]`.
    pub fn f64(&self, key: &str, default: f64, min: f64, max: f64) -> f64 {
        let parsed = match self.raw(key) {
            None => Some(default),
            Some(Value::Float(f)) => Some(*f),
            Some(Value::Integer(i)) => Some(*i as f64),
            Some(Value::String(s)) if self.is_env(key) => s.trim().parse::<f64>().ok(),
            Some(_) => None,
        };
        let expected = format!("a number from {min} to {max}");
        let v = match parsed {
            Some(f) if f.is_finite() && f >= min && f <= max => f,
            _ => {
                if let Some(raw) = self.raw(key) {
                    self.bad(key, &expected, raw);
                }
                default
            }
        };
        self.note(key, Value::Float(v).to_string(), self.has(key), v == default);
        v
    }

    /// A whole number within `[min, max]`.
    pub fn u64(&self, key: &str, default: u64, min: u64, max: u64) -> u64 {
        let parsed = match self.raw(key) {
            None => Some(default),
            Some(Value::Integer(i)) if *i >= 0 => Some(*i as u64),
            Some(Value::String(s)) if self.is_env(key) => s.trim().parse::<u64>().ok(),
            Some(_) => None,
        };
        let v = match parsed {
            Some(n) if n >= min && n <= max => n,
            _ => {
                if let Some(raw) = self.raw(key) {
                    self.bad(key, &format!("a whole number from {min} to {max}"), raw);
                }
                default
            }
        };
        self.note(key, v.to_string(), self.has(key), v == default);
        v
    }

    /// A list of strings; from the environment, a string split on commas.
    pub fn list(&self, key: &str) -> Vec<String> {
        let v = match self.raw(key) {
            None => Vec::new(),
            Some(Value::String(s)) if self.is_env(key) => {
                s.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()
            }
            Some(Value::Array(items)) => {
                let mut out = Vec::new();
                for item in items {
                    match item {
                        Value::String(s) => out.push(s.clone()),
                        other => {
                            self.bad(key, "a list of strings", other);
                            return Vec::new();
                        }
                    }
                }
                out
            }
            Some(other) => {
                self.bad(key, "a list of strings", other);
                Vec::new()
            }
        };
        let shown = Value::Array(v.iter().cloned().map(Value::String).collect());
        self.note(key, shown.to_string(), self.has(key), v.is_empty());
        v
    }

    /// The raw value, for keys with a shape of their own (routing rules, mock probabilities).
    pub fn value(&self, key: &str) -> Option<Value> {
        let v = self.raw(key).cloned();
        if let Some(v) = &v {
            self.note(key, v.to_string(), true, false);
        } else {
            self.read.borrow_mut().push(key.to_string());
        }
        v
    }

    /// Records the default of a key with a shape of its own (read with [`Settings::value`]) when
    /// it is absent, so that `config show` lists it too.
    pub fn default_shown(&self, key: &str, default: &Value) {
        if !self.has(key) {
            self.resolved.borrow_mut().push(Resolved {
                key: self.dotted(key),
                value: default.to_string(),
                source: Source::Default,
                is_default: true,
                invalid: None,
            });
        }
    }

    /// Marks a key already read (with [`Settings::value`]) as holding the default, for a value
    /// whose shape only its reader can compare.
    pub fn mark_default(&self, key: &str) {
        let dotted = self.dotted(key);
        if let Some(r) = self.resolved.borrow_mut().iter_mut().rev().find(|r| r.key == dotted) {
            r.is_default = r.invalid.is_none();
        }
    }

    /// Marks a key already read as invalid in what `config show` prints (`why`: what is wrong and
    /// what applies instead); the error itself is reported with [`Settings::error`].
    pub fn mark_invalid(&self, key: &str, why: &str) {
        let dotted = self.dotted(key);
        if let Some(r) = self.resolved.borrow_mut().iter_mut().rev().find(|r| r.key == dotted) {
            r.invalid = Some(format!("invalid: {why}"));
        }
    }

    /// Reports every key of the section that no getter asked for, by name. Call after reading.
    pub fn finish(&self) {
        let read = self.read.borrow();
        for key in self.table.keys() {
            if !read.iter().any(|k| k == key) {
                let from = self.where_(key);
                self.error(format!("unknown key {}{from}", self.dotted(key)));
            }
        }
    }

    pub fn take_errors(&self) -> Vec<String> {
        std::mem::take(&mut *self.errors.borrow_mut())
    }
}

/// Keys whose values are secrets (an engine's API key): shown as `<set>`, never repeated.
pub fn is_secret(key: &str) -> bool {
    key == "api_key" || key.ends_with("_key") || key.ends_with("token") || key.ends_with("secret")
}

/// A value shortened for an error message.
fn short(v: &Value) -> String {
    text::ellipsis(&v.to_string(), 61)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(toml_text: &str) -> Settings {
        let table: Table = toml_text.parse().expect("test TOML");
        Settings::new("gateway", table, BTreeMap::new())
    }

    #[test]
    fn strings_from_the_environment_are_parsed_by_type() {
        let mut sources = BTreeMap::new();
        let mut table = Table::new();
        for (key, text) in [("timeout_s", "2.5"), ("on", "yes"), ("list", "a, b,,c"), ("n", "7")] {
            sources.insert(key.to_string(), Source::Env(format!("SYSTEM1_{}", key.to_ascii_uppercase())));
            table.insert(key.into(), Value::String(text.into()));
        }
        let s = Settings::new("gateway", table, sources);
        assert_eq!(s.f64("timeout_s", 5.0, 0.0, 60.0), 2.5);
        assert!(s.bool("on", false));
        assert_eq!(s.list("list"), vec!["a", "b", "c"]);
        assert_eq!(s.u64("n", 1, 0, 10), 7);
        s.finish();
        assert!(s.take_errors().is_empty());
    }

    #[test]
    fn the_file_must_give_each_key_its_type() {
        // In the file a string is a string: "yes" is not true, "laya" is not a list.
        let s = settings("on = \"yes\"\nlist = \"laya\"\ntimeout_s = \"2\"\nn = \"7\"");
        assert!(!s.bool("on", false), "the default applies");
        assert_eq!(s.list("list"), Vec::<String>::new());
        assert_eq!(s.f64("timeout_s", 5.0, 0.0, 60.0), 5.0);
        assert_eq!(s.u64("n", 1, 0, 10), 1);
        assert_eq!(
            s.take_errors(),
            [
                "gateway.on must be true or false, got \"yes\"",
                "gateway.list must be a list of strings, got \"laya\"",
                "gateway.timeout_s must be a number from 0 to 60, got \"2\"",
                "gateway.n must be a whole number from 0 to 10, got \"7\"",
            ]
        );
        let shown: Vec<(String, String, Option<String>)> =
            s.resolved.borrow().iter().map(|r| (r.key.clone(), r.value.clone(), r.invalid.clone())).collect();
        assert_eq!(
            shown[0],
            (
                "gateway.on".to_string(),
                "\"yes\"".to_string(),
                Some("invalid: must be true or false; the default false applies".to_string())
            ),
            "shown as given, marked invalid"
        );
    }

    #[test]
    fn out_of_range_and_unknown_keys_are_named() {
        let s = settings("min_confidence = 1.5\ncolour = \"red\"");
        assert_eq!(s.f64("min_confidence", 0.6, 0.0, 1.0), 0.6);
        s.finish();
        let errors = s.take_errors();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].contains("gateway.min_confidence"), "{errors:?}");
        assert!(errors[1].contains("unknown key gateway.colour"), "{errors:?}");
    }

    #[test]
    fn secrets_are_never_shown() {
        let mut sources = BTreeMap::new();
        sources.insert("api_key".to_string(), Source::Env("SYSTEM1_LAYA_API_KEY".into()));
        let mut table = Table::new();
        table.insert("api_key".into(), Value::String("sk-123".into()));
        let s = Settings::new("providers.laya", table, sources);
        assert_eq!(s.string("api_key", ""), "sk-123", "the adapter gets the key");
        let shown = s.resolved.borrow()[0].value.clone();
        assert_eq!(shown, "\"<set>\"");
        let unset = Settings::new("providers.laya", Table::new(), BTreeMap::new());
        unset.string("api_key", "");
        assert_eq!(unset.resolved.borrow()[0].value, "\"\"");
    }

    #[test]
    fn defaults_are_recorded_as_defaults() {
        let s = settings("");
        assert_eq!(s.string("provider", "laya"), "laya");
        let r = s.resolved.borrow();
        assert_eq!(r[0].key, "gateway.provider");
        assert_eq!(r[0].source, Source::Default);
    }
}
