//! The local engine keeps its deadline, through the real binary: a context of repeated special
//! tokens is tokenized in time linear in what the window uses (it was quadratic in the whole
//! text: a megabyte of `[CLS]` kept a one-shot MCP client waiting for minutes), and a forward pass
//! that would run far past `timeout_s` or the prompt hook's budget gives up between layers.

use std::path::Path;

use crate::local_untrusted::write_model;
use crate::support::{CUT_OFF, TestEnv, stderr, stdout};
use serde_json::{Map, Value, json};

/// The tiny model of `local_untrusted`, with a tokenizer that lists its special tokens as a real
/// one does (`added_tokens`): each is then matched verbatim in the text.
fn tiny_model_with_specials(dir: &Path) {
    write_model(dir, 6, None, 5);
    let path = dir.join("tokenizer.json");
    let mut tokenizer: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    tokenizer["added_tokens"] = json!([
        {"id": 0, "content": "[PAD]", "special": true}, {"id": 1, "content": "[UNK]", "special": true},
        {"id": 5, "content": "[CLS]", "special": true}, {"id": 2, "content": "[SEP]", "special": true},
    ]);
    std::fs::write(&path, tokenizer.to_string()).unwrap();
}

fn local_config(env: &TestEnv, dir: &Path, extra: &str) {
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\n{extra}\n[providers.local]\nmodel_dir = {:?}\n",
        dir.to_str().unwrap()
    ));
}

#[test]
fn a_context_of_repeated_special_tokens_is_answered_in_time() {
    let env = TestEnv::new();
    let dir = env.root.join("model");
    tiny_model_with_specials(&dir);
    local_config(&env, &dir, "");
    let mut mcp = env.mcp();
    mcp.initialize("2025-06-18");
    // 1 MB of `[CLS]`: every match searched the rest of the text for each special token again.
    let context = json!({"text": "[CLS]".repeat(200_000)});
    let started = std::time::Instant::now();
    let r =
        mcp.call("system1_decide", json!({"question": "Which one?", "options": ["pick", "this"], "context": context}));
    assert!(started.elapsed() < CUT_OFF, "answered after {:?}", started.elapsed());
    assert_eq!(r["provider"], "local", "{r}");
    assert!(r["error"].is_null(), "{r}");
    // The same text with plain words between: the same kind of answer, as quickly.
    let context = json!({"text": "pick [SEP] this [CLS] ".repeat(50_000)});
    let r =
        mcp.call("system1_decide", json!({"question": "Which one?", "options": ["pick", "this"], "context": context}));
    assert!(r["error"].is_null() && r["provider"] == "local", "{r}");
    assert!(mcp.close().success());
}

/// A safetensors file of F32 tensors in which tensors named alike share one copy of their data
/// (every layer the first layer's), so that a model thousands of layers deep stays a small file.
fn write_shared_safetensors(path: &Path, tensors: &[(String, Vec<u64>, Option<String>)]) {
    let mut header = Map::new();
    let mut data: Vec<u8> = Vec::new();
    let mut placed: std::collections::HashMap<String, [u64; 2]> = std::collections::HashMap::new();
    for (name, shape, same_as) in tensors {
        let offsets = match same_as.as_ref().and_then(|s| placed.get(s)) {
            Some(o) => *o,
            None => {
                let start = data.len() as u64;
                let count: u64 = shape.iter().product();
                for i in 0..count {
                    // Small values that keep every layer's activations finite.
                    data.extend_from_slice(&(((i % 13) as f32 - 6.0) * 0.002).to_le_bytes());
                }
                [start, data.len() as u64]
            }
        };
        placed.insert(name.clone(), offsets);
        header.insert(name.clone(), json!({"dtype": "F32", "shape": shape, "data_offsets": offsets}));
    }
    let mut text = Value::Object(header).to_string().into_bytes();
    while !text.len().is_multiple_of(8) {
        text.push(b' ');
    }
    let mut bytes = (text.len() as u64).to_le_bytes().to_vec();
    bytes.extend(text);
    bytes.extend(data);
    std::fs::write(path, bytes).unwrap();
}

/// A BERT of `layers` layers (hidden size 64, a 1,024-token window) whose full pass over a long
/// text takes minutes, written in a few hundred KB.
fn deep_model(dir: &Path, layers: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let (h, i, p, vocab) = (64u64, 64u64, 1024u64, 8u64);
    let config = json!({"model_type": "bert", "hidden_size": h, "num_hidden_layers": layers, "num_attention_heads": 4,
                        "intermediate_size": i, "max_position_embeddings": p, "vocab_size": vocab});
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let tokenizer = json!({
        "normalizer": {"type": "BertNormalizer", "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "model": {"type": "WordPiece", "unk_token": "[UNK]",
                  "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "pick": 4, "this": 5, "refactor": 6, "parser": 7}},
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
    let mut tensors: Vec<(String, Vec<u64>, Option<String>)> = vec![
        ("embeddings.word_embeddings.weight".into(), vec![vocab, h], None),
        ("embeddings.position_embeddings.weight".into(), vec![p, h], None),
        ("embeddings.token_type_embeddings.weight".into(), vec![2, h], None),
        ("embeddings.LayerNorm.weight".into(), vec![h], None),
        ("embeddings.LayerNorm.bias".into(), vec![h], None),
    ];
    for layer in 0..layers {
        for (part, out, inp) in [
            ("attention.self.query", h, h),
            ("attention.self.key", h, h),
            ("attention.self.value", h, h),
            ("attention.output.dense", h, h),
            ("intermediate.dense", i, h),
            ("output.dense", h, i),
        ] {
            for (suffix, shape) in [("weight", vec![out, inp]), ("bias", vec![out])] {
                let name = format!("encoder.layer.{layer}.{part}.{suffix}");
                let first = format!("encoder.layer.0.{part}.{suffix}");
                tensors.push((name, shape, (layer > 0).then_some(first)));
            }
        }
        for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
            for suffix in ["weight", "bias"] {
                let name = format!("encoder.layer.{layer}.{norm}.{suffix}");
                let first = format!("encoder.layer.0.{norm}.{suffix}");
                tensors.push((name, vec![h], (layer > 0).then_some(first)));
            }
        }
    }
    write_shared_safetensors(&dir.join("model.safetensors"), &tensors);
}

#[test]
fn a_forward_pass_longer_than_the_timeout_gives_up_between_layers() {
    let env = TestEnv::new();
    let dir = env.root.join("model");
    // About half a second a layer over a full window in a debug build: 600 layers are five minutes.
    deep_model(&dir, 600);
    local_config(&env, &dir, "timeout_s = 1\n[routing]\nenabled = true\nhint = true\nbudget_ms = 1000");
    let long = "refactor the parser and pick this ".repeat(400);

    let out = env
        .run_within(
            &[
                "decide",
                "--json",
                "--question",
                "Which one?",
                "--option",
                "pick",
                "--option",
                "this",
                "--context",
                &json!({"text": long}).to_string(),
            ],
            "",
            false,
            CUT_OFF,
        )
        .expect("decide ran the whole pass, long past timeout_s");
    let v: Value =
        serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)));
    assert_eq!(v["attempts"][0]["outcome"], "timeout", "{v}");

    // The prompt hook, on its budget: silent, and in time for Claude Code.
    let payload = json!({"session_id": "s", "cwd": env.home, "hook_event_name": "UserPromptSubmit", "prompt": long});
    let out = env
        .run_within(&["hook", "prompt"], &payload.to_string(), false, CUT_OFF)
        .expect("the prompt hook ran the whole pass, long past its budget");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "no answer in time: no hint");
}
