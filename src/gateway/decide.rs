//! `system1_decide`: one question through the chain, then the threshold, with every response
//! field of schema "1".

use std::time::Instant;

use serde_json::Value;

use super::request::{DecideRequest, Invalid};
use super::{
    Answer, Ask, DecideResponse, ErrorCode, ErrorInfo, FALLBACK_FIX, Gateway, Purpose, Query, Refusal, Stability,
    Status, UNANSWERED_RATIONALE, millis, paused_rationale,
};
use crate::providers::{Cause, PassCause, Question};
use crate::{logging, state};

impl Gateway {
    /// `system1_decide`: one decision on a request validated at the edge (`request::validate`).
    pub fn decide(&self, req: &DecideRequest) -> DecideResponse {
        let rid = &req.request_id;
        let mut resp = DecideResponse::new(rid);
        if logging::enabled(logging::Level::Debug) {
            logging::debug(rid, &format!("question: {:?}", req.question));
        }
        let answered = match self.ask(&ask_of(req), rid) {
            Ok(answered) => answered,
            Err(refusal) => {
                refuse(&mut resp, refusal);
                return self.finish(resp, req.received);
            }
        };
        resp.attempts = answered.attempts;
        resp.provider = answered.provider;
        match answered.answers.into_iter().next() {
            // The chain gives one answer per question.
            None => resp.error = Some(ErrorInfo { code: ErrorCode::MalformedResponse, message: "no answer".into() }),
            // Passed for want of a head, by a chain with no engine for free yes/no questions: the fix
            // is such an engine, or the head. Passed for another cause, the fix is the general one.
            Some(Answer::Passed { reason, causes })
                if req.options.is_none() && causes.contains(&PassCause::NoHead) && self.lacks_free_yes_no() =>
            {
                resp.status = Status::Abstained;
                resp.rationale = Some(UNANSWERED_RATIONALE.to_string());
                resp.hint = Some(format!(
                    "no engine in this chain answers free yes/no questions, only those taught to it ({reason}); to \
                     have any yes/no question answered, {FALLBACK_FIX}; {}",
                    crate::providers::local::teach_hint(&req.question)
                ));
            }
            Some(answer) => {
                let threshold = req.min_confidence.unwrap_or(self.loaded.config.gateway.min_confidence);
                apply_threshold(&mut resp, answer, threshold);
            }
        }
        self.finish(resp, req.received)
    }

    /// The answer to a request that failed validation: `invalid_request`, with the request's id.
    pub fn refuse(&self, invalid: &Invalid) -> DecideResponse {
        logging::info(&invalid.request_id, &format!("invalid request: {}", invalid.message));
        let mut resp = DecideResponse::new(&invalid.request_id);
        resp.error = Some(ErrorInfo { code: ErrorCode::InvalidRequest, message: invalid.message.clone() });
        self.finish(resp, invalid.received)
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
        // mistakes look like an engine failing (doctor warns when most decisions fail). Nor is a
        // smoke check's.
        if resp.error.as_ref().map(|e| e.code) != Some(ErrorCode::InvalidRequest)
            && std::env::var_os(super::CHECK_RUN_ENV).is_none()
        {
            let sent = super::response::sent(&resp.attempts);
            state::record_decision(resp.status.as_str(), resp.provider.as_deref(), resp.latency_ms, sent);
        }
        resp
    }
}

/// The one question a request asks (its options, or yes and no), calibrated by its own text.
fn ask_of(req: &DecideRequest) -> Ask {
    let options = req.options.clone().unwrap_or_else(|| vec!["yes".to_string(), "no".to_string()]);
    let question = Question { key: "decision".to_string(), text: req.question.clone(), options };
    let context = req.context.clone().map(Value::Object);
    Ask::new(context, vec![Query::new(question, req.question.trim())], Purpose::Use)
}

/// Schema "1"'s translation of a refusal: the pause is an abstention that says why; anything
/// else an error whose code is its cause's, and whose message ends with the fix of the provider
/// that failed last (the one doctor and smoke print): schema "1" gives the error only a code and
/// a message.
fn refuse(resp: &mut DecideResponse, refusal: Refusal) {
    let (code, message) = match refusal {
        Refusal::Paused => {
            resp.status = Status::Abstained;
            resp.rationale = Some(paused_rationale());
            return;
        }
        Refusal::Config(errors) => (ErrorCode::ConfigError, errors.join("; ")),
        Refusal::NoEngine => (ErrorCode::ConfigError, refusal.to_string()),
        Refusal::Failed(failed) => {
            let code = match failed.failure.cause {
                Cause::Timeout => ErrorCode::ProviderTimeout,
                Cause::Malformed => ErrorCode::MalformedResponse,
                _ => ErrorCode::ProviderError,
            };
            let message = format!("{}; fix: {}", failed.message(), failed.fix.action);
            resp.attempts = failed.attempts;
            (code, message)
        }
    };
    resp.error = Some(ErrorInfo { code, message });
}

/// Fills in the engine's answer: below the threshold a decision is an abstention that says why.
/// An answer that changed with the order of the options has abstained already (in the attempt).
fn apply_threshold(resp: &mut DecideResponse, answer: Answer, threshold: f64) {
    match answer {
        Answer::Passed { reason, .. } => {
            resp.status = Status::Abstained;
            resp.rationale = Some(format!(
                "no engine in the chain answers this question ({reason}); to have it answered, {}",
                super::PASSED_FIX
            ));
        }
        Answer::Abstained { rationale, stability } => {
            resp.status = Status::Abstained;
            resp.rationale = rationale.or_else(|| Some("the engine abstained".to_string()));
            show_stability(resp, stability);
        }
        Answer::Decided { decision, confidence, probabilities, calibrated, rationale, stability } => {
            show_stability(resp, stability);
            resp.confidence = Some(confidence);
            resp.probabilities = probabilities;
            resp.calibrated = calibrated;
            resp.rationale = rationale;
            if confidence < threshold {
                resp.status = Status::Abstained;
                let why = below(confidence, threshold);
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
}

/// `confidence C is below the threshold T`, each to the fewest decimals (2 to 6) at which C is
/// shown below T: 0.5996 and 0.6 are `0.5996` and `0.6000`, not `0.60` and `0.60`.
fn below(confidence: f64, threshold: f64) -> String {
    let digits = (2..6).find(|&d| crate::text::round(confidence, d) < crate::text::round(threshold, d)).unwrap_or(6);
    format!("confidence {confidence:.digits$} is below the threshold {threshold:.digits$}", digits = digits as usize)
}

/// The stability figures, to 4 decimals, when they were measured.
fn show_stability(resp: &mut DecideResponse, stability: Option<Stability>) {
    if let Some(s) = stability {
        resp.stability = Some(crate::text::round(s.stability, 4));
        resp.soft_stability = s.soft_stability.map(|x| crate::text::round(x, 4));
    }
}
