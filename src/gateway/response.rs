//! What the gateway answers: the `system1_decide` response of schema "1", health and capabilities.

use serde::Serialize;

use crate::providers::Probabilities;

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
    pub rationale: Option<String>,
    pub provider: Option<String>,
    pub latency_ms: f64,
    pub attempts: Vec<Attempt>,
    pub error: Option<ErrorInfo>,
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
            rationale: None,
            provider: None,
            latency_ms: 0.0,
            attempts: Vec::new(),
            error: None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ProviderProbe {
    pub name: String,
    /// `primary` or `fallback`.
    pub role: String,
    pub ok: bool,
    pub latency_ms: f64,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HealthResponse {
    /// `ok`, `degraded`, `down` or `paused`.
    pub status: String,
    pub gateway_version: String,
    pub schema_version: String,
    pub paused: bool,
    pub config_file: Option<String>,
    pub config_errors: Vec<String>,
    pub providers: Vec<ProviderProbe>,
}

/// Milliseconds with microsecond resolution, for every `latency_ms`.
pub fn millis(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}
