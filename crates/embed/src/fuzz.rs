//! The model loader against a few thousand generated model folders: a small valid BERT (config,
//! tokenizer, safetensors) with one to three faults of the kinds a hostile or broken download
//! holds (sizes that overflow, offsets past the end, zero dimensions, wrong dtypes, a cut or
//! scribbled file, odd tokenizer entries). Each must load and embed, or be refused with an error:
//! never a panic, never a read outside the file. The generator is seeded, so a failure names the
//! case that reproduces it.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::model::Model;

/// SplitMix64: a seeded stream, so that every run tries the same cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// A number a hostile file puts where a size or an offset goes.
    fn wild(&mut self) -> u64 {
        let edges = [
            0,
            1,
            2,
            3,
            4,
            7,
            8,
            255,
            65_536,
            1 << 31,
            1 << 32,
            (1 << 32) + 1,
            1 << 61,
            1 << 62,
            (1 << 62) + 1,
            i64::MAX as u64,
            u64::MAX / 4 + 1,
            u64::MAX - 7,
            u64::MAX,
        ];
        if self.chance(20) { self.next() } else { *self.pick(&edges) }
    }
}

/// One tensor as it goes into the file: offsets are the data's place unless a fault set them.
struct Tensor {
    name: String,
    dtype: String,
    shape: Vec<u64>,
    offsets: Option<[u64; 2]>,
    data: Vec<u8>,
}

struct Folder {
    config: Map<String, Value>,
    tokenizer: Value,
    tensors: Vec<Tensor>,
    sentence_bert: Option<Value>,
    /// A fault applied to the finished safetensors bytes.
    bytes_fault: Option<BytesFault>,
}

enum BytesFault {
    Truncate(u64),
    Scribble(Vec<(u64, u8)>),
    HeaderLength(u64),
}

const WORDS: [&str; 12] = ["hello", "world", "un", "##aff", "##able", "the", "cat", ",", ".", "a", "b", "中"];

/// A valid model of these sizes, with random weights (F32, sometimes F16 or BF16).
fn valid(rng: &mut Rng, h: u64, heads: u64, layers: u64, inter: u64, positions: u64) -> Folder {
    let mut vocab = Map::new();
    for (i, t) in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].iter().chain(WORDS.iter()).enumerate() {
        vocab.insert(t.to_string(), json!(i));
    }
    let vocab_size = vocab.len() as u64;
    let tokenizer = json!({
        "added_tokens": [{"id": 4, "content": "[MASK]", "special": true}, {"id": 2, "content": "[CLS]", "special": true}],
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing"},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab},
    });
    let config = json!({
        "model_type": "bert", "hidden_size": h, "num_hidden_layers": layers, "num_attention_heads": heads,
        "intermediate_size": inter, "max_position_embeddings": positions, "vocab_size": vocab_size,
        "hidden_act": "gelu", "layer_norm_eps": 1e-12,
    });
    let Value::Object(config) = config else { unreachable!() };
    let mut shapes: Vec<(String, Vec<u64>)> = vec![
        ("embeddings.word_embeddings.weight".into(), vec![vocab_size, h]),
        ("embeddings.position_embeddings.weight".into(), vec![positions, h]),
        ("embeddings.token_type_embeddings.weight".into(), vec![2, h]),
        ("embeddings.LayerNorm.weight".into(), vec![h]),
        ("embeddings.LayerNorm.bias".into(), vec![h]),
    ];
    for l in 0..layers {
        let p = format!("encoder.layer.{l}");
        for (part, out, inp) in [
            ("attention.self.query", h, Some(h)),
            ("attention.self.key", h, Some(h)),
            ("attention.self.value", h, Some(h)),
            ("attention.output.dense", h, Some(h)),
            ("attention.output.LayerNorm", h, None),
            ("intermediate.dense", inter, Some(h)),
            ("output.dense", h, Some(inter)),
            ("output.LayerNorm", h, None),
        ] {
            shapes.push((format!("{p}.{part}.weight"), inp.map_or(vec![out], |i| vec![out, i])));
            shapes.push((format!("{p}.{part}.bias"), vec![out]));
        }
    }
    let dtype = *rng.pick(&["F32", "F32", "F32", "F16", "BF16"]);
    let prefix = *rng.pick(&["", "bert.", "model."]);
    let tensors = shapes
        .into_iter()
        .map(|(name, shape)| {
            let count: u64 = shape.iter().product();
            let mut data = Vec::with_capacity(count as usize * 4);
            for _ in 0..count {
                let v = (rng.below(2001) as f32 - 1000.0) / 4000.0;
                match dtype {
                    "F32" => data.extend_from_slice(&v.to_le_bytes()),
                    // The top half of the f32: a BF16 (and, read as F16, some half float).
                    _ => data.extend_from_slice(&((v.to_bits() >> 16) as u16).to_le_bytes()),
                }
            }
            Tensor { name: format!("{prefix}{name}"), dtype: dtype.to_string(), shape, offsets: None, data }
        })
        .collect();
    Folder { config, tokenizer, tensors, sentence_bert: None, bytes_fault: None }
}

fn safetensors(tensors: &[Tensor]) -> Vec<u8> {
    let mut header = Map::new();
    let mut at = 0u64;
    for t in tensors {
        let len = t.data.len() as u64;
        let offsets = t.offsets.unwrap_or([at, at + len]);
        at += len;
        header.insert(t.name.clone(), json!({"dtype": t.dtype, "shape": t.shape, "data_offsets": offsets}));
    }
    header.insert("__metadata__".into(), json!({"format": "pt"}));
    let mut text = serde_json::to_vec(&Value::Object(header)).unwrap();
    while !(8 + text.len()).is_multiple_of(8) {
        text.push(b' ');
    }
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&text);
    for t in tensors {
        out.extend_from_slice(&t.data);
    }
    out
}

/// One to three faults on a valid folder.
fn fault(rng: &mut Rng, f: &mut Folder) {
    for _ in 0..1 + rng.below(3) {
        match rng.below(10) {
            // A config size set wild, and the tensors it shapes made to agree, so that the loader's
            // arithmetic (not just its shape check) meets the number.
            0 | 1 => {
                let (key, tensor, dim) = *rng.pick(&[
                    ("vocab_size", "word_embeddings", 0),
                    ("max_position_embeddings", "position_embeddings", 0),
                    ("intermediate_size", "intermediate.dense.weight", 0),
                    ("hidden_size", "word_embeddings", 1),
                ]);
                let v = rng.wild();
                f.config.insert(key.into(), json!(v));
                for t in f.tensors.iter_mut().filter(|t| t.name.contains(tensor)) {
                    if let Some(d) = t.shape.get_mut(dim) {
                        *d = v;
                    }
                    if rng.chance(50) {
                        t.offsets = Some([0, rng.wild()]);
                    }
                }
            }
            2 => {
                let key = *rng.pick(&[
                    "hidden_size",
                    "num_hidden_layers",
                    "num_attention_heads",
                    "intermediate_size",
                    "max_position_embeddings",
                    "vocab_size",
                    "layer_norm_eps",
                    "model_type",
                    "hidden_act",
                    "position_embedding_type",
                ]);
                let v = match rng.below(8) {
                    0 => Value::Null,
                    1 => json!(-1),
                    2 => json!(1.5),
                    3 => json!("bert"),
                    4 => json!(1e300),
                    5 => json!(rng.below(4)),
                    _ => json!(rng.wild()),
                };
                if rng.chance(15) {
                    f.config.remove(key);
                } else {
                    f.config.insert(key.into(), v);
                }
            }
            3 | 4 => {
                let i = rng.below(f.tensors.len() as u64) as usize;
                let t = &mut f.tensors[i];
                match rng.below(4) {
                    0 => t.offsets = Some([rng.wild(), rng.wild()]),
                    1 => {
                        let d = rng.below(t.shape.len() as u64) as usize;
                        t.shape[d] = rng.wild();
                    }
                    2 => t.dtype = rng.pick(&["F64", "I64", "", "F16", "BF16", "F32", "U8"]).to_string(),
                    _ => t.data.truncate(rng.below(t.data.len() as u64 + 1) as usize),
                }
            }
            5 => {
                let i = rng.below(f.tensors.len() as u64) as usize;
                f.tensors.remove(i);
            }
            6 => {
                f.bytes_fault = Some(match rng.below(3) {
                    0 => BytesFault::Truncate(rng.below(4096)),
                    1 => BytesFault::Scribble(
                        (0..1 + rng.below(8)).map(|_| (rng.below(8192), rng.next() as u8)).collect(),
                    ),
                    _ => BytesFault::HeaderLength(rng.wild()),
                })
            }
            7 | 8 => tokenizer_fault(rng, &mut f.tokenizer),
            _ => {
                f.sentence_bert = Some(match rng.below(3) {
                    0 => json!({"max_seq_length": rng.wild()}),
                    1 => json!({"max_seq_length": -3}),
                    _ => json!("not an object"),
                })
            }
        }
    }
}

fn tokenizer_fault(rng: &mut Rng, t: &mut Value) {
    match rng.below(7) {
        0 => {
            let id = rng.below(u64::from(u32::MAX) + 1);
            t["model"]["vocab"][*rng.pick(&["[CLS]", "[SEP]", "[UNK]", "hello", "##aff"])] = json!(id);
        }
        1 => {
            if let Some(v) = t["model"]["vocab"].as_object_mut() {
                v.remove(*rng.pick(&["[CLS]", "[SEP]", "[UNK]"]));
            }
        }
        2 => {
            let content = rng.pick(&["", "[", "[CLS][CLS]", "hello", "a", "##", "\u{0}", "中"]).to_string();
            let id = if rng.chance(50) { rng.below(20) } else { rng.below(u64::from(u32::MAX) + 1) };
            if let Some(a) = t["added_tokens"].as_array_mut() {
                a.push(json!({"id": id, "content": content, "special": rng.chance(80)}));
            }
        }
        3 => t["model"]["max_input_chars_per_word"] = json!(*rng.pick(&[0, 1, 2, u64::MAX])),
        4 => t["model"]["continuing_subword_prefix"] = json!(*rng.pick(&["", "#", "hello", "中"])),
        5 => {
            let flag = *rng.pick(&["lowercase", "strip_accents", "clean_text", "handle_chinese_chars"]);
            t["normalizer"][flag] = json!(rng.chance(50));
        }
        _ => t["model"]["unk_token"] = json!(*rng.pick(&["[MASK]", "nope", ""])),
    }
}

fn write(dir: &Path, f: &Folder) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("config.json"), Value::Object(f.config.clone()).to_string()).unwrap();
    std::fs::write(dir.join("tokenizer.json"), f.tokenizer.to_string()).unwrap();
    let mut bytes = safetensors(&f.tensors);
    match &f.bytes_fault {
        Some(BytesFault::Truncate(n)) => bytes.truncate(bytes.len().saturating_sub(*n as usize)),
        Some(BytesFault::Scribble(at)) => {
            let len = bytes.len() as u64;
            for (i, b) in at {
                bytes[(i % len) as usize] = *b;
            }
        }
        Some(BytesFault::HeaderLength(n)) => bytes[..8].copy_from_slice(&n.to_le_bytes()),
        None => {}
    }
    std::fs::write(dir.join("model.safetensors"), bytes).unwrap();
    if let Some(v) = &f.sentence_bert {
        std::fs::write(dir.join("sentence_bert_config.json"), v.to_string()).unwrap();
    }
}

const TEXTS: [&str; 5] = [
    "",
    "hello world, the cat",
    "[CLS][SEP][MASK] unaffable [CLS]",
    "中中 a\u{0}b\u{200b}c é ..",
    "the cat the cat the cat the cat the cat the cat the cat the cat the cat the cat the cat",
];

/// Loads and embeds one generated folder: an error is fine, a panic or a wrong-sized embedding is not.
fn run_case(dir: &Path, seed: u64) -> Result<bool, String> {
    let mut rng = Rng(seed);
    let h = rng.below(3) * 2 + 2;
    let heads = if rng.chance(50) { 2 } else { 1 };
    let (layers, inter, positions) = (1 + rng.below(2), 1 + rng.below(5), 3 + rng.below(8));
    let mut f = valid(&mut rng, h, heads, layers, inter, positions);
    if !seed.is_multiple_of(16) {
        fault(&mut rng, &mut f);
    }
    write(dir, &f);
    let window = rng.below(3) as usize * 4;
    let caught = std::panic::catch_unwind(|| {
        let Ok(model) = Model::load(dir, window) else { return Ok(false) };
        for text in TEXTS {
            let e = model.embed(text);
            if e.len() != model.dims() {
                return Err(format!("{text:?} embedded to {} values, not {}", e.len(), model.dims()));
            }
        }
        Ok(true)
    });
    caught.unwrap_or_else(|p| {
        let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
        Err(format!("panicked: {}", msg.unwrap_or_default()))
    })
}

#[test]
fn generated_model_folders_load_or_are_refused_without_a_panic() {
    // In memory where there is a tmpfs: thousands of small files cost seconds on a busy disk.
    let shm = std::path::Path::new("/dev/shm");
    let root = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
    let dir = root.join(format!("system1-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut loaded, mut failures) = (0, Vec::new());
    const CASES: u64 = 3000;
    for seed in 0..CASES {
        // A folder per case: rewriting a file in place makes ext4 flush it at close.
        match run_case(&dir.join(seed.to_string()), seed) {
            Ok(true) => loaded += 1,
            Ok(false) => {}
            Err(e) => failures.push(format!("case {seed}: {e}")),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(failures.is_empty(), "{} of {CASES} cases failed:\n{}", failures.len(), failures.join("\n"));
    // The faults must leave some folders loadable, or the embedding half is never exercised.
    assert!(loaded > CASES / 16, "only {loaded} of {CASES} folders loaded");
}
