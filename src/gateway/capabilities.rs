//! `system1_capabilities`: what this gateway serves, its chain, limits, threshold and fits.

use serde_json::{Map, Value, json};

use super::request::SCHEMA_VERSION;
use super::{Gateway, TOOLS, VERSION, schema};
use crate::providers;
use crate::state;

impl Gateway {
    /// `system1_capabilities`.
    pub fn capabilities(&self) -> Value {
        let providers: Map<String, Value> = self
            .chain
            .iter()
            .map(|p| {
                let caps = p.capabilities();
                (
                    p.name().to_string(),
                    json!({"model": p.model(), "max_options": caps.max_options, "one_pass": caps.one_pass}),
                )
            })
            .collect();
        let fits: Vec<Value> = self
            .calibration
            .loaded()
            .map(|(origin, fit)| {
                let mut v = serde_json::to_value(fit).unwrap_or(Value::Null);
                if let Value::Object(m) = &mut v {
                    m.insert("origin".into(), json!(origin));
                }
                v
            })
            .collect();
        let g = &self.loaded.config.gateway;
        json!({
            "gateway_version": VERSION,
            "schema_version": SCHEMA_VERSION,
            "schema_versions": [SCHEMA_VERSION],
            "tools": TOOLS,
            "provider_chain": self.loaded.chain(),
            "timeout_s": g.timeout_s,
            "min_confidence": g.min_confidence,
            "paused": state::is_paused(),
            "providers": providers,
            "calibration_fits": fits,
            "calibration_errors": self.calibration.errors,
            "available_providers": providers::NAMES,
            "config_errors": self.config_errors,
            "request_schema": schema::request(),
            "response_schema": schema::response(),
        })
    }
}
