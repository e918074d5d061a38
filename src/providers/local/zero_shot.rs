//! How sure the local engine is of a zero-shot choice: the temperature of the softmax that turns
//! the option similarities into probabilities.
//!
//! The temperature decides what a confidence means. Cosine similarities between a sentence and
//! a few option names differ by a few hundredths, so a small temperature (0.05, the earlier
//! default) makes a near tie look certain: "Fixed typo in README" was `fix` at 0.95. The
//! temperature is therefore measured, per model, on a labelled set of choice questions
//! ([calibration/choices.jsonl](../../../calibration/choices.jsonl)) by the negative
//! log-likelihood of the right options, and shipped with its figures in
//! [calibration/zero-shot.json](../../../calibration/zero-shot.json) (`tuning::zero_shot` measures
//! it; see docs/engines.md). A model with no measurement keeps the earlier temperature, and its
//! answers say they are uncalibrated.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const FORMAT: &str = "system1-zero-shot";
pub const VERSION: u64 = 1;

/// The measurements shipped with this build.
pub const SHIPPED: &str = include_str!("../../../calibration/zero-shot.json");

/// The temperature of a model nobody measured: sharp, as it always was, and said to be uncalibrated.
pub const UNMEASURED: f64 = 0.05;

/// The file of measured zero-shot temperatures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct File {
    pub format: String,
    pub version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub measured: Vec<Measured>,
}

/// One model's zero-shot temperature, as measured on a labelled set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub model: String,
    pub temperature: f64,
    /// The set it was measured on (a repository path).
    pub set: String,
    /// How many answered questions it was fitted on.
    pub n: usize,
    /// The figures of the measurement (accuracy, ECE and NLL before and after, held out by
    /// question, coverage and accuracy at thresholds): shown, never read by the engine.
    #[serde(flatten)]
    pub figures: Map<String, Value>,
}

impl crate::fsutil::Versioned for File {
    const FORMAT: &'static str = FORMAT;
    const VERSION: u64 = VERSION;
    const WHAT: &'static str = "a zero-shot temperature file";
    const MAX_BYTES: u64 = 1 << 20;

    fn names(&self) -> (&str, u64) {
        (&self.format, self.version)
    }

    fn check(&self) -> Result<(), String> {
        match self.measured.iter().find(|m| !(m.temperature.is_finite() && m.temperature > 0.0)) {
            Some(m) => Err(format!("the zero-shot temperature {} for {} must be positive", m.temperature, m.model)),
            None => Ok(()),
        }
    }
}

impl File {
    pub fn parse(text: &str) -> Result<File, String> {
        crate::fsutil::parse_versioned(text)
    }
}

/// The shipped measurement for `model`, if there is one.
pub fn measured(model: &str) -> Option<Measured> {
    File::parse(SHIPPED).ok()?.measured.into_iter().find(|m| m.model == model)
}

/// The zero-shot temperature in force and where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Temperature {
    /// Measured for this model (the default).
    Measured { temperature: f64, set: String, n: usize },
    /// Set in the config (`[providers.local] temperature`).
    Set(f64),
    /// No measurement for this model and none set: [`UNMEASURED`].
    Unmeasured,
}

impl Temperature {
    /// The temperature for `model` given the configured one (0: none set).
    pub fn for_model(model: &str, configured: f64) -> Self {
        if configured > 0.0 {
            return Temperature::Set(configured);
        }
        match measured(model) {
            Some(m) => Temperature::Measured { temperature: m.temperature, set: m.set, n: m.n },
            None => Temperature::Unmeasured,
        }
    }

    pub fn temperature(&self) -> f64 {
        match self {
            Temperature::Measured { temperature, .. } => *temperature,
            Temperature::Set(t) => *t,
            Temperature::Unmeasured => UNMEASURED,
        }
    }
}

/// How an answer's detail names it.
impl fmt::Display for Temperature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Temperature::Measured { temperature, set, n } => {
                write!(f, "temperature {temperature} measured on {set} (n={n})")
            }
            Temperature::Set(t) => write!(f, "temperature {t} set in [providers.local]"),
            Temperature::Unmeasured => write!(
                f,
                "temperature {UNMEASURED}, uncalibrated: no zero-shot temperature was measured for this model, so its \
                 confidence overstates how often it is right"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_file_parses_and_measures_the_default_model() {
        let f = File::parse(SHIPPED).expect("shipped zero-shot file");
        assert!(f.measured.iter().any(|m| m.model == super::super::DEFAULT_MODEL));
    }

    #[test]
    fn a_configured_temperature_wins_and_an_unknown_model_is_uncalibrated() {
        assert_eq!(Temperature::for_model(super::super::DEFAULT_MODEL, 0.2), Temperature::Set(0.2));
        let other = Temperature::for_model("some-other-model", 0.0);
        assert_eq!(other, Temperature::Unmeasured);
        assert!(other.to_string().contains("uncalibrated"), "{other}");
        let default = Temperature::for_model(super::super::DEFAULT_MODEL, 0.0);
        assert!(matches!(default, Temperature::Measured { .. }), "{default:?}");
        assert!(default.temperature() > UNMEASURED, "{default:?}");
    }
}
