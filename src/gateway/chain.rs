//! The provider chain: each provider in order until one answers, within the per-attempt timeout
//! and the caller's deadline. A timeout, an error or a malformed answer moves on to the next
//! provider, and so does a question the provider passes on (it does not answer it at all); an
//! abstention is an answer and ends the chain. One provider's turn is `attempt`.

use std::time::{Duration, Instant};

use super::{Answer, Attempt, Gateway, Outcome};
use crate::logging;
use crate::providers::{Cause, EngineRequest, Failure, Provider};
use crate::state::Sent;

/// The result of running the provider chain on one engine request.
#[derive(Debug, Clone)]
pub struct ChainOutcome {
    /// One answer per question, from the provider that answered; `None` when every attempt failed.
    pub answers: Option<Vec<Answer>>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub attempts: Vec<Attempt>,
    /// The last failure and whose it is, when no provider answered; `None` with no provider at all.
    pub failure: Option<(String, Failure)>,
}

impl Gateway {
    /// Runs the chain on `request` until every question is answered. `cal_keys[i]` is the
    /// calibration key of question i. `deadline`, when set, bounds the whole chain (the hook's
    /// engine budget). A provider that passes on some questions (it does not answer them at all)
    /// leaves them to the next provider, which is asked only those; what no provider answers ends
    /// as [`Answer::Passed`], saying who passed and why.
    pub(super) fn run_chain(
        &self,
        request: &EngineRequest,
        cal_keys: &[String],
        deadline: Option<Instant>,
        rid: &str,
    ) -> ChainOutcome {
        let n = request.questions.len();
        let mut answers: Vec<Option<Answer>> = vec![None; n];
        // Per question: who passed it on, and why (and the failures of those asked after).
        let mut passes: Vec<Vec<String>> = vec![Vec::new(); n];
        let mut pass_causes: Vec<Vec<crate::providers::PassCause>> = vec![Vec::new(); n];
        let mut answered_by: Option<(String, String)> = None;
        let mut attempts = Vec::new();
        let mut failure = None;
        for provider in &self.chain {
            let name = provider.name().to_string();
            let pending: Vec<usize> = (0..n).filter(|i| answers[*i].is_none()).collect();
            let Some(timeout) = self.attempt_timeout(provider.as_ref(), deadline) else {
                let detail = "the engine time budget was used up";
                attempts.push(not_asked(name.clone(), Outcome::Timeout, Cause::Timeout, detail));
                failure = Some((name, Failure::new(Cause::Timeout, detail)));
                break;
            };
            // Too slow for what is left of a hook's budget, by its latency measured at install: the
            // questions go on down the chain (or end passed), as past an option limit.
            if let (Some(d), Some(latency)) = (deadline, provider.measured_latency()) {
                let left = d.saturating_duration_since(Instant::now());
                if latency > left {
                    let detail = format!(
                        "not asked: it takes about {} ms (measured at install), more than the {} ms left of the \
                         engine budget; system1_decide still asks it",
                        latency.as_millis(),
                        left.as_millis()
                    );
                    logging::info(rid, &format!("{name}: {detail}"));
                    attempts.push(not_asked(name.clone(), Outcome::Passed, Cause::TooSlow, &detail));
                    pending.iter().for_each(|&i| passes[i].push(crate::providers::named(&name, &detail)));
                    continue;
                }
            }
            let asked = if pending.len() == n {
                request.clone()
            } else {
                EngineRequest {
                    context: request.context.clone(),
                    questions: pending.iter().map(|&i| request.questions[i].clone()).collect(),
                }
            };
            let keys: Vec<String> = pending
                .iter()
                .map(|&i| cal_keys.get(i).cloned().unwrap_or_else(|| request.questions[i].key.clone()))
                .collect();
            // Past its option limit with the rounds off, the engine cannot answer the question at
            // all: it passes it on, as an engine that does not answer a question does.
            let refused =
                if self.loaded.config.gateway.tournament { None } else { over_limit(provider.as_ref(), &asked) };
            if let Some(detail) = refused {
                logging::info(rid, &format!("{name}: {detail}"));
                attempts.push(not_asked(name.clone(), Outcome::Passed, Cause::OverLimit, &detail));
                pending.iter().for_each(|&i| passes[i].push(crate::providers::named(&name, &detail)));
                continue;
            }
            // What goes off this machine is counted, for the report's cost of hosted engines.
            let remote = provider.capabilities().remote;
            let mut tokens = 0;
            let (result, latency_ms) =
                self.attempt(provider.as_ref(), &asked, &keys, timeout, remote.is_some().then_some(&mut tokens));
            let sent = remote.map(|r| Sent { provider: name.clone(), host: r.host, input_tokens: tokens });
            match result {
                Ok((got, detail)) => {
                    let mut passed_here: Vec<(usize, String)> = Vec::new();
                    for (j, a) in got.into_iter().enumerate() {
                        let i = pending[j];
                        match a {
                            Answer::Passed { reason, causes } => {
                                passes[i].push(crate::providers::named(&name, &reason));
                                pass_causes[i].extend(causes);
                                passed_here.push((i, reason));
                            }
                            a => answers[i] = Some(a),
                        }
                    }
                    let answered: Vec<&Answer> = pending.iter().filter_map(|&i| answers[i].as_ref()).collect();
                    let outcome = if answered.is_empty() {
                        Outcome::Passed
                    } else if answered.iter().all(|a| matches!(a, Answer::Abstained { .. })) {
                        Outcome::Abstained
                    } else {
                        Outcome::Ok
                    };
                    // The call's own summary line says the rest at INFO; this detail is for DEBUG.
                    if logging::enabled(logging::Level::Debug) {
                        logging::debug(rid, &format!("{name}: {outcome:?} in {latency_ms} ms"));
                    }
                    let detail = match (passed_note(request, &pending, &passed_here), detail) {
                        (Some(p), Some(d)) => Some(format!("{p}; {d}")),
                        (p, d) => p.or(d),
                    };
                    if passed_here.is_empty() || !answered.is_empty() {
                        answered_by.get_or_insert_with(|| (name.clone(), provider.model()));
                    }
                    attempts.push(Attempt { provider: name.clone(), outcome, latency_ms, detail, cause: None, sent });
                    if answers.iter().all(Option::is_some) {
                        let (provider, model) = answered_by.unzip();
                        let answers = answers.into_iter().flatten().collect();
                        return ChainOutcome { answers: Some(answers), provider, model, attempts, failure: None };
                    }
                }
                Err(f) => {
                    let message = crate::providers::named(&name, f.detail());
                    pending.iter().for_each(|&i| passes[i].push(message.clone()));
                    attempts.push(Attempt { sent, ..failed(name.clone(), &f, latency_ms, rid) });
                    failure = Some((name, f));
                }
            }
        }
        let any_answered = answers.iter().any(Option::is_some);
        let any_passed = passes.iter().zip(&answers).any(|(p, a)| a.is_none() && !p.is_empty());
        // Nothing answered and an engine failed: the failure is the outcome, as without passing.
        if any_answered || (any_passed && failure.is_none()) {
            let answers = answers
                .into_iter()
                .zip(passes.into_iter().zip(pass_causes))
                .map(|(a, (p, causes))| a.unwrap_or_else(|| Answer::Passed { reason: p.join("; "), causes }))
                .collect();
            let (provider, model) = answered_by.unzip();
            return ChainOutcome { answers: Some(answers), provider, model, attempts, failure: None };
        }
        ChainOutcome { answers: None, provider: None, model: None, attempts, failure }
    }

    /// The time one attempt may take: the provider's own timeout or else the gateway's, cut to
    /// what is left before `deadline`; `None` when nothing is left.
    fn attempt_timeout(&self, provider: &dyn Provider, deadline: Option<Instant>) -> Option<Duration> {
        let own = provider.timeout().unwrap_or(self.timeout);
        let Some(d) = deadline else { return Some(own) };
        let left = d.saturating_duration_since(Instant::now());
        (!left.is_zero()).then(|| own.min(left))
    }
}

/// The attempt's note on the questions it passed on: the reason, and which questions when it
/// answered others of the request.
fn passed_note(request: &EngineRequest, asked: &[usize], passed: &[(usize, String)]) -> Option<String> {
    if passed.is_empty() {
        return None;
    }
    if passed.len() == asked.len() && asked.len() == request.questions.len() {
        let mut reasons: Vec<&str> = passed.iter().map(|(_, r)| r.as_str()).collect();
        reasons.dedup();
        return Some(format!("passed on: {}", reasons.join("; ")));
    }
    let listed: Vec<String> = passed.iter().map(|(i, r)| format!("{:?} ({r})", request.questions[*i].key)).collect();
    let of = crate::text::count(asked.len() as u64, "question");
    Some(format!("passed on {} of {of}: {}", passed.len(), listed.join(", ")))
}

/// Why a provider is not asked at all: a question with more options than it takes, when
/// elimination rounds are off (`[gateway] tournament = false`).
fn over_limit(provider: &dyn Provider, request: &EngineRequest) -> Option<String> {
    let max = provider.capabilities().max_options;
    let q = request.questions.iter().find(|q| q.options.len() > max)?;
    Some(format!(
        "{} options exceed {}'s limit of {max} (elimination rounds are off: [gateway] tournament = false)",
        q.options.len(),
        provider.name()
    ))
}

/// The attempt of a provider that was not asked: the time was up, or it passed the question on.
fn not_asked(provider: String, outcome: Outcome, cause: Cause, detail: &str) -> Attempt {
    Attempt { provider, outcome, latency_ms: 0.0, detail: Some(detail.to_string()), cause: Some(cause), sent: None }
}

/// The attempt outcome of a failure: a timeout and a malformed answer have their own, every other
/// cause is an engine error.
fn outcome_of(cause: Cause) -> Outcome {
    match cause {
        Cause::Timeout => Outcome::Timeout,
        Cause::Malformed => Outcome::Malformed,
        _ => Outcome::Error,
    }
}

/// A failed attempt, logged.
fn failed(provider: String, f: &Failure, latency_ms: f64, rid: &str) -> Attempt {
    let outcome = outcome_of(f.cause);
    let message = crate::providers::named(&provider, f.detail());
    logging::warn(rid, &format!("{message} ({outcome:?} after {latency_ms} ms)"));
    Attempt { provider, outcome, latency_ms, detail: Some(f.detail().to_string()), cause: Some(f.cause), sent: None }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use super::super::testing::{Scripted, decided, gateway, gateway_of, shown_at, yes, yes_no};
    use super::*;
    use crate::calibration::Calibration;
    use crate::providers::{EngineAnswer, Question};

    #[test]
    fn each_failure_kind_falls_back_and_every_try_is_recorded() {
        for (failure, outcome) in [
            (Failure::new(Cause::Refused, "refused"), Outcome::Error),
            (Failure::new(Cause::Timeout, "no answer within 0.5 s"), Outcome::Timeout),
            (Failure::malformed("not JSON"), Outcome::Malformed),
            (Failure::new(Cause::Other, "x"), Outcome::Error),
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
            // With no fallback, the failure is the outcome, typed and with whose it is.
            let alone = gateway(&[Scripted::new("only", Err(failure.clone()))]);
            let out = alone.run_chain(&yes_no(1), &["k".into()], None, "t");
            assert!(out.answers.is_none());
            assert_eq!(out.failure, Some(("only".to_string(), failure.clone())));
        }
    }

    #[test]
    fn a_malformed_answer_is_judged_by_the_gateway_and_falls_back() {
        for (bad, why) in [
            (decided("maybe", 0.9), "decision \"maybe\" is not one of the options"),
            (decided("yes", 2.0), "confidence 2 is outside [0, 1]"),
        ] {
            let first = Scripted::new("first", Ok(vec![bad.clone()]));
            let second = Scripted::new("second", Ok(vec![yes()]));
            let out = gateway(&[first, second]).run_chain(&yes_no(1), &["k".into()], None, "t");
            assert_eq!(out.attempts[0].outcome, Outcome::Malformed, "{bad:?}");
            assert_eq!(out.attempts[0].detail.as_deref(), Some(why), "a lone question is not named");
            assert_eq!(out.provider.as_deref(), Some("second"));
        }
        // The wrong number of answers for the questions asked is malformed too.
        let first = Scripted::new("first", Ok(vec![yes()]));
        let out = gateway(&[first]).run_chain(&yes_no(2), &["a".into(), "b".into()], None, "t");
        assert_eq!(out.attempts[0].outcome, Outcome::Malformed);
        assert_eq!(out.failure.map(|(_, f)| f.cause), Some(Cause::Malformed));
    }

    #[test]
    fn abstention_never_falls_back() {
        let first = Scripted::new("first", Ok(vec![EngineAnswer::abstained("not sure".into())]));
        let second = Scripted::new("second", Ok(vec![yes()]));
        let out = gateway(&[first, second.clone()]).run_chain(&yes_no(1), &["k".into()], None, "t");
        assert_eq!(out.provider.as_deref(), Some("first"));
        assert_eq!(out.attempts.len(), 1);
        assert_eq!(out.attempts[0].outcome, Outcome::Abstained);
        assert_eq!(second.calls(), 0);
        assert_eq!(out.answers, Some(vec![Answer::Abstained { rationale: Some("not sure".into()), stability: None }]));
    }

    fn passed(why: &str) -> EngineAnswer {
        EngineAnswer::Passed { cause: crate::providers::PassCause::NoHead, reason: why.into() }
    }

    #[test]
    fn a_question_passed_on_goes_to_the_next_provider_alone() {
        // Two questions: the first provider answers the second and passes on the first.
        let first = Scripted::new("first", Ok(vec![passed("no head"), yes()]));
        let second = Scripted::new("second", Ok(vec![decided("no", 0.8)]));
        let out = gateway(&[first.clone(), second.clone()]).run_chain(&yes_no(2), &["a".into(), "b".into()], None, "t");
        assert_eq!(second.asked_options(), [[vec!["yes", "no"]]], "only the question passed on");
        let answers = out.answers.expect("answered");
        assert!(matches!(&answers[0], Answer::Decided { decision, .. } if decision == "no"), "{answers:?}");
        assert!(matches!(&answers[1], Answer::Decided { decision, .. } if decision == "yes"), "{answers:?}");
        let tried: Vec<(&str, Outcome)> = out.attempts.iter().map(|a| (a.provider.as_str(), a.outcome)).collect();
        assert_eq!(tried, [("first", Outcome::Ok), ("second", Outcome::Ok)]);
        assert_eq!(out.attempts[0].detail.as_deref(), Some("passed on 1 of 2 questions: \"decision\" (no head)"));
        assert_eq!(out.provider.as_deref(), Some("first"));

        // A lone question passed on by every provider ends passed, naming who and why; no error.
        let out = gateway(&[
            Scripted::new("first", Ok(vec![passed("no head")])),
            Scripted::new("second", Ok(vec![passed("left out")])),
        ])
        .run_chain(&yes_no(1), &["k".into()], None, "t");
        assert_eq!(
            out.answers,
            Some(vec![Answer::Passed {
                reason: "first: no head; second: left out".into(),
                causes: vec![crate::providers::PassCause::NoHead; 2]
            }])
        );
        assert_eq!(out.attempts[1].outcome, Outcome::Passed);
        assert_eq!(out.attempts[1].detail.as_deref(), Some("passed on: left out"));
        assert!(out.failure.is_none() && out.provider.is_none());

        // Passed on, then the next one fails: the failure is the answer, as without passing.
        let out = gateway(&[
            Scripted::new("first", Ok(vec![passed("no head")])),
            Scripted::new("second", Err(Failure::new(Cause::Refused, "down"))),
        ])
        .run_chain(&yes_no(1), &["k".into()], None, "t");
        assert!(out.answers.is_none());
        assert_eq!(out.failure.map(|(p, f)| (p, f.cause)), Some(("second".to_string(), Cause::Refused)));
    }

    #[test]
    fn with_elimination_rounds_off_a_providers_option_limit_passes_the_question_on_without_asking_it() {
        let small = Scripted::limited("small", 20, Ok(vec![]));
        let big = Scripted::new("big", Ok(vec![decided("o0", 0.7)]));
        let options: Vec<String> = (0..21).map(|i| format!("o{i}")).collect();
        let request =
            EngineRequest { context: None, questions: vec![Question { key: "k".into(), text: "?".into(), options }] };
        let chain: Vec<Arc<dyn Provider>> = vec![small.clone(), big];
        let g = gateway_of(chain, &[("SYSTEM1_TOURNAMENT", "false")], Calibration::default());
        let out = g.run_chain(&request, &["k".into()], None, "t");
        assert_eq!(small.calls(), 0, "the limit is checked before the provider is asked");
        assert_eq!(out.attempts[0].outcome, Outcome::Passed);
        assert_eq!(
            out.attempts[0].detail.as_deref(),
            Some("21 options exceed small's limit of 20 (elimination rounds are off: [gateway] tournament = false)")
        );
        assert_eq!(out.provider.as_deref(), Some("big"));
        // With no engine after it, the question ends passed (an abstention saying why), not an error.
        let alone = gateway_of(vec![small.clone()], &[("SYSTEM1_TOURNAMENT", "false")], Calibration::default());
        let out = alone.run_chain(&request, &["k".into()], None, "t");
        assert!(out.failure.is_none(), "{out:?}");
        assert!(matches!(out.answers.as_deref(), Some([Answer::Passed { .. }])), "{out:?}");
        assert_eq!(out.attempts[0].cause, Some(Cause::OverLimit), "small passed it for its option limit");
        // With the rounds on (the default), the same provider is asked.
        let small = Scripted::per_question("small", 20, |o| shown_at(o, 0, 0.6));
        let _ =
            gateway_of(vec![small.clone()], &[], Calibration::default()).run_chain(&request, &["k".into()], None, "t");
        assert_eq!(small.asked_options().len(), 2, "a round, then the final");
    }

    #[test]
    fn a_spent_budget_stops_the_chain_with_a_timeout() {
        let first = Scripted::new("first", Ok(vec![yes()]));
        let out = gateway(std::slice::from_ref(&first)).run_chain(&yes_no(1), &["k".into()], Some(Instant::now()), "t");
        assert_eq!(first.calls(), 0);
        assert_eq!(out.attempts[0].outcome, Outcome::Timeout);
        assert_eq!(out.failure.map(|(_, f)| f.cause), Some(Cause::Timeout));
    }

    #[test]
    fn an_engine_slower_than_the_budget_left_is_passed_over_and_still_asked_without_one() {
        let local = Scripted::new("local", Err(Failure::new(Cause::Other, "down")));
        let slow = Scripted::new("server", Ok(vec![yes()]));
        slow.measured.set(Duration::from_millis(900)).unwrap();
        let chain = [local.clone(), slow.clone()];
        let hook = Some(Instant::now() + Duration::from_millis(400));
        let out = gateway(&chain).run_chain(&yes_no(1), &["k".into()], hook, "t");
        assert_eq!(slow.calls(), 0, "not asked with 0.4 s left");
        assert_eq!((out.attempts[1].outcome, out.attempts[1].cause), (Outcome::Passed, Some(Cause::TooSlow)));
        let detail = out.attempts[1].detail.as_deref().unwrap_or_default();
        assert!(
            detail.contains("about 900 ms (measured at install), more than the") && detail.contains("system1_decide")
        );
        // With time enough, or no deadline at all (system1_decide), it answers.
        let out =
            gateway(&chain).run_chain(&yes_no(1), &["k".into()], Some(Instant::now() + Duration::from_secs(5)), "t");
        assert_eq!(out.provider.as_deref(), Some("server"));
        let out = gateway(&chain).run_chain(&yes_no(1), &["k".into()], None, "t");
        assert_eq!((out.provider.as_deref(), slow.calls()), (Some("server"), 2));
    }
}
