//! `system1_decide`: one question through the chain, then the threshold, with every response
//! field of schema "1".

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::Value;

use super::request::{self, SCHEMA_VERSION};
use super::{Answer, DecideResponse, ErrorCode, ErrorInfo, Gateway, PAUSED_RATIONALE, Status, millis};
use crate::logging;
use crate::providers::{EngineRequest, Question};
use crate::state;

impl Gateway {
    /// `system1_decide`: one decision, with every response field of schema "1".
    pub fn decide(&self, args: &Value) -> DecideResponse {
        let started = Instant::now();
        let rid = request::request_id_of(args).unwrap_or_else(new_request_id);
        let mut resp = DecideResponse {
            schema_version: SCHEMA_VERSION.to_string(),
            request_id: rid.clone(),
            status: Status::Error,
            decision: None,
            confidence: None,
            probabilities: None,
            calibrated: false,
            rationale: None,
            provider: None,
            latency_ms: 0.0,
            attempts: Vec::new(),
            error: None,
        };
        let req = match request::validate(args) {
            Ok(r) => r,
            Err(e) => {
                logging::info(&rid, &format!("invalid request: {e}"));
                resp.error = Some(ErrorInfo { code: ErrorCode::InvalidRequest, message: e });
                return self.finish(resp, started);
            }
        };
        if logging::enabled(logging::Level::Debug) {
            logging::debug(&rid, &format!("question: {:?}", req.question));
        }
        if !self.is_ok() {
            resp.error = Some(ErrorInfo { code: ErrorCode::ConfigError, message: self.config_errors.join("; ") });
            return self.finish(resp, started);
        }
        if state::is_paused() {
            resp.status = Status::Abstained;
            resp.rationale = Some(PAUSED_RATIONALE.to_string());
            return self.finish(resp, started);
        }
        let threshold = req.min_confidence.unwrap_or(self.loaded.config.gateway.min_confidence);
        let options = req.options.clone().unwrap_or_else(|| vec!["yes".to_string(), "no".to_string()]);
        let engine_request = EngineRequest {
            context: req.context.clone().map(Value::Object),
            questions: vec![Question { key: "decision".to_string(), text: req.question.clone(), options }],
        };
        let outcome = self.run_chain(&engine_request, &[req.question.trim().to_string()], None, &rid);
        resp.attempts = outcome.attempts;
        resp.provider = outcome.provider;
        match outcome.answers.and_then(|mut a| a.pop()) {
            None => resp.error = outcome.failure,
            Some(Answer::Abstained { rationale }) => {
                resp.status = Status::Abstained;
                resp.rationale = rationale.or_else(|| Some("the engine abstained".to_string()));
            }
            Some(Answer::Decided { decision, confidence, probabilities, calibrated, rationale }) => {
                resp.confidence = Some(confidence);
                resp.probabilities = probabilities;
                resp.calibrated = calibrated;
                resp.rationale = rationale;
                if confidence < threshold {
                    resp.status = Status::Abstained;
                    let why = format!("confidence {confidence:.2} is below the threshold {threshold:.2}");
                    resp.rationale = Some(match resp.rationale.take() {
                        Some(r) => format!("{why} ({r})"),
                        None => why,
                    });
                } else {
                    resp.status = Status::Decided;
                    resp.decision = Some(decision);
                }
            }
        }
        self.finish(resp, started)
    }

    fn finish(&self, mut resp: DecideResponse, started: Instant) -> DecideResponse {
        resp.latency_ms = millis(started.elapsed());
        logging::info(
            &resp.request_id,
            &format!(
                "decide: {} via {} in {} ms{}",
                resp.status.as_str(),
                resp.provider.as_deref().unwrap_or("-"),
                resp.latency_ms,
                resp.error.as_ref().map(|e| format!(" ({:?}: {})", e.code, e.message)).unwrap_or_default()
            ),
        );
        // A request that failed validation was never a decision: counting it would let a caller's
        // mistakes look like an engine failing (doctor warns when most decisions fail).
        if resp.error.as_ref().map(|e| e.code) != Some(ErrorCode::InvalidRequest) {
            state::record_decision(resp.status.as_str(), resp.provider.as_deref(), resp.latency_ms);
        }
        resp
    }
}

/// A request id unique enough for logs: time, process and a counter.
pub fn new_request_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or(0);
    format!("s1-{:x}-{:x}-{n}", t, std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_unique() {
        assert_ne!(new_request_id(), new_request_id());
    }
}
