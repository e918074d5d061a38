//! The mock engine: deterministic, needs nothing installed, and configurable enough to drive every
//! gateway path (fallback, timeout, malformed answers, abstention) through the real binary.
//!
//! ```toml
//! [providers.mock]
//! answer = "yes"            # the option to pick; default: the first option
//! answers = { design = "no" } # per question key, overriding `answer`
//! confidence = 0.9          # probability of the picked option
//! probabilities = { yes = 0.7, no = 0.3 }  # report these instead (must cover the options)
//! delay_ms = 0              # time each decision takes
//! fail = ""                 # "", "error", "timeout", "malformed" or "abstain"
//! max_options = 256
//! down = false              # health probe fails
//! model = "mock"
//! ```

use std::thread::sleep;
use std::time::Duration;

use serde_json::{Map, Value};

use super::{Capabilities, Cause, EngineAnswer, EngineRequest, Failure, Fix, Probabilities, Probe, Provider};
use crate::config::Settings;

/// How to replace the mock with a real engine, in the words its answers and health use. Any MCP or
/// HTTP client reads them, so they name commands and no Claude Code slash command (issue 40 item 6).
fn set_up() -> String {
    format!(
        "a real one is set up with `{}`, and `{}` shows what else this machine can run",
        crate::text::command("engine install local"),
        crate::text::command("engine probe")
    )
}

pub struct Mock {
    answer: String,
    answers: Map<String, Value>,
    confidence: f64,
    probabilities: Option<Map<String, Value>>,
    delay: Duration,
    fail: String,
    max_options: usize,
    down: bool,
    model: String,
}

impl Mock {
    pub fn new(s: &Settings) -> Self {
        let table = |key: &str| match s.value(key) {
            Some(toml::Value::Table(t)) => serde_json::to_value(t).ok().and_then(|v| v.as_object().cloned()),
            Some(_) => {
                s.error(format!("{}.{key} must be a table", s.section()));
                None
            }
            None => None,
        };
        let fail = s.string("fail", "");
        if !["", "error", "timeout", "malformed", "abstain"].contains(&fail.as_str()) {
            s.error(format!("{}.fail must be \"\", error, timeout, malformed or abstain, got {fail:?}", s.section()));
        }
        Self {
            answer: s.string("answer", ""),
            answers: table("answers").unwrap_or_default(),
            confidence: s.f64("confidence", 0.9, 0.0, 1.0),
            probabilities: table("probabilities"),
            delay: Duration::from_millis(s.u64("delay_ms", 0, 0, 3_600_000)),
            fail,
            max_options: s.u64("max_options", 256, 2, 256) as usize,
            down: s.bool("down", false),
            model: s.string("model", "mock"),
        }
    }

    /// How rationales name this engine: `mock`, or `mock <model>` when a model is configured.
    fn label(&self) -> String {
        if self.model == "mock" { "mock".to_string() } else { format!("mock {}", self.model) }
    }

    /// The configured answer, as configured: a pick or probabilities that do not fit the options
    /// are passed on for the gateway to refuse, as it would an engine's.
    fn answer_one(&self, key: &str, options: &[String]) -> EngineAnswer {
        if self.fail == "abstain" {
            return EngineAnswer::abstained(format!(
                "no engine is set up: the mock stands in for one and abstains on every question; {}",
                set_up()
            ));
        }
        let pick = match self.answers.get(key).and_then(Value::as_str) {
            Some(a) => a.to_string(),
            None if !self.answer.is_empty() => self.answer.clone(),
            None => options.first().cloned().unwrap_or_default(),
        };
        let (probabilities, confidence) = match &self.probabilities {
            // A configured value that is not a number is reported as NaN, which no check accepts.
            Some(p) => (
                p.iter().map(|(k, v)| (k.clone(), v.as_f64().unwrap_or(f64::NAN))).collect(),
                p.get(&pick).and_then(Value::as_f64).unwrap_or(self.confidence),
            ),
            None => {
                let rest = if options.len() > 1 { (1.0 - self.confidence) / (options.len() - 1) as f64 } else { 0.0 };
                let rest = crate::text::round(rest, 6);
                let probs = options.iter().map(|o| (o.clone(), if *o == pick { self.confidence } else { rest }));
                (probs.collect::<Probabilities>(), self.confidence)
            }
        };
        let listed: Vec<String> = probabilities.iter().map(|(k, p)| format!("{k}={p:.2}")).collect();
        EngineAnswer::Decided {
            decision: pick,
            confidence,
            probabilities: Some(probabilities),
            rationale: Some(format!("{}: {}", self.label(), listed.join(", "))),
            detail: None,
        }
    }

    /// What `fail = "malformed"` answers: a decision that is none of the options (no option is empty).
    fn malformed() -> EngineAnswer {
        EngineAnswer::Decided {
            decision: String::new(),
            confidence: f64::NAN,
            probabilities: None,
            rationale: Some("configured to answer malformed".to_string()),
            detail: None,
        }
    }
}

impl Provider for Mock {
    fn name(&self) -> &'static str {
        "mock"
    }

    fn model(&self) -> String {
        self.model.clone()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::any(self.max_options, true)
    }

    fn decide(&self, request: &EngineRequest, timeout: Duration) -> Result<Vec<EngineAnswer>, Failure> {
        if self.fail == "timeout" || self.delay >= timeout {
            // Behave like an engine that hangs: the attempt is cut off at the timeout.
            sleep(timeout);
            return Err(Failure::timeout(timeout));
        }
        if !self.delay.is_zero() {
            sleep(self.delay);
        }
        match self.fail.as_str() {
            "error" => Err(Failure::new(Cause::ConfiguredToFail, "configured to fail")),
            "malformed" => Ok(request.questions.iter().map(|_| Mock::malformed()).collect()),
            _ => Ok(request.questions.iter().map(|q| self.answer_one(&q.key, &q.options)).collect()),
        }
    }

    fn health(&self, _timeout: Duration) -> Probe {
        if self.down {
            return Probe::Down(Failure::new(Cause::ConfiguredDown, "configured as down"));
        }
        let what = if self.fail == "abstain" { "abstains on every question" } else { "gives configured answers" };
        Probe::up(format!("mock engine, model {}: not a real engine, it {what}; {}", self.model, set_up()))
    }

    /// The mock fails only as it is configured to: the fix is always the setting. (A hang is
    /// `fail = "timeout"`, or a `delay` beyond the timeout.)
    fn fix(&self, failure: &Failure) -> Fix {
        if failure.cause == Cause::ConfiguredDown {
            Fix::new("the mock engine is configured as down: remove `down = true` from [providers.mock]")
        } else {
            Fix::new("the mock engine is configured to fail: check `fail` in [providers.mock]")
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn mock(toml_text: &str) -> Mock {
        let table: toml::Table = toml_text.parse().expect("test TOML");
        Mock::new(&Settings::new("providers.mock", table, BTreeMap::new()))
    }

    #[test]
    fn each_way_it_is_set_to_fail_has_its_fix() {
        let down = mock("down = true");
        let Probe::Down(failure) = down.health(Duration::from_secs(1)) else { panic!("set down") };
        assert!(down.fix(&failure).action.contains("remove `down = true`"), "{failure:?}");
        let failing = mock("fail = \"error\"\ndown = true");
        let request = EngineRequest { context: None, questions: vec![] };
        let failure = failing.decide(&request, Duration::from_secs(1)).unwrap_err();
        assert!(failing.fix(&failure).action.contains("check `fail`"), "{failure:?}");
    }
}
