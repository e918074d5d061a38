//! What the gateway answers: the `system1_decide` response of schema "1", health and capabilities.

use std::fmt;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;

use crate::calibration::{Fit, Origin};
use crate::providers::{Cause, Failure, Probabilities, Scope};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Decided,
    Abstained,
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Decided => "decided",
            Status::Abstained => "abstained",
            Status::Error => "error",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Ok,
    Abstained,
    /// The engine does not answer the question (or some of the questions) at all; the next one is asked.
    Passed,
    Timeout,
    Error,
    Malformed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    InvalidRequest,
    ConfigError,
    ProviderTimeout,
    ProviderError,
    MalformedResponse,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorInfo {
    pub code: ErrorCode,
    pub message: String,
}

/// One provider tried for a request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    pub provider: String,
    pub outcome: Outcome,
    pub latency_ms: f64,
    pub detail: Option<String>,
    /// Why the attempt failed, for a fix (`Provider::fix`); the wire has only the detail.
    #[serde(skip)]
    pub cause: Option<Cause>,
    /// What it sent off this machine, for an engine hosted elsewhere (the tally and the routing
    /// log keep it; the wire does not).
    #[serde(skip)]
    pub sent: Option<crate::state::Sent>,
}

/// What a decision's attempts sent off this machine, engine by engine.
pub fn sent(attempts: &[Attempt]) -> Vec<crate::state::Sent> {
    attempts.iter().filter_map(|a| a.sent.clone()).collect()
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecideResponse {
    pub schema_version: String,
    pub request_id: String,
    pub status: Status,
    pub decision: Option<String>,
    pub confidence: Option<f64>,
    pub probabilities: Option<Probabilities>,
    pub calibrated: bool,
    /// With `[gateway] stability` on: the share of reordered askings that gave the same answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stability: Option<f64>,
    /// With `[gateway] stability` on: the mean probability the reordered askings gave that answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub soft_stability: Option<f64>,
    pub rationale: Option<String>,
    pub provider: Option<String>,
    pub latency_ms: f64,
    pub attempts: Vec<Attempt>,
    pub error: Option<ErrorInfo>,
    /// For the person, not the model: what would answer a question no engine here answers (an
    /// engine to add, how to teach it). `system1 decide` prints it on stderr; the MCP tool leaves it
    /// out, so Claude reads only the rationale's one sentence.
    #[serde(skip)]
    pub hint: Option<String>,
}

impl DecideResponse {
    /// An `error` response with nothing filled in yet but the request id.
    pub fn new(request_id: &str) -> Self {
        DecideResponse {
            schema_version: super::request::SCHEMA_VERSION.to_string(),
            request_id: request_id.to_string(),
            status: Status::Error,
            decision: None,
            confidence: None,
            probabilities: None,
            calibrated: false,
            stability: None,
            soft_stability: None,
            rationale: None,
            provider: None,
            latency_ms: 0.0,
            attempts: Vec::new(),
            error: None,
            hint: None,
        }
    }
}

/// The gateway's health as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    /// The primary is up.
    Ok,
    /// The primary is down, a fallback is up.
    Degraded,
    /// No provider is up, or the config is broken.
    Down,
    /// Paused with `/system1:toggle off`.
    Paused,
}

impl fmt::Display for HealthStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HealthStatus::Ok => "ok",
            HealthStatus::Degraded => "degraded",
            HealthStatus::Down => "down",
            HealthStatus::Paused => "paused",
        })
    }
}

/// A provider's place in the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Primary,
    Fallback,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Primary => "primary",
            Role::Fallback => "fallback",
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ProviderProbe {
    pub name: String,
    pub role: Role,
    pub ok: bool,
    pub latency_ms: f64,
    pub detail: Option<String>,
    /// Why the probe failed, for a fix (`Provider::fix`); the wire has only the detail.
    #[serde(skip)]
    pub failure: Option<Failure>,
}

/// The `system1_health` result.
#[derive(Debug, Clone, Serialize)]
pub struct HealthResponse {
    pub status: HealthStatus,
    pub gateway_version: String,
    pub schema_version: String,
    pub paused: bool,
    pub config_file: Option<String>,
    pub config_errors: Vec<String>,
    pub providers: Vec<ProviderProbe>,
}

/// The `system1_capabilities` result.
#[derive(Debug, Clone, Serialize)]
pub struct CapabilitiesResponse {
    pub gateway_version: &'static str,
    pub schema_version: &'static str,
    pub schema_versions: &'static [&'static str],
    pub tools: &'static [&'static str],
    pub provider_chain: Vec<String>,
    pub timeout_s: f64,
    pub min_confidence: f64,
    /// Whether a choice above a provider's `max_options` is narrowed in elimination rounds.
    pub tournament: bool,
    /// `off`, `fast` or `full`: which reorderings of the options are asked beside the original.
    pub stability: &'static str,
    /// Below this share of agreeing reorderings the answer abstains (when stability is on).
    pub min_stability: f64,
    pub paused: bool,
    /// The chain's providers, keyed by name in chain order.
    #[serde(serialize_with = "by_name")]
    pub providers: Vec<ProviderInfo>,
    /// Which engine of the chain gets each kind of question first.
    pub routes: Routes,
    pub calibration_fits: Vec<ShownFit>,
    pub calibration_errors: Vec<String>,
    pub available_providers: &'static [&'static str],
    pub config_errors: Vec<String>,
    pub request_schema: Value,
    pub response_schema: Value,
}

/// What one provider of the chain is and can take.
#[derive(Debug, Clone, Serialize)]
pub struct ProviderInfo {
    /// The key it is listed under.
    #[serde(skip)]
    pub name: String,
    pub model: String,
    pub max_options: usize,
    pub one_pass: bool,
    /// Which yes/no questions it answers: `any`, or only the `taught` ones (`questions`).
    pub yes_no: Scope,
    /// Which choices it answers.
    pub choice: Scope,
    /// The questions it answers from what it was taught (the local engine's trained heads), and
    /// the context each expects; absent for an engine that answers any question.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<crate::providers::Taught>,
    /// Where it runs when not on this machine: what it is asked leaves the machine. Absent for an
    /// engine on this machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<crate::providers::hosted::Remote>,
}

/// Which engine of the chain gets each kind of question first: the first that answers it (a
/// failure moves on down the chain from there).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Routes {
    /// A free yes/no question (one no engine was taught); `None` when no engine answers one.
    pub yes_no: Option<String>,
    /// A choice between the request's options; `None` when no engine answers one.
    pub choice: Option<String>,
    /// Each question an engine of the chain was taught, and the engine that gets it first.
    pub taught: Vec<TaughtRoute>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaughtRoute {
    pub question: String,
    pub provider: String,
}

/// A provider listed twice in the chain is one entry, where it first appears.
fn by_name<S: Serializer>(providers: &[ProviderInfo], serializer: S) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(None)?;
    for (i, p) in providers.iter().enumerate() {
        if !providers[..i].iter().any(|q| q.name == p.name) {
            map.serialize_entry(&p.name, p)?;
        }
    }
    map.end()
}

/// A loaded calibration fit and where it came from: the fit's fields as its file has them, then
/// `origin`.
#[derive(Debug, Clone)]
pub struct ShownFit {
    pub fit: Fit,
    pub origin: Origin,
}

impl Serialize for ShownFit {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = match serde_json::to_value(&self.fit) {
            Ok(Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        let mut map = serializer.serialize_map(None)?;
        // A file's own `origin` field would say something else than where the fit was loaded from.
        for (k, v) in fields.iter().filter(|(k, _)| *k != "origin") {
            map.serialize_entry(k, v)?;
        }
        map.serialize_entry("origin", &self.origin)?;
        map.end()
    }
}

/// Milliseconds with microsecond resolution, for every `latency_ms`.
pub fn millis(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}
