//! The gateway: validation, the provider chain with fallback, the per-attempt timeout, answer
//! checks, calibration, the threshold and the pause flag.
//!
//! Data flows one way: a tool call or hook hands the gateway a request; the gateway asks the
//! providers in order and validates what they say; calibration rescales; the threshold decides
//! between `decided` and `abstained`. Abstention never triggers a fallback; a timeout, an error or
//! a malformed answer does, and so does an engine passing on a question it does not answer at all
//! (the next engine gets only the questions passed on).
//!
//! One file per concern: `ask` is the one entrance every caller uses (config, pause, time budget,
//! the failing provider's fix; a typed answer or refusal); [`request`] validates a
//! `system1_decide` request; `decide` asks its one question and applies the threshold, in schema
//! "1"'s shapes; `chain` runs the providers in order; `attempt`
//! is one provider's turn (elimination `rounds` above its option limit, the reordered variants of
//! `stability`, within one timeout); `check` judges each answer and maps a variant's back; `health`
//! and `capabilities` are the other two tools; [`response`] and [`schema`] are what the tools
//! answer and the JSON Schemas of it.

mod ask;
mod attempt;
mod capabilities;
mod chain;
mod check;
mod decide;
mod health;
pub mod request;
pub mod response;
mod rounds;
pub mod schema;
mod stability;
#[cfg(test)]
pub(crate) mod testing;

use std::sync::Arc;
use std::time::Duration;

use crate::calibration::Calibration;
use crate::config::Loaded;
use crate::paths;
use crate::providers::{self, Probabilities, Provider};
pub use ask::{Answered, Ask, Budget, Purpose, Query, Refusal};
pub use request::new_request_id;
pub use response::{
    Attempt, DecideResponse, ErrorCode, ErrorInfo, HealthResponse, Outcome, ProviderProbe, Status, millis,
};
pub use stability::Stability;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const TOOLS: [&str; 3] = ["system1_decide", "system1_health", "system1_capabilities"];
/// Set in the environment of a server that `system1 smoke` starts: its decisions are checks, not
/// uses, so they are not tallied (doctor's own test decision is not either).
pub const CHECK_RUN_ENV: &str = "SYSTEM1_CHECK_RUN";

/// Why a paused System-1 does not decide. Any MCP client reads it, so it names the command that
/// resumes, runnable as printed, not Claude Code's slash command.
pub fn paused_rationale() -> String {
    format!(
        "System-1 is paused, so it makes no decisions: reason it through yourself. `{}` resumes it.",
        crate::text::command("toggle on")
    )
}

/// What the model reads when no engine here answers a question: one sentence, no instructions
/// meant for the person (those go in the response's `hint`, and to doctor).
pub const UNANSWERED_RATIONALE: &str = "No engine here answers this kind of question: decide it yourself.";

/// What would answer a question no engine of the chain answers.
pub const PASSED_FIX: &str = "add an engine that answers it to the chain: a System One server ([providers.systemone], \
     docs/engines.md#system-one-servers) as a fallback, or teach the local engine the question (`system1 calibrate fit \
     --provider local --question`, docs/calibration.md)";

/// Where an engine for free yes/no questions goes; in [`YES_NO_FIX`] and [`FALLBACK_FIX`].
macro_rules! fallback_fix {
    () => {
        "add a System One server to the chain as a fallback ([providers.systemone], docs/engines.md#system-one-servers)"
    };
}

/// What would answer free yes/no questions in a chain none of whose engines does (the local
/// engine alone answers only the ones it was taught).
pub const YES_NO_FIX: &str = concat!(
    fallback_fix!(),
    ", or teach the question to the local engine (`system1 calibrate fit --provider local --question`, \
     docs/calibration.md)"
);

/// The first half of [`YES_NO_FIX`], for where how to teach the question follows in full.
pub const FALLBACK_FIX: &str = fallback_fix!();

/// One question's answer, checked and calibrated.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Decided {
        decision: String,
        confidence: f64,
        /// Over exactly the question's options, in their order.
        probabilities: Option<Probabilities>,
        calibrated: bool,
        rationale: Option<String>,
        /// How the answer held up with the options reordered, when `[gateway] stability` is on.
        stability: Option<Stability>,
    },
    Abstained {
        rationale: Option<String>,
        /// Set when the answer abstained because it changed with the order of the options.
        stability: Option<Stability>,
    },
    /// No engine of the chain answers this question at all; `reason` says who passed and why, and
    /// `causes` are the engines' own causes, in chain order (none for one past its option limit).
    /// (Within the chain, one engine passing hands the question to the next.)
    Passed { reason: String, causes: Vec<crate::providers::PassCause> },
}

pub struct Gateway {
    pub loaded: Loaded,
    /// Config errors plus provider construction errors: any of them stops decisions.
    pub config_errors: Vec<String>,
    chain: Vec<Arc<dyn Provider>>,
    pub calibration: Calibration,
    pub timeout: Duration,
}

impl Gateway {
    pub fn new(loaded: Loaded) -> Self {
        let mut config_errors = loaded.errors.clone();
        let mut chain: Vec<Arc<dyn Provider>> = Vec::new();
        // Build every configured provider, so a typo in an unused table is reported too (unknown
        // names are left out: the config loader has reported them).
        let mut built: Vec<(String, Arc<dyn Provider>)> = Vec::new();
        for name in &loaded.configured_providers() {
            let settings = loaded.provider_settings(name);
            let provider = providers::build(name, &settings);
            config_errors.extend(settings.take_errors());
            if let Some(p) = provider {
                built.push((name.clone(), Arc::from(p)));
            }
        }
        for name in &loaded.chain() {
            if let Some((_, p)) = built.iter().find(|(n, _)| n == name) {
                chain.push(p.clone());
            }
        }
        let calibration = Calibration::load(&paths::fitted_calibration());
        let timeout = Duration::from_secs_f64(loaded.config.gateway.timeout_s);
        Gateway { loaded, config_errors, chain, calibration, timeout }
    }

    /// A gateway over a given chain, for tests of the chain logic with scripted providers.
    #[cfg(test)]
    pub fn with_chain(loaded: Loaded, chain: Vec<Arc<dyn Provider>>, calibration: Calibration) -> Self {
        let timeout = Duration::from_secs_f64(loaded.config.gateway.timeout_s);
        Gateway { config_errors: loaded.errors.clone(), loaded, chain, calibration, timeout }
    }

    /// Loads the config from the usual place and builds the gateway.
    pub fn from_env() -> Self {
        Gateway::new(crate::config::load())
    }

    pub fn is_ok(&self) -> bool {
        self.config_errors.is_empty()
    }

    pub fn chain(&self) -> &[Arc<dyn Provider>] {
        &self.chain
    }

    pub fn primary(&self) -> Option<&Arc<dyn Provider>> {
        self.chain.first()
    }
}
