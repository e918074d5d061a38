//! Any server of OpenAI's Decisions API (`POST /v1/decisions`): OpenAI (`gpt-6-luna`), vLLM 0.33
//! and later, SGLang, LiteLLM, and a team's own server (docs/engines.md#openai-decisions-api).
//! The wire format is [`wire`], which `system1 serve` answers with too.
//!
//! | gateway | Decisions API |
//! |---|---|
//! | yes/no (options `yes`, `no`) | a `predicate`: the probability that the statement holds; yes when it is at least 0.5 |
//! | a choice | a `choice` with `choices: [{value, description?}]`, descriptions from the context |
//! | `context` | `input`, a string (an object or list is sent as its JSON text) |
//! | several questions | one request, each question named by its id; answers come in question order |
//! | `confidence` | the chosen answer's probability; the server's own `confidence` is not used |
//!
//! Answers are held to the API's rules ([`wire::read_reply`]); a reply that breaks one is
//! malformed and falls back whole. A `refusal`, or a question the reply leaves out, passes that
//! question on to the next engine of the chain; the others are used.
//!
//! Several servers can sit side by side: `[providers.<name>]` with `kind = "decisions"` is one more
//! provider of this kind under its own name (its key in `SYSTEM1_<NAME>_API_KEY`).

pub mod wire;

use std::time::Duration;

use serde_json::Value;

use super::answers::{self, Round};
use super::failure::generic_fix;
use super::http::{self, Endpoint, Reply};
use super::{Capabilities, Cause, EngineAnswer, EngineRequest, Failure, Fix, PassCause, Probe, Provider};
use crate::config::Settings;
use wire::{Answer, ChoiceValue, Got, Kind};

/// vLLM's default address: nothing leaves the machine unless the endpoint is set to a hosted one
/// (with `allow_remote = true`).
pub const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:8000/v1";
/// OpenAI's model for the API.
pub const DEFAULT_MODEL: &str = "gpt-6-luna";

pub struct Decisions {
    /// `decisions`, or the instance's name.
    name: String,
    endpoint: Option<Endpoint>,
    model: String,
    max_options: usize,
    timeout: Option<Duration>,
    api_key: Option<String>,
}

fn failed(cause: Cause, name: &str, detail: String) -> Failure {
    Failure::new(cause, format!("{name}: {detail}"))
}

impl Decisions {
    pub fn new(s: &Settings) -> Self {
        let name = s.section().strip_prefix("providers.").unwrap_or("decisions").to_string();
        if s.has("kind") {
            let kind = s.string("kind", "decisions");
            if kind.trim() != "decisions" {
                s.error(format!("{}.kind must be \"decisions\", got {kind:?}", s.section()));
            }
        }
        let endpoint = Endpoint::from_settings(s, DEFAULT_ENDPOINT);
        let api_key = answers::api_key(s);
        if api_key.is_some() && endpoint.as_ref().is_some_and(Endpoint::is_plain_remote) {
            s.error(format!(
                "{}: an API key is never sent over plain http:// to another machine; use an https:// endpoint",
                s.section()
            ));
        }
        let timeout_s = s.f64("timeout_s", 0.0, 0.0, 600.0);
        Self {
            endpoint,
            model: s.string("model", DEFAULT_MODEL).trim().to_string(),
            max_options: s.u64("max_options", wire::MAX_CHOICES as u64, 2, wire::MAX_CHOICES as u64) as usize,
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

    fn base(&self) -> String {
        self.endpoint.as_ref().map(|e| e.base().to_string()).unwrap_or_default()
    }

    /// The request for every question: yes/no as predicates, the rest as choices, each named by
    /// its id.
    fn request(&self, request: &EngineRequest) -> wire::Request {
        let ids = answers::question_ids(request);
        let questions = ids
            .into_iter()
            .zip(&request.questions)
            .map(|(id, q)| {
                let kind = if answers::yes_no(&q.options).is_some() {
                    Kind::Predicate
                } else {
                    let described = super::wire::descriptions(request, &q.options);
                    Kind::Choice(
                        q.options
                            .iter()
                            .map(|o| wire::Choice {
                                value: ChoiceValue::Text(o.clone()),
                                description: described.and_then(|d| d.get(o)).and_then(|d| match d {
                                    Value::Null => None,
                                    Value::String(s) => Some(s.clone()),
                                    other => Some(other.to_string()),
                                }),
                            })
                            .collect(),
                    )
                };
                wire::Question { name: Some(id), instructions: q.text.clone(), kind }
            })
            .collect();
        let input = match answers::state_of(request) {
            Value::String(s) => s,
            other => other.to_string(),
        };
        wire::Request { model: self.model.clone(), input: wire::Input::Text(input), questions }
    }

    /// One request for every question of `request`.
    fn ask(&self, request: &EngineRequest, timeout: Duration) -> Result<Round, Failure> {
        let name = &self.name;
        let asked = self.request(request);
        let reply = self
            .endpoint()?
            .post("/decisions", &asked.to_json(), timeout, self.api_key.as_deref())
            .map_err(|f| f.prefixed(&format!("{name}: ")))?;
        if let Some((i, why)) = refused_question(name, &reply, asked.questions.len()) {
            return Ok(Round::Refused(vec![(i, why)]));
        }
        if reply.status != 200 {
            return Err(self.refused(&reply));
        }
        if reply.json.is_null() {
            let why = super::wire::unparsed(&reply.text).what;
            return Err(failed(Cause::Malformed, name, why));
        }
        let got = wire::read_reply(&reply.json, &asked.questions).map_err(|e| failed(Cause::Malformed, name, e))?;
        Ok(Round::Answered(
            got.into_iter()
                .zip(&request.questions)
                .map(|(g, q)| match g {
                    Got::Missing => EngineAnswer::Passed {
                        cause: PassCause::LeftOut,
                        reason: format!("{name} left the answer out"),
                    },
                    Got::Answer(Answer::Refusal { .. }) => EngineAnswer::Passed {
                        cause: PassCause::Refused,
                        reason: format!("{name} ({}) refused this question", self.model),
                    },
                    Got::Answer(Answer::Predicate { probability, .. }) => {
                        super::wire::yes_no_answer(name, &self.model, &q.options, probability).unwrap_or_else(|| {
                            EngineAnswer::Passed { cause: PassCause::NotYesNo, reason: "not a yes/no question".into() }
                        })
                    }
                    Got::Answer(Answer::Choice { choice, probabilities, .. }) => {
                        let pick = q.options.iter().find(|o| ChoiceValue::Text((*o).clone()) == choice);
                        answers::choice_answer(name, &self.model, &q.options, &probabilities, pick.map(String::as_str))
                    }
                    // Never asked: the gateway asks no scores.
                    Got::Answer(Answer::Score { .. }) => EngineAnswer::Passed {
                        cause: PassCause::Refused,
                        reason: format!("{name} answered with a score"),
                    },
                })
                .collect(),
        ))
    }

    /// The failure for an answer other than 200, each kind with its own cause.
    fn refused(&self, reply: &Reply) -> Failure {
        let detail = http::error_detail(reply);
        let shared = answers::keyed_refusal(&self.name, reply.status, self.api_key.is_some(), &detail);
        let (cause, said) = match (shared, reply.status) {
            (Some(refusal), _) => refusal,
            (None, 400 | 404) if is_unknown_model(reply) => {
                (Cause::UnknownModel, format!("the server has no model {:?} ({detail})", self.model))
            }
            (None, s @ (404 | 405)) => (
                Cause::HttpStatus(s),
                format!(
                    "the server at {} has no POST /decisions: does it serve OpenAI's Decisions API? ({detail})",
                    self.base()
                ),
            ),
            (None, s) => (Cause::HttpStatus(s), detail),
        };
        failed(cause, &self.name, said)
    }
}

/// Whether an error says the model is unknown, from its typed fields: OpenAI's `code`
/// `model_not_found`, vLLM's `type` `NotFoundError`, or a 404 whose `param` is `model`.
fn is_unknown_model(reply: &Reply) -> bool {
    let error = reply.json.get("error");
    let field = |k: &str| error.and_then(|e| e.get(k)).and_then(Value::as_str).unwrap_or("");
    field("code") == "model_not_found"
        || field("type") == "NotFoundError"
        || (reply.status == 404 && field("param") == "model")
}

/// The question a refused request names: a 400 or 422 whose `error.param` is `questions[i]` or
/// inside it (`questions[1].choices`), as OpenAI words its errors and `system1 serve` and SGLang
/// (a label that is not one token) refuse a request for one question. `None` for any other
/// refusal, or a question outside the `asked` ones: the whole request failed.
fn refused_question(name: &str, reply: &Reply, asked: usize) -> Option<(usize, String)> {
    if !matches!(reply.status, 400 | 422) {
        return None;
    }
    let error = reply.json.get("error")?;
    let param = error.get("param")?.as_str()?;
    let (index, _) = param.strip_prefix("questions[")?.split_once(']')?;
    let i: usize = index.parse().ok()?;
    if i >= asked {
        return None;
    }
    let message = error.get("message").and_then(Value::as_str).unwrap_or("invalid");
    let said = crate::text::printable(message, 300);
    Some((
        i,
        format!(
            "{name} refuses this question (HTTP {}: {said}; param {})",
            reply.status,
            crate::text::printable(param, 80)
        ),
    ))
}

impl Provider for Decisions {
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

    fn decide(&self, request: &EngineRequest, timeout: Duration) -> Result<Vec<EngineAnswer>, Failure> {
        let name = &self.name;
        answers::check_option_limit(name, request, self.max_options, " (the Decisions API takes at most 255)")?;
        // A server that refuses the whole request for one question's sake (a 400 or 422 whose
        // `error.param` names `questions[i]`) is asked the others again; the one it refused passes
        // on to the next engine.
        answers::in_rounds(name, request, timeout, |asked, remaining, _| self.ask(asked, remaining))
    }

    fn health(&self, timeout: Duration) -> Probe {
        let what = format!("{} at {}", self.name, self.base());
        let endpoint = match self.endpoint() {
            Ok(e) => e,
            Err(f) => return Probe::Down(f),
        };
        let reply = match endpoint.get("/models", timeout, self.api_key.as_deref()) {
            Ok(r) => r,
            Err(f) => return Probe::Down(f.prefixed(&format!("{what}: "))),
        };
        let listed: Option<Vec<&str>> = reply
            .json
            .get("data")
            .and_then(Value::as_array)
            .map(|l| l.iter().filter_map(|m| m.get("id").and_then(Value::as_str)).collect());
        match (reply.status, listed) {
            (401 | 403, _) => {
                let why = if self.api_key.is_some() {
                    "refuses the API key".to_string()
                } else {
                    format!("wants an API key: set {}", self.key_var())
                };
                Probe::Down(Failure::new(Cause::Unauthorised, format!("{what} {why} ({})", http::error_detail(&reply))))
            }
            (200, Some(names)) if names.contains(&self.model.as_str()) => {
                Probe::up(format!("{what} is up and offers {}", self.model))
            }
            (200, Some(names)) => Probe::Down(Failure::new(
                Cause::UnknownModel,
                format!("{what} is up, but does not offer the model {:?}; it offers: {}", self.model, names.join(", ")),
            )),
            (404, _) => Probe::up(format!("{what} answers, but lists no models (no GET /models); decisions will tell")),
            _ => Probe::Down(http::status_failure(&format!("{what}: "), &reply)),
        }
    }

    fn fix(&self, failure: &Failure) -> Fix {
        let name = &self.name;
        match failure.cause {
            Cause::Unauthorised => Fix::new(format!(
                "set {} (or api_key_file in [providers.{name}]) to the server's key, in the environment of Claude \
                 Code and the shell; a hosted server needs an https:// endpoint for it",
                self.key_var()
            )),
            Cause::UnknownModel => Fix::new(format!(
                "set [providers.{name}] model to one the server lists (GET {}/models), or remove it for {DEFAULT_MODEL}",
                self.base()
            )),
            Cause::HttpStatus(404 | 405) => Fix::new(format!(
                "point [providers.{name}] endpoint at the API root the server's OpenAI clients use (with its /v1: the \
                 provider calls /decisions and /models under it)"
            )),
            Cause::Malformed => Fix::new(format!(
                "the server breaks a rule of the Decisions API (the message names it): tell its maintainers; until it \
                 is fixed, put another engine first in the chain (it is at {})",
                self.base()
            )),
            _ => generic_fix(name, failure),
        }
    }
}

#[cfg(test)]
mod tests;
