//! `system1_capabilities`: what this gateway serves, its chain, limits, threshold and fits.

use super::request::SCHEMA_VERSION;
use super::response::{CapabilitiesResponse, ProviderInfo, ShownFit};
use super::{Gateway, TOOLS, VERSION, schema};
use crate::config::ProviderKind;
use crate::state;

impl Gateway {
    /// `system1_capabilities`.
    pub fn capabilities(&self) -> CapabilitiesResponse {
        let g = &self.loaded.config.gateway;
        CapabilitiesResponse {
            gateway_version: VERSION,
            schema_version: SCHEMA_VERSION,
            schema_versions: &[SCHEMA_VERSION],
            tools: &TOOLS,
            provider_chain: self.loaded.chain(),
            timeout_s: g.timeout_s,
            min_confidence: g.min_confidence,
            tournament: g.tournament,
            stability: g.stability.name(),
            min_stability: g.min_stability,
            paused: state::is_paused(),
            providers: self
                .chain
                .iter()
                .map(|p| {
                    let caps = p.capabilities();
                    ProviderInfo {
                        name: p.name().to_string(),
                        model: p.model(),
                        max_options: caps.max_options,
                        one_pass: caps.one_pass,
                        questions: p.taught(),
                    }
                })
                .collect(),
            calibration_fits: self
                .calibration
                .loaded()
                .map(|(origin, fit)| ShownFit { fit: fit.clone(), origin: *origin })
                .collect(),
            calibration_errors: self.calibration.errors.clone(),
            available_providers: ProviderKind::NAMES,
            config_errors: self.config_errors.clone(),
            request_schema: schema::request(),
            response_schema: schema::response(),
        }
    }
}
