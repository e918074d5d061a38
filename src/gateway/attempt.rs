//! One provider's attempt at a request, within the per-attempt timeout: everything asked of it,
//! then the checks and the calibration of what it said.
//!
//! Most attempts are one engine request. A choice with more options than the provider takes
//! (`max_options`) is narrowed in elimination rounds first ([`super::rounds`]): each round is one
//! more request holding every group of every question still narrowing, and the winners go on to
//! the final question over the finalists. With `[gateway] stability` on, the final question goes
//! out again with its options reordered ([`super::stability`]) in the same request as the
//! original. An adapter that cannot answer several questions in one request makes one call per
//! question itself, so the gateway always hands it a whole pass.

use std::time::{Duration, Instant};

use super::check::{self, Checked};
use super::rounds::{self, Round};
use super::stability::{self, Variant};
use super::{Answer, Gateway, millis};
use crate::providers::{Cause, EngineAnswer, EngineRequest, Failure, Probabilities, Provider, Question};

/// Where one question of the request stands during an attempt.
struct Track {
    /// The options still in, as indices into the question's options, in their order.
    alive: Vec<usize>,
    rounds: Vec<Round>,
    answer: Option<Answer>,
}

/// What one group, or one engine question, of a pass is for.
enum Slot {
    /// A group of a round, as indices into question `q`'s options; `asked` is its engine question,
    /// `None` for a group of one, which goes on without asking.
    Group { q: usize, members: Vec<usize>, asked: Option<usize> },
    /// The final question of `q` over its finalists, in their order.
    Final { q: usize, asked: usize },
    /// The final question with the finalists reordered; `original` is the final's engine question.
    Variant { q: usize, variant: Variant, asked: usize, original: usize },
}

/// One engine request and what each of its questions is for.
struct Pass {
    request: EngineRequest,
    slots: Vec<Slot>,
}

/// What one pass gave for one question.
#[derive(Default)]
struct Given {
    winners: Option<Vec<usize>>,
    groups: usize,
    last: Option<Answer>,
    variants: Vec<(&'static str, Answer)>,
}

impl Gateway {
    /// One provider's attempt, within `timeout` for all of its engine requests. The latency is the
    /// provider's own time, summed over them. With `tokens`, the estimated input tokens of every
    /// request made are added to it (counted only for an engine whose requests leave the machine).
    pub(super) fn attempt(
        &self,
        provider: &dyn Provider,
        request: &EngineRequest,
        cal_keys: &[String],
        timeout: Duration,
        mut tokens: Option<&mut u64>,
    ) -> (Checked, f64) {
        let deadline = Instant::now() + timeout;
        // Request validation gives every question two options at least; a limit below 2 would
        // never narrow a choice.
        let max = provider.capabilities().max_options.max(2);
        let mut tracks: Vec<Track> = request
            .questions
            .iter()
            .map(|q| Track { alive: (0..q.options.len()).collect(), rounds: Vec::new(), answer: None })
            .collect();
        let mut notes: Vec<String> = Vec::new();
        let mut spent = Duration::ZERO;
        let mut requests = 0;
        loop {
            let pass = self.plan(request, &tracks, max);
            if pass.slots.is_empty() {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return (Err(over_time(timeout, requests)), millis(spent));
            }
            if let Some(t) = tokens.as_deref_mut() {
                *t += pass.request.estimated_tokens();
            }
            let started = Instant::now();
            // Where an engine's words enter the gateway: every answer's text escaped and capped.
            let given = provider
                .decide(&pass.request, left)
                .map(|answers| answers.into_iter().map(crate::providers::EngineAnswer::quoted).collect());
            spent += started.elapsed();
            requests += 1;
            let result = given.and_then(|given| self.absorb(provider, request, cal_keys, &mut tracks, &pass, given));
            match result {
                Ok(pass_notes) => {
                    for n in pass_notes {
                        if !notes.contains(&n) {
                            notes.push(n);
                        }
                    }
                }
                Err(f) if f.cause == Cause::Timeout && requests > 1 => {
                    return (Err(over_time(timeout, requests)), millis(spent));
                }
                Err(f) => return (Err(f), millis(spent)),
            }
        }
        let several = request.questions.len() > 1;
        let mut answers = Vec::with_capacity(tracks.len());
        for (q, t) in request.questions.iter().zip(tracks) {
            if !t.rounds.is_empty() {
                let finalists: Vec<&str> = t.alive.iter().map(|&i| q.options[i].as_str()).collect();
                let told = rounds::describe(q.options.len(), &t.rounds, &finalists, requests);
                notes.push(if several { format!("question {:?}: {told}", q.key) } else { told });
            }
            // Every track ends answered: a pass is planned for each one that is not.
            answers.push(t.answer.unwrap_or(Answer::Abstained { rationale: None, stability: None }));
        }
        (Ok((answers, if notes.is_empty() { None } else { Some(notes.join("; ")) })), millis(spent))
    }

    /// The next engine request: every group of each question still above the limit, and the
    /// final question (with its reordered variants) of each one that is not.
    fn plan(&self, request: &EngineRequest, tracks: &[Track], max: usize) -> Pass {
        let mode = self.loaded.config.gateway.stability;
        let mut questions = Vec::new();
        let mut slots = Vec::new();
        let mut ask = |q: &Question, options: Vec<String>| {
            questions.push(Question { key: q.key.clone(), text: q.text.clone(), options });
            questions.len() - 1
        };
        for (i, (q, t)) in request.questions.iter().zip(tracks).enumerate() {
            if t.answer.is_some() {
                continue;
            }
            if t.alive.len() > max {
                for members in rounds::groups(&t.alive, max) {
                    let asked = (members.len() > 1).then(|| ask(q, names(q, members)));
                    slots.push(Slot::Group { q: i, members: members.to_vec(), asked });
                }
                continue;
            }
            let finalists = names(q, &t.alive);
            let variants = stability::variants(mode, &q.text, &finalists);
            let original = ask(q, finalists.clone());
            slots.push(Slot::Final { q: i, asked: original });
            for variant in variants {
                let asked = ask(q, stability::reorder(&finalists, &variant.order));
                slots.push(Slot::Variant { q: i, variant, asked, original });
            }
        }
        Pass { request: EngineRequest { context: request.context.clone(), questions }, slots }
    }

    /// Takes in the answers to one pass: group winners go on, final answers are calibrated and
    /// measured against their variants. Returns the notes the adapter gave on how it read them.
    fn absorb(
        &self,
        provider: &dyn Provider,
        request: &EngineRequest,
        cal_keys: &[String],
        tracks: &mut [Track],
        pass: &Pass,
        given: Vec<EngineAnswer>,
    ) -> Result<Vec<String>, Failure> {
        let asked = &pass.request.questions;
        if given.len() != asked.len() {
            return Err(Failure::malformed(format!(
                "{} for {}",
                crate::text::count(given.len() as u64, "answer"),
                crate::text::count(asked.len() as u64, "question")
            )));
        }
        let mut given: Vec<Option<EngineAnswer>> = given.into_iter().map(Some).collect();
        let mut take = |k: usize| given.get_mut(k).and_then(Option::take);
        let mut notes = Vec::new();
        let mut per: Vec<Given> = tracks.iter().map(|_| Given::default()).collect();
        let round_of = |q: usize| tracks.get(q).map(|t| t.rounds.len() + 1).unwrap_or(1);
        // A lone question's key is internal (`decision`): only among several does it say which.
        let several = request.questions.len() > 1;
        let question =
            |q: usize| if several { format!("question {:?}", request.questions[q].key) } else { String::new() };
        for slot in &pass.slots {
            match slot {
                Slot::Group { q, members, asked: None } => {
                    per[*q].groups += 1;
                    per[*q].winners.get_or_insert_with(Vec::new).extend(members.first());
                }
                Slot::Group { q, members, asked: Some(k) } => {
                    let g = &mut per[*q];
                    g.groups += 1;
                    let where_ = place(&[question(*q), format!("round {} group {}", round_of(*q), g.groups)]);
                    let (answer, note) = checked(&asked[*k], take(*k), &where_, check::check_one)?;
                    notes.extend(note);
                    match answer {
                        Answer::Decided { decision, .. } => {
                            let at = asked[*k].options.iter().position(|o| *o == decision).unwrap_or(0);
                            g.winners.get_or_insert_with(Vec::new).extend(members.get(at));
                        }
                        // An engine that will not pick within a group will not pick among all.
                        abstained @ (Answer::Abstained { .. } | Answer::Passed { .. }) => {
                            g.last = g.last.take().or(Some(abstained))
                        }
                    }
                }
                Slot::Final { q, asked: k } => {
                    let where_ = question(*q);
                    let (answer, note) = checked(&asked[*k], take(*k), &where_, check::check_one)?;
                    notes.extend(note);
                    per[*q].last = Some(answer);
                }
                Slot::Variant { q, variant, asked: k, original } => {
                    let original = &asked[*original];
                    let where_ = place(&[question(*q), format!("options {}", variant.name)]);
                    let (answer, note) =
                        checked(&asked[*k], take(*k), &where_, |a, e| check::check_variant(a, original, e))?;
                    notes.extend(note);
                    per[*q].variants.push((variant.name, answer));
                }
            }
        }
        let model = provider.model();
        for (i, (g, t)) in per.into_iter().zip(tracks.iter_mut()).enumerate() {
            let q = &request.questions[i];
            let key = cal_keys.get(i).map(String::as_str).unwrap_or(&q.key);
            match (g.winners, g.last) {
                // A group abstained: so does the question.
                (Some(_), Some(Answer::Abstained { rationale, .. })) => {
                    t.answer = Some(Answer::Abstained { rationale, stability: None })
                }
                // A group passed on: so does the question.
                (Some(_), Some(passed @ Answer::Passed { .. })) => t.answer = Some(passed),
                (Some(winners), _) => {
                    t.rounds.push(Round { options: t.alive.len(), groups: g.groups });
                    t.alive = winners;
                }
                (None, Some(last)) => {
                    t.answer = Some(self.settle(provider.name(), &model, key, q, &t.alive, last, g.variants))
                }
                (None, None) => {}
            }
        }
        Ok(notes)
    }

    /// The final answer over the finalists: calibrated for their count, measured against its
    /// variants (below `min_stability` it abstains), and spread over all the question's options,
    /// the eliminated ones at 0.
    #[allow(clippy::too_many_arguments)]
    fn settle(
        &self,
        provider: &str,
        model: &str,
        key: &str,
        q: &Question,
        finalists: &[usize],
        answer: Answer,
        variants: Vec<(&'static str, Answer)>,
    ) -> Answer {
        let options = names(q, finalists);
        let answer = self.calibrate(provider, model, key, &options, answer);
        let Answer::Decided { decision, confidence, probabilities, calibrated, rationale, .. } = answer else {
            return answer;
        };
        let variants: Vec<(&str, Answer)> =
            variants.into_iter().map(|(name, a)| (name, self.calibrate(provider, model, key, &options, a))).collect();
        let stability = (!variants.is_empty()).then(|| {
            let answers: Vec<Answer> = variants.iter().map(|(_, a)| a.clone()).collect();
            stability::measure(&decision, options.len(), &answers)
        });
        let min = self.loaded.config.gateway.min_stability;
        if let Some(s) = stability.filter(|s| s.stability < min) {
            let asked: Vec<(&str, &Answer)> = variants.iter().map(|(n, a)| (*n, a)).collect();
            let rationale = stability::unstable_rationale(&decision, &asked, &s, min);
            return Answer::Abstained { rationale: Some(rationale), stability: Some(s) };
        }
        let probabilities = match probabilities {
            Some(p) if options.len() < q.options.len() => {
                Some(q.options.iter().map(|o| (o.clone(), p.get(o).unwrap_or(0.0))).collect::<Probabilities>())
            }
            p => p,
        };
        Answer::Decided { decision, confidence, probabilities, calibrated, rationale, stability }
    }
}

/// The options of `q` at these indices.
fn names(q: &Question, indices: &[usize]) -> Vec<String> {
    indices.iter().filter_map(|&i| q.options.get(i).cloned()).collect()
}

/// One engine answer checked against the question it answered, or why it is malformed.
fn checked(
    asked: &Question,
    given: Option<EngineAnswer>,
    where_: &str,
    check: impl FnOnce(&Question, EngineAnswer) -> Result<(Answer, Option<String>), String>,
) -> Result<(Answer, Option<String>), Failure> {
    let at = |what: String| if where_.is_empty() { what } else { format!("{where_}: {what}") };
    let given = given.ok_or_else(|| Failure::malformed(at("no answer".to_string())))?;
    check(asked, given).map_err(|e| Failure::malformed(at(e)))
}

/// The parts of a place in a request that are not empty, joined by commas.
fn place(parts: &[String]) -> String {
    parts.iter().filter(|p| !p.is_empty()).cloned().collect::<Vec<_>>().join(", ")
}

/// The timeout of an attempt that took more than one engine request.
fn over_time(timeout: Duration, requests: usize) -> Failure {
    Failure::new(
        Cause::Timeout,
        format!(
            "no answer within {:.3} s after {requests} engine requests (elimination rounds)",
            timeout.as_secs_f64()
        ),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::super::testing::{Scripted, gateway_of, shown_at, with_probabilities};
    use super::*;
    use crate::calibration::{Calibration, Fit, Origin};
    use crate::providers::Provider;

    fn choice(n: usize) -> EngineRequest {
        let options = (0..n).map(|i| format!("o{i}")).collect();
        EngineRequest {
            context: None,
            questions: vec![Question { key: "decision".into(), text: "Which?".into(), options }],
        }
    }

    fn number(o: &str) -> usize {
        o.trim_start_matches('o').parse().expect("oN")
    }

    /// An engine that answers groups deterministically: the option with the highest number wins
    /// at 0.6 wherever it is shown, the others share 0.4.
    fn highest(max: usize) -> Arc<Scripted> {
        Scripted::per_question("eng", max, |options| {
            let best = options.iter().enumerate().max_by_key(|(_, o)| number(o)).map(|(i, _)| i).expect("options");
            shown_at(options, best, 0.6)
        })
    }

    fn run(p: &Arc<Scripted>, request: &EngineRequest, env: &[(&str, &str)]) -> (Checked, f64) {
        run_with(p, request, env, Calibration::default())
    }

    fn run_with(p: &Arc<Scripted>, request: &EngineRequest, env: &[(&str, &str)], cal: Calibration) -> (Checked, f64) {
        let g = gateway_of(vec![p.clone() as Arc<dyn Provider>], env, cal);
        let keys: Vec<String> = request.questions.iter().map(|q| q.key.clone()).collect();
        g.attempt(p.as_ref(), request, &keys, Duration::from_secs(5), None)
    }

    fn decided(c: &Checked) -> (&str, f64, Vec<(&str, f64)>, Option<Stability>) {
        let Ok((answers, _)) = c else { panic!("answered: {c:?}") };
        let Answer::Decided { decision, confidence, probabilities, stability, .. } = &answers[0] else {
            panic!("decided: {answers:?}")
        };
        (decision, *confidence, probabilities.as_ref().map(|p| p.iter().collect()).unwrap_or_default(), *stability)
    }

    fn detail(c: &Checked) -> Option<&str> {
        c.as_ref().ok().and_then(|(_, d)| d.as_deref())
    }

    fn sizes(asked: &[Vec<String>]) -> Vec<usize> {
        asked.iter().map(Vec::len).collect()
    }

    use super::super::Stability;

    #[test]
    fn at_or_below_the_limit_one_request_as_today() {
        let p = highest(20);
        let out = run(&p, &choice(20), &[]);
        assert_eq!(sizes(&p.asked_options().concat()), [20], "one request, one question of 20");
        assert_eq!(p.asked_options().len(), 1);
        let (decision, confidence, probs, stability) = decided(&out.0);
        assert_eq!((decision, confidence, stability), ("o19", 0.6, None));
        assert_eq!(probs.len(), 20);
        assert_eq!(detail(&out.0), None, "nothing to tell");
    }

    #[test]
    fn forty_options_over_twenty_two_groups_in_one_request_then_the_final() {
        let p = highest(20);
        let out = run(&p, &choice(40), &[]);
        let asked = p.asked_options();
        assert_eq!(asked.len(), 2, "the round's two groups in one request, then the final");
        assert_eq!(sizes(&asked[0]), [20, 20]);
        assert_eq!(asked[0][0][0], "o0");
        assert_eq!(asked[0][1][0], "o20");
        // Group winners o19 and o39 are the finalists, in the options' order.
        assert_eq!(asked[1], [["o19", "o39"]]);
        // The final: o39 at 0.6, o19 at 0.4; every eliminated option at 0, and all 40 listed.
        let (decision, confidence, probs, _) = decided(&out.0);
        assert_eq!((decision, confidence), ("o39", 0.6));
        assert_eq!(probs.len(), 40);
        assert_eq!(probs[39], ("o39", 0.6));
        assert_eq!(probs[19], ("o19", 0.4));
        assert!(probs.iter().filter(|(o, _)| *o != "o19" && *o != "o39").all(|(_, p)| *p == 0.0));
        assert_eq!((probs.iter().map(|(_, p)| p).sum::<f64>() * 1e9).round(), 1e9, "still sums to 1");
        assert_eq!(
            detail(&out.0),
            Some(
                "elimination: 40 options in 1 round (40 options in 2 groups of 20); final over 2 finalists: o19, o39; 2 engine requests in all"
            )
        );
    }

    #[test]
    fn two_hundred_options_ten_groups_then_ten_finalists() {
        let p = highest(20);
        let out = run(&p, &choice(200), &[]);
        let asked = p.asked_options();
        assert_eq!(sizes(&asked[0]), [20; 10]);
        let finalists: Vec<String> = (1..=10).map(|g| format!("o{}", g * 20 - 1)).collect();
        assert_eq!(asked[1], [finalists]);
        // The final: o199 at 0.6, the nine others at 0.4 / 9 each.
        let (decision, _, probs, _) = decided(&out.0);
        assert_eq!(decision, "o199");
        assert!((probs[19].1 - 0.4 / 9.0).abs() < 1e-12);
        assert_eq!(probs[18].1, 0.0);
    }

    #[test]
    fn rounds_go_on_until_the_winners_fit() {
        // 256 over 10: 26 groups (22 of 10, then 4 of 9); 26 winners in 3 groups (9, 9, 8); the
        // final over 3: three engine requests.
        let p = highest(10);
        let out = run(&p, &choice(256), &[]);
        let asked = p.asked_options();
        assert_eq!(asked.len(), 3);
        assert_eq!(sizes(&asked[0]), [vec![10; 22], vec![9; 4]].concat());
        assert_eq!(sizes(&asked[1]), [9, 9, 8]);
        // Winners: the last of each first-round group (o9, o19, ..., o219, then o228, o237, o246, o255).
        assert_eq!(asked[1][0][0], "o9");
        assert_eq!(asked[1][2][7], "o255");
        assert_eq!(sizes(&asked[2]), [3]);
        assert_eq!(decided(&out.0).0, "o255");
        assert!(detail(&out.0).is_some_and(|d| d.starts_with("elimination: 256 options in 2 rounds (256 options in 26 groups of 9 to 10, then 26 options in 3 groups of 8 to 9); final over 3 finalists")), "{:?}", detail(&out.0));
    }

    #[test]
    fn calibration_uses_the_fit_for_the_finalists_count() {
        let fit = |options: usize, temperature: f64| Fit {
            provider: "eng".into(),
            model: "eng-model".into(),
            question: None,
            options: Some(options),
            temperature,
            extra: Default::default(),
        };
        // T = 0.5 on (0.6, 0.4): 0.36 / (0.36 + 0.16) = 0.692308. The 40-option fit must not apply.
        let cal = Calibration::from_fits(vec![(Origin::Local, fit(40, 3.0)), (Origin::Local, fit(2, 0.5))]);
        let out = run_with(&highest(20), &choice(40), &[], cal);
        let Ok((answers, _)) = &out.0 else { panic!() };
        let Answer::Decided { confidence, probabilities: Some(p), calibrated, .. } = &answers[0] else { panic!() };
        assert!(*calibrated);
        assert_eq!(*confidence, 0.692308);
        assert_eq!((p.get("o39"), p.get("o19"), p.get("o0")), (Some(0.692308), Some(0.307692), Some(0.0)));
    }

    #[test]
    fn a_group_that_abstains_makes_the_question_abstain_and_a_bad_group_answer_is_malformed() {
        let p = Scripted::per_question("eng", 20, |o| {
            if o.contains(&"o25".to_string()) {
                EngineAnswer::abstained("not Latin".into())
            } else {
                shown_at(o, 0, 0.5)
            }
        });
        let out = run(&p, &choice(40), &[]);
        let Ok((answers, _)) = &out.0 else { panic!() };
        assert_eq!(answers[0], Answer::Abstained { rationale: Some("not Latin".into()), stability: None });
        assert_eq!(p.asked_options().len(), 1, "no final is asked");

        let p = Scripted::per_question("eng", 20, |o| {
            if o[0] == "o20" { with_probabilities(&[("zz", 1.0)]) } else { shown_at(o, 0, 0.5) }
        });
        let out = run(&p, &choice(40), &[]);
        assert_eq!(
            out.0.map(|_| ()),
            // A lone question is not named by its internal key.
            Err(Failure::malformed("round 1 group 2: decision \"zz\" is not one of the options"))
        );
    }

    #[test]
    fn the_per_attempt_timeout_covers_every_round() {
        // The first request takes 50 ms: the final gets what is left of the 5 s, not 5 s again.
        let p = Scripted::answering("eng", 20, |r, _| {
            if r.questions.len() > 1 {
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(r.questions.iter().map(|q| shown_at(&q.options, 0, 0.5)).collect())
        });
        let _ = run(&p, &choice(40), &[]);
        let t = p.timeouts();
        assert_eq!(t.len(), 2);
        assert!(t[0] <= Duration::from_secs(5));
        assert!(t[1] <= Duration::from_secs(5) - Duration::from_millis(50), "{t:?}");
        // An engine that runs out of time in the final: the attempt is a timeout that says so.
        let p = Scripted::answering("eng", 20, |r, t| {
            if r.questions.len() == 1 {
                return Err(Failure::timeout(t));
            }
            Ok(r.questions.iter().map(|q| shown_at(&q.options, 0, 0.5)).collect())
        });
        let (out, _) = run(&p, &choice(40), &[]);
        assert_eq!(
            out.map(|_| ()),
            Err(Failure::new(Cause::Timeout, "no answer within 5.000 s after 2 engine requests (elimination rounds)"))
        );
    }

    #[test]
    fn a_position_biased_engine_is_unstable_and_abstains() {
        // Always the first option shown, at 0.7: yes as asked; reversed (no, yes) it says no at
        // 0.7, which maps back to yes 0.3, no 0.7. Stability 0 of 1, soft stability 0.3.
        let biased = || Scripted::per_question("eng", 20, |o| shown_at(o, 0, 0.7));
        let p = biased();
        let yes_no = EngineRequest {
            context: None,
            questions: vec![Question {
                key: "k".into(),
                text: "Ship?".into(),
                options: vec!["yes".into(), "no".into()],
            }],
        };
        let out = run(&p, &yes_no, &[("SYSTEM1_STABILITY", "fast")]);
        assert_eq!(
            p.asked_options(),
            [[vec!["yes", "no"], vec!["no", "yes"]]],
            "one request, the original and its reversal"
        );
        let Ok((answers, _)) = &out.0 else { panic!() };
        let Answer::Abstained { rationale: Some(why), stability: Some(s) } = &answers[0] else { panic!("{answers:?}") };
        assert_eq!(
            why,
            "the answer changed with the order of the options: \"yes\" as asked, \"no\" with the options reversed; stability 0.00 is below the minimum 1.00"
        );
        assert_eq!((s.stability, s.variants), (0.0, 1));
        assert!((s.soft_stability.expect("soft") - 0.3).abs() < 1e-12);
        // With min_stability 0 the same answer is given, its figures beside it.
        let out = run(&biased(), &yes_no, &[("SYSTEM1_STABILITY", "fast"), ("SYSTEM1_MIN_STABILITY", "0")]);
        let (decision, confidence, _, s) = decided(&out.0);
        assert_eq!((decision, confidence), ("yes", 0.7));
        assert_eq!(s.map(|s| s.stability), Some(0.0));
    }

    #[test]
    fn full_adds_a_shuffle_and_an_engine_that_reads_the_options_is_stable() {
        let p = highest(20);
        let out = run(&p, &choice(5), &[("SYSTEM1_STABILITY", "full")]);
        let asked = &p.asked_options()[0];
        assert_eq!(asked.len(), 3, "original, reversed, shuffled in one request");
        assert_eq!(asked[1], ["o4", "o3", "o2", "o1", "o0"]);
        let shuffled: Vec<usize> = asked[2].iter().map(|o| number(o)).collect();
        assert!(shuffled != [0, 1, 2, 3, 4] && shuffled != [4, 3, 2, 1, 0], "{shuffled:?}");
        // Every order picks o4 at 0.6: stability 1, soft stability (0.6 + 0.6) / 2.
        let (decision, _, probs, s) = decided(&out.0);
        assert_eq!(decision, "o4");
        assert_eq!(probs[0], ("o0", 0.1), "the original's probabilities, in the caller's order");
        let s = s.expect("measured");
        assert_eq!((s.stability, s.variants), (1.0, 2));
        assert!((s.soft_stability.expect("soft") - 0.6).abs() < 1e-12);
    }

    #[test]
    fn stability_asks_the_final_only_and_every_question_of_a_request_in_one_pass() {
        let p = highest(20);
        let _ = run(&p, &choice(40), &[("SYSTEM1_STABILITY", "fast")]);
        let asked = p.asked_options();
        assert_eq!(sizes(&asked[0]), [20, 20], "the round has no variants");
        assert_eq!(asked[1], [vec!["o19", "o39"], vec!["o39", "o19"]]);
        // Four yes/no questions (the routing features): eight questions, one request.
        let p = Scripted::per_question("eng", 20, |o| shown_at(o, 1, 0.8));
        let request = EngineRequest {
            context: None,
            questions: ["a", "b", "c", "d"]
                .iter()
                .map(|k| Question { key: k.to_string(), text: k.to_string(), options: vec!["yes".into(), "no".into()] })
                .collect(),
        };
        let (out, _) = run(&p, &request, &[("SYSTEM1_STABILITY", "fast")]);
        assert_eq!(p.asked_options().len(), 1);
        assert_eq!(p.asked_options()[0].len(), 8);
        // The engine always takes the second slot: every answer flips, every feature abstains.
        let (answers, _) = out.expect("answered");
        assert!(answers.iter().all(|a| matches!(a, Answer::Abstained { stability: Some(_), .. })), "{answers:?}");
    }
}
