//! Ollama (0.12.11 or later, the first with logprobs): any local chat model as a decision engine.
//!
//! One `POST /api/chat` per question (a chat model has no one-pass mode), each within the time
//! left of the attempt. The options are labelled `A`..`T` in the prompt (hence at most 20: that is
//! the `top_logprobs` ceiling) and the model generates one token at temperature 0. Each option's
//! probability is the summed probability of the top-20 first tokens that normalise to its label
//! (`"A"`, `" A"`, `"(A"` add up), renormalised over the labels. The share of the first token's
//! probability that went to any label, the coverage, is reported in `detail`; below `min_coverage`
//! (default 0.5: the model mostly started with something else, such as "The" or "**") the answer
//! abstains. Yes/no questions are asked as yes or no, read from the `yes` and `no` tokens.
//!
//! `think: false` is sent only to models whose `/api/show` lists the `thinking` capability (others
//! may refuse the field); the answer is looked up once and kept. A server that returns no
//! `logprobs` is too old, and that is said plainly rather than guessed around.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::answers;
use super::http::{self, Endpoint};
use super::{Capabilities, Cause, EngineAnswer, EngineRequest, Failure, Fix, Probe, Provider, Question};
use crate::config::Settings;

pub const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:11434";
pub const DEFAULT_MODEL: &str = "gemma4:e4b";
const LABELS: [&str; 20] =
    ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R", "S", "T"];

pub struct Ollama {
    endpoint: Option<Endpoint>,
    model: String,
    max_options: usize,
    min_coverage: f64,
    num_ctx: u64,
    /// Whether the model lists the `thinking` capability, once `/api/show` has said.
    thinking: Mutex<Option<bool>>,
}

impl Ollama {
    pub fn new(s: &Settings) -> Self {
        let endpoint = Endpoint::from_settings(s, DEFAULT_ENDPOINT);
        let model = s.string("model", DEFAULT_MODEL).trim().to_string();
        if model.is_empty() {
            s.error(format!("{}.model must name an Ollama model (see `ollama list`)", s.section()));
        }
        Self {
            endpoint,
            model,
            max_options: s.u64("max_options", 20, 2, 20) as usize,
            min_coverage: s.f64("min_coverage", 0.5, 0.0, 1.0),
            num_ctx: s.u64("num_ctx", 0, 0, 1_048_576),
            thinking: Mutex::new(None),
        }
    }

    fn endpoint(&self) -> Result<&Endpoint, Failure> {
        self.endpoint.as_ref().ok_or_else(|| Failure::new(Cause::BadEndpoint, "ollama: the endpoint is not usable"))
    }

    /// Whether `/api/tags`' answer lists the model (`NAME` is `NAME:latest`).
    fn pulled(&self, tags: &Value) -> bool {
        let names: Vec<&str> = tags
            .get("models")
            .and_then(Value::as_array)
            .map(|m| {
                m.iter().flat_map(|e| [e.get("name"), e.get("model")]).flatten().filter_map(Value::as_str).collect()
            })
            .unwrap_or_default();
        let latest = format!("{}:latest", self.model);
        names.iter().any(|n| *n == self.model || (!self.model.contains(':') && *n == latest))
    }

    /// An error reply: a model to pull, or the status. Ollama answers a model it does not have
    /// with a 404 on every route that takes one, and says which only in words (`{"error": "model
    /// \"NAME\" not found, try pulling it first"}`), as it does a route it does not have; so a
    /// 404 is a model to pull when Ollama's own list (`GET /api/tags`) does not name the model,
    /// never by its words.
    fn refusal(&self, reply: &http::Reply, timeout: Duration) -> Failure {
        let failure = http::status_failure("ollama: ", reply);
        let unlisted = reply.status == 404
            && !timeout.is_zero()
            && self.endpoint().ok().and_then(|e| e.get("/api/tags", timeout, None).ok()).is_some_and(|tags| {
                tags.status == 200 && tags.json.get("models").is_some_and(Value::is_array) && !self.pulled(&tags.json)
            });
        if unlisted { Failure::new(Cause::ModelMissing, failure.detail) } else { failure }
    }

    /// Whether the model thinks (so `think: false` must be sent), asked once of `/api/show`.
    fn thinks(&self, timeout: Duration) -> Result<bool, Failure> {
        if let Some(known) = self.thinking.lock().ok().and_then(|g| *g) {
            return Ok(known);
        }
        let started = Instant::now();
        let reply = self.endpoint()?.post("/api/show", &json!({"model": self.model}), timeout, None)?;
        if reply.status != 200 {
            return Err(self.refusal(&reply, timeout.saturating_sub(started.elapsed())));
        }
        let thinks = reply
            .json
            .get("capabilities")
            .and_then(Value::as_array)
            .is_some_and(|c| c.iter().any(|v| v.as_str() == Some("thinking")));
        if let Ok(mut g) = self.thinking.lock() {
            *g = Some(thinks);
        }
        Ok(thinks)
    }

    fn prompt(context: Option<&Value>, q: &Question) -> (String, String) {
        let mut user = String::new();
        match context {
            Some(Value::String(s)) => user.push_str(&format!("Text: {s}\n")),
            Some(v) if !v.is_null() => user.push_str(&format!("Text: {v}\n")),
            _ => {}
        }
        user.push_str(&format!("Question: {}\n", q.text));
        if answers::yes_no(&q.options).is_some() {
            user.push_str("Answer with yes or no.");
            return ("You are a classifier. Reply with yes or no only.".to_string(), user);
        }
        for (label, option) in LABELS.iter().zip(&q.options) {
            user.push_str(&format!("{label}) {option}\n"));
        }
        let n = q.options.len();
        user.push_str(&format!("Answer with {} or {}.", LABELS[..n - 1].join(", "), LABELS[n - 1]));
        ("You are a classifier. Reply with one letter only.".to_string(), user)
    }

    fn ask(
        &self,
        context: Option<&Value>,
        q: &Question,
        thinks: bool,
        timeout: Duration,
    ) -> Result<EngineAnswer, Failure> {
        let (system, user) = Self::prompt(context, q);
        let mut options = json!({"temperature": 0, "num_predict": 1, "seed": 0});
        if self.num_ctx > 0 {
            options["num_ctx"] = json!(self.num_ctx);
        }
        let mut body = json!({
            "model": self.model,
            "stream": false,
            "logprobs": true,
            "top_logprobs": 20,
            "options": options,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        });
        if thinks {
            body["think"] = json!(false);
        }
        let endpoint = self.endpoint()?;
        let started = Instant::now();
        let reply = endpoint.post("/api/chat", &body, timeout, None)?;
        if reply.status != 200 {
            return Err(self.refusal(&reply, timeout.saturating_sub(started.elapsed())));
        }
        let top = reply
            .json
            .get("logprobs")
            .and_then(Value::as_array)
            .and_then(|l| l.first())
            .and_then(|first| first.get("top_logprobs"))
            .and_then(Value::as_array);
        let Some(top) = top else {
            return Err(Failure::new(
                Cause::EngineTooOld,
                "ollama sent no logprobs: System-1 needs Ollama 0.12.11 or later (check `ollama --version`)",
            ));
        };
        let tokens: Vec<(String, f64)> = top
            .iter()
            .filter_map(|t| Some((t.get("token")?.as_str()?.to_string(), t.get("logprob")?.as_f64()?)))
            .collect();
        Ok(self.read_labels(q, &tokens))
    }

    /// Turns the first token's top log-probabilities into an answer over the options.
    fn read_labels(&self, q: &Question, tokens: &[(String, f64)]) -> EngineAnswer {
        let yes_no = answers::yes_no(&q.options);
        let labels: Vec<String> = match yes_no {
            Some((yes, _)) => {
                let mut l = vec!["no".to_string(); 2];
                l[yes] = "yes".to_string();
                l
            }
            None => LABELS[..q.options.len()].iter().map(|s| s.to_string()).collect(),
        };
        let mut mass = vec![0.0f64; labels.len()];
        for (token, logprob) in tokens {
            let t = normalise(token);
            let t = if yes_no.is_some() { t.to_lowercase() } else { t.to_uppercase() };
            if let Some(i) = labels.iter().position(|l| *l == t) {
                mass[i] += logprob.exp();
            }
        }
        let coverage: f64 = mass.iter().sum();
        let detail = format!("label coverage {:.4}", coverage);
        if coverage < self.min_coverage || coverage <= 0.0 {
            let first = tokens.first().map(|(t, _)| t.as_str()).unwrap_or("");
            return EngineAnswer::abstained(format!(
                "ollama {}: only {:.2} of the first token's probability went to the answer labels (it started with {first:?}), below {:.2}; too little to trust",
                self.model, coverage, self.min_coverage
            ))
            .with_detail(detail);
        }
        let probs: Vec<f64> = mass.iter().map(|m| answers::round4(m / coverage)).collect();
        answers::choice_answer("ollama", &self.model, &q.options, &probs, None).with_detail(detail)
    }
}

/// A token as a label: whitespace, SentencePiece's word marker and surrounding `( ) . : * "` removed.
fn normalise(token: &str) -> String {
    token
        .trim()
        .trim_start_matches('\u{2581}')
        .trim_matches(|c: char| "().:*\"".contains(c) || c.is_whitespace())
        .to_string()
}

impl Provider for Ollama {
    fn name(&self) -> &'static str {
        "ollama"
    }

    fn model(&self) -> String {
        self.model.clone()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::any(self.max_options, false).at(self.endpoint.as_ref())
    }

    fn decide(&self, request: &EngineRequest, timeout: Duration) -> Result<Vec<EngineAnswer>, Failure> {
        answers::check_option_limit("ollama", request, self.max_options, " (one letter label each, A to T)")?;
        let deadline = Instant::now() + timeout;
        let thinks = self.thinks(answers::remaining(deadline, timeout)?)?;
        let mut out = Vec::with_capacity(request.questions.len());
        for q in &request.questions {
            let left = answers::remaining(deadline, timeout)?;
            out.push(self.ask(request.context.as_ref(), q, thinks, left)?);
        }
        Ok(out)
    }

    fn fix(&self, failure: &Failure) -> Fix {
        match failure.cause {
            Cause::Refused if crate::paths::find_on_path(&["ollama", "ollama.exe"]).is_none() => Fix::new(
                "Ollama is not installed (no `ollama` on PATH): install it from https://ollama.com, then `ollama pull` \
                 the model",
            ),
            Cause::Refused => Fix::new("start Ollama (`ollama serve`, or its desktop app)"),
            Cause::EngineTooOld => {
                Fix::new("upgrade Ollama to 0.12.11 or later (older versions give no logprobs), then restart it")
            }
            Cause::ModelMissing => Fix::new(format!("pull the model: `ollama pull {}`", self.model)),
            _ => super::failure::generic_fix(self.name(), failure),
        }
    }

    fn health(&self, timeout: Duration) -> Probe {
        let endpoint = match self.endpoint() {
            Ok(e) => e,
            Err(f) => return Probe::Down(f),
        };
        let base = endpoint.base().to_string();
        let reply = match endpoint.get("/api/tags", timeout, None) {
            Ok(r) if r.status == 200 => r,
            Ok(r) => return Probe::Down(http::status_failure(&format!("ollama at {base}: "), &r)),
            Err(f) => return Probe::Down(f.prefixed(&format!("ollama at {base}: "))),
        };
        if !self.pulled(&reply.json) {
            return Probe::Down(Failure::new(
                Cause::ModelMissing,
                format!("ollama at {base} is up, but {} is not pulled (run `ollama pull {}`)", self.model, self.model),
            ));
        }
        let version = endpoint
            .get("/api/version", timeout, None)
            .ok()
            .and_then(|r| r.json.get("version").and_then(Value::as_str).map(String::from));
        match version {
            Some(v) if !at_least(&v, [0, 12, 11]) => Probe::Down(Failure::new(
                Cause::EngineTooOld,
                format!("ollama {v} at {base} is too old: logprobs need 0.12.11 or later"),
            )),
            v => Probe::up(format!(
                "ollama {} at {base} has {}",
                v.as_deref().unwrap_or("(version unknown)"),
                self.model
            )),
        }
    }
}

/// Whether a version string like `0.12.11` (or `0.13.0-rc1`) is at least `min`.
fn at_least(version: &str, min: [u64; 3]) -> bool {
    let parts: Vec<u64> =
        version.trim_start_matches('v').split(['.', '-', '+']).take(3).map(|p| p.parse().unwrap_or(0)).collect();
    let get = |i: usize| parts.get(i).copied().unwrap_or(0);
    [get(0), get(1), get(2)] >= min
}

#[cfg(test)]
mod tests;
