//! What teaching the local engine may produce (issue 41): a heads file its own reader takes, never
//! one over the reader's 16 MiB (refused, the old file left as it was), and no more options than
//! a decision can ask, each with examples enough, checked before anything is fitted.

use serde_json::json;

use crate::local_engine::model_dir;
use crate::support::{TestEnv, stderr, stdout, write};

fn local_env(dir: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write_config(&format!("[gateway]\nprovider = \"local\"\n[providers.local]\nmodel_dir = {dir:?}\n"));
    env
}

/// A yes/no set of 24 examples the model separates (billing against the rest).
fn billing_set() -> String {
    let yes = ["The invoice is wrong", "I was charged twice", "Refund my payment", "My card was billed again"];
    let no = ["The app crashes on start", "Add a dark theme", "The login page is blank", "Export is empty"];
    (0..24)
        .map(|i| {
            let (text, label) = if i % 2 == 0 { (yes[i / 2 % 4], true) } else { (no[i / 2 % 4], false) };
            format!("{}\n", json!({"context": {"ticket": format!("{text} ({i})")}, "label": label}))
        })
        .collect()
}

/// A compact heads file of heads for other questions (384 weights of six decimals each), as many
/// as fit in `max` bytes, the first one's `source` padded to leave 64 bytes of room; and how many.
fn heads_file(max: usize) -> (String, usize) {
    // Each ends in 7, so it is written back with as many digits as here.
    let weights: Vec<String> = (0..384).map(|i| format!("-0.1{i:03}57")).collect();
    let weights = weights.join(",");
    let mut out = String::from("{\"format\":\"system1-local-heads\",\"version\":1,\"heads\":[");
    let mut n = 0;
    loop {
        let head = format!(
            r#"{}{{"model":"all-MiniLM-L6-v2","question":"question number {n}","dims":384,"lambda":0.3,"temperature":1.0,"bias":0.1,"weights":[{weights}],"n":40,"positives":20,"loo_accuracy":0.9,"source":"set.jsonl{}"}}"#,
            if n == 0 { "\n" } else { ",\n" },
            if n == 0 { "PAD" } else { "" }
        );
        if out.len() + head.len() + 4 > max {
            let pad = "x".repeat(max - 64 - (out.len() + 4 - 3));
            return (out.replacen("PAD", &pad, 1) + "\n]}\n", n);
        }
        out.push_str(&head);
        n += 1;
    }
}

#[test]
fn a_teach_never_writes_a_heads_file_its_reader_refuses() {
    let Some(dir) = model_dir() else { return };
    let env = local_env(&dir);
    let set = env.root.join("set.jsonl");
    write(&set, &billing_set());
    let heads = env.install_dir.join("local-heads.json");
    let teach = |question: &str| {
        let out = env.run(&["calibrate", "fit", "--question", question, "--set", set.to_str().unwrap(), "--apply"], "");
        (out.status.code(), stdout(&out) + &stderr(&out))
    };

    // 8.5 MiB of heads: pretty-printed, as they were written, they came to more than 16 MiB.
    let (eight, _) = heads_file(17 << 19);
    write(&heads, &eight);
    let (code, said) = teach("Is it about billing?");
    assert_eq!(code, Some(0), "{said}");
    let written = std::fs::metadata(&heads).unwrap().len();
    assert!(written < 9 << 20, "written compactly: {written} bytes");
    let (v, code) =
        env.decide_json(&["-q", "Is it about billing?", "--context", r#"{"ticket": "I was charged twice"}"#]);
    assert_eq!((code, v["decision"].as_str()), (0, Some("yes")), "the taught head answers: {v}");

    // Just under the reader's 16 MiB: one more head would pass it, so the teach is refused and
    // the file is left as it was.
    let (full, _) = heads_file(16 << 20);
    write(&heads, &full);
    let (code, said) = teach("Is it about payments?");
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("over the 16 MiB a heads file may be; nothing was written, the old file is as it was"),
        "{said}"
    );
    assert!(!said.contains("Wrote"), "{said}");
    assert_eq!(std::fs::read_to_string(&heads).unwrap(), full, "the old file, byte for byte");
}

#[test]
fn a_teach_asks_no_more_options_than_a_decision_can_and_two_examples_of_each() {
    let Some(dir) = model_dir() else { return };
    let env = local_env(&dir);
    let set = env.root.join("set.jsonl");
    let fit = || {
        let out =
            env.run(&["calibrate", "fit", "--question", "Which one?", "--set", set.to_str().unwrap(), "--apply"], "");
        (out.status.code(), stdout(&out) + &stderr(&out))
    };
    let lines = |n: usize, per: usize| -> String {
        (0..n * per)
            .map(|i| format!("{}\n", json!({"text": format!("example {i}"), "label": format!("option {}", i / per)})))
            .collect()
    };
    // 3,000 single-example options: refused before any embedding or fit, not minutes later.
    write(&set, &lines(3_000, 1));
    let (code, said) = fit();
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("has 3000 options; a question is taught at most 256, the most a decision can ask"), "{said}");
    write(&set, &lines(300, 2));
    let (code, said) = fit();
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("has 300 options"), "{said}");
    write(&set, &lines(30, 1));
    let (code, said) = fit();
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("30 of the 30 options (\"option 0\" first) have fewer than 2 examples"), "{said}");
    assert!(!env.install_dir.join("local-heads.json").exists(), "nothing written");
}
