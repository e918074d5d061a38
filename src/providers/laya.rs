//! Laya (`laya-serve` from `laya[serve]` 0.4.15): `POST /v1/systemone`, `GET /health`.
//!
//! | gateway | laya |
//! |---|---|
//! | question | a `choice` question: `instructions` = the question, `criteria` = the options (`{option: null}`) |
//! | yes/no (options `yes`, `no`) | the same two-option choice, never `noul` (Laya's `noul` follows its labels) |
//! | `context` | `state` (without context, the question text, so it is read in the full window) |
//! | several questions | one request, answered in one forward pass |
//! | `confidence` | `answer_confidence` (max p after Laya's own temperature scaling); `confidence` is entropy, another scale |
//! | `probabilities` | Laya's per-option `probabilities` |
//!
//! Checkpoint pinning: every request carries the configured `model`, and an answer whose
//! `routing.model` names another checkpoint is malformed (Laya auto-routes names it does not
//! know, silently). Only `""` and `"auto"` ask Laya to route; any other name is a pin. Names are
//! compared canonically (`typed` and `typed-decisions` are one checkpoint). A strict (Jev) server sends no `routing`: the answer is accepted when the pinned
//! name is a built-in checkpoint or alias, which every Laya server honours, and refused when it is
//! any other name, since that could have been auto-routed.
//!
//! Refused before any request: more than `max_options` options (default 20; Laya's decision head
//! is exhausted past about 20), more than 64 questions or 512 options in all (the server's caps).
//! Passed on to the next engine without a request: a question whose text, or whose state, is more than
//! `max_non_latin` non-Latin letters (default 0.3; 1.0 for the multilingual checkpoint).

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::answers;
use super::http::{self, Endpoint, Reply};
use super::wire::{self, Ask, Reading};
use super::{Capabilities, Cause, EngineAnswer, EngineRequest, Failure, Fix, PassCause, Probe, Provider};
use crate::config::Settings;

pub const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:8765";
pub const DEFAULT_MODEL: &str = "typed-decisions";
/// Laya's own caps on one request (laya-serve 0.4.15).
const SERVER_MAX_QUESTIONS: usize = 64;
const SERVER_MAX_TOTAL_OPTIONS: usize = 512;

/// What the configured `model` pins.
#[derive(Debug, Clone, PartialEq)]
enum Pin {
    /// A built-in checkpoint, by its canonical name.
    Builtin(&'static str),
    /// Another name (a checkpoint added with `LAYA_EXTRA_MODELS`); compared case-insensitively.
    Custom(String),
    /// No pin: Laya routes each request itself.
    Auto,
}

/// The canonical checkpoint a model name pins on laya-serve 0.4.15, if it is a built-in one.
pub fn canonical(name: &str) -> Option<&'static str> {
    match name.trim().to_ascii_lowercase().as_str() {
        "english" | "en" | "laya" | "default" => Some("english"),
        "multilingual" | "multi" | "ml" | "laya-multilingual" | "convaiinnovations/laya-multilingual" => {
            Some("multilingual")
        }
        "typed-decisions"
        | "typed"
        | "typed_decisions"
        | "laya-typed-decisions"
        | "decisions"
        | "convaiinnovations/laya-typed-decisions" => Some("typed-decisions"),
        _ => None,
    }
}

/// Only `""` and `"auto"` ask Laya to route; every other name pins a checkpoint. (laya-serve
/// auto-routes names it does not know, `jev-latest` among them, which is why an answer from another
/// checkpoint is refused rather than taken for the pinned one.)
fn pin_of(name: &str) -> Pin {
    let lower = name.trim().to_ascii_lowercase();
    if let Some(c) = canonical(&lower) {
        return Pin::Builtin(c);
    }
    if lower.is_empty() || lower == "auto" {
        return Pin::Auto;
    }
    Pin::Custom(lower)
}

/// How far Laya's own numbers may disagree: it rounds each to 4 decimals.
const LAYA_ROUNDING: f64 = 0.002;

/// Laya adds nothing to an answer's probabilities, but reads leniently as it always has: the
/// gateway's own checks judge the rest.
const LAYA_READING: Reading = Reading { exact_keys: false };

pub struct Laya {
    endpoint: Option<Endpoint>,
    /// The model name as configured, sent as is (laya-serve 0.2.1 only knows `laya`, `jev-*`).
    model_sent: String,
    pin: Pin,
    max_options: usize,
    max_non_latin: f64,
    api_key: Option<String>,
}

impl Laya {
    pub fn new(s: &Settings) -> Self {
        let endpoint = Endpoint::from_settings(s, DEFAULT_ENDPOINT);
        let model_sent = s.string("model", DEFAULT_MODEL).trim().to_string();
        let pin = pin_of(&model_sent);
        let default_non_latin = if pin == Pin::Builtin("multilingual") { 1.0 } else { 0.3 };
        Self {
            endpoint,
            model_sent,
            pin,
            max_options: s.u64("max_options", 20, 2, 255) as usize,
            max_non_latin: s.f64("max_non_latin", default_non_latin, 0.0, 1.0),
            api_key: answers::api_key(s),
        }
    }

    fn endpoint(&self) -> Result<&Endpoint, Failure> {
        self.endpoint.as_ref().ok_or_else(|| Failure::new(Cause::BadEndpoint, "laya: the endpoint is not usable"))
    }

    /// The checkpoint name for rationales and calibration.
    fn pinned_name(&self) -> String {
        match &self.pin {
            Pin::Builtin(c) => c.to_string(),
            Pin::Custom(n) => n.clone(),
            Pin::Auto => "auto".to_string(),
        }
    }

    /// Why a question is not sent: too many non-Latin letters in its text or in the state.
    fn non_latin_reason(&self, state_text: &[String], q: &super::Question) -> Option<String> {
        if self.max_non_latin >= 1.0 {
            return None;
        }
        let mut own: Vec<&str> = vec![q.text.as_str()];
        own.extend(q.options.iter().map(String::as_str));
        let state: Vec<&str> = state_text.iter().map(String::as_str).collect();
        for (what, parts) in [("the context", state), ("the question", own)] {
            let share = answers::non_latin_share(&parts);
            if share > self.max_non_latin {
                return Some(format!(
                    "laya: {:.0}% of the letters in {what} are not Latin script (the limit is {:.0}%); Laya's English checkpoints are confidently wrong on such text, so the question is passed on",
                    share * 100.0,
                    self.max_non_latin * 100.0
                ));
            }
        }
        None
    }

    fn post_with_retry(&self, body: &Value, timeout: Duration) -> Result<Reply, Failure> {
        let endpoint = self.endpoint()?;
        let deadline = Instant::now() + timeout;
        let mut retried = false;
        loop {
            let left = answers::remaining(deadline, timeout)?;
            let reply = endpoint.post("/v1/systemone", body, left, self.api_key.as_deref())?;
            // A busy server (503) names when to come back; wait once if that fits in the time left.
            if reply.status == 503 && !retried {
                let wait = reply.retry_after.as_deref().and_then(|s| s.trim().parse::<f64>().ok());
                if let Some(w) = wait.filter(|w| *w >= 0.0 && *w <= 60.0).map(Duration::from_secs_f64) {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if w + Duration::from_millis(50) < left {
                        std::thread::sleep(w);
                        retried = true;
                        continue;
                    }
                }
            }
            return Ok(reply);
        }
    }

    /// Maps one Laya answer back: the decision, `answer_confidence`, Laya's probabilities. Laya's
    /// `choice` is its most probable option and `answer_confidence` that option's probability; an
    /// answer whose numbers say otherwise is malformed (a pick that is no option is passed on, for
    /// the gateway to refuse).
    fn map_answer(&self, checkpoint: &str, options: &[String], a: &Value) -> Result<EngineAnswer, String> {
        let ps = wire::probabilities(a, options, LAYA_READING).map_err(|b| b.to_string())?;
        let pick = a.get("choice").and_then(Value::as_str);
        let top = ps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if let Some(p) = pick.and_then(|p| options.iter().position(|o| o == p)).map(|i| ps[i])
            && p < top - LAYA_ROUNDING
        {
            return Err(format!(
                "has choice {:?} at probability {p}, below its most probable option at {top}: the numbers contradict each other",
                pick.unwrap_or_default()
            ));
        }
        let mut answer = answers::choice_answer("laya", checkpoint, options, &ps, pick);
        // answer_confidence is the number Laya gates on; a strict server omits it (then max p).
        if let Some(c) = a.get("answer_confidence") {
            let Some(c) = c.as_f64() else { return Err(format!("has answer_confidence {c}, not a number")) };
            if (c - top).abs() > LAYA_ROUNDING {
                return Err(format!(
                    "has answer_confidence {c}, but its most probable option is at {top}: the numbers contradict each other"
                ));
            }
            if let EngineAnswer::Decided { confidence, decision, .. } = &mut answer
                && options.contains(decision)
            {
                *confidence = c;
            }
        }
        Ok(answer)
    }
}

impl Provider for Laya {
    fn name(&self) -> &'static str {
        "laya"
    }

    fn model(&self) -> String {
        self.pinned_name()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::any(self.max_options, true).at(self.endpoint.as_ref())
    }

    fn decide(&self, request: &EngineRequest, timeout: Duration) -> Result<Vec<EngineAnswer>, Failure> {
        answers::check_option_limit(
            "laya",
            request,
            self.max_options,
            " (Laya's decision head is unreliable past about 20; split the choice or set providers.laya.max_options)",
        )?;
        let total: usize = request.questions.iter().map(|q| q.options.len()).sum();
        if request.questions.len() > SERVER_MAX_QUESTIONS || total > SERVER_MAX_TOTAL_OPTIONS {
            return Err(Failure::new(
                Cause::OverLimit,
                format!(
                    "laya: {} questions with {total} options exceed laya-serve's limits ({SERVER_MAX_QUESTIONS} questions, {SERVER_MAX_TOTAL_OPTIONS} options per request)",
                    request.questions.len()
                ),
            ));
        }
        let state = answers::state_of(request);
        let mut state_text = Vec::new();
        collect_strings(&state, &mut state_text);

        let ids = answers::question_ids(request);
        let mut results: Vec<Option<EngineAnswer>> = vec![None; request.questions.len()];
        let mut questions = Map::new();
        for (i, q) in request.questions.iter().enumerate() {
            if let Some(reason) = self.non_latin_reason(&state_text, q) {
                // Not an answer ("not sure") but none at all: the next engine of the chain gets it.
                results[i] = Some(EngineAnswer::Passed { cause: PassCause::NotRead, reason });
                continue;
            }
            // Always a choice, yes/no too; `{option: null}` criteria, the form both laya-serve 0.4.15
            // and the old 0.2.1 accept.
            questions.insert(ids[i].clone(), wire::question(Ask::Choice, q, None));
        }
        if questions.is_empty() {
            return Ok(results.into_iter().flatten().collect());
        }
        let body = wire::body(state, Some(&self.model_sent), questions);
        let reply = self.post_with_retry(&body, timeout)?;
        match reply.status {
            200 => {}
            401 => return Err(answers::auth_failure("laya", self.api_key.is_some(), &http::error_detail(&reply))),
            _ => return Err(refusal(&reply)),
        }
        let Some(resp) = reply.json.as_object() else {
            return Err(Failure::malformed("laya: the answer is not a JSON object".to_string()));
        };
        let routed = resp.get("routing").and_then(|r| r.get("model")).and_then(Value::as_str);
        let mut note = None;
        match (&self.pin, routed) {
            (Pin::Builtin(want), Some(got)) if canonical(got) != Some(want) => {
                return Err(Failure::malformed(format!(
                    "laya answered with checkpoint {got:?}, but {want:?} is pinned; the calibration would not match"
                )));
            }
            (Pin::Custom(want), Some(got)) if !got.eq_ignore_ascii_case(want) => {
                return Err(Failure::malformed(format!(
                    "laya answered with checkpoint {got:?}, but {want:?} is pinned (laya-serve auto-routes names it does not know; check LAYA_EXTRA_MODELS)"
                )));
            }
            (Pin::Custom(want), None) => {
                return Err(Failure::malformed(format!(
                    "laya sent no routing (a strict server), so the pinned checkpoint {want:?} cannot be confirmed; pin a built-in checkpoint (english, multilingual, typed-decisions) or turn off LAYA_JEV_STRICT"
                )));
            }
            (Pin::Builtin(want), None) => {
                note = Some(format!("laya sent no routing (strict server); checkpoint {want} assumed from the pin"));
            }
            _ => {}
        }
        let checkpoint = match (&self.pin, routed) {
            (Pin::Auto, Some(got)) => got.to_string(),
            _ => self.pinned_name(),
        };
        let Some(got) = wire::answers_of(&reply.json) else {
            return Err(Failure::malformed("laya: the answer has no `answers` object".to_string()));
        };
        for (i, q) in request.questions.iter().enumerate() {
            if results[i].is_some() {
                continue;
            }
            let Some(a) = got.get(&ids[i]) else {
                return Err(Failure::malformed(format!("laya: no answer for question {:?}", q.key)));
            };
            let mut answer = self
                .map_answer(&checkpoint, &q.options, a)
                .map_err(|e| Failure::malformed(format!("laya: the answer to {:?} {e}", q.key)))?;
            if let Some(n) = note.take() {
                answer = answer.with_detail(n);
            }
            results[i] = Some(answer);
        }
        Ok(results.into_iter().flatten().collect())
    }

    fn health(&self, timeout: Duration) -> Probe {
        let endpoint = match self.endpoint() {
            Ok(e) => e,
            Err(f) => return Probe::Down(f),
        };
        let base = endpoint.base().to_string();
        let reply = match endpoint.get("/health", timeout, self.api_key.as_deref()) {
            Ok(r) => r,
            Err(f) => return Probe::Down(f.prefixed(&format!("laya-serve at {base}: "))),
        };
        if reply.status == 404 {
            // laya-serve 0.2.1 (the deprecated package) only has /healthz.
            return match endpoint.get("/healthz", timeout, self.api_key.as_deref()) {
                Ok(r) if r.status == 200 => Probe::up(format!(
                    "laya-serve at {base} is the deprecated 0.2.1 package (/healthz); it does not report checkpoints; install laya[serve] instead"
                )),
                _ => Probe::Down(http::status_failure(&format!("laya-serve at {base}: "), &reply)),
            };
        }
        if reply.status != 200 {
            return Probe::Down(http::status_failure(&format!("laya-serve at {base}: "), &reply));
        }
        if reply.json.get("status").and_then(Value::as_str) != Some("ok") {
            return Probe::Down(Failure::new(
                Cause::Other,
                format!("laya-serve at {base} is not ok: {}", short(&reply.text)),
            ));
        }
        let Some(loaded) = reply.json.get("loaded").and_then(Value::as_array) else {
            let why = if self.api_key.is_some() {
                "the key in SYSTEM1_LAYA_API_KEY seems wrong"
            } else {
                "the server has a key: set SYSTEM1_LAYA_API_KEY"
            };
            return Probe::up(format!("laya-serve at {base} is up, but withholds its checkpoint list ({why})"));
        };
        let loaded: Vec<&str> = loaded.iter().filter_map(Value::as_str).collect();
        let device = reply.json.get("device").and_then(Value::as_str).unwrap_or("?");
        let listed = if loaded.is_empty() { "none".to_string() } else { loaded.join(", ") };
        let detail = match &self.pin {
            Pin::Auto => format!("laya-serve at {base} is up on {device}; auto-routing; loaded: {listed}"),
            pin => {
                let want = self.pinned_name();
                let is_loaded = loaded.iter().any(|l| match pin {
                    Pin::Builtin(c) => canonical(l) == Some(c),
                    _ => l.eq_ignore_ascii_case(&want),
                });
                if is_loaded {
                    let dev = reply
                        .json
                        .get("checkpoint_devices")
                        .and_then(|d| d.get(&want))
                        .and_then(Value::as_str)
                        .unwrap_or(device);
                    format!("laya-serve at {base} is up; {want} is loaded on {dev}")
                } else {
                    format!(
                        "warning: laya-serve at {base} is up, but the pinned checkpoint {want} is not loaded (loaded: {listed}); the first decision will load it and be slow (preload it with LAYA_MODELS)"
                    )
                }
            }
        };
        Probe::up(detail)
    }

    fn fix(&self, failure: &Failure) -> Fix {
        match failure.cause {
            Cause::HttpStatus(422) => Fix::new(
                "the engine refused the request as invalid: its version may not match the adapter (laya-serve \
                 0.4.15); update laya, or check the [providers.laya] keys",
            )
            .see_log(),
            // 501: not laya-serve's routes at all, which the shared fix says.
            Cause::HttpStatus(status @ 500..=599) if status != 501 => {
                Fix::new("the engine failed inside (for Laya, often its checkpoint failing to load)").see_log()
            }
            _ => super::failure::generic_fix(self.name(), failure),
        }
    }
}

/// A decision laya-serve refused: a checkpoint it does not have (see [`names_an_unknown_model`]),
/// or the status.
fn refusal(reply: &Reply) -> Failure {
    let failure = http::status_failure("laya: ", reply);
    if names_an_unknown_model(reply) { Failure::new(Cause::UnknownModel, failure.detail) } else { failure }
}

/// Whether a 422 says the `model` sent is not one of the server's checkpoints. laya-serve 0.2.1
/// says so in a field: `{"error": {"message": "unknown model 'NAME'; ...", "field": "model"}}`.
/// laya-serve 0.4.15 says it only in words, in the same 422 it gives any invalid question:
/// `{"detail": "unknown model 'NAME'; choose one of ['english', 'multilingual', 'typed-decisions']
/// ..."}` (recorded from the server, for a name that looks like a path and for an unknown task);
/// this is the one place the adapter reads its words.
fn names_an_unknown_model(reply: &Reply) -> bool {
    if reply.status != 422 {
        return false;
    }
    let field = reply.json.get("error").and_then(|e| e.get("field")).and_then(Value::as_str);
    let detail = reply.json.get("detail").and_then(Value::as_str);
    field == Some("model") || detail.is_some_and(|d| d.starts_with("unknown model "))
}

fn short(s: &str) -> String {
    let t: String = s.chars().take(120).collect();
    t.trim().to_string()
}

/// Every string inside a JSON value (object keys excluded: they are field names, not text).
fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|i| collect_strings(i, out)),
        Value::Object(m) => m.values().for_each(|i| collect_strings(i, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
