//! Decision engines behind one trait.
//!
//! An adapter translates the gateway's questions into its engine's wire format and the engine's
//! answer back into an [`EngineAnswer`] per question. It does not judge them: the gateway validates
//! every answer (decision among the options, confidence and probabilities in range, probabilities
//! over exactly the options), applies calibration and the threshold, and runs the fallback chain.
//! Adding an engine is one file here, its line in [`construct`] and its name in the table of
//! `config::ProviderKind` (the compiler asks for the line once the name is there).

pub mod answers;
pub mod decisions;
pub mod failure;
#[cfg(test)]
#[path = "../../tests/it/support/fake_http.rs"]
pub mod fake_http;
pub mod hosted;
pub mod http;
pub mod laya;
pub mod local;
pub mod mock;
pub mod net;
pub mod ollama;
pub mod systemone;
pub mod von;
pub mod wire;

use std::time::Duration;

use serde_json::Value;

use crate::config::{ProviderKind, Settings};
pub use failure::{Cause, Failure, Fix};

/// The adapter of `kind`. Every provider the config knows has its line here: the match is
/// exhaustive, so a name added to `config::ProviderKind` does not compile without its adapter.
fn construct(kind: ProviderKind, s: &Settings) -> Box<dyn Provider> {
    match kind {
        ProviderKind::Laya => Box::new(laya::Laya::new(s)),
        ProviderKind::Von => Box::new(von::Von::new(s)),
        ProviderKind::SystemOne => Box::new(systemone::SystemOne::new(s)),
        ProviderKind::Decisions => Box::new(decisions::Decisions::new(s)),
        ProviderKind::Gemini => Box::new(systemone::SystemOne::with_dialect(s, &systemone::GEMINI)),
        ProviderKind::OpenRouter => Box::new(systemone::SystemOne::with_dialect(s, &systemone::OPENROUTER)),
        ProviderKind::Ollama => Box::new(ollama::Ollama::new(s)),
        ProviderKind::Local => Box::new(local::Local::new(s)),
        ProviderKind::Mock => Box::new(mock::Mock::new(s)),
    }
}

/// One question put to an engine. `options` always has at least two entries: the gateway turns
/// a yes/no question into the options `yes` and `no` before any adapter sees it.
#[derive(Debug, Clone)]
pub struct Question {
    /// Stable key: the calibration key and the engine's question id (e.g. `read_only`, `decision`).
    pub key: String,
    pub text: String,
    pub options: Vec<String>,
}

/// Several questions about one state, answered in one engine request where the engine allows.
#[derive(Debug, Clone)]
pub struct EngineRequest {
    /// The caller's `context`, sent to the engine as its state.
    pub context: Option<Value>,
    pub questions: Vec<Question>,
}

impl EngineRequest {
    /// Its input tokens, estimated at one per four characters of the context (as JSON text unless
    /// a string), the questions and their options, as `system1 serve` estimates the `usage` it
    /// reports: what a hosted engine's price is applied to.
    pub fn estimated_tokens(&self) -> u64 {
        let context = match &self.context {
            None => 0,
            Some(Value::String(s)) => s.chars().count(),
            Some(other) => other.to_string().chars().count(),
        };
        let questions: usize = self
            .questions
            .iter()
            .map(|q| q.text.chars().count() + q.options.iter().map(|o| o.chars().count() + 1).sum::<usize>())
            .sum();
        ((context + questions) as u64).div_ceil(4)
    }
}

/// An engine's answer to one question, as its adapter read it. Not yet trusted: the gateway checks
/// that the decision is one of the question's options, that the confidence and every probability
/// are numbers in [0, 1], and that the probabilities name each option once and sum to 1; an answer
/// that fails is reported as `malformed_response`. So nothing here is made impossible by its type.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineAnswer {
    Decided {
        decision: String,
        confidence: f64,
        /// Every option's probability, when the engine reports them.
        probabilities: Option<Probabilities>,
        rationale: Option<String>,
        /// A note on how the answer was read, for the attempt's `detail` (a truncated state, say).
        detail: Option<String>,
    },
    Abstained {
        rationale: Option<String>,
        detail: Option<String>,
    },
    /// This engine does not answer this question at all (no head for it, a server that left the
    /// answer out, a question type it refuses): the next engine in the chain is asked. Unlike an
    /// abstention, which is an answer ("not sure"), this says nothing about the question.
    Passed {
        cause: PassCause,
        reason: String,
    },
}

/// Why an engine passes a question on: the code matches these, people read the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassCause {
    /// A question the engine has no trained head for (the local engine: a yes/no question, or a
    /// choice with `choices = "taught"`).
    NoHead,
    /// Text the engine's model does not read (mostly non-Latin script for an English model).
    NotRead,
    /// The server refused the question's type (HTTP 422 naming the question).
    Refused,
    /// The server's reply left this question's answer out.
    LeftOut,
    /// Asked as a yes/no question, the options turned out not to be yes and no.
    NotYesNo,
}

impl EngineAnswer {
    pub fn abstained(rationale: String) -> Self {
        EngineAnswer::Abstained { rationale: Some(rationale), detail: None }
    }

    /// The answer as the gateway takes it from an adapter: its rationale, note and reason
    /// [`failure::quoted`] (an engine's rationale is its own text; a reason may quote the
    /// server). The decision is left as it came: it must equal an option, or it is refused.
    pub fn quoted(self) -> Self {
        let quoted = |s: Option<String>| s.map(|s| failure::quoted(&s));
        match self {
            EngineAnswer::Decided { decision, confidence, probabilities, rationale, detail } => EngineAnswer::Decided {
                decision,
                confidence,
                probabilities,
                rationale: quoted(rationale),
                detail: quoted(detail),
            },
            EngineAnswer::Abstained { rationale, detail } => {
                EngineAnswer::Abstained { rationale: quoted(rationale), detail: quoted(detail) }
            }
            EngineAnswer::Passed { cause, reason } => EngineAnswer::Passed { cause, reason: failure::quoted(&reason) },
        }
    }

    /// The same answer with `detail` as its note.
    pub fn with_detail(mut self, note: String) -> Self {
        match &mut self {
            EngineAnswer::Decided { detail, .. } | EngineAnswer::Abstained { detail, .. } => *detail = Some(note),
            EngineAnswer::Passed { .. } => {}
        }
        self
    }
}

/// Reading an answer without a match, for the adapters' tests.
#[cfg(test)]
impl EngineAnswer {
    pub fn decision(&self) -> Option<&str> {
        match self {
            EngineAnswer::Decided { decision, .. } => Some(decision),
            EngineAnswer::Abstained { .. } | EngineAnswer::Passed { .. } => None,
        }
    }

    pub fn confidence(&self) -> Option<f64> {
        match self {
            EngineAnswer::Decided { confidence, .. } => Some(*confidence),
            EngineAnswer::Abstained { .. } | EngineAnswer::Passed { .. } => None,
        }
    }

    pub fn probabilities(&self) -> Option<&Probabilities> {
        match self {
            EngineAnswer::Decided { probabilities, .. } => probabilities.as_ref(),
            EngineAnswer::Abstained { .. } | EngineAnswer::Passed { .. } => None,
        }
    }

    pub fn rationale(&self) -> Option<&str> {
        match self {
            EngineAnswer::Decided { rationale, .. } | EngineAnswer::Abstained { rationale, .. } => rationale.as_deref(),
            EngineAnswer::Passed { reason, .. } => Some(reason),
        }
    }

    pub fn detail(&self) -> Option<&str> {
        match self {
            EngineAnswer::Decided { detail, .. } | EngineAnswer::Abstained { detail, .. } => detail.as_deref(),
            EngineAnswer::Passed { .. } => None,
        }
    }
}

/// Probabilities by option, in order: the engine's order in an [`EngineAnswer`], the question's
/// option order once the gateway has checked them. Serialized as a JSON object in that order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Probabilities(Vec<(String, f64)>);

impl Probabilities {
    /// `options[i]` with probability `values[i]`.
    pub fn of(options: &[String], values: &[f64]) -> Self {
        Probabilities(options.iter().cloned().zip(values.iter().copied()).collect())
    }

    pub fn get(&self, option: &str) -> Option<f64> {
        self.0.iter().find(|(o, _)| o == option).map(|(_, p)| *p)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(o, p)| (o.as_str(), *p))
    }
}

impl FromIterator<(String, f64)> for Probabilities {
    fn from_iter<I: IntoIterator<Item = (String, f64)>>(iter: I) -> Self {
        Probabilities(iter.into_iter().collect())
    }
}

impl serde::Serialize for Probabilities {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (option, p) in &self.0 {
            map.serialize_entry(option, p)?;
        }
        map.end()
    }
}

/// What an engine can take.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Capabilities {
    /// Most options one question may have.
    pub max_options: usize,
    /// Whether several questions are answered in one engine request (laya runs them in one forward
    /// pass; von in one request, a pass per question inside it; ollama needs a request each).
    pub one_pass: bool,
    /// Which yes/no questions it answers: any, or only those it was taught ([`Provider::taught`]);
    /// the others it passes on to the next engine of the chain.
    pub yes_no: Scope,
    /// Which choices it answers.
    pub choice: Scope,
    /// Where it runs when not on this machine (its endpoint's host is not loopback): the prompts
    /// and contexts it is asked about leave the machine. `None` for an engine on this machine.
    pub remote: Option<hosted::Remote>,
}

impl Capabilities {
    /// An engine on this machine that answers any question of either type.
    pub fn any(max_options: usize, one_pass: bool) -> Self {
        Capabilities { max_options, one_pass, yes_no: Scope::Any, choice: Scope::Any, remote: None }
    }

    /// The same, for an engine reached at `endpoint` (none when it is not usable: then nothing is sent).
    pub fn at(self, endpoint: Option<&http::Endpoint>) -> Self {
        Capabilities { remote: endpoint.and_then(http::Endpoint::remote).cloned(), ..self }
    }
}

/// Which questions of a type an engine answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Any question of the type.
    Any,
    /// Only the questions it was taught ([`Provider::taught`]).
    Taught,
}

/// A health probe's result: up, with what the engine said about itself, or down and why.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe {
    Up(Option<String>),
    Down(Failure),
}

impl Probe {
    /// Up, with what the engine said about itself [`failure::quoted`] (a version, model names).
    pub fn up(detail: impl Into<String>) -> Self {
        Probe::Up(Some(failure::quoted(&detail.into())))
    }

    pub fn ok(&self) -> bool {
        matches!(self, Probe::Up(_))
    }

    /// What the probe found, in words: the engine's note when up, the failure's detail when down.
    pub fn detail(&self) -> Option<&str> {
        match self {
            Probe::Up(d) => d.as_deref(),
            Probe::Down(f) => Some(&f.detail),
        }
    }

    pub fn failure(&self) -> Option<&Failure> {
        match self {
            Probe::Up(_) => None,
            Probe::Down(f) => Some(f),
        }
    }
}

pub trait Provider: Send + Sync {
    /// The name the chain lists it by: the provider's own, or an instance's
    /// (`[providers.<name>] kind = "systemone"`).
    fn name(&self) -> &str;

    /// The model or checkpoint answering, used to match calibration fits.
    fn model(&self) -> String;

    fn capabilities(&self) -> Capabilities;

    /// Answers every question of `request`, in order, within `timeout`: one answer per question,
    /// checked by the gateway. A reply the adapter cannot read at all fails with `Cause::Malformed`.
    fn decide(&self, request: &EngineRequest, timeout: Duration) -> Result<Vec<EngineAnswer>, Failure>;

    fn health(&self, timeout: Duration) -> Probe;

    /// What to do about `failure`, one of this provider's own. An adapter words the fixes for
    /// the causes only it has (a model to pull, a version to upgrade) and leaves the rest to the
    /// shared [`failure::generic_fix`], so no caller reads a detail to find the fix.
    fn fix(&self, failure: &Failure) -> Fix {
        failure::generic_fix(self.name(), failure)
    }

    /// The time an attempt at this provider may take, when it sets its own (`timeout_s` of a
    /// hosted engine, say); `None` takes the gateway's `timeout_s`.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// How long it takes to answer a routing-sized decision, as measured when it was installed
    /// (`latency_ms`); a caller with less time left passes it over instead of waiting on it.
    fn measured_latency(&self) -> Option<Duration> {
        None
    }

    /// The questions it was taught to answer, when it answers only those (the local engine's
    /// yes/no questions); empty for an engine that answers any question.
    fn taught(&self) -> Vec<Taught> {
        Vec::new()
    }
}

/// A question an engine was taught (the local engine's trained heads), for `engine status` and
/// `system1_capabilities`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Taught {
    /// The question, or a routing feature's name.
    pub question: String,
    /// The options of a question with a fixed set; empty for yes/no.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// What the request's `context` must hold for the question to be read as it was taught.
    pub context: String,
    /// Examples it was fitted on.
    pub n: usize,
    /// Fitted on this machine (`calibrate fit --apply`) rather than shipped.
    pub fitted_here: bool,
}

impl Taught {
    /// One line for people: the question, its options, the context it expects, where it comes from.
    pub fn line(&self) -> String {
        let options = if self.options.is_empty() { String::new() } else { format!(" [{}]", self.options.join(", ")) };
        let origin = if self.fitted_here { "fitted here" } else { "shipped" };
        // The question, options and context come from a heads file (one fitted here, or edited).
        let line = format!("{}{options}: context {}; {} examples, {origin}", self.question, self.context, self.n);
        failure::quoted(&line)
    }
}

/// `detail` as a line about `provider`: `provider: detail`, unless it names the provider first
/// already, as the adapters' own details do (`laya: HTTP 422 ...`, `laya-serve at ...`).
pub fn named(provider: &str, detail: &str) -> String {
    if detail.starts_with(provider) { detail.to_string() } else { format!("{provider}: {detail}") }
}

/// Builds the named provider from its settings: a registered one by its name, a named instance by
/// its `kind`. Problems with the settings are recorded in `settings.errors` (and make this return
/// `None` when the provider is unusable).
pub fn build(name: &str, settings: &Settings) -> Option<Box<dyn Provider>> {
    let instance =
        || ProviderKind::named(&settings.peek_string("kind")).filter(|k| crate::config::INSTANCE_KINDS.contains(k));
    let kind = ProviderKind::named(name).or_else(instance);
    let provider = match kind {
        Some(kind) => Some(construct(kind, settings)),
        None => {
            settings.error(format!("provider {name:?} is not available in this build"));
            None
        }
    };
    settings.finish();
    if settings.errors.borrow().is_empty() { provider } else { None }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn each_name_in_the_table_builds_the_adapter_of_that_name() {
        for &name in ProviderKind::NAMES {
            // A hosted engine is used only where the config allows a remote one.
            let hosted = ["gemini", "openrouter"].contains(&name);
            let table: toml::Table = if hosted { "allow_remote = true".parse().unwrap() } else { toml::Table::new() };
            let settings = Settings::new(&format!("providers.{name}"), table, BTreeMap::new());
            let provider = build(name, &settings).unwrap_or_else(|| panic!("{name}: {:?}", settings.errors.borrow()));
            assert_eq!(provider.name(), name);
        }
        let settings = Settings::new("providers.nosuch", toml::Table::new(), BTreeMap::new());
        assert!(build("nosuch", &settings).is_none());
        assert!(settings.take_errors().iter().any(|e| e.contains("\"nosuch\" is not available")));
    }
}
