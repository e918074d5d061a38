//! The gateway's one entrance. Every caller (the MCP tool and `system1 decide` through
//! [`Gateway::decide`], the hooks and `route`, `serve`, doctor, calibrate, evaluate, study, the
//! report's what-if) asks through [`Gateway::ask`], which owns what each of them would otherwise
//! do again: the config check, the pause, the time budget, and the fix of the provider that
//! failed. It answers with a typed result, [`Answered`] or a [`Refusal`], which each edge
//! translates once (MCP into its error object, `serve` into an HTTP status, the hooks into their
//! gates and silence).

use std::fmt;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Answer, Attempt, Gateway};
use crate::providers::{self, EngineRequest, Failure, Fix, Question};
use crate::state;

/// One question for the gateway: what the engines are asked, and the key its calibration fit is
/// found by (a feature's name, `skill`, the text of a `system1_decide` question).
#[derive(Debug, Clone)]
pub struct Query {
    pub question: Question,
    pub calibration: String,
}

impl Query {
    /// A question whose calibration key is its own key (the routing features, the skill picker).
    pub fn keyed(question: Question) -> Self {
        Query { calibration: question.key.clone(), question }
    }

    pub fn new(question: Question, calibration: impl Into<String>) -> Self {
        Query { question, calibration: calibration.into() }
    }
}

/// What a decision is asked for, which decides whether the pause stops it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A decision a client acts on (the MCP tool, `decide`, the hooks, `serve`): refused while
    /// System-1 is paused.
    Use,
    /// A check or a measurement the person ran (doctor, calibrate, evaluate, study, what-if,
    /// `route`): the pause does not stop it, as it stops nothing the person asks for by name.
    Check,
}

/// How long the chain may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// Each engine of the chain within its own timeout: the chain takes at most
    /// [`Gateway::chain_budget`].
    Chain,
    /// Until this instant (the hooks' engine budget): each attempt is cut to what is left, and an
    /// engine reached with nothing left is not asked.
    Until(Instant),
}

/// Several questions about one state, asked of the chain in one engine request.
#[derive(Debug, Clone)]
pub struct Ask {
    /// The caller's state, sent to the engine as its context.
    pub context: Option<Value>,
    pub questions: Vec<Query>,
    pub purpose: Purpose,
    pub budget: Budget,
}

impl Ask {
    /// A question's ask, within the chain's budget.
    pub fn new(context: Option<Value>, questions: Vec<Query>, purpose: Purpose) -> Self {
        Ask { context, questions, purpose, budget: Budget::Chain }
    }

    pub fn until(mut self, deadline: Instant) -> Self {
        self.budget = Budget::Until(deadline);
        self
    }

    /// The engine request: the questions without their calibration keys.
    fn engine_request(&self) -> EngineRequest {
        EngineRequest {
            context: self.context.clone(),
            questions: self.questions.iter().map(|q| q.question.clone()).collect(),
        }
    }
}

/// The chain's answers: one per question, in order (a question no engine answers is
/// [`Answer::Passed`]).
#[derive(Debug, Clone)]
pub struct Answered {
    pub answers: Vec<Answer>,
    /// The provider that answered first, and its model.
    pub provider: Option<String>,
    pub model: Option<String>,
    /// Every provider's turn, in chain order.
    pub attempts: Vec<Attempt>,
}

/// Why the gateway gave no answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The config file, or a provider's own settings, do not load: the errors as the loader gave
    /// them.
    Config(Vec<String>),
    /// `system1 toggle off`, for a decision asked for use.
    Paused,
    /// The chain has no engine.
    NoEngine,
    /// Every engine asked failed, or the budget ran out before one answered.
    Failed(Box<Failed>),
}

/// The last failure of a chain no engine of which answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    /// The provider whose failure it is.
    pub provider: String,
    pub failure: Failure,
    /// What to do about it, in that provider's words (`Provider::fix`).
    pub fix: Fix,
    pub attempts: Vec<Attempt>,
}

impl Failed {
    /// The failure in words, after its provider's name.
    pub fn message(&self) -> String {
        providers::named(&self.provider, self.failure.detail())
    }
}

impl Refusal {
    /// Every provider's turn, in chain order (none when no engine was asked).
    pub fn attempts(&self) -> &[Attempt] {
        match self {
            Refusal::Failed(f) => &f.attempts,
            _ => &[],
        }
    }
}

/// The refusal in the words the routing record and the logs have always used: the failing
/// provider's message, the config errors, or why nothing was asked.
impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Config(errors) => write!(f, "config error: {}", errors.join("; ")),
            Refusal::Paused => write!(f, "System-1 is paused (`{}` resumes it)", crate::text::command("toggle on")),
            Refusal::NoEngine => f.write_str("no provider is configured"),
            Refusal::Failed(failed) => f.write_str(&failed.message()),
        }
    }
}

/// A refusal goes on the wire (`route --json`) as its sentence.
impl serde::Serialize for Refusal {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Gateway {
    /// Whether the gateway takes a question for `purpose` now: its config and its providers'
    /// settings load, and, for use, System-1 is not paused. Checked by [`Gateway::ask`]; the hooks
    /// ask it first to stay silent before any work.
    pub fn admit(&self, purpose: Purpose) -> Result<(), Refusal> {
        if !self.is_ok() {
            return Err(Refusal::Config(self.config_errors.clone()));
        }
        if purpose == Purpose::Use && state::is_paused() {
            return Err(Refusal::Paused);
        }
        Ok(())
    }

    /// The time the whole chain may take: each provider's timeout (its own, else the gateway's),
    /// summed; the gateway's timeout when the chain is empty.
    pub fn chain_budget(&self) -> Duration {
        if self.chain.is_empty() {
            return self.timeout;
        }
        self.chain.iter().map(|p| p.timeout().unwrap_or(self.timeout)).sum()
    }

    /// The gateway's one entrance: `ask`'s questions through the chain, checked and calibrated,
    /// or why there are no answers.
    pub fn ask(&self, ask: &Ask, rid: &str) -> Result<Answered, Refusal> {
        self.admit(ask.purpose)?;
        let keys: Vec<String> = ask.questions.iter().map(|q| q.calibration.clone()).collect();
        let deadline = match ask.budget {
            Budget::Chain => None,
            Budget::Until(d) => Some(d),
        };
        let out = self.run_chain(&ask.engine_request(), &keys, deadline, rid);
        match (out.answers, out.failure) {
            (Some(answers), _) => {
                Ok(Answered { answers, provider: out.provider, model: out.model, attempts: out.attempts })
            }
            (None, Some((provider, failure))) => {
                let fix = match self.chain.iter().find(|p| p.name() == provider) {
                    Some(p) => p.fix(&failure),
                    None => providers::failure::generic_fix(&provider, &failure),
                };
                Err(Refusal::Failed(Box::new(Failed { provider, failure, fix, attempts: out.attempts })))
            }
            (None, None) => Err(Refusal::NoEngine),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{Scripted, gateway, q, yes};
    use super::*;
    use crate::providers::{Cause, Provider};

    fn one(purpose: Purpose) -> Ask {
        Ask::new(None, vec![Query::new(q(&["yes", "no"]), "k")], purpose)
    }

    #[test]
    fn every_engine_failing_is_a_typed_refusal_with_the_last_providers_fix() {
        let g = gateway(&[
            Scripted::new("first", Err(Failure::new(Cause::Refused, "refused"))),
            Scripted::new("second", Err(Failure::timeout(Duration::from_millis(500)))),
        ]);
        let Err(Refusal::Failed(f)) = g.ask(&one(Purpose::Check), "t") else { panic!("refused") };
        assert_eq!((f.provider.as_str(), f.failure.cause), ("second", Cause::Timeout));
        assert_eq!(f.message(), "second: no answer within 0.500 s");
        assert_eq!(f.fix, Scripted::new("second", Ok(vec![])).fix(&f.failure), "the provider's own fix");
        assert_eq!(f.attempts.len(), 2);
        let g = gateway(&[Scripted::new("first", Ok(vec![yes()]))]);
        let answered = g.ask(&one(Purpose::Check), "t").expect("answered");
        assert_eq!((answered.provider.as_deref(), answered.answers.len()), (Some("first"), 1));
        assert_eq!(gateway(&[]).ask(&one(Purpose::Check), "t").unwrap_err(), Refusal::NoEngine);
    }

    #[test]
    fn the_chain_budget_sums_the_providers_timeouts() {
        let g = gateway(&[Scripted::new("a", Ok(vec![])), Scripted::new("b", Ok(vec![]))]);
        assert_eq!(g.chain_budget(), g.timeout * 2);
        assert_eq!(gateway(&[]).chain_budget(), g.timeout);
    }

    #[test]
    fn a_spent_budget_refuses_with_a_timeout_before_asking() {
        let first = Scripted::new("first", Ok(vec![yes()]));
        let g = gateway(std::slice::from_ref(&first));
        let Err(Refusal::Failed(f)) = g.ask(&one(Purpose::Check).until(Instant::now()), "t") else { panic!() };
        assert_eq!((f.provider.as_str(), f.failure.cause), ("first", Cause::Timeout));
        assert_eq!(first.calls(), 0);
    }
}
