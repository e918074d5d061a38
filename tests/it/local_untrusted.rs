//! The local engine's files as untrusted input, through the built binary: a `model.safetensors`
//! whose sizes overflow, a `config.json` with sizes a forward pass cannot run. Each is a
//! `provider_error` naming the file and what is wrong, reported by `engine status` and the MCP
//! server's health, never a crash; the hook stays silent.

use std::path::Path;

use crate::support::{TestEnv, stderr, stdout};
use serde_json::{Map, Value, json};

/// One tensor of a hand-made safetensors file: its data offsets are where its bytes land, unless given.
pub struct Tensor {
    pub name: String,
    pub shape: Vec<u64>,
    pub offsets: Option<[u64; 2]>,
}

/// Writes a safetensors file of F32 tensors (each filled with 0.01 steps).
pub fn write_safetensors(path: &Path, tensors: &[Tensor]) {
    let mut header = Map::new();
    let mut data = Vec::new();
    for t in tensors {
        let start = data.len() as u64;
        if t.offsets.is_none() {
            let count: u64 = t.shape.iter().product();
            for i in 0..count {
                data.extend_from_slice(&((i % 7) as f32 * 0.01).to_le_bytes());
            }
        }
        let offsets = t.offsets.unwrap_or([start, data.len() as u64]);
        header.insert(t.name.clone(), json!({"dtype": "F32", "shape": t.shape, "data_offsets": offsets}));
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

/// A one-layer BERT with hidden size 1 in `dir`: `vocab` rows of word embeddings (with `word_offsets`
/// when given, else real data) and a tokenizer whose `[CLS]` has id `cls`.
pub fn write_model(dir: &Path, vocab: u64, word_offsets: Option<[u64; 2]>, cls: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let config = json!({"model_type": "bert", "hidden_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1,
                        "intermediate_size": 1, "max_position_embeddings": 8, "vocab_size": vocab});
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let tokenizer = json!({
        "normalizer": {"type": "BertNormalizer", "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "model": {"type": "WordPiece", "unk_token": "[UNK]",
                  "vocab": {"[PAD]": 0, "[UNK]": 1, "[SEP]": 2, "pick": 3, "this": 4, "[CLS]": cls}},
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
    let t = |name: &str, shape: &[u64]| Tensor { name: name.into(), shape: shape.to_vec(), offsets: None };
    let mut tensors = vec![
        Tensor { name: "embeddings.word_embeddings.weight".into(), shape: vec![vocab, 1], offsets: word_offsets },
        t("embeddings.position_embeddings.weight", &[8, 1]),
        t("embeddings.token_type_embeddings.weight", &[2, 1]),
        t("embeddings.LayerNorm.weight", &[1]),
        t("embeddings.LayerNorm.bias", &[1]),
    ];
    for part in [
        "attention.self.query",
        "attention.self.key",
        "attention.self.value",
        "attention.output.dense",
        "intermediate.dense",
        "output.dense",
    ] {
        tensors.push(t(&format!("encoder.layer.0.{part}.weight"), &[1, 1]));
        tensors.push(t(&format!("encoder.layer.0.{part}.bias"), &[1]));
    }
    for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
        tensors.push(t(&format!("encoder.layer.0.{norm}.weight"), &[1]));
        tensors.push(t(&format!("encoder.layer.0.{norm}.bias"), &[1]));
    }
    write_safetensors(&dir.join("model.safetensors"), &tensors);
}

fn local_env(dir: &Path) -> TestEnv {
    let env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\n[providers.local]\nmodel_dir = {:?}\n[routing]\nenabled = true\n",
        dir.to_str().unwrap()
    ));
    env
}

/// `decide`, `engine status`, the MCP server and the prompt hook on a broken model: each says what
/// is wrong (every one of `needles`), none crashes.
fn refused_everywhere(env: &TestEnv, needles: &[&str]) {
    let out = env.run(&["decide", "--json", "--question", "Which one?", "--option", "pick", "--option", "this"], "");
    assert!(out.status.code().is_some(), "decide was killed by a signal: {:?}\n{}", out.status, stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    assert_eq!(v["status"], "error", "{v}");
    assert_eq!(v["error"]["code"], "provider_error", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    for n in needles {
        assert!(message.contains(n), "{n:?} not in {message}");
    }

    let out = env.run(&["engine", "status", "local", "--json"], "");
    assert!(out.status.code().is_some(), "engine status was killed: {}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v[0]["healthy"], false, "{v}");
    let detail = v[0]["detail"].as_str().unwrap();
    for n in needles {
        assert!(detail.contains(n), "{n:?} not in {detail}");
    }

    let mut mcp = env.mcp();
    mcp.initialize("2025-06-18");
    let r = mcp.call("system1_decide", json!({"question": "Which one?", "options": ["pick", "this"]}));
    assert_eq!(r["error"]["code"], "provider_error", "{r}");
    let health = mcp.call("system1_health", json!({}));
    let probe = &health["providers"][0];
    assert_eq!(probe["ok"], false, "{health}");
    assert!(needles.iter().all(|n| probe["detail"].as_str().unwrap().contains(n)), "{health}");
    assert!(mcp.close().success(), "the server survives the broken model");

    let out = env
        .run(&["hook", "prompt"], r#"{"prompt": "Refactor the parser so that every error carries its line number"}"#);
    assert_eq!(out.status.code(), Some(0), "the hook was killed: {:?}", out.status);
    assert_eq!(stdout(&out), "", "the hook stays silent");
}

#[test]
fn a_tensor_shape_that_overflows_is_refused_not_read_past_the_file() {
    // [2^62, 1] F32 is 2^64 bytes, which wraps to 0 and matched data_offsets [0, 0]; the [CLS]
    // row would then be read 16 GB past the mapping.
    let env = TestEnv::new();
    let dir = env.root.join("model");
    write_model(&dir, 1 << 62, Some([0, 0]), 4_000_000_000);
    let env = local_env(&dir);
    refused_everywhere(&env, &["model.safetensors", "embeddings.word_embeddings.weight", "overflow"]);
}

#[test]
fn config_sizes_a_forward_pass_cannot_run_are_refused_by_file_and_key() {
    for (key, value) in [("max_position_embeddings", 2), ("hidden_size", 0), ("num_attention_heads", 0)] {
        let env = TestEnv::new();
        let dir = env.root.join("model");
        write_model(&dir, 6, None, 5);
        let path = dir.join("config.json");
        let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        config[key] = json!(value);
        std::fs::write(&path, config.to_string()).unwrap();
        let env = local_env(&dir);
        refused_everywhere(&env, &["config.json", &format!("its {key} is {value}")]);
    }
}

#[test]
fn the_small_model_itself_loads_and_answers() {
    // The control: the same hand-made files, unbroken, give a decision.
    let env = TestEnv::new();
    let dir = env.root.join("model");
    write_model(&dir, 6, None, 5);
    let env = local_env(&dir);
    let (v, _) = env.decide_json(&["--question", "Which one?", "--option", "pick", "--option", "this"]);
    assert!(v["error"].is_null() && v["status"] != "error", "{v}");
    assert_eq!(v["provider"], "local", "{v}");
}
