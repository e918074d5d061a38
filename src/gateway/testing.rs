//! Scripted providers and a gateway over them, for the unit tests of the chain, the attempt, the
//! checks and health, and of the fixes `engine_servers::fix` words.

use std::sync::Arc;
use std::time::Duration;

use super::Gateway;
use crate::calibration::Calibration;
use crate::providers::{self, Cause, EngineAnswer, EngineRequest, Failure, Probe, Provider, Question};

pub fn q(options: &[&str]) -> Question {
    Question { key: "decision".into(), text: "?".into(), options: options.iter().map(|s| s.to_string()).collect() }
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

/// The answers of an engine that is given each pass whole: `answer(request, timeout)`.
type Answerer = dyn Fn(&EngineRequest, Duration) -> Result<Vec<EngineAnswer>, Failure> + Send + Sync;

/// What a health probe of it says.
type Prober = dyn Fn() -> Probe + Send + Sync;

/// A provider that answers each request through a function of it, records every request, and
/// answers a health probe through its `probe`.
pub struct Scripted {
    pub name: &'static str,
    pub max_options: usize,
    answer: Box<Answerer>,
    probe: Box<Prober>,
    /// Its fix names the cause it was given and nothing else, in place of the shared wording.
    echoes_fixes: bool,
    /// Its latency as measured at install ([`Provider::measured_latency`]).
    pub measured: std::sync::OnceLock<Duration>,
    pub asked: std::sync::Mutex<Vec<(EngineRequest, Duration)>>,
}

impl Scripted {
    /// Always the same answer (or failure), whatever it is asked; down when that is a failure.
    pub fn new(name: &'static str, answer: Result<Vec<EngineAnswer>, Failure>) -> Arc<Scripted> {
        Scripted::limited(name, 256, answer)
    }

    /// The same, taking at most `max_options` options per question.
    pub fn limited(
        name: &'static str,
        max_options: usize,
        answer: Result<Vec<EngineAnswer>, Failure>,
    ) -> Arc<Scripted> {
        let up = answer.is_ok();
        Scripted::build(name, max_options, up, move |_, _| answer.clone())
    }

    /// Answers through `answer(request, timeout)`.
    pub fn answering(
        name: &'static str,
        max_options: usize,
        answer: impl Fn(&EngineRequest, Duration) -> Result<Vec<EngineAnswer>, Failure> + Send + Sync + 'static,
    ) -> Arc<Scripted> {
        Scripted::build(name, max_options, true, answer)
    }

    /// Only probed: its health is whatever `probe` says, when it says it.
    pub fn probed(name: &'static str, probe: impl Fn() -> Probe + Send + Sync + 'static) -> Arc<Scripted> {
        Arc::new(Scripted { probe: Box::new(probe), ..Scripted::unbuilt(name, 256, true, |_, _| Err(unused())) })
    }

    /// Up, and each of its fixes says which cause it was given, and nothing else.
    pub fn echoing_fixes(name: &'static str) -> Arc<Scripted> {
        Arc::new(Scripted { echoes_fixes: true, ..Scripted::unbuilt(name, 256, true, |_, _| Err(unused())) })
    }

    fn build(
        name: &'static str,
        max_options: usize,
        up: bool,
        answer: impl Fn(&EngineRequest, Duration) -> Result<Vec<EngineAnswer>, Failure> + Send + Sync + 'static,
    ) -> Arc<Scripted> {
        Arc::new(Scripted::unbuilt(name, max_options, up, answer))
    }

    fn unbuilt(
        name: &'static str,
        max_options: usize,
        up: bool,
        answer: impl Fn(&EngineRequest, Duration) -> Result<Vec<EngineAnswer>, Failure> + Send + Sync + 'static,
    ) -> Scripted {
        let probe = move || {
            if up { Probe::Up(None) } else { Probe::Down(Failure::new(Cause::Other, "scripted as down")) }
        };
        Scripted {
            name,
            max_options,
            answer: Box::new(answer),
            probe: Box::new(probe),
            echoes_fixes: false,
            measured: Default::default(),
            asked: Default::default(),
        }
    }

    /// How often it was asked.
    pub fn calls(&self) -> usize {
        self.asked.lock().expect("lock").len()
    }

    /// Each question answered by a function of its options alone.
    pub fn per_question(
        name: &'static str,
        max_options: usize,
        each: impl Fn(&[String]) -> EngineAnswer + Send + Sync + 'static,
    ) -> Arc<Scripted> {
        Scripted::build(name, max_options, true, move |r, _| Ok(r.questions.iter().map(|q| each(&q.options)).collect()))
    }

    /// The options of every question of every request, in order.
    pub fn asked_options(&self) -> Vec<Vec<Vec<String>>> {
        let asked = self.asked.lock().expect("lock");
        asked.iter().map(|(r, _)| r.questions.iter().map(|q| q.options.clone()).collect()).collect()
    }

    pub fn timeouts(&self) -> Vec<Duration> {
        self.asked.lock().expect("lock").iter().map(|(_, t)| *t).collect()
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
        providers::Capabilities::any(self.max_options, true)
    }
    fn decide(&self, request: &EngineRequest, timeout: Duration) -> Result<Vec<EngineAnswer>, Failure> {
        self.asked.lock().expect("lock").push((request.clone(), timeout));
        (self.answer)(request, timeout)
    }
    fn health(&self, _timeout: Duration) -> Probe {
        (self.probe)()
    }
    fn measured_latency(&self) -> Option<Duration> {
        self.measured.get().copied()
    }
    fn fix(&self, failure: &Failure) -> providers::Fix {
        if self.echoes_fixes {
            providers::Fix::new(format!("{:?}", failure.cause))
        } else {
            providers::failure::generic_fix(self.name, failure)
        }
    }
}

/// The failure of a provider that was not meant to be asked.
fn unused() -> Failure {
    Failure::new(Cause::Other, "not asked in this test")
}

/// A gateway over any providers, with `[gateway]` settings from `env` (`SYSTEM1_STABILITY`, ...).
pub fn gateway_of(chain: Vec<Arc<dyn Provider>>, env: &[(&str, &str)], calibration: Calibration) -> Gateway {
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let loaded = crate::config::load_from("/nonexistent/system1.toml".into(), &env);
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    Gateway::with_chain(loaded, chain, calibration)
}

/// A choice answer with these probabilities, in the order given, picking the most probable.
pub fn with_probabilities(p: &[(&str, f64)]) -> EngineAnswer {
    let best = p.iter().fold(p[0], |b, x| if x.1 > b.1 { *x } else { b });
    EngineAnswer::Decided {
        decision: best.0.to_string(),
        confidence: best.1,
        probabilities: Some(p.iter().map(|(o, x)| (o.to_string(), *x)).collect()),
        rationale: None,
        detail: None,
    }
}

/// The answer of an engine that picks the option shown at `slot` with probability `p`, the rest
/// shared equally.
pub fn shown_at(options: &[String], slot: usize, p: f64) -> EngineAnswer {
    let rest = (1.0 - p) / (options.len() - 1) as f64;
    let probs: Vec<(&str, f64)> =
        options.iter().enumerate().map(|(i, o)| (o.as_str(), if i == slot { p } else { rest })).collect();
    with_probabilities(&probs)
}
