//! Offline tuning: everything that learns from labelled data rather than answering a request. The
//! seed sets, collecting engine answers about labelled items, labels in the routing log, the
//! temperature-fitting math, the fit figures and plots of `system1 calibrate`, the measures and the
//! READY verdict of `system1 evaluate`, and `system1 study`, which compares engines on labelled
//! sets. It sits above routing (it asks the features through the hook's own code); the runtime
//! half, the fits file and rescaling, is `crate::calibration`.

pub mod apply;
pub mod calibrate;
pub mod crossval;
pub mod data;
pub mod evaluate;
pub mod fit;
pub mod heads;
pub mod labels;
pub mod plot;
pub mod question_fit;
pub mod readiness;
pub mod rule_choice;
pub mod rule_fit;
pub mod seeds;
pub mod study;
pub mod teach;
pub mod tier_first;
/// Measuring the local engine's zero-shot temperature (the test that regenerates its shipped file).
#[cfg(test)]
pub mod zero_shot;

use crate::config;
use crate::error::{Error, Result};
use crate::gateway::Gateway;
use crate::text::{self, Meter};

/// The gateway to ask: the configured chain, or only `provider`.
pub fn gateway_for(provider: Option<&str>) -> Result<Gateway> {
    let mut loaded = config::load();
    if let Some(p) = provider {
        // A built-in engine, or an instance the config names (`[providers.decider] kind = "systemone"`).
        if loaded.kind_of(p).is_none() {
            let mut known: Vec<String> = config::ProviderKind::NAMES.iter().map(|n| n.to_string()).collect();
            for n in loaded.configured_providers() {
                if !known.contains(&n) {
                    known.push(n);
                }
            }
            return Err(Error::usage(format!("unknown provider {p:?}; known: {}", known.join(", "))));
        }
        loaded.config.gateway.provider = p.to_string();
        loaded.config.gateway.fallback.clear();
    }
    let gateway = Gateway::new(loaded);
    if !gateway.is_ok() {
        return Err(Error::config(gateway.config_errors.join("; "))
            .with_hint(format!("run `{}`", text::command("config check"))));
    }
    Ok(gateway)
}

/// Progress on stderr when it is a terminal, so long runs show they are alive.
pub fn progress(what: impl Into<String>) -> impl FnMut(usize, usize) {
    let what = what.into();
    let mut meter = Meter::new();
    move |i, n| {
        meter.draw(|| format!("{what}: {}/{n}", i + 1));
        if i + 1 == n {
            meter.finish();
        }
    }
}
