//! What each request gets: the key check, then `POST /v1/systemone` through the gateway's chain,
//! `GET /v1/models`, `GET /health`, and the API's error shapes for everything else.

use std::time::Instant;

use serde_json::{Map, Value, json};

use super::api::{self, Refusal, SoRequest};
use super::decisions;
use super::http::{Request, Response};
use crate::gateway::response::HealthStatus;
use crate::gateway::{self, Answered, Gateway};
use crate::providers::Cause;
use crate::{logging, state};

/// What one request came to, for its log line.
pub struct Handled {
    pub response: Response,
    /// `3 questions via local`, or why it was refused.
    pub note: String,
}

/// The non-validation error body: `{"detail": {"error_type", "message"}}`.
pub fn error(status: u16, error_type: &str, message: &str) -> Response {
    Response::json(status, &json!({"detail": {"error_type": error_type, "message": message}}))
}

pub(super) fn refused(response: Response, note: impl Into<String>) -> Handled {
    Handled { response, note: note.into() }
}

/// The 401 for a request without the key, when one is set; None when it may go on.
pub fn check_key(key: Option<&[u8; 32]>, authorization: Option<&str>, path: &str) -> Option<Handled> {
    let key = key?;
    if authorized(key, authorization) {
        return None;
    }
    let why = if authorization.is_some() { "a wrong API key" } else { "no API key" };
    let message = format!("{why}: send Authorization: Bearer <key>");
    // In the error shape of the API the client speaks.
    let resp = if path.trim_end_matches('/') == decisions::PATH {
        decisions::error(401, "invalid_api_key", &message, None)
    } else {
        error(401, "authentication_error", &message)
    };
    Some(refused(resp.with_header("WWW-Authenticate", "Bearer"), why))
}

pub fn handle(gateway: &Gateway, key: Option<&[u8; 32]>, started: &str, req: &Request, rid: &str) -> Handled {
    if let Some(refusal) = check_key(key, req.authorization.as_deref(), &req.path) {
        return refusal;
    }
    match (req.method.as_str(), req.path.trim_end_matches('/')) {
        ("POST", "/v1/systemone") => systemone(gateway, &req.body, rid),
        ("POST", decisions::PATH) => decisions::handle(gateway, &req.body, rid),
        ("GET", "/v1/models") => refused(Response::json(200, &models(gateway, started)), ""),
        ("GET", "/health") => {
            let h = gateway.health();
            let status = if h.status == HealthStatus::Down { 503 } else { 200 };
            let body = serde_json::to_value(&h).unwrap_or(Value::Null);
            refused(Response::json(status, &body), h.status.to_string())
        }
        (_, "/v1/systemone" | decisions::PATH) => method_not_allowed("POST"),
        (_, "/v1/models" | "/health") => method_not_allowed("GET"),
        (_, path) => refused(error(404, "not_found", &format!("no such route: {path}")), "no such route"),
    }
}

fn method_not_allowed(allow: &str) -> Handled {
    let resp = error(405, "api_usage_error", &format!("use {allow}")).with_header("Allow", allow);
    refused(resp, "wrong method")
}

/// Whether the header carries the key. Both sides are hashed first and the digests compared in
/// constant time, so neither the key's bytes nor its length show in the time a guess takes. The
/// scheme's name is case-insensitive in HTTP: `BEARER` is `Bearer`.
fn authorized(key: &[u8; 32], header: Option<&str>) -> bool {
    let given = header
        .and_then(|h| h.split_once([' ', '\t']))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map_or("", |(_, token)| token);
    let digest = digest(given.trim().as_bytes());
    let diff = digest.iter().zip(key).fold(0u8, |acc, (a, b)| acc | (a ^ b));
    std::hint::black_box(diff) == 0 && header.is_some()
}

pub fn digest(bytes: &[u8]) -> [u8; 32] {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// `GET /v1/models`: this server's chain under its own name, and the SDKs' alias for it.
fn models(gateway: &Gateway, started: &str) -> Value {
    let chain: Vec<String> = gateway.chain().iter().map(|p| format!("{} ({})", p.name(), p.model())).collect();
    let chain = if chain.is_empty() { "no engine configured".to_string() } else { chain.join(" → ") };
    let entry = |name: &str, what: String| json!({"name": name, "description": what, "release_date": started});
    json!({"models": [
        entry(api::MODEL, format!("system1 {}: the configured engine chain, {chain}", crate::gateway::VERSION)),
        entry(api::ALIAS, format!("an alias of {}", api::MODEL)),
    ]})
}

fn systemone(gateway: &Gateway, body: &[u8], rid: &str) -> Handled {
    let started = Instant::now();
    let parsed: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            let problem = json!({"loc": ["body", e.column()], "msg": format!("the body is not JSON: {e}"), "type": "json_invalid"});
            return refused(Response::json(422, &json!({"detail": [problem]})), "not JSON");
        }
    };
    let request = match api::validate(&parsed) {
        Ok(r) => r,
        Err(Refusal::Invalid(problems)) => {
            let first = problems.first().map(|p| p.msg.clone()).unwrap_or_default();
            let detail: Vec<Value> = problems.iter().map(api::Problem::to_json).collect();
            return refused(Response::json(422, &json!({"detail": detail})), format!("invalid: {first}"));
        }
        Err(Refusal::UnknownModel(m)) => {
            let msg = format!("Unknown model: {m} (this server serves {} and {})", api::MODEL, api::ALIAS);
            return refused(error(404, "api_usage_error", &msg), format!("unknown model {m:?}"));
        }
    };
    answer(gateway, &request, rid, started)
}

/// Every question through the gateway in one engine request, each provider of the chain within
/// its timeout, as `system1 decide` gives it; a refusal as the HTTP status its cause calls for.
fn answer(gateway: &Gateway, request: &SoRequest, rid: &str, started: Instant) -> Handled {
    let n = crate::text::count(request.questions.len() as u64, "question");
    let asked = gateway.ask(&request.ask(), rid);
    tally(asked.as_ref(), started);
    let outcome = match asked {
        Ok(answered) => answered,
        Err(refusal) => return refusal_response(&refusal, &n, error),
    };
    let provider = outcome.provider.unwrap_or_default();
    // Every engine may have passed the questions on: then none answered, and the log says so.
    let via = if provider.is_empty() { " (no engine answered)".to_string() } else { format!(" via {provider}") };
    let mut out = Map::new();
    for (q, a) in request.questions.iter().zip(&outcome.answers) {
        match q.answer(a) {
            Ok(v) => {
                out.insert(q.id.clone(), v);
            }
            Err(why) => {
                let msg = format!("question {:?} ({}): {why}", q.id, q.type_name());
                return refused(error(400, "unanswerable_question", &msg), format!("{n}{via}: {msg}"));
            }
        }
    }
    let (input_tokens, output_tokens) = request.usage();
    let body = json!({
        "model": api::MODEL,
        "answers": out,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        "x_provider": provider,
        "x_engine_model": outcome.model,
    });
    Handled { response: Response::json(200, &body), note: format!("{n}{via}") }
}

/// Counts one request's ask in the day's decision tally, as `system1_decide` and `system1 decide`
/// count theirs, so the report and `toggle status` see the server's decisions too: decided when an
/// engine answered, abstained when every engine passed the questions on or system1 is paused, an
/// error when the engines failed or the config is broken. One line a request, as the engines were
/// asked once for all its questions; a request refused before the engines (invalid, an unknown
/// model) is not a decision, and a check run's are not tallied (`gateway::CHECK_RUN_ENV`).
pub(super) fn tally(asked: Result<&Answered, &gateway::Refusal>, started: Instant) {
    if std::env::var_os(gateway::CHECK_RUN_ENV).is_some() {
        return;
    }
    let (status, provider, attempts) = match asked {
        Ok(a) if a.provider.is_some() => ("decided", a.provider.as_deref(), a.attempts.as_slice()),
        Ok(a) => ("abstained", None, a.attempts.as_slice()),
        Err(gateway::Refusal::Paused) => ("abstained", None, &[][..]),
        Err(refusal) => ("error", None, refusal.attempts()),
    };
    let latency_ms = gateway::millis(started.elapsed());
    state::record_decision(status, provider, latency_ms, gateway::response::sent(attempts));
}

/// The HTTP answer to a refusal: a broken config or the pause is the server's state (503), an
/// engine's timeout 504, any other failure of the engines 502; the body in the error shape of the
/// route asked (`error(status, type, message)`).
pub(super) fn refusal_response(
    refusal: &gateway::Refusal,
    n: &str,
    error: impl Fn(u16, &str, &str) -> Response,
) -> Handled {
    use gateway::Refusal;
    match refusal {
        Refusal::Config(errors) => {
            let msg = format!("the server's config is broken: {}", errors.join("; "));
            refused(error(503, "config_error", &msg), "config error")
        }
        Refusal::Paused => {
            let msg = format!(
                "system1 is paused (`{}` resumes it), so it makes no decisions",
                crate::text::command("toggle on")
            );
            refused(error(503, "paused", &msg).with_header("Retry-After", "60"), "paused")
        }
        Refusal::NoEngine => {
            let message = refusal.to_string();
            refused(error(503, "config_error", &message), format!("{n}: {message}"))
        }
        Refusal::Failed(failed) => {
            let message = failed.message();
            let resp = match failed.failure.cause {
                Cause::Timeout => error(504, "timeout", &message),
                _ => error(502, "engine_error", &message),
            };
            refused(resp, format!("{n}: {message}"))
        }
    }
}

/// A log line's words for a request that could not be read.
pub fn log_unread(rid: &str, peer: &str, status: u16, why: &str) {
    logging::info(rid, &format!("{peer} - {status} ({why})"));
}
