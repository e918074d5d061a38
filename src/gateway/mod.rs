//! The gateway: validation, the provider chain with fallback, the per-attempt timeout, answer
//! checks, calibration, the threshold and the pause flag (seed 000 "Behaviour").
//!
//! Data flows one way: a tool call or hook hands the gateway a request; the gateway asks the
//! providers in order and validates what they say; calibration rescales; the threshold decides
//! between `decided` and `abstained`. Abstention never triggers a fallback; only a timeout, an
//! error or a malformed answer does.

pub mod request;
pub mod response;
pub mod schema;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::calibration::{self, Calibration};
use crate::config::Loaded;
use crate::logging;
use crate::paths;
use crate::providers::{self, EngineRequest, Failure, Provider, Question};
use crate::state;
pub use request::SCHEMA_VERSION;
pub use response::{
    Attempt, DecideResponse, ErrorCode, ErrorInfo, HealthResponse, Outcome, ProviderProbe, Status, millis,
};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const TOOLS: [&str; 3] = ["system1_decide", "system1_health", "system1_capabilities"];
pub const PAUSED_RATIONALE: &str = "System-1 is paused (/system1:toggle off), so it makes no decisions: reason it through yourself. Resume with /system1:toggle on.";

/// One question's answer, checked and calibrated.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Decided {
        decision: String,
        confidence: f64,
        probabilities: Option<Map<String, Value>>,
        calibrated: bool,
        rationale: Option<String>,
    },
    Abstained {
        rationale: Option<String>,
    },
}

/// The result of running the provider chain on one engine request.
#[derive(Debug, Clone)]
pub struct ChainOutcome {
    /// One answer per question, from the provider that answered; `None` when every attempt failed.
    pub answers: Option<Vec<Answer>>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub attempts: Vec<Attempt>,
    /// The code and message of the last failure, when no provider answered.
    pub failure: Option<ErrorInfo>,
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
        let calibration = Calibration::load(&paths::local_calibration());
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

    /// Runs the chain on `request` until a provider answers. `cal_keys[i]` is the calibration key of
    /// question i. `deadline`, when set, bounds the whole chain (the hook's engine budget).
    pub fn run_chain(
        &self,
        request: &EngineRequest,
        cal_keys: &[String],
        deadline: Option<Instant>,
        rid: &str,
    ) -> ChainOutcome {
        let mut attempts = Vec::new();
        let mut failure = None;
        for provider in &self.chain {
            let name = provider.name().to_string();
            let mut timeout = self.timeout;
            if let Some(d) = deadline {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    let detail = "the engine time budget was used up".to_string();
                    attempts.push(Attempt {
                        provider: name,
                        outcome: Outcome::Timeout,
                        latency_ms: 0.0,
                        detail: Some(detail.clone()),
                    });
                    failure = Some(ErrorInfo { code: ErrorCode::ProviderTimeout, message: detail });
                    break;
                }
                timeout = timeout.min(left);
            }
            let caps = provider.capabilities();
            if let Some(q) = request.questions.iter().find(|q| q.options.len() > caps.max_options) {
                let detail = format!("{} options exceed {name}'s limit of {}", q.options.len(), caps.max_options);
                logging::info(rid, &format!("{name}: {detail}"));
                attempts.push(Attempt {
                    provider: name,
                    outcome: Outcome::Error,
                    latency_ms: 0.0,
                    detail: Some(detail.clone()),
                });
                failure = Some(ErrorInfo { code: ErrorCode::ProviderError, message: detail });
                continue;
            }
            let started = Instant::now();
            let result = provider.decide(request, timeout);
            let latency_ms = millis(started.elapsed());
            let checked = result.and_then(|values| self.check_answers(provider.as_ref(), request, cal_keys, values));
            match checked {
                Ok((answers, detail)) => {
                    let outcome = if answers.iter().all(|a| matches!(a, Answer::Abstained { .. })) {
                        Outcome::Abstained
                    } else {
                        Outcome::Ok
                    };
                    // The call's own summary line says the rest at INFO; this detail is for DEBUG.
                    if logging::enabled(logging::Level::Debug) {
                        logging::debug(rid, &format!("{name}: {outcome:?} in {latency_ms} ms"));
                    }
                    attempts.push(Attempt { provider: name.clone(), outcome, latency_ms, detail });
                    return ChainOutcome {
                        answers: Some(answers),
                        provider: Some(name),
                        model: Some(provider.model()),
                        attempts,
                        failure: None,
                    };
                }
                Err(f) => {
                    let (outcome, code) = match &f {
                        Failure::Timeout(_) => (Outcome::Timeout, ErrorCode::ProviderTimeout),
                        Failure::Error(_) => (Outcome::Error, ErrorCode::ProviderError),
                        Failure::Malformed(_) => (Outcome::Malformed, ErrorCode::MalformedResponse),
                    };
                    logging::warn(rid, &format!("{name}: {outcome:?} after {latency_ms} ms: {}", f.detail()));
                    attempts.push(Attempt {
                        provider: name.clone(),
                        outcome,
                        latency_ms,
                        detail: Some(f.detail().to_string()),
                    });
                    failure = Some(ErrorInfo { code, message: format!("{name}: {}", f.detail()) });
                }
            }
        }
        if failure.is_none() {
            failure = Some(ErrorInfo { code: ErrorCode::ConfigError, message: "no provider is configured".into() });
        }
        ChainOutcome { answers: None, provider: None, model: None, attempts, failure }
    }

    /// Checks a provider's answers (the gateway, not the adapter, judges them) and calibrates them.
    fn check_answers(
        &self,
        provider: &dyn Provider,
        request: &EngineRequest,
        cal_keys: &[String],
        values: Vec<Value>,
    ) -> Result<(Vec<Answer>, Option<String>), Failure> {
        if values.len() != request.questions.len() {
            return Err(Failure::Malformed(format!(
                "{} answers for {} questions",
                values.len(),
                request.questions.len()
            )));
        }
        let model = provider.model();
        let mut details = Vec::new();
        let mut answers = Vec::with_capacity(values.len());
        for (i, (q, v)) in request.questions.iter().zip(values).enumerate() {
            let (answer, detail) =
                check_one(q, &v).map_err(|e| Failure::Malformed(format!("question {:?}: {e}", q.key)))?;
            if let Some(d) = detail {
                details.push(d);
            }
            let key = cal_keys.get(i).map(String::as_str).unwrap_or(&q.key);
            answers.push(self.calibrate(provider.name(), &model, key, &q.options, answer));
        }
        Ok((answers, if details.is_empty() { None } else { Some(details.join("; ")) }))
    }

    fn calibrate(&self, provider: &str, model: &str, key: &str, options: &[String], answer: Answer) -> Answer {
        let Answer::Decided { decision, confidence, probabilities, rationale, .. } = answer else { return answer };
        let Some(fit) = self.calibration.find(provider, model, key, options.len()) else {
            return Answer::Decided { decision, confidence, probabilities, calibrated: false, rationale };
        };
        // Without reported probabilities only a two-option answer can be rescaled: the loser has the rest.
        let probs: Vec<f64> = match &probabilities {
            Some(p) => options.iter().map(|o| p.get(o).and_then(Value::as_f64).unwrap_or(0.0)).collect(),
            None if options.len() == 2 => {
                options.iter().map(|o| if *o == decision { confidence } else { 1.0 - confidence }).collect()
            }
            None => return Answer::Decided { decision, confidence, probabilities, calibrated: false, rationale },
        };
        let scaled = calibration::rescale(&probs, fit.temperature);
        let idx = options.iter().position(|o| *o == decision).unwrap_or(0);
        let map: Map<String, Value> =
            options.iter().zip(&scaled).map(|(o, p)| (o.clone(), json!(round6(*p)))).collect();
        Answer::Decided {
            decision,
            confidence: round6(scaled[idx]),
            probabilities: Some(map),
            calibrated: true,
            rationale,
        }
    }

    /// `system1_decide`: one decision, with every response field of schema "1".
    pub fn decide(&self, args: &Value) -> DecideResponse {
        let started = Instant::now();
        let rid = request::request_id_of(args).unwrap_or_else(new_request_id);
        let mut resp = DecideResponse {
            schema_version: SCHEMA_VERSION.to_string(),
            request_id: rid.clone(),
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
        };
        let req = match request::validate(args) {
            Ok(r) => r,
            Err(e) => {
                logging::info(&rid, &format!("invalid request: {e}"));
                resp.error = Some(ErrorInfo { code: ErrorCode::InvalidRequest, message: e });
                return self.finish(resp, started);
            }
        };
        if logging::enabled(logging::Level::Debug) {
            logging::debug(&rid, &format!("question: {:?}", req.question));
        }
        if !self.is_ok() {
            resp.error = Some(ErrorInfo { code: ErrorCode::ConfigError, message: self.config_errors.join("; ") });
            return self.finish(resp, started);
        }
        if state::is_paused() {
            resp.status = Status::Abstained;
            resp.rationale = Some(PAUSED_RATIONALE.to_string());
            return self.finish(resp, started);
        }
        let threshold = req.min_confidence.unwrap_or(self.loaded.config.gateway.min_confidence);
        let options = req.options.clone().unwrap_or_else(|| vec!["yes".to_string(), "no".to_string()]);
        let engine_request = EngineRequest {
            context: req.context.clone().map(Value::Object),
            questions: vec![Question { key: "decision".to_string(), text: req.question.clone(), options }],
        };
        let outcome = self.run_chain(&engine_request, &[req.question.trim().to_string()], None, &rid);
        resp.attempts = outcome.attempts;
        resp.provider = outcome.provider;
        match outcome.answers.and_then(|mut a| a.pop()) {
            None => resp.error = outcome.failure,
            Some(Answer::Abstained { rationale }) => {
                resp.status = Status::Abstained;
                resp.rationale = rationale.or_else(|| Some("the engine abstained".to_string()));
            }
            Some(Answer::Decided { decision, confidence, probabilities, calibrated, rationale }) => {
                resp.confidence = Some(confidence);
                resp.probabilities = probabilities;
                resp.calibrated = calibrated;
                resp.rationale = rationale;
                if confidence < threshold {
                    resp.status = Status::Abstained;
                    let why = format!("confidence {confidence:.2} is below the threshold {threshold:.2}");
                    resp.rationale = Some(match resp.rationale.take() {
                        Some(r) => format!("{why} ({r})"),
                        None => why,
                    });
                } else {
                    resp.status = Status::Decided;
                    resp.decision = Some(decision);
                }
            }
        }
        self.finish(resp, started)
    }

    fn finish(&self, mut resp: DecideResponse, started: Instant) -> DecideResponse {
        resp.latency_ms = millis(started.elapsed());
        logging::info(
            &resp.request_id,
            &format!(
                "decide: {} via {} in {} ms{}",
                resp.status.as_str(),
                resp.provider.as_deref().unwrap_or("-"),
                resp.latency_ms,
                resp.error.as_ref().map(|e| format!(" ({:?}: {})", e.code, e.message)).unwrap_or_default()
            ),
        );
        // A request that failed validation was never a decision: counting it would let a caller's
        // mistakes look like an engine failing (doctor warns when most decisions fail).
        if resp.error.as_ref().map(|e| e.code) != Some(ErrorCode::InvalidRequest) {
            state::record_decision(resp.status.as_str(), resp.provider.as_deref(), resp.latency_ms);
        }
        resp
    }

    /// `system1_health`: every provider of the chain probed in parallel. Each probe gets the timeout;
    /// one that has not answered by then (plus a little slack) is reported as down without waiting
    /// for it, so health never takes much longer than one timeout whatever an adapter does.
    pub fn health(&self) -> HealthResponse {
        self.health_with_pause(state::is_paused())
    }

    fn health_with_pause(&self, paused: bool) -> HealthResponse {
        let timeout = self.timeout;
        let started = Instant::now();
        let (tx, rx) = std::sync::mpsc::channel();
        for (i, p) in self.chain.iter().enumerate() {
            let (tx, p) = (tx.clone(), Arc::clone(p));
            std::thread::spawn(move || {
                let t0 = Instant::now();
                let probe = p.health(timeout);
                let _ = tx.send((i, probe, millis(t0.elapsed())));
            });
        }
        drop(tx);
        let mut results: Vec<Option<(providers::Probe, f64)>> = vec![None; self.chain.len()];
        let deadline = started + timeout + Duration::from_millis(50);
        while results.iter().any(Option::is_none) {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok((i, probe, ms)) => results[i] = Some((probe, ms)),
                Err(_) => break,
            }
        }
        let probes: Vec<ProviderProbe> = self
            .chain
            .iter()
            .zip(results)
            .enumerate()
            .map(|(i, (p, r))| {
                let (probe, latency_ms) = r.unwrap_or_else(|| {
                    let detail = format!("no answer within {:.3} s", timeout.as_secs_f64());
                    (providers::Probe { ok: false, detail: Some(detail) }, millis(started.elapsed()))
                });
                ProviderProbe {
                    name: p.name().to_string(),
                    role: if i == 0 { "primary".into() } else { "fallback".into() },
                    ok: probe.ok,
                    latency_ms,
                    detail: probe.detail,
                }
            })
            .collect();
        let status = if !self.is_ok() || probes.is_empty() {
            "down"
        } else if paused {
            "paused"
        } else if probes[0].ok {
            "ok"
        } else if probes.iter().skip(1).any(|p| p.ok) {
            "degraded"
        } else {
            "down"
        };
        HealthResponse {
            status: status.to_string(),
            gateway_version: VERSION.to_string(),
            schema_version: SCHEMA_VERSION.to_string(),
            paused,
            config_file: self.loaded.file_read.then(|| self.loaded.path.display().to_string()),
            config_errors: self.config_errors.clone(),
            providers: probes,
        }
    }

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

/// Checks one raw answer against its question.
fn check_one(q: &Question, v: &Value) -> Result<(Answer, Option<String>), String> {
    let Value::Object(o) = v else { return Err(format!("answer is not an object: {}", short(v))) };
    let rationale = o.get("rationale").and_then(Value::as_str).map(String::from);
    let detail = o.get("detail").and_then(Value::as_str).map(String::from);
    if o.get("abstain").and_then(Value::as_bool) == Some(true) {
        return Ok((Answer::Abstained { rationale }, detail));
    }
    let decision = match o.get("decision") {
        Some(Value::String(d)) if q.options.contains(d) => d.clone(),
        Some(Value::String(d)) => return Err(format!("decision {d:?} is not one of the options")),
        other => {
            return Err(format!(
                "decision must be one of the options, got {}",
                other.map(short).unwrap_or("nothing".into())
            ));
        }
    };
    let confidence = match o.get("confidence").and_then(Value::as_f64) {
        Some(c) if (0.0..=1.0).contains(&c) => c,
        Some(c) => return Err(format!("confidence {c} is outside [0, 1]")),
        None => return Err("confidence is missing or not a number".to_string()),
    };
    let probabilities = match o.get("probabilities") {
        None | Some(Value::Null) => None,
        Some(Value::Object(p)) => {
            for (k, pv) in p {
                if !q.options.contains(k) {
                    return Err(format!("probabilities name {k:?}, which is not an option"));
                }
                match pv.as_f64() {
                    Some(x) if (0.0..=1.0).contains(&x) => {}
                    _ => return Err(format!("probability of {k:?} is not a number in [0, 1]")),
                }
            }
            if p.len() != q.options.len() {
                return Err(format!("probabilities cover {} of {} options", p.len(), q.options.len()));
            }
            let sum: f64 = p.values().filter_map(Value::as_f64).sum();
            if (sum - 1.0).abs() > 0.02 {
                return Err(format!("probabilities sum to {sum:.4}, not 1"));
            }
            // Report them in the caller's option order.
            Some(q.options.iter().map(|o| (o.clone(), p[o].clone())).collect())
        }
        Some(other) => return Err(format!("probabilities must be an object, got {}", short(other))),
    };
    Ok((Answer::Decided { decision, confidence, probabilities, calibrated: false, rationale }, detail))
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 { format!("{}…", s.chars().take(80).collect::<String>()) } else { s }
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// A request id unique enough for logs: time, process and a counter.
pub fn new_request_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or(0);
    format!("s1-{:x}-{:x}-{n}", t, std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(options: &[&str]) -> Question {
        Question { key: "decision".into(), text: "?".into(), options: options.iter().map(|s| s.to_string()).collect() }
    }

    #[test]
    fn answers_are_checked_by_the_gateway() {
        let yn = q(&["yes", "no"]);
        assert!(check_one(&yn, &json!("x")).unwrap_err().contains("not an object"));
        assert!(
            check_one(&yn, &json!({"decision": "maybe", "confidence": 0.9}))
                .unwrap_err()
                .contains("not one of the options")
        );
        assert!(check_one(&yn, &json!({"decision": "yes", "confidence": 1.2})).unwrap_err().contains("outside"));
        assert!(check_one(&yn, &json!({"decision": "yes"})).unwrap_err().contains("missing"));
        assert!(
            check_one(&yn, &json!({"decision": "yes", "confidence": 0.9, "probabilities": {"yes": 0.9, "maybe": 0.1}}))
                .unwrap_err()
                .contains("not an option")
        );
        assert!(
            check_one(&yn, &json!({"decision": "yes", "confidence": 0.9, "probabilities": {"yes": 0.9, "no": 0.5}}))
                .unwrap_err()
                .contains("sum")
        );
        let (a, _) =
            check_one(&yn, &json!({"decision": "no", "confidence": 0.7, "probabilities": {"no": 0.7, "yes": 0.3}}))
                .expect("valid");
        let Answer::Decided { probabilities: Some(p), .. } = a else { panic!("decided") };
        assert_eq!(p.keys().collect::<Vec<_>>(), vec!["yes", "no"], "reported in option order");
        let (a, _) = check_one(&yn, &json!({"abstain": true, "rationale": "non-Latin"})).expect("valid");
        assert_eq!(a, Answer::Abstained { rationale: Some("non-Latin".into()) });
    }

    /// A provider that answers from a script and counts how often it was asked.
    struct Scripted {
        name: &'static str,
        answer: Result<Vec<Value>, Failure>,
        max_options: usize,
        calls: std::sync::atomic::AtomicUsize,
    }

    impl Scripted {
        fn new(name: &'static str, answer: Result<Vec<Value>, Failure>) -> Arc<Scripted> {
            Arc::new(Scripted { name, answer, max_options: 256, calls: Default::default() })
        }
        fn calls(&self) -> usize {
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
        fn decide(&self, _request: &EngineRequest, _timeout: Duration) -> Result<Vec<Value>, Failure> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.answer.clone()
        }
        fn health(&self, _timeout: Duration) -> providers::Probe {
            providers::Probe { ok: self.answer.is_ok(), detail: None }
        }
    }

    fn gateway(chain: &[Arc<Scripted>]) -> Gateway {
        let loaded = crate::config::load_from("/nonexistent/system1.toml".into(), &[]);
        let chain: Vec<Arc<dyn Provider>> = chain.iter().map(|p| Arc::clone(p) as Arc<dyn Provider>).collect();
        Gateway::with_chain(loaded, chain, Calibration::default())
    }

    fn yes_no(questions: usize) -> EngineRequest {
        EngineRequest { context: None, questions: (0..questions).map(|_| q(&["yes", "no"])).collect() }
    }

    fn yes() -> Value {
        json!({"decision": "yes", "confidence": 0.8})
    }

    #[test]
    fn each_failure_kind_falls_back_and_every_try_is_recorded() {
        for (failure, outcome, code) in [
            (Failure::Error("refused".into()), Outcome::Error, ErrorCode::ProviderError),
            (Failure::Timeout("no answer within 0.5 s".into()), Outcome::Timeout, ErrorCode::ProviderTimeout),
            (Failure::Malformed("not JSON".into()), Outcome::Malformed, ErrorCode::MalformedResponse),
            (Failure::Error("x".into()), Outcome::Error, ErrorCode::ProviderError),
        ] {
            let first = Scripted::new("first", Err(failure.clone()));
            let second = Scripted::new("second", Ok(vec![yes()]));
            let third = Scripted::new("third", Ok(vec![yes()]));
            let g = gateway(&[first.clone(), second.clone(), third.clone()]);
            let out = g.run_chain(&yes_no(1), &["k".into()], None, "t");
            assert_eq!(out.provider.as_deref(), Some("second"), "{failure:?}");
            assert_eq!(out.model.as_deref(), Some("second-model"));
            assert!(matches!(out.answers.as_deref(), Some([Answer::Decided { .. }])));
            let tried: Vec<(&str, Outcome)> = out.attempts.iter().map(|a| (a.provider.as_str(), a.outcome)).collect();
            assert_eq!(tried, [("first", outcome), ("second", Outcome::Ok)]);
            assert_eq!(out.attempts[0].detail.as_deref(), Some(failure.detail()));
            assert_eq!((first.calls(), second.calls(), third.calls()), (1, 1, 0), "stops at the first answer");
            // With no fallback, the failure's code is the answer.
            let alone = gateway(&[Scripted::new("only", Err(failure.clone()))]);
            let out = alone.run_chain(&yes_no(1), &["k".into()], None, "t");
            assert!(out.answers.is_none());
            assert_eq!(out.failure.map(|f| f.code), Some(code));
        }
    }

    #[test]
    fn a_malformed_answer_is_judged_by_the_gateway_and_falls_back() {
        for bad in
            [json!("yes"), json!({"decision": "maybe", "confidence": 0.9}), json!({"decision": "yes", "confidence": 2})]
        {
            let first = Scripted::new("first", Ok(vec![bad.clone()]));
            let second = Scripted::new("second", Ok(vec![yes()]));
            let out = gateway(&[first, second]).run_chain(&yes_no(1), &["k".into()], None, "t");
            assert_eq!(out.attempts[0].outcome, Outcome::Malformed, "{bad}");
            assert_eq!(out.provider.as_deref(), Some("second"));
        }
        // The wrong number of answers for the questions asked is malformed too.
        let first = Scripted::new("first", Ok(vec![yes()]));
        let out = gateway(&[first]).run_chain(&yes_no(2), &["a".into(), "b".into()], None, "t");
        assert_eq!(out.attempts[0].outcome, Outcome::Malformed);
        assert_eq!(out.failure.map(|f| f.code), Some(ErrorCode::MalformedResponse));
    }

    #[test]
    fn abstention_never_falls_back() {
        let first = Scripted::new("first", Ok(vec![json!({"abstain": true, "rationale": "non-Latin text"})]));
        let second = Scripted::new("second", Ok(vec![yes()]));
        let out = gateway(&[first, second.clone()]).run_chain(&yes_no(1), &["k".into()], None, "t");
        assert_eq!(out.provider.as_deref(), Some("first"));
        assert_eq!(out.attempts.len(), 1);
        assert_eq!(out.attempts[0].outcome, Outcome::Abstained);
        assert_eq!(second.calls(), 0);
        assert_eq!(out.answers, Some(vec![Answer::Abstained { rationale: Some("non-Latin text".into()) }]));
    }

    #[test]
    fn a_providers_option_limit_is_an_error_that_falls_back_without_asking_it() {
        let small = Arc::new(Scripted {
            max_options: 20,
            ..Arc::into_inner(Scripted::new("small", Ok(vec![]))).expect("one owner")
        });
        let big = Scripted::new("big", Ok(vec![json!({"decision": "o0", "confidence": 0.7})]));
        let options: Vec<String> = (0..21).map(|i| format!("o{i}")).collect();
        let request =
            EngineRequest { context: None, questions: vec![Question { key: "k".into(), text: "?".into(), options }] };
        let out = gateway(&[small.clone(), big]).run_chain(&request, &["k".into()], None, "t");
        assert_eq!(small.calls(), 0, "the limit is checked before the provider is asked");
        assert_eq!(out.attempts[0].outcome, Outcome::Error);
        assert!(out.attempts[0].detail.as_deref().is_some_and(|d| d.contains("21 options exceed small's limit of 20")));
        assert_eq!(out.provider.as_deref(), Some("big"));
    }

    #[test]
    fn a_spent_budget_stops_the_chain_with_a_timeout() {
        let first = Scripted::new("first", Ok(vec![yes()]));
        let out = gateway(std::slice::from_ref(&first)).run_chain(&yes_no(1), &["k".into()], Some(Instant::now()), "t");
        assert_eq!(first.calls(), 0);
        assert_eq!(out.attempts[0].outcome, Outcome::Timeout);
        assert_eq!(out.failure.map(|f| f.code), Some(ErrorCode::ProviderTimeout));
    }

    /// A provider whose health probe takes a while (answering ok if it is waited for).
    struct Sleeps(&'static str, Duration);

    impl Provider for Sleeps {
        fn name(&self) -> &'static str {
            self.0
        }
        fn model(&self) -> String {
            String::new()
        }
        fn capabilities(&self) -> providers::Capabilities {
            providers::Capabilities { max_options: 2, one_pass: true }
        }
        fn decide(&self, _: &EngineRequest, _: Duration) -> Result<Vec<Value>, Failure> {
            Err(Failure::Error("unused".into()))
        }
        fn health(&self, _timeout: Duration) -> providers::Probe {
            std::thread::sleep(self.1);
            providers::Probe { ok: true, detail: None }
        }
    }

    #[test]
    fn health_is_degraded_when_only_a_fallback_is_up_and_bounded_by_the_timeout() {
        let down = Scripted::new("down", Err(Failure::Error("x".into())));
        let up = Scripted::new("up", Ok(vec![]));
        // The pause flag is passed in (health() reads it from the install dir), so no file is touched.
        let h = gateway(&[down.clone(), up.clone()]).health_with_pause(false);
        assert_eq!(h.status, "degraded");
        assert_eq!(
            h.providers.iter().map(|p| (p.role.as_str(), p.ok)).collect::<Vec<_>>(),
            [("primary", false), ("fallback", true)]
        );
        assert_eq!(gateway(&[up.clone(), down.clone()]).health_with_pause(false).status, "ok");
        assert_eq!(gateway(&[down.clone(), down.clone()]).health_with_pause(false).status, "down");
        assert_eq!(gateway(std::slice::from_ref(&up)).health_with_pause(true).status, "paused");

        // A probe that hangs past the timeout is reported as down when the timeout is up.
        let loaded =
            crate::config::load_from("/nonexistent/system1.toml".into(), &[("SYSTEM1_TIMEOUT_S".into(), "0.2".into())]);
        let g = Gateway::with_chain(
            loaded,
            vec![Arc::new(Sleeps("hangs", Duration::from_secs(30))), up.clone()],
            Calibration::default(),
        );
        let started = Instant::now();
        let h = g.health_with_pause(false);
        assert!(started.elapsed() < Duration::from_secs(5), "health waited {:?}", started.elapsed());
        assert_eq!(h.status, "degraded");
        assert!(h.providers[0].detail.as_deref().is_some_and(|d| d.contains("no answer within 0.200 s")));

        // Probes run side by side: three that take 0.4 s each are done in about 0.4 s, not 1.2 s.
        let loaded = crate::config::load_from("/nonexistent/system1.toml".into(), &[]);
        let chain: Vec<Arc<dyn Provider>> = ["a", "b", "c"]
            .into_iter()
            .map(|n| Arc::new(Sleeps(n, Duration::from_millis(400))) as Arc<dyn Provider>)
            .collect();
        let g = Gateway::with_chain(loaded, chain, Calibration::default());
        let started = Instant::now();
        let h = g.health_with_pause(false);
        assert!(
            started.elapsed() < Duration::from_millis(1000),
            "probes ran one after another: {:?}",
            started.elapsed()
        );
        assert_eq!(h.status, "ok");
        assert_eq!(h.providers.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["a", "b", "c"], "in chain order");
        assert!(h.providers.iter().all(|p| p.ok && p.latency_ms >= 390.0));
    }

    #[test]
    fn request_ids_are_unique() {
        assert_ne!(new_request_id(), new_request_id());
    }
}
