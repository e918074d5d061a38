//! Elimination rounds and option stability through the real binary (`system1 mcp`, `system1
//! decide`, the prompt hook, `system1 route`), against laya-serve fakes with known behaviour: one
//! that answers every group the same way (the option with the highest number wins), one with a
//! fixed position bias. Every figure below is worked out by hand from the fake's weights.

use std::time::Instant;

use crate::support::fake_http::{FakeServer, Reply, Request};
use crate::support::fake_laya::{weighed, weighing};
use crate::support::{CUT_OFF, TestEnv, stderr, stdout, write};
use serde_json::{Value, json};

fn options(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("o{i}")).collect()
}

/// `system1 decide` arguments for `question` over `n` options.
fn decide_args(question: &str, n: usize) -> Vec<String> {
    let mut args = vec!["-q".to_string(), question.to_string()];
    args.extend(options(n).into_iter().flat_map(|o| ["-o".to_string(), o]));
    args
}

/// The option with the highest number weighs 9, every other 1: over 20 the winner has 9/28,
/// over 10 finalists 9/18 = 0.5 (the others 1/18 = 0.0556), over 2 finalists 0.9 and 0.1.
fn highest_wins(_instructions: &str, labels: &[&str]) -> Vec<f64> {
    let n = |l: &str| l.trim_start_matches('o').parse::<usize>().unwrap_or(0);
    let top = labels.iter().map(|l| n(l)).max().unwrap_or(0);
    labels.iter().map(|l| if n(l) == top { 9.0 } else { 1.0 }).collect()
}

/// A position bias with no regard for the text: the first slot weighs 3, the others 1 (over two
/// options: 0.75 for whichever is shown first).
fn first_slot(_instructions: &str, labels: &[&str]) -> Vec<f64> {
    (0..labels.len()).map(|s| if s == 0 { 3.0 } else { 1.0 }).collect()
}

fn env_for(url: &str, gateway: &str) -> TestEnv {
    let mut env = TestEnv::new();
    env.write_config(&format!("[gateway]\nprovider = \"laya\"\n{gateway}\n"));
    env.set_env("SYSTEM1_LAYA_ENDPOINT", url);
    env
}

/// The number of options in each question of an engine request, in order.
fn sizes(body: &Value) -> Vec<usize> {
    body["questions"].as_object().unwrap().values().map(|q| q["criteria"].as_object().unwrap().len()).collect()
}

fn ids(body: &Value) -> Vec<String> {
    body["questions"].as_object().unwrap().keys().cloned().collect()
}

#[test]
fn two_hundred_options_over_mcp_two_requests_probabilities_over_the_finalists() {
    let server = weighing(highest_wins);
    let env = env_for(&server.url(), "");
    let mut mcp = env.mcp();
    mcp.initialize("2025-06-18");
    let r = mcp
        .call("system1_decide", json!({"question": "Which intent?", "options": options(200), "min_confidence": 0.5}));
    assert_eq!(r["status"], "decided", "{r}");
    assert_eq!(r["decision"], "o199");
    // The final over 10 finalists: o199 at 9/18 = 0.5, the nine others at 1/18 = 0.0556.
    assert_eq!(r["confidence"], 0.5);
    assert_eq!(r["calibrated"], false);
    let p = r["probabilities"].as_object().unwrap();
    assert_eq!(p.len(), 200, "every option listed, in the request's order");
    assert_eq!(p.keys().next().map(String::as_str), Some("o0"));
    assert_eq!((p["o199"].clone(), p["o19"].clone(), p["o0"].clone()), (json!(0.5), json!(0.0556), json!(0.0)));
    let finalists: Vec<String> = (1..=10).map(|g| format!("o{}", g * 20 - 1)).collect();
    assert_eq!(p.iter().filter(|(_, x)| x.as_f64() != Some(0.0)).count(), 10, "eliminated options at 0");
    assert_eq!(
        r["attempts"][0]["detail"],
        format!(
            "elimination: 200 options in 1 round (200 options in 10 groups of 20); final over 10 finalists: {}; 2 engine requests in all",
            finalists.join(", ")
        )
    );
    let sent = server.requests_to("/v1/systemone");
    assert_eq!(sent.len(), 2, "one request for the round's ten groups, one for the final");
    assert_eq!(sizes(&sent[0].json()), [20; 10]);
    assert_eq!(ids(&sent[0].json()), (0..10).map(|i| format!("q{i}")).collect::<Vec<_>>(), "one key, by position");
    assert_eq!(ids(&sent[1].json()), ["decision"]);
    let criteria: Vec<String> =
        sent[1].json()["questions"]["decision"]["criteria"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(criteria, finalists);
    assert_eq!(sent[1].json()["state"], "Which intent?");
    mcp.close();
}

#[test]
fn calibration_applies_the_fit_for_the_finalists_count() {
    let server = weighing(highest_wins);
    let env = env_for(&server.url(), "");
    let fit = |options: usize, t: f64| json!({"provider": "laya", "model": "typed-decisions", "options": options, "temperature": t});
    // A fit for 200 options must not match: the answer is over the 10 finalists.
    let file = json!({"format": "system1-calibration", "version": 1, "fits": [fit(200, 5.0), fit(10, 0.5)]});
    write(&env.install_dir.join("calibration.json"), &file.to_string());
    let args = decide_args("Which intent?", 200);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (v, code) = env.decide_json(&args);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["calibrated"], true);
    // T = 0.5 squares each probability: 0.5^2 = 0.25 and 9 * 0.0556^2 = 0.02782224, so the pick
    // has 0.25 / 0.27782224 = 0.899856 and each other finalist 0.00309136 / 0.27782224 = 0.011127.
    assert_eq!(v["confidence"], 0.899856);
    assert_eq!(v["probabilities"]["o19"], 0.011127);
    assert_eq!(v["probabilities"]["o18"], 0.0);
}

#[test]
fn forty_options_from_the_command_line_and_a_fallback_when_rounds_are_off() {
    let server = weighing(highest_wins);
    let env = env_for(&server.url(), "");
    let args = decide_args("Which one?", 40);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = env.run(&[&["decide"], &args[..]].concat(), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Two groups of 20 in one request; the final over o19 and o39: o39 at 0.9.
    assert!(stdout(&out).starts_with("o39 (confidence 0.90, laya, "), "{}", stdout(&out));
    assert_eq!(
        server.requests_to("/v1/systemone").iter().map(|r| sizes(&r.json())).collect::<Vec<_>>(),
        [vec![20, 20], vec![2]]
    );

    // tournament = false restores the refusal: Laya is not asked, the mock fallback answers.
    let off = env_for(&server.url(), "tournament = false\nfallback = [\"mock\"]");
    let (v, code) = off.decide_json(&args);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["provider"], "mock");
    assert_eq!(v["attempts"][0]["outcome"], "passed");
    assert_eq!(
        v["attempts"][0]["detail"],
        "40 options exceed laya's limit of 20 (elimination rounds are off: [gateway] tournament = false)"
    );
    assert_eq!(server.requests_to("/v1/systemone").len(), 2, "nothing more sent to Laya");
}

#[test]
fn the_timeout_covers_every_round() {
    // The round is answered; the final never is. The attempt ends at timeout_s, not 60 s later.
    let server = FakeServer::start(|r: &Request| {
        let body = r.json();
        if body["questions"].as_object().map(|q| q.len()) == Some(1) {
            Reply::hang()
        } else {
            Reply::json(200, &weighed(&body, &highest_wins))
        }
    });
    let mut env = env_for(&server.url(), "fallback = [\"mock\"]");
    env.set_env("SYSTEM1_TIMEOUT_S", "1");
    let started = Instant::now();
    let args = decide_args("Which one?", 40);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (v, code) = env.decide_json(&args);
    assert!(started.elapsed() < CUT_OFF, "cut off at timeout_s: {:?}", started.elapsed());
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["attempts"][0]["outcome"], "timeout", "{v}");
    assert_eq!(v["attempts"][0]["detail"], "no answer within 1.000 s after 2 engine requests (elimination rounds)");
    assert_eq!(v["provider"], "mock", "the fallback takes over");
}

#[test]
fn a_position_biased_engine_abstains_under_stability_and_a_stable_one_decides() {
    let server = weighing(first_slot);
    let env = env_for(&server.url(), "stability = \"fast\"");
    let mut mcp = env.mcp();
    mcp.initialize("2025-06-18");
    let r = mcp.call("system1_decide", json!({"question": "Ship it?"}));
    // yes first: yes at 0.75; no first: no at 0.75, which maps back to yes 0.25.
    assert_eq!(r["status"], "abstained", "{r}");
    assert_eq!(r["decision"], Value::Null);
    assert_eq!((r["stability"].clone(), r["soft_stability"].clone()), (json!(0.0), json!(0.25)));
    assert_eq!(
        r["rationale"],
        "the answer changed with the order of the options: \"yes\" as asked, \"no\" with the options reversed; stability 0.00 is below the minimum 1.00"
    );
    assert_eq!(r["attempts"][0]["outcome"], "abstained");
    let sent = server.requests_to("/v1/systemone");
    assert_eq!(sent.len(), 1, "the reversed question goes in the same request");
    let body = sent[0].json();
    assert_eq!(body["questions"]["q0"]["criteria"], json!({"yes": null, "no": null}));
    assert_eq!(body["questions"]["q1"]["criteria"], json!({"no": null, "yes": null}));
    let order: Vec<&String> = body["questions"]["q1"]["criteria"].as_object().unwrap().keys().collect();
    assert_eq!(order, ["no", "yes"], "sent in the reversed order");
    mcp.close();

    // Bias and merit: no weighs 4 times more than yes. As asked (yes, no): 3 against 4, no at
    // 4/7 = 0.5714. Reversed (no, yes): 12 against 1, no at 12/13 = 0.9231. Stable: stability 1.
    let merit = FakeServer::start(|r: &Request| {
        let weigh = |i: &str, l: &[&str]| {
            first_slot(i, l).iter().zip(l).map(|(w, o)| if *o == "no" { w * 4.0 } else { *w }).collect()
        };
        Reply::json(200, &weighed(&r.json(), &weigh))
    });
    let env = env_for(&merit.url(), "stability = \"fast\"");
    let (v, code) = env.decide_json(&["-q", "Ship it?"]);
    assert_eq!(code, 4, "0.5714 is under the 0.6 threshold: {v}");
    assert_eq!((v["stability"].clone(), v["soft_stability"].clone()), (json!(1.0), json!(0.9231)));
    assert_eq!(v["confidence"], 0.5714);
    let (v, code) = env.decide_json(&["-q", "Ship it?", "--min-confidence", "0.5"]);
    assert_eq!((code, v["decision"].clone()), (0, json!("no")), "{v}");
    // min_stability 0 gives the biased engine's answer, with its figures.
    let env = env_for(&server.url(), "stability = \"fast\"\nmin_stability = 0");
    let (v, code) = env.decide_json(&["-q", "Ship it?"]);
    assert_eq!((code, v["decision"].clone(), v["stability"].clone()), (0, json!("yes"), json!(0.0)), "{v}");
}

#[test]
fn full_stability_adds_a_shuffle_in_the_same_request_and_composes_with_rounds() {
    let server = weighing(highest_wins);
    let env = env_for(&server.url(), "stability = \"full\"");
    let (v, code) = env.decide_json(&["-q", "Which?", "-o", "o0", "-o", "o1", "-o", "o2", "-o", "o3"]);
    assert_eq!(code, 0, "{v}");
    // o3 weighs 9 of 12 wherever it is shown: 0.75 in all three orders.
    assert_eq!((v["decision"].clone(), v["confidence"].clone()), (json!("o3"), json!(0.75)));
    assert_eq!((v["stability"].clone(), v["soft_stability"].clone()), (json!(1.0), json!(0.75)));
    let sent = server.requests_to("/v1/systemone");
    assert_eq!(sent.len(), 1);
    let orders: Vec<Vec<String>> = sent[0].json()["questions"]
        .as_object()
        .unwrap()
        .values()
        .map(|q| q["criteria"].as_object().unwrap().keys().cloned().collect())
        .collect();
    assert_eq!(orders.len(), 3);
    assert_eq!(orders[0], ["o0", "o1", "o2", "o3"]);
    assert_eq!(orders[1], ["o3", "o2", "o1", "o0"]);
    assert!(orders[2] != orders[0] && orders[2] != orders[1], "{:?}", orders[2]);
    // The same question is shuffled the same way next time.
    env.decide_json(&["-q", "Which?", "-o", "o0", "-o", "o1", "-o", "o2", "-o", "o3"]);
    let again: Vec<String> = server.requests_to("/v1/systemone")[1].json()["questions"]["q2"]["criteria"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(again, orders[2]);

    // 40 options with stability: the round without variants, then the final with its two (two
    // finalists have one other order only, so full asks one).
    server.clear();
    let args = decide_args("Which one?", 40);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (v, _) = env.decide_json(&args);
    assert_eq!(v["stability"], 1.0, "{v}");
    let sent = server.requests_to("/v1/systemone");
    assert_eq!(sent.iter().map(|r| sizes(&r.json())).collect::<Vec<_>>(), [vec![20, 20], vec![2, 2]]);
}

const TASK: &str = "Read src/main.rs and explain how the command line arguments are parsed and dispatched";

/// Routing features by their question text, whatever the order of the options: design and review
/// no (weight 4 against 1), the others yes.
fn by_feature(instructions: &str, labels: &[&str]) -> Vec<f64> {
    let no = instructions.contains("ask for a design") || instructions.contains("ask to review");
    labels.iter().map(|l| if (*l == "no") == no { 4.0 } else { 1.0 }).collect()
}

fn route(env: &TestEnv) -> Value {
    let out = env.run(&["route", "--prompt", TASK, "--cwd", "/", "--json"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

#[test]
fn routing_with_stability_asks_eight_questions_in_one_request() {
    let server = weighing(by_feature);
    let env = env_for(&server.url(), "stability = \"fast\"\n[routing]\nenabled = true\nhint = true");
    let payload = json!({"session_id": "s", "cwd": "/", "hook_event_name": "UserPromptSubmit", "prompt": TASK});
    let out = env.run(&["hook", "prompt"], &payload.to_string());
    let v: Value = serde_json::from_str(&stdout(&out)).expect("a hint");
    let ctx = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(ctx.contains("model \"haiku\""), "read-only and specified, stable in both orders: {ctx}");
    let sent = server.requests_to("/v1/systemone");
    assert_eq!(sent.len(), 1, "the four features and their reversals in one request");
    assert_eq!(sizes(&sent[0].json()), [2; 8]);
    let instructions: Vec<String> = sent[0].json()["questions"]
        .as_object()
        .unwrap()
        .values()
        .map(|q| q["instructions"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(instructions[0], instructions[1], "each feature, then the same question reversed");

    // A position-biased engine flips every feature: none is answered, so no hint.
    let biased = weighing(first_slot);
    let env = env_for(&biased.url(), "stability = \"fast\"\n[routing]\nenabled = true\nhint = true");
    let v = route(&env);
    let features = v["routing"]["features"].as_object().expect("features");
    assert_eq!(features.len(), 4);
    assert!(features.values().all(|f| f["answer"].is_null()), "{v}");
    assert_eq!(v["routing_hint"]["given"], false, "{v}");
}

#[test]
fn the_skill_picker_wakes_on_laya_with_more_skills_than_it_takes() {
    let server =
        weighing(|_i, labels: &[&str]| labels.iter().map(|l| if *l == "skill-27" { 9.0 } else { 1.0 }).collect());
    let env = env_for(&server.url(), "[routing]\nenabled = true\n[skills]\nenabled = true\nhint = true");
    for i in 0..30 {
        let name = format!("skill-{i:02}");
        write(
            &env.claude_dir.join(format!("skills/{name}/SKILL.md")),
            &format!("---\nname: {name}\ndescription: does {i}\n---\n"),
        );
    }
    let v = route(&env);
    // The routing features first; then 30 skills plus none, 31 options: two groups (16 and 15) in
    // one request, then the final over the two winners.
    assert_eq!(v["skills"]["pick"], "skill-27", "{v}");
    let sent = server.requests_to("/v1/systemone");
    let sizes: Vec<Vec<usize>> = sent.iter().map(|r| sizes(&r.json())).collect();
    assert_eq!(sizes, [vec![2, 2, 2, 2], vec![16, 15], vec![2]]);
}
