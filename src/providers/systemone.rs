//! Any server of the System One API (`POST /v1/systemone`, `GET /v1/models`): TypeSafe's hosted
//! Jev, llama.cpp's `llama-server`, vLLM, Ollama with a decision model, and the open servers that
//! pass jevcompat's conformance suite (docs/engines.md#system-one-servers).
//!
//! | gateway | System One API |
//! |---|---|
//! | yes/no (options `yes`, `no`) | a `noul` question: the probability that the statement holds; yes when it is at least 0.5 |
//! | a choice | a `choice` question, `criteria` mapping each option to its description (from the context) or `null` |
//! | `context` | `state`, a string or an object as given (without context, the question text) |
//! | several questions | one request |
//! | `confidence` | the chosen answer's probability; the server's own `confidence` is not used (servers compute it in incompatible ways) |
//!
//! Answers are held to the API's rules (jevcompat's MUST requirements, [`wire::strict_choice`]);
//! an answer that breaks one is malformed and names the rule, so a wrong answer is never passed
//! on. An answer the server leaves out is passed on to the next engine in the chain, and so is a
//! question a 422 refuses by name (a type the server does not serve; the rest are asked again); an
//! answer nobody asked for is ignored, with a note.
//!
//! Several servers can sit side by side: `[providers.<name>]` with `kind = "systemone"` is one
//! more provider of this kind under its own name (its key in `SYSTEM1_<NAME>_API_KEY`).
//!
//! Gemini's Decisions API and OpenRouter's are the same shape at another path: each is a
//! [`Dialect`] of this adapter (its path, where its key goes, its model names), not an adapter of
//! its own.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::answers::{self, Round};
use super::failure::generic_fix;
use super::http::{self, Endpoint, KeyHeader, Reply};
use super::wire::{self, Ask};
use super::{Capabilities, Cause, EngineAnswer, EngineRequest, Failure, Fix, PassCause, Probe, Provider};
use crate::config::Settings;

/// llama-server's default address.
pub const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:8080";
/// The official SDKs' default model name, which every server of the API accepts.
pub const DEFAULT_MODEL: &str = "jev-latest";
/// The API's own limit on a choice's options.
pub const API_MAX_OPTIONS: u64 = 255;

/// What one service of the System One shape does its own way.
#[derive(Debug)]
pub struct Dialect {
    /// The provider's name in the config.
    pub kind: &'static str,
    /// The API's name for people.
    pub service: &'static str,
    pub endpoint: &'static str,
    /// Where decisions are posted, under the endpoint.
    pub path: &'static str,
    /// Where the models are listed (`{"models": [{"name"}]}` or `{"data": [{"id"}]}`).
    pub models_path: &'static str,
    pub key_header: KeyHeader,
    pub model: &'static str,
    /// What the request's `model` is prefixed with (Gemini's `models/`).
    pub model_prefix: &'static str,
    /// Whether an option without a description goes as `null` (else as `""`: Gemini types a
    /// choice's criteria as strings).
    pub null_description: bool,
    /// Whether `model` must be one the models list names (the open servers all take the SDKs'
    /// default name, listed or not).
    pub listed_model_only: bool,
    /// Whether the state goes as `input`, a string (a context object as its JSON text), as
    /// Gemini's API names and types it; else as `state`, as the context came.
    pub state_as_input: bool,
}

/// Any System One server.
pub const SYSTEM_ONE: Dialect = Dialect {
    kind: "systemone",
    service: "System One",
    endpoint: DEFAULT_ENDPOINT,
    path: "/v1/systemone",
    models_path: "/v1/models",
    key_header: KeyHeader::Bearer,
    model: DEFAULT_MODEL,
    model_prefix: "",
    null_description: true,
    listed_model_only: false,
    state_as_input: false,
};

/// Gemini's Decisions API, as the `google-genai` SDK 3.3.0 calls it with an API key (its default
/// API version, `v1`): `POST /v1/decisions` and `GET /v1/models`, the key in `x-goog-api-key`, the
/// model as `models/<name>`, the state as `input`, a string (the SDK's types refuse an object).
pub const GEMINI: Dialect = Dialect {
    kind: "gemini",
    service: "Gemini Decisions API",
    endpoint: "https://generativelanguage.googleapis.com",
    path: "/v1/decisions",
    models_path: "/v1/models",
    key_header: KeyHeader::Named("x-goog-api-key"),
    model: "gemini-decision-1",
    model_prefix: "models/",
    null_description: false,
    listed_model_only: true,
    state_as_input: true,
};

/// OpenRouter's decisions route: several vendors' decision models behind one key.
pub const OPENROUTER: Dialect = Dialect {
    kind: "openrouter",
    service: "OpenRouter decisions",
    endpoint: "https://openrouter.ai",
    path: "/api/alpha/decisions",
    models_path: "/api/v1/models",
    key_header: KeyHeader::Bearer,
    model: "typesafe/jev-1.14",
    model_prefix: "",
    null_description: true,
    listed_model_only: true,
    state_as_input: false,
};

pub struct SystemOne {
    dialect: &'static Dialect,
    /// `systemone`, or the instance's name.
    name: String,
    endpoint: Option<Endpoint>,
    model: String,
    max_options: usize,
    timeout: Option<Duration>,
    /// A routing-sized decision's time, measured at install (`latency_ms`).
    latency: Option<Duration>,
    api_key: Option<String>,
}

// Every failure is made here, under the provider's name, with the cause its fix is chosen by.
fn failed(cause: Cause, name: &str, detail: String) -> Failure {
    Failure::new(cause, format!("{name}: {detail}"))
}

fn malformed(name: &str, detail: String) -> Failure {
    failed(Cause::Malformed, name, detail)
}

/// A transport failure (refused, timed out) under this provider's name.
fn transport(name: &str, f: Failure) -> Failure {
    f.prefixed(&format!("{name}: "))
}

impl SystemOne {
    pub fn new(s: &Settings) -> Self {
        Self::with_dialect(s, &SYSTEM_ONE)
    }

    pub fn with_dialect(s: &Settings, dialect: &'static Dialect) -> Self {
        let name = s.section().strip_prefix("providers.").unwrap_or(dialect.kind).to_string();
        // An instance names its kind; the built-in table need not.
        if s.has("kind") {
            let kind = s.string("kind", "systemone");
            if kind.trim() != "systemone" {
                s.error(format!("{}.kind must be \"systemone\", got {kind:?}", s.section()));
            }
        }
        let endpoint = Endpoint::from_settings(s, dialect.endpoint);
        let api_key = answers::api_key(s);
        if api_key.is_some() && endpoint.as_ref().is_some_and(Endpoint::is_plain_remote) {
            s.error(format!(
                "{}: an API key is never sent over plain http:// to another machine; use an https:// endpoint",
                s.section()
            ));
        }
        let timeout_s = s.f64("timeout_s", 0.0, 0.0, 600.0);
        let latency_ms = s.u64("latency_ms", 0, 0, 600_000);
        Self {
            dialect,
            latency: (latency_ms > 0).then(|| Duration::from_millis(latency_ms)),
            endpoint,
            model: s.string("model", dialect.model).trim().to_string(),
            max_options: s.u64("max_options", API_MAX_OPTIONS, 2, API_MAX_OPTIONS) as usize,
            timeout: (timeout_s > 0.0).then(|| Duration::from_secs_f64(timeout_s)),
            api_key,
            name,
        }
    }

    fn endpoint(&self) -> Result<&Endpoint, Failure> {
        self.endpoint
            .as_ref()
            .ok_or_else(|| failed(Cause::BadEndpoint, &self.name, "the endpoint is not usable".into()))
    }

    fn key_var(&self) -> String {
        answers::key_var(&self.name)
    }

    /// The failure for an answer other than 200, each kind with its own cause (and so its own fix).
    fn refused(&self, reply: &Reply, deadline: Instant) -> Failure {
        let name = &self.name;
        let detail = http::error_detail(reply);
        let shared = answers::keyed_refusal(name, reply.status, self.api_key.is_some(), &detail);
        let unknown = match (&shared, reply.status) {
            (None, 400 | 404 | 422) => self.unknown_model(reply, deadline),
            _ => None,
        };
        let (cause, said) = match (shared, unknown, reply.status) {
            (Some(refusal), _, _) => refusal,
            (None, Some(offered), _) => {
                (Cause::UnknownModel, format!("the server has no model {:?}; {offered} ({detail})", self.model))
            }
            (None, None, s @ (404 | 405)) => (
                Cause::HttpStatus(s),
                format!(
                    "the server at {} has no POST {}: is it a {} server? ({detail})",
                    self.base(),
                    self.dialect.path,
                    self.dialect.service
                ),
            ),
            (None, None, 422) => {
                (Cause::HttpStatus(422), format!("the server refused the request as invalid ({detail})"))
            }
            (None, None, s) => (Cause::HttpStatus(s), detail),
        };
        failed(cause, name, said)
    }

    /// Whether a 400, 404 or 422 refused the model, and if so what the server offers instead.
    /// Decided from what the server says in fields and lists, never from its words: a typed field
    /// that names the model ([`names_the_model`]), or else a model list (`GET /v1/models`) that
    /// does not name it. The list is asked on a 400, and on a 404 from a service at a fixed route (a
    /// 404 from an open server is most often one without the route, whose list is of its own
    /// models); the SDKs' default name counts as served where every server takes it.
    fn unknown_model(&self, reply: &Reply, deadline: Instant) -> Option<String> {
        let listed = || self.models(deadline.saturating_duration_since(Instant::now()));
        if names_the_model(reply) {
            return Some(match listed() {
                Ok(names) if !names.is_empty() => format!("it offers: {}", names.join(", ")),
                Ok(_) => "its /v1/models lists none".to_string(),
                Err(why) => format!("its models could not be listed ({why})"),
            });
        }
        let list_decides = reply.status == 400 || self.dialect.listed_model_only;
        let default_served = self.model == DEFAULT_MODEL && !self.dialect.listed_model_only;
        if !list_decides || default_served || names_another_field(reply) {
            return None;
        }
        match listed() {
            Ok(names) if !names.is_empty() && !names.contains(&self.model) => {
                Some(format!("it offers: {}", names.join(", ")))
            }
            _ => None,
        }
    }

    fn base(&self) -> String {
        self.endpoint.as_ref().map(|e| e.base().to_string()).unwrap_or_default()
    }

    /// The model names `GET /v1/models` lists.
    fn models(&self, timeout: Duration) -> Result<Vec<String>, String> {
        if timeout.is_zero() {
            return Err("no time left".to_string());
        }
        let endpoint = self.endpoint().map_err(|f| f.detail().to_string())?;
        let reply =
            endpoint.get_keyed(self.dialect.models_path, timeout, self.key()).map_err(|f| f.detail().to_string())?;
        if reply.status != 200 {
            return Err(http::error_detail(&reply));
        }
        let listed = listed_models(&reply.json).ok_or("no `models` list")?;
        Ok(listed.into_iter().map(String::from).collect())
    }

    /// The key and the header it goes in.
    fn key(&self) -> Option<(KeyHeader, &str)> {
        self.api_key.as_deref().map(|k| (self.dialect.key_header, k))
    }

    /// Reads one answer as the question was asked.
    fn read(&self, ask: Ask, q: &super::Question, a: &Value) -> Result<EngineAnswer, wire::Broken> {
        let said = a.get("type").and_then(Value::as_str).unwrap_or("");
        if said != ask.type_name() {
            return Err(wire::Broken {
                rule: "response.answer-type",
                what: format!("it says type {said:?} for a {} question", ask.type_name()),
            });
        }
        match ask {
            Ask::Noul => {
                let p = wire::noul(a, "noul")?;
                // yes_no() matched when the question was asked as a noul.
                Ok(wire::yes_no_answer(&self.name, &self.model, &q.options, p).unwrap_or_else(|| {
                    EngineAnswer::Passed { cause: PassCause::NotYesNo, reason: "not a yes/no question".into() }
                }))
            }
            Ask::Choice => {
                let (at, probs) = wire::strict_choice(a, &q.options)?;
                Ok(answers::choice_answer(&self.name, &self.model, &q.options, &probs, Some(&q.options[at])))
            }
        }
    }
}

/// The model names a models list gives: System One's and Gemini's `{"models": [{"name"}]}` (Gemini's
/// names without their `models/`), or OpenAI's and OpenRouter's `{"data": [{"id"}]}`.
fn listed_models(json: &Value) -> Option<Vec<&str>> {
    let (list, field) = match (json.get("models"), json.get("data")) {
        (Some(Value::Array(l)), _) => (l, "name"),
        (_, Some(Value::Array(l))) => (l, "id"),
        _ => return None,
    };
    Some(
        list.iter()
            .filter_map(|m| m.get(field).and_then(Value::as_str))
            .map(|n| n.strip_prefix("models/").unwrap_or(n))
            .collect(),
    )
}

/// Whether an error's typed fields say the model is unknown: the System One API's
/// `detail.error_type` `api_usage_error` (its error for an unknown model: jevcompat 0.1.1's
/// reference server answers 400 `{"detail": {"error_type": "api_usage_error", "message": "Unknown
/// model: NAME"}}`, `system1 serve` a 404 of the same type), OpenAI's `code` `model_not_found`, vLLM's `type` `NotFoundError`, a 404 whose
/// `param` is `model`, or laya-serve 0.2.1's `field` `model`. llama.cpp's router says it only in
/// words (400 `invalid_request_error` "model not found"), and the reference server's 404
/// `not_found` is the same for a model and a route: those are left to the model list.
fn names_the_model(reply: &Reply) -> bool {
    let error = reply.json.get("error");
    let field = |k: &str| error.and_then(|e| e.get(k)).and_then(Value::as_str).unwrap_or("");
    let kind = reply.json.get("detail").and_then(|d| d.get("error_type")).and_then(Value::as_str);
    kind == Some("api_usage_error")
        || field("code") == "model_not_found"
        || field("type") == "NotFoundError"
        || (reply.status == 404 && field("param") == "model")
        || field("field") == "model"
}

/// Whether an error names a request field other than the model (`param` or `field`): then the
/// model is not what it refused, whatever the model list says.
fn names_another_field(reply: &Reply) -> bool {
    let error = reply.json.get("error");
    ["param", "field"]
        .iter()
        .filter_map(|k| error.and_then(|e| e.get(*k)).and_then(Value::as_str))
        .any(|named| named != "model")
}

impl Provider for SystemOne {
    fn name(&self) -> &str {
        &self.name
    }

    fn model(&self) -> String {
        self.model.clone()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::any(self.max_options, true).at(self.endpoint.as_ref())
    }

    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    fn measured_latency(&self) -> Option<Duration> {
        self.latency
    }

    fn decide(&self, request: &EngineRequest, timeout: Duration) -> Result<Vec<EngineAnswer>, Failure> {
        answers::check_option_limit(&self.name, request, self.max_options, " (the System One API takes at most 255)")?;
        // A server that refuses some questions of the request (a 422 whose every complaint is
        // about one of them: a question type it does not serve, say) is asked the others again;
        // the ones it refused pass on to the next engine.
        answers::in_rounds(&self.name, request, timeout, |asked, remaining, deadline| {
            self.ask(asked, remaining, deadline)
        })
    }

    fn health(&self, timeout: Duration) -> Probe {
        self.probe(timeout)
    }

    fn fix(&self, failure: &Failure) -> Fix {
        self.fix_for(failure)
    }
}

/// The questions a 422 refuses, when each of its complaints is about one question of the request
/// (`loc` `["body", "questions", <id>, ...]`): index and the server's words. `None` when any
/// complaint is about something else, which makes the whole request invalid.
fn refused_questions(name: &str, reply: &Reply, ids: &[String]) -> Option<Vec<(usize, String)>> {
    let complaints = reply.json.get("detail")?.as_array().filter(|c| !c.is_empty())?;
    let mut refused: Vec<(usize, String)> = Vec::new();
    for c in complaints {
        let loc = c.get("loc")?.as_array()?;
        let (Some("body"), Some("questions"), Some(id)) = (
            loc.first().and_then(Value::as_str),
            loc.get(1).and_then(Value::as_str),
            loc.get(2).and_then(Value::as_str),
        ) else {
            return None;
        };
        let at = ids.iter().position(|i| i == id)?;
        let msg = c.get("msg").and_then(Value::as_str).unwrap_or("invalid");
        if !refused.iter().any(|(j, _)| *j == at) {
            let msg = crate::text::printable(msg, 300);
            refused.push((at, format!("{name} refuses this question (HTTP 422: {msg})")));
        }
    }
    Some(refused)
}

/// The most bytes a reply to `request` can need: the envelope and usage, and for each question its
/// answer, with every option named in its probabilities (each option's text counted six times, as
/// if every character were escaped). A reply past this holds what nobody asked for, and is not read.
fn reply_cap(request: &EngineRequest) -> u64 {
    let answers: u64 =
        request.questions.iter().map(|q| 1024 + q.options.iter().map(|o| 64 + 6 * o.len() as u64).sum::<u64>()).sum();
    (64 * 1024 + answers).min(http::MAX_REPLY_BYTES)
}

impl SystemOne {
    /// One request for every question of `request`.
    fn ask(&self, request: &EngineRequest, timeout: Duration, deadline: Instant) -> Result<Round, Failure> {
        let name = &self.name;
        let ids = answers::question_ids(request);
        let asks: Vec<Ask> = request
            .questions
            .iter()
            .map(|q| if answers::yes_no(&q.options).is_some() { Ask::Noul } else { Ask::Choice })
            .collect();
        let mut questions = Map::new();
        for ((id, q), ask) in ids.iter().zip(&request.questions).zip(&asks) {
            let mut asked = wire::question(*ask, q, wire::descriptions(request, &q.options));
            if !self.dialect.null_description
                && let Some(Value::Object(criteria)) = asked.get_mut("criteria")
            {
                criteria.values_mut().filter(|d| d.is_null()).for_each(|d| *d = Value::String(String::new()));
            }
            questions.insert(id.clone(), asked);
        }
        let model = format!("{}{}", self.dialect.model_prefix, self.model);
        let mut body = wire::body(answers::state_of(request), Some(&model), questions);
        if self.dialect.state_as_input
            && let Some(fields) = body.as_object_mut()
            && let Some(state) = fields.shift_remove("state")
        {
            let text = match state {
                Value::String(s) => s,
                other => other.to_string(),
            };
            fields.shift_insert(0, "input".into(), Value::String(text));
        }
        let reply = self
            .endpoint()?
            .post_capped(self.dialect.path, &body, timeout, self.key(), reply_cap(request))
            .map_err(|f| transport(name, f))?;
        if reply.status == 422
            && let Some(refused) = refused_questions(name, &reply, &ids)
        {
            return Ok(Round::Refused(refused));
        }
        if reply.status != 200 {
            return Err(self.refused(&reply, deadline));
        }
        if reply.json.is_null() && reply.text.trim() != "null" {
            return Err(malformed(name, wire::unparsed(&reply.text).to_string()));
        }
        // Gemini's content filter: no answers, and why.
        if let Some(reason) = reply.json.pointer("/prompt_feedback/block_reason").and_then(Value::as_str)
            && wire::answers_of(&reply.json).is_none()
        {
            let why = format!("{name} blocked the input ({})", crate::text::printable(reason, 60));
            return Ok(Round::Refused((0..ids.len()).map(|i| (i, why.clone())).collect()));
        }
        let Some(got) = wire::answers_of(&reply.json) else {
            let b = wire::Broken { rule: "response.envelope", what: "there is no `answers` object".into() };
            return Err(malformed(name, b.to_string()));
        };
        let extra: Vec<&String> = got.keys().filter(|k| !ids.contains(k)).collect();
        let mut note = (!extra.is_empty()).then(|| {
            let mut listed: Vec<String> = extra.iter().take(5).map(|k| format!("{k:?}")).collect();
            if extra.len() > listed.len() {
                listed.push(format!("and {} more", extra.len() - listed.len()));
            }
            format!(
                "{name}: ignored answers to questions nobody asked ({}; the server breaks response.answer-ids)",
                listed.join(", ")
            )
        });
        let mut out = Vec::with_capacity(request.questions.len());
        for ((id, q), ask) in ids.iter().zip(&request.questions).zip(&asks) {
            let Some(a) = got.get(id) else {
                out.push(EngineAnswer::Passed {
                    cause: PassCause::LeftOut,
                    reason: format!("{name} left the answer out (it breaks response.answer-ids)"),
                });
                continue;
            };
            let mut answer =
                self.read(*ask, q, a).map_err(|b| malformed(name, format!("the answer to {:?} {b}", q.key)))?;
            if let Some(n) = note.take() {
                answer = answer.with_detail(n);
            }
            out.push(answer);
        }
        Ok(Round::Answered(out))
    }

    fn probe(&self, timeout: Duration) -> Probe {
        let base = self.base();
        let what = format!("{} at {base}", self.name);
        let endpoint = match self.endpoint() {
            Ok(e) => e,
            Err(f) => return Probe::Down(f),
        };
        let reply = match endpoint.get_keyed(self.dialect.models_path, timeout, self.key()) {
            Ok(r) => r,
            Err(f) => return Probe::Down(f.prefixed(&format!("{what}: "))),
        };
        let listed = listed_models(&reply.json);
        match (reply.status, listed) {
            (401 | 403, _) => {
                let why = if self.api_key.is_some() {
                    "refuses the API key".to_string()
                } else {
                    format!("wants an API key: set {}", self.key_var())
                };
                let detail = format!("{what} {why} ({})", http::error_detail(&reply));
                Probe::Down(Failure::new(Cause::Unauthorised, detail))
            }
            (200, Some(names)) if names.iter().any(|n| *n == self.model) => {
                Probe::up(format!("{what} is up and offers {}", self.model))
            }
            // Every server of the API accepts the SDKs' default name, listed or not.
            (200, Some(names)) if self.model == DEFAULT_MODEL && !self.dialect.listed_model_only => {
                Probe::up(format!("{what} is up (models: {}); {DEFAULT_MODEL} takes its default", names.join(", ")))
            }
            (200, Some(names)) => Probe::Down(Failure::new(
                Cause::UnknownModel,
                format!("{what} is up, but does not offer the model {:?}; it offers: {}", self.model, names.join(", ")),
            )),
            (404, _) => Probe::up(format!(
                "{what} answers, but lists no models (no GET {}); decisions will tell",
                self.dialect.models_path
            )),
            _ => Probe::Down(http::status_failure(&format!("{what}: "), &reply)),
        }
    }

    /// The fixes for what goes wrong with a System One server, each its own: what the person
    /// changes in this provider's table, or checks on the server.
    fn fix_for(&self, failure: &Failure) -> Fix {
        let name = &self.name;
        match failure.cause {
            Cause::Unauthorised => Fix::new(format!(
                "set {} (or api_key_file in [providers.{name}]) to the server's key, in the environment of Claude \
                 Code and the shell; a hosted server needs an https:// endpoint for it",
                self.key_var()
            )),
            Cause::UnknownModel if !self.dialect.listed_model_only => Fix::new(format!(
                "set [providers.{name}] model to one the server lists (the error names them), or remove it to use \
                 {DEFAULT_MODEL}, which every server of the API takes"
            )),
            Cause::UnknownModel => Fix::new(format!(
                "set [providers.{name}] model to one the service lists (GET {}{}), or remove it for {}",
                self.base(),
                self.dialect.models_path,
                self.dialect.model
            )),
            Cause::HttpStatus(422) => Fix::new(format!(
                "the server refused the request as invalid (its detail says why): it may not speak the System One API \
                 in full; check it with `jevcompat test {}`",
                self.base()
            )),
            Cause::HttpStatus(404 | 405) => Fix::new(format!(
                "point [providers.{name}] endpoint at the root of a {} server (the provider calls {} and {} under it)",
                self.dialect.service, self.dialect.path, self.dialect.models_path
            )),
            // llama.cpp's server and Ollama answer 501 when their model has no decision head.
            Cause::HttpStatus(501) => Fix::new(format!(
                "the server's model is not a decision model: start llama-server with a decision-model GGUF (the \
                 System One API reads a decision head, which a plain language model lacks), or in Ollama use a model \
                 whose `ollama show` lists the decision capability, and set [providers.{name}] model to it"
            )),
            Cause::HttpStatus(500..=599) => {
                Fix::new("the server failed inside: check its log, and that its model loaded").see_log()
            }
            Cause::Timeout => Fix::new(format!(
                "the server is slow: raise [providers.{name}] timeout_s (a hosted or GPU server may need more than \
                 [gateway] timeout_s), or check its load"
            )),
            Cause::Malformed => Fix::new(format!(
                "the server breaks a rule of the System One API (the message names it): check it with `jevcompat \
                 test {}` and tell its maintainers; until it is fixed, put another engine first in the chain",
                self.base()
            )),
            _ => generic_fix(name, failure),
        }
    }
}

#[cfg(test)]
mod tests;
