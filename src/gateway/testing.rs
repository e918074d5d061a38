//! Scripted providers and a gateway over them, for the unit tests of the chain, the checks and health.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Gateway;
use crate::calibration::Calibration;
use crate::providers::{self, EngineAnswer, EngineRequest, Failure, Provider, Question};

pub fn q(options: &[&str]) -> Question {
    Question { key: "decision".into(), text: "?".into(), options: options.iter().map(|s| s.to_string()).collect() }
}

/// A provider that answers from a script and counts how often it was asked.
pub struct Scripted {
    pub name: &'static str,
    pub answer: Result<Vec<EngineAnswer>, Failure>,
    pub max_options: usize,
    pub calls: std::sync::atomic::AtomicUsize,
}

impl Scripted {
    pub fn new(name: &'static str, answer: Result<Vec<EngineAnswer>, Failure>) -> Arc<Scripted> {
        Arc::new(Scripted { name, answer, max_options: 256, calls: Default::default() })
    }
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Provider for Scripted {
    fn name(&self) -> &'static str {
        self.name
    }
    fn model(&self) -> String {
        format!("{}-model", self.name)
    }
    fn capabilities(&self) -> providers::Capabilities {
        providers::Capabilities { max_options: self.max_options, one_pass: true }
    }
    fn decide(&self, _request: &EngineRequest, _timeout: Duration) -> Result<Vec<EngineAnswer>, Failure> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.answer.clone()
    }
    fn health(&self, _timeout: Duration) -> providers::Probe {
        providers::Probe { ok: self.answer.is_ok(), detail: None }
    }
}

pub fn gateway(chain: &[Arc<Scripted>]) -> Gateway {
    let loaded = crate::config::load_from("/nonexistent/system1.toml".into(), &[]);
    let chain: Vec<Arc<dyn Provider>> = chain.iter().map(|p| Arc::clone(p) as Arc<dyn Provider>).collect();
    Gateway::with_chain(loaded, chain, Calibration::default())
}

pub fn yes_no(questions: usize) -> EngineRequest {
    EngineRequest { context: None, questions: (0..questions).map(|_| q(&["yes", "no"])).collect() }
}

pub fn decided(decision: &str, confidence: f64) -> EngineAnswer {
    EngineAnswer::Decided {
        decision: decision.to_string(),
        confidence,
        probabilities: None,
        rationale: None,
        detail: None,
    }
}

pub fn yes() -> EngineAnswer {
    decided("yes", 0.8)
}
