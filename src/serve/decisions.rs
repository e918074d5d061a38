//! `POST /v1/decisions`: OpenAI's Decisions API answered by the gateway's chain, so an OpenAI SDK
//! pointed at this server asks the configured engines. Requests are read and answers written with
//! the codec the `decisions` provider uses ([`crate::providers::decisions::wire`]); between the
//! two, a request becomes the same ask of the gateway's one entrance, `Gateway::ask`, that
//! `/v1/systemone` makes ([`SoRequest::ask`]), with the same limits. A question no engine answers (or one the engine abstains on) gets a `refusal`
//! answer; the others are answered. Errors have OpenAI's shape: `{"error": {"message", "type",
//! "param", "code"}}` (docs/serve.md).

use serde_json::{Value, json};

use super::api::{self, Kind as SoKind, SoQuestion, SoRequest};
use super::http::Response;
use super::routes::{self, Handled, refused};
use crate::gateway::{Answer as GatewayAnswer, Gateway};
use crate::providers::decisions::wire::{self, Answer, Kind, Request};

pub const PATH: &str = "/v1/decisions";
/// The model names a request may give: this server's own, and OpenAI's model for the API (so a
/// client written for OpenAI works unchanged).
pub const ALIAS: &str = crate::providers::decisions::DEFAULT_MODEL;

/// An error in OpenAI's shape.
pub fn error(status: u16, code: &str, message: &str, param: Option<&str>) -> Response {
    let kind = match status {
        400 | 404 | 422 => "invalid_request_error",
        401 | 403 => "authentication_error",
        _ => "server_error",
    };
    Response::json(status, &json!({"error": {"message": message, "type": kind, "param": param, "code": code}}))
}

fn shaped(status: u16, code: &str, message: &str) -> Response {
    error(status, code, message, None)
}

pub fn handle(gateway: &Gateway, body: &[u8], rid: &str) -> Handled {
    let started = std::time::Instant::now();
    let parsed: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return refused(error(400, "invalid_json", &format!("the body is not JSON: {e}"), None), "not JSON"),
    };
    let request = match Request::from_json(&parsed).and_then(within_limits) {
        Ok(r) => r,
        Err(problems) => {
            let message = problems.iter().map(|p| format!("{}: {}", p.param, p.message)).collect::<Vec<_>>().join("; ");
            let param = problems.first().map(|p| p.param.as_str());
            return refused(error(422, "invalid_request", &message, param), format!("invalid: {message}"));
        }
    };
    if request.model != api::MODEL && request.model != ALIAS {
        let msg =
            format!("The model `{}` does not exist (this server serves {} and {ALIAS})", request.model, api::MODEL);
        return refused(
            error(404, "model_not_found", &msg, Some("model")),
            format!("unknown model {:?}", request.model),
        );
    }
    let so = so_request(&request);
    let n = crate::text::count(request.questions.len() as u64, "question");
    let asked = gateway.ask(&so.ask(), rid);
    routes::tally(asked.as_ref(), started);
    let answered = match asked {
        Ok(answered) => answered,
        Err(refusal) => return routes::refusal_response(&refusal, &n, shaped),
    };
    let provider = answered.provider.unwrap_or_default();
    let answers: Vec<Answer> = request.questions.iter().zip(&answered.answers).map(|(q, a)| answer(q, a)).collect();
    let refusals = answers.iter().filter(|a| matches!(a, Answer::Refusal { .. })).count();
    let (input_tokens, output_tokens) = so.usage();
    let response = wire::Response { model: api::MODEL.to_string(), answers, input_tokens, output_tokens };
    let note =
        if refusals == 0 { format!("{n} via {provider}") } else { format!("{n} via {provider}, {refusals} refused") };
    Handled { response: Response::json(200, &response.to_json(&request.questions)), note }
}

/// The server's own bounds beside the API's: as many questions as `/v1/systemone` takes, and
/// option names the engines read.
fn within_limits(r: Request) -> Result<Request, Vec<wire::Problem>> {
    let mut problems = Vec::new();
    if r.questions.len() > api::MAX_QUESTIONS {
        let message =
            format!("this server takes at most {} questions a request, got {}", api::MAX_QUESTIONS, r.questions.len());
        problems.push(wire::Problem { param: "questions".into(), message });
    }
    for (i, q) in r.questions.iter().enumerate() {
        if let Some(o) = q.engine_options().iter().find(|o| o.chars().count() > api::MAX_OPTION_CHARS) {
            let message = format!(
                "an option may have at most {} characters ({} has more)",
                api::MAX_OPTION_CHARS,
                crate::text::ellipsis(o, 40)
            );
            problems.push(wire::Problem { param: format!("questions[{i}]"), message });
        }
    }
    if problems.is_empty() { Ok(r) } else { Err(problems) }
}

/// The engine-side request `/v1/systemone` would make for the same questions.
fn so_request(r: &Request) -> SoRequest {
    let questions = r
        .questions
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let kind = match &q.kind {
                Kind::Predicate => SoKind::Noul,
                Kind::Choice(_) => SoKind::Choice(q.engine_options()),
                Kind::Score(levels) => {
                    SoKind::Score { levels: levels.iter().map(|l| json!(l.label)).collect(), names: q.engine_options() }
                }
            };
            SoQuestion { id: format!("q{}", i + 1), kind, text: q.instructions.clone(), descriptions: q.descriptions() }
        })
        .collect();
    SoRequest { state: Value::String(r.input.text()), questions }
}

/// The API's answer to `q` from the gateway's: a refusal where no engine decided it.
fn answer(q: &wire::Question, a: &GatewayAnswer) -> Answer {
    let GatewayAnswer::Decided { decision, confidence, probabilities, .. } = a else {
        return Answer::refusal(q);
    };
    let options = q.engine_options();
    let (values, _) = api::distribution(&options, decision, *confidence, probabilities.as_ref());
    Answer::from_probabilities(q, &values, options.iter().position(|o| o == decision))
}
