//! The JSON Schemas (2020-12) of schema version "1", written from the same limits the request
//! check uses. `system1 schema --write` saves them as `schema/request.json`, `schema/response.json`,
//! `schema/health.json` and `schema/capabilities.json` (see [`FILES`]); a test fails when the
//! committed files drift from these, or when a field of the Rust response types is missing here.

use serde_json::{Value, json};

use super::request::{
    MAX_OPTION_CHARS, MAX_OPTIONS, MAX_QUESTION_CHARS, MAX_REQUEST_ID_CHARS, MIN_OPTIONS, SCHEMA_VERSION,
};

const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Builds one schema.
type Make = fn() -> Value;

/// Every schema file, by name: the decide request and response, and the other two tools' results.
pub const FILES: [(&str, Make); 4] = [
    ("request.json", request),
    ("response.json", response),
    ("health.json", health),
    ("capabilities.json", capabilities),
];

pub fn request() -> Value {
    json!({
        "$schema": DIALECT,
        "title": "system1_decide request",
        "description": format!("Schema version {SCHEMA_VERSION}. Unknown fields are rejected with invalid_request."),
        "type": "object",
        "additionalProperties": false,
        "required": ["question"],
        "properties": {
            "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION_CHARS,
                "description": "The decision to make."},
            "options": {"type": "array", "minItems": MIN_OPTIONS, "maxItems": MAX_OPTIONS, "uniqueItems": true,
                "items": {"type": "string", "minLength": 1, "maxLength": MAX_OPTION_CHARS},
                "description": "The choices; the decision is exactly one of them. Omit for a yes/no question. Above a provider's own limit (Laya: 20) the choice is narrowed in elimination rounds (refused instead with [gateway] tournament = false)."},
            "context": {"type": "object", "description": "Facts the decision depends on, passed to the engine."},
            "min_confidence": {"type": "number", "minimum": 0, "maximum": 1,
                "description": "Abstain below this confidence; overrides the configured threshold."},
            "request_id": {"type": "string", "minLength": 1, "maxLength": MAX_REQUEST_ID_CHARS,
                "description": "Echoed back; generated when omitted."},
            "schema_version": {"type": "string", "enum": [SCHEMA_VERSION]}
        }
    })
}

fn nullable(t: &str) -> Value {
    json!([t, "null"])
}

fn attempt() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["provider", "outcome", "latency_ms", "detail"],
        "properties": {
            "provider": {"type": "string"},
            "outcome": {"enum": ["ok", "abstained", "passed", "timeout", "error", "malformed"]},
            "latency_ms": {"type": "number", "minimum": 0},
            "detail": {"type": nullable("string")}
        }
    })
}

pub fn response() -> Value {
    json!({
        "$schema": DIALECT,
        "title": "system1_decide response",
        "description": format!("Schema version {SCHEMA_VERSION}."),
        "type": "object",
        "additionalProperties": false,
        "required": ["schema_version", "request_id", "status", "decision", "confidence", "probabilities",
                     "calibrated", "rationale", "provider", "latency_ms", "attempts", "error"],
        "properties": {
            "schema_version": {"const": SCHEMA_VERSION},
            "request_id": {"type": "string"},
            "status": {"enum": ["decided", "abstained", "error"]},
            "decision": {"type": nullable("string"), "description": "One of the options (yes or no without options); null when abstained or on error."},
            "confidence": {"type": nullable("number"), "minimum": 0, "maximum": 1,
                "description": "Probability of the decision, after calibration when a fit matched."},
            "probabilities": {"type": nullable("object"), "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1},
                "description": "Per-option probabilities, when the provider reports them. After elimination rounds they cover the finalists; the eliminated options are 0."},
            "calibrated": {"type": "boolean", "description": "True when a fitted temperature was applied."},
            "stability": {"type": "number", "minimum": 0, "maximum": 1,
                "description": "Present when stability is on and the engine answered: the share of reordered askings (options reversed, or also shuffled) that gave the same answer. Below min_stability the status is abstained."},
            "soft_stability": {"type": "number", "minimum": 0, "maximum": 1,
                "description": "Present with stability when it can be measured: the mean probability the reordered askings gave the answer."},
            "rationale": {"type": nullable("string")},
            "provider": {"type": nullable("string")},
            "latency_ms": {"type": "number", "minimum": 0},
            "attempts": {"type": "array", "items": attempt()},
            "error": {
                "oneOf": [
                    {"type": "null"},
                    {"type": "object", "additionalProperties": false, "required": ["code", "message"],
                     "properties": {
                        "code": {"enum": ["invalid_request", "config_error", "provider_timeout", "provider_error", "malformed_response"]},
                        "message": {"type": "string"}
                     }}
                ]
            }
        }
    })
}

/// Tools without parameters take an empty object.
pub fn no_arguments() -> Value {
    json!({"type": "object", "additionalProperties": false})
}

pub fn health() -> Value {
    json!({
        "$schema": DIALECT,
        "title": "system1_health result",
        "description": format!("Schema version {SCHEMA_VERSION}."),
        "type": "object",
        "required": ["status", "gateway_version", "schema_version", "paused", "config_file", "config_errors", "providers"],
        "properties": {
            "status": {"enum": ["ok", "degraded", "down", "paused"]},
            "gateway_version": {"type": "string"},
            "schema_version": {"type": "string"},
            "paused": {"type": "boolean"},
            "config_file": {"type": nullable("string")},
            "config_errors": {"type": "array", "items": {"type": "string"}},
            "providers": {"type": "array", "items": {
                "type": "object",
                "required": ["name", "role", "ok", "latency_ms", "detail"],
                "properties": {
                    "name": {"type": "string"},
                    "role": {"enum": ["primary", "fallback"]},
                    "ok": {"type": "boolean"},
                    "latency_ms": {"type": "number", "minimum": 0},
                    "detail": {"type": nullable("string")}
                }
            }}
        }
    })
}

pub fn capabilities() -> Value {
    // Apart: one json! this deep passes the macro's recursion limit.
    let taught = json!({"type": "array",
    "description": "The questions it answers from what it was taught (the local engine's trained heads; it passes its other yes/no questions on to the next engine), and the context each expects.",
    "items": {"type": "object", "required": ["question", "context", "n", "fitted_here"],
        "properties": {
            "question": {"type": "string", "description": "Matched case- and whitespace-insensitively; a routing feature's name for the hooks' four."},
            "options": {"type": "array", "items": {"type": "string"}, "description": "A question with a fixed set of options; absent for yes/no."},
            "context": {"type": "string", "description": "What the request's context must hold to be read as the examples were."},
            "n": {"type": "integer", "minimum": 0},
            "fitted_here": {"type": "boolean", "description": "Taught on this machine (calibrate fit --apply) rather than shipped."}
        }}});
    let scope = json!({"enum": ["any", "taught"],
        "description": "Which questions of this type it answers: any, or only those in `questions` (it passes the others on to the next engine)."});
    let engine = json!({"type": nullable("string")});
    let routes = json!({"type": "object",
    "description": "Which engine of the chain gets each kind of question first (a failure moves on down the chain).",
    "required": ["yes_no", "choice", "taught"],
    "properties": {
        "yes_no": {"type": nullable("string"), "description": "A free yes/no question (not one an engine was taught); null when no engine of the chain answers one."},
        "choice": engine,
        "taught": {"type": "array", "items": {"type": "object", "required": ["question", "provider"],
            "properties": {"question": {"type": "string"}, "provider": {"type": "string"}}}}
    }});
    let remote = json!({"type": "object",
    "description": "Present for an engine not on this machine (its endpoint's host is not loopback): the prompts and contexts it is asked about leave the machine; routes say which questions it gets first. For a known hosted service, also the service, its vendor and its published price.",
    "required": ["host"],
    "properties": {
        "host": {"type": "string"},
        "service": {"type": "string"},
        "vendor": {"type": "string"},
        "usd_per_million_input_tokens": {"type": "number", "minimum": 0,
            "description": "The vendor's published price; output is not charged. Absent where it depends on the model."},
        "price_source": {"type": "string"}
    }});
    json!({
        "$schema": DIALECT,
        "title": "system1_capabilities result",
        "description": format!("Schema version {SCHEMA_VERSION}."),
        "type": "object",
        "required": ["gateway_version", "schema_version", "schema_versions", "tools", "provider_chain",
                     "timeout_s", "min_confidence", "tournament", "stability", "min_stability", "paused", "providers", "routes", "calibration_fits", "calibration_errors",
                     "available_providers", "config_errors", "request_schema", "response_schema"],
        "properties": {
            "gateway_version": {"type": "string"},
            "schema_version": {"type": "string"},
            "schema_versions": {"type": "array", "items": {"type": "string"}},
            "tools": {"type": "array", "items": {"type": "string"}},
            "provider_chain": {"type": "array", "items": {"type": "string"}},
            "timeout_s": {"type": "number"},
            "min_confidence": {"type": "number"},
            "tournament": {"type": "boolean",
                "description": "A choice with more options than a provider's max_options is narrowed in elimination rounds; false: such a provider is not asked and passes the question on (attempt outcome passed), so a fallback can take over."},
            "stability": {"enum": ["off", "fast", "full"],
                "description": "The decision is asked again with the options reversed (fast), and also shuffled (full), in the same engine request; see the response's stability fields."},
            "min_stability": {"type": "number", "minimum": 0, "maximum": 1,
                "description": "With stability on, an answer that fewer of the reordered askings agree with abstains."},
            "paused": {"type": "boolean"},
            "providers": {"type": "object", "description": "The chain's providers by name, in chain order.",
                "additionalProperties": {
                    "type": "object",
                    "required": ["model", "max_options", "one_pass", "yes_no", "choice"],
                    "properties": {
                        "model": {"type": "string"},
                        "max_options": {"type": "integer", "minimum": 2,
                            "description": "Most options one engine question takes; more are narrowed in elimination rounds when tournament is on."},
                        "one_pass": {"type": "boolean", "description": "Several questions in one engine request."},
                        "yes_no": scope.clone(),
                        "choice": scope,
                        "questions": taught,
                        "remote": remote
                    }
                }},
            "routes": routes,
            "calibration_fits": {"type": "array", "items": {
                "type": "object",
                "description": "A fit names a question or an option count; other fields of the fits file are kept.",
                "required": ["provider", "model", "temperature", "origin"],
                "properties": {
                    "provider": {"type": "string"},
                    "model": {"type": "string"},
                    "question": {"type": "string"},
                    "options": {"type": "integer", "minimum": 2},
                    "temperature": {"type": "number", "exclusiveMinimum": 0},
                    "origin": {"enum": ["local", "shipped"]}
                }
            }},
            "calibration_errors": {"type": "array", "items": {"type": "string"}},
            "available_providers": {"type": "array", "items": {"type": "string"}},
            "config_errors": {"type": "array", "items": {"type": "string"}},
            "request_schema": {"type": "object"},
            "response_schema": {"type": "object"}
        }
    })
}

/// The text of a schema file as `system1 schema --write` saves it.
pub fn file_text(schema: &Value) -> String {
    let mut s = serde_json::to_string_pretty(schema).unwrap_or_default();
    s.push('\n');
    s
}
