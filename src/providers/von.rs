//! Von (`von serve`, von-sdk 1.3.7): `POST /v1/systemone`, `GET /health`.
//!
//! Every question goes in one request (von runs one forward pass per question inside it). A
//! choice is `{"type": "choice", "instructions", "criteria": {option: null}}` (von refuses a list of
//! criteria). The probabilities are von's; the confidence is the chosen option's probability (von's
//! own `confidence` is a Jev-style margin, another scale).
//!
//! Yes/no (options `yes` and `no`) is asked as a `noul` question and read from `noul_raw`, von's
//! calibrated P(yes). The banded `noul` is never used: it always lies in [0.8, 0.85] or
//! [0.15, 0.2], so it would pass any threshold whatever the model thinks. `noul` rather than a
//! two-option choice because a `noul` without criteria runs von's debiasing pass (a second pass
//! with the labels swapped), which cancels the label and position bias a one-pass choice keeps;
//! it costs two passes instead of one. `yes_no = "choice"` asks a two-option choice instead.
//!
//! von has no option cap of its own (2 000 options got it OOM-killed at about 24 GB): the gateway
//! caps options at 256, and this adapter also refuses option lists whose text would overflow von's
//! 8 192-token window. A 422 about weights means the model failed to load.

use std::time::Duration;

use serde_json::{Map, Value};

use super::answers;
use super::http::{self, Endpoint};
use super::wire::{self, Ask, Reading};
use super::{Capabilities, Cause, EngineAnswer, EngineRequest, Failure, Fix, Probe, Provider};
use crate::config::Settings;

pub const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:8777";
pub const DEFAULT_MODEL: &str = "von-1.3";
/// About 6 000 tokens of option text (at ~4 characters a token) leaves room in the 8 192 window.
const MAX_OPTION_CHARS_PER_QUESTION: usize = 24_000;

pub struct Von {
    endpoint: Option<Endpoint>,
    model: String,
    max_options: usize,
    noul_for_yes_no: bool,
    api_key: Option<String>,
}

impl Von {
    pub fn new(s: &Settings) -> Self {
        let endpoint = Endpoint::from_settings(s, DEFAULT_ENDPOINT);
        let yes_no = s.string("yes_no", "noul");
        if yes_no != "noul" && yes_no != "choice" {
            s.error(format!("{}.yes_no must be \"noul\" or \"choice\", got {yes_no:?}", s.section()));
        }
        Self {
            endpoint,
            model: s.string("model", DEFAULT_MODEL).trim().to_string(),
            max_options: s.u64("max_options", 256, 2, 256) as usize,
            noul_for_yes_no: yes_no != "choice",
            api_key: answers::api_key(s),
        }
    }

    fn endpoint(&self) -> Result<&Endpoint, Failure> {
        self.endpoint.as_ref().ok_or_else(|| Failure::new(Cause::BadEndpoint, "von: the endpoint is not usable"))
    }

    fn map_answer(&self, options: &[String], a: &Value) -> Result<EngineAnswer, String> {
        if let (Some((yes, no)), true) = (answers::yes_no(options), self.noul_for_yes_no) {
            let p = match (a.get("noul_raw").and_then(Value::as_f64), a.get("noul").and_then(Value::as_f64)) {
                (Some(raw), _) => raw,
                // A server started with --noul-decision raw may report only `noul`; a banded value
                // is not a probability, so it is refused rather than trusted.
                (None, Some(n)) if !((0.8..=0.85).contains(&n) || (0.15..=0.2).contains(&n)) => n,
                (None, Some(_)) => {
                    return Err(
                        "has only the banded `noul`, not `noul_raw` (start von with --noul-decision raw)".into()
                    );
                }
                (None, None) => return Err("has no noul_raw".into()),
            };
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("has noul_raw {p} outside [0, 1]"));
            }
            let mut probs = vec![0.0; 2];
            probs[yes] = answers::round4(p);
            probs[no] = answers::round4(1.0 - p);
            return Ok(answers::choice_answer("von", &self.model, options, &probs, None));
        }
        let ps = wire::probabilities(a, options, Reading { exact_keys: false }).map_err(|b| b.to_string())?;
        let pick = a.get("choice").and_then(Value::as_str);
        Ok(answers::choice_answer("von", &self.model, options, &ps, pick))
    }
}

/// Whether a 422 says the server could not load its model. von 1.3.7 says so only in words, in the
/// status and shape (`{"detail": "..."}`) it gives an invalid question too: `{"detail": "Failed to
/// load Option-Marker decision weights: could not find local '<checkpoint>/option_marker.pt' and
/// failed to fetch 'option_marker.pt' from Hugging Face Hub ..."}` (recorded from a server started
/// without its checkpoint); this is the one place the adapter reads its words.
fn names_a_model_not_loaded(reply: &http::Reply) -> bool {
    let said = http::error_detail(reply).to_ascii_lowercase();
    said.contains("failed to load") || said.contains("weights")
}

impl Provider for Von {
    fn name(&self) -> &'static str {
        "von"
    }

    fn model(&self) -> String {
        self.model.clone()
    }

    fn capabilities(&self) -> Capabilities {
        // One request carries every question, though von runs one pass per question inside it.
        Capabilities::any(self.max_options, true).at(self.endpoint.as_ref())
    }

    fn decide(&self, request: &EngineRequest, timeout: Duration) -> Result<Vec<EngineAnswer>, Failure> {
        answers::check_option_limit("von", request, self.max_options, "")?;
        for q in &request.questions {
            let chars: usize = q.options.iter().map(|o| o.chars().count()).sum();
            if chars > MAX_OPTION_CHARS_PER_QUESTION {
                return Err(Failure::new(
                    Cause::OverLimit,
                    format!(
                        "von: the options of {:?} are {chars} characters long, more than von's 8192-token window holds (at most {MAX_OPTION_CHARS_PER_QUESTION})",
                        q.key
                    ),
                ));
            }
        }
        let ids = answers::question_ids(request);
        let mut questions = Map::new();
        for (id, q) in ids.iter().zip(&request.questions) {
            // von refuses a list of criteria: the `{option: null}` map.
            let ask =
                if self.noul_for_yes_no && answers::yes_no(&q.options).is_some() { Ask::Noul } else { Ask::Choice };
            questions.insert(id.clone(), wire::question(ask, q, None));
        }
        let body = wire::body(answers::state_of(request), Some(&self.model), questions);
        let reply = self.endpoint()?.post("/v1/systemone", &body, timeout, self.api_key.as_deref())?;
        match reply.status {
            200 => {}
            401 => return Err(answers::auth_failure("von", self.api_key.is_some(), &http::error_detail(&reply))),
            422 => {
                let failure = http::status_failure("von: ", &reply);
                if names_a_model_not_loaded(&reply) {
                    return Err(Failure::new(
                        Cause::ModelBroken,
                        format!(
                            "von failed to load its model (check the checkpoint and the server log): {}",
                            http::error_detail(&reply)
                        ),
                    ));
                }
                return Err(failure);
            }
            _ => return Err(http::status_failure("von: ", &reply)),
        }
        let Some(got) = wire::answers_of(&reply.json) else {
            return Err(Failure::malformed("von: the answer has no `answers` object".to_string()));
        };
        let mut note = reply.json.get("truncation").filter(|t| t.is_object()).map(|t| {
            format!(
                "von cut the state from {} to {} tokens ({})",
                t.get("state_tokens").unwrap_or(&Value::Null),
                t.get("kept_tokens").unwrap_or(&Value::Null),
                t.get("strategy").and_then(Value::as_str).unwrap_or("middle")
            )
        });
        let mut out = Vec::with_capacity(request.questions.len());
        for (id, q) in ids.iter().zip(&request.questions) {
            let Some(a) = got.get(id) else {
                return Err(Failure::malformed(format!("von: no answer for question {:?}", q.key)));
            };
            let mut answer = self
                .map_answer(&q.options, a)
                .map_err(|e| Failure::malformed(format!("von: the answer to {:?} {e}", q.key)))?;
            if let Some(n) = note.take() {
                answer = answer.with_detail(n);
            }
            out.push(answer);
        }
        Ok(out)
    }

    fn fix(&self, failure: &Failure) -> Fix {
        match failure.cause {
            Cause::HttpStatus(422) => Fix::new(
                "the engine refused the request as invalid: its version may not match the adapter (von 1.3.7); \
                 update von, or check the [providers.von] keys",
            )
            .see_log(),
            Cause::ModelBroken => Fix::new(
                "von could not load its model: check the checkpoint von is started with (the server log names the \
                 file), or reinstall von",
            )
            .see_log(),
            _ => super::failure::generic_fix(self.name(), failure),
        }
    }

    fn health(&self, timeout: Duration) -> Probe {
        let endpoint = match self.endpoint() {
            Ok(e) => e,
            Err(f) => return Probe::Down(f),
        };
        let base = endpoint.base().to_string();
        match endpoint.get("/health", timeout, None) {
            Err(f) => Probe::Down(f.prefixed(&format!("von at {base}: "))),
            Ok(r) if r.status != 200 => Probe::Down(http::status_failure(&format!("von at {base}: "), &r)),
            Ok(r) if r.json.get("status").and_then(Value::as_str) != Some("ok") => {
                Probe::Down(Failure::new(Cause::Other, format!("von at {base} did not say ok")))
            }
            Ok(r) => {
                let version = r.json.get("version").and_then(Value::as_str).unwrap_or("?");
                let engine = r.json.get("engine").and_then(Value::as_str).unwrap_or("?");
                Probe::up(format!(
                    "von {version} at {base} is up (engine {engine}); it loads its model on the first decision, which this check does not try"
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests;
