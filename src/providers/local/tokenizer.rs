//! BERT's WordPiece tokenizer, read from a Hugging Face `tokenizer.json`.
//!
//! Only the BERT pipeline is accepted (BertNormalizer, BertPreTokenizer, WordPiece, `[CLS] … [SEP]`);
//! a file that asks for anything else is refused with the step it names, since tokenizing it
//! another way would give embeddings that silently mean nothing. Within that pipeline the steps
//! follow the `tokenizers` library's, character class by character class (the same Unicode
//! category tables), so that ids match the reference tokenizer exactly.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;
use unicode_categories::UnicodeCategories;
use unicode_normalization::UnicodeNormalization;

#[derive(Debug)]
pub struct Tokenizer {
    vocab: HashMap<String, u32>,
    unk: u32,
    cls: u32,
    sep: u32,
    prefix: String,
    max_word_chars: usize,
    clean_text: bool,
    chinese_chars: bool,
    strip_accents: bool,
    lowercase: bool,
    /// Added tokens matched verbatim in the raw text (`[CLS]`, `[MASK]`, …), longest first.
    specials: Vec<(String, u32)>,
}

#[derive(Deserialize)]
struct File {
    model: Model,
    normalizer: Option<Value>,
    pre_tokenizer: Option<Value>,
    post_processor: Option<Value>,
    #[serde(default)]
    added_tokens: Vec<Added>,
}

#[derive(Deserialize)]
struct Model {
    #[serde(rename = "type")]
    kind: Option<String>,
    vocab: HashMap<String, u32>,
    unk_token: Option<String>,
    continuing_subword_prefix: Option<String>,
    max_input_chars_per_word: Option<usize>,
}

#[derive(Deserialize)]
struct Added {
    id: u32,
    content: String,
    #[serde(default)]
    special: bool,
}

impl Tokenizer {
    /// Reads a `tokenizer.json`'s text. The error says which part is not BERT's.
    pub fn from_json(text: &str) -> Result<Tokenizer, String> {
        let file: File = serde_json::from_str(text).map_err(|e| format!("not a tokenizer.json: {e}"))?;
        let model = file.model;
        if let Some(kind) = model.kind.as_deref().filter(|k| *k != "WordPiece") {
            return Err(format!("its model is {kind}, not WordPiece (BERT's)"));
        }
        let kind =
            |v: &Option<Value>| v.as_ref().and_then(|v| v.get("type")).and_then(Value::as_str).map(str::to_string);
        let normalizer = file.normalizer.as_ref();
        match kind(&file.normalizer).as_deref() {
            Some("BertNormalizer") => {}
            other => return Err(format!("its normalizer is {}, not BertNormalizer", other.unwrap_or("missing"))),
        }
        match kind(&file.pre_tokenizer).as_deref() {
            Some("BertPreTokenizer") => {}
            other => return Err(format!("its pre-tokenizer is {}, not BertPreTokenizer", other.unwrap_or("missing"))),
        }
        match kind(&file.post_processor).as_deref() {
            Some("TemplateProcessing" | "BertProcessing") | None => {}
            Some(other) => return Err(format!("its post-processor is {other}, not BERT's [CLS] … [SEP]")),
        }
        let flag = |name: &str, default: bool| {
            normalizer.and_then(|n| n.get(name)).and_then(Value::as_bool).unwrap_or(default)
        };
        let lowercase = flag("lowercase", true);
        // `strip_accents: null` means: strip them when lowercasing, as BERT's uncased models do.
        let strip_accents = flag("strip_accents", lowercase);
        let id =
            |token: &str| model.vocab.get(token).copied().ok_or_else(|| format!("its vocabulary has no {token} token"));
        let unk = id(model.unk_token.as_deref().unwrap_or("[UNK]"))?;
        let cls = id("[CLS]")?;
        let sep = id("[SEP]")?;
        let mut specials: Vec<(String, u32)> = file
            .added_tokens
            .into_iter()
            .filter(|a| a.special && !a.content.is_empty())
            .map(|a| (a.content, a.id))
            .collect();
        specials.sort_by_key(|(content, _)| std::cmp::Reverse(content.len()));
        Ok(Tokenizer {
            unk,
            cls,
            sep,
            prefix: model.continuing_subword_prefix.unwrap_or_else(|| "##".to_string()),
            max_word_chars: model.max_input_chars_per_word.unwrap_or(100),
            clean_text: flag("clean_text", true),
            chinese_chars: flag("handle_chinese_chars", true),
            strip_accents,
            lowercase,
            specials,
            vocab: model.vocab,
        })
    }

    pub fn vocab_size(&self) -> usize {
        self.vocab.values().map(|&id| id as usize + 1).max().unwrap_or(0)
    }

    /// The ids of `text` framed as `[CLS] … [SEP]`, at most `max_len` of them: a longer text keeps
    /// its first three quarters and its last quarter of the window, as the routing features do.
    pub fn encode(&self, text: &str, max_len: usize) -> Vec<u32> {
        let mut ids = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let next = self
                .specials
                .iter()
                .filter_map(|(content, id)| rest.find(content.as_str()).map(|at| (at, content.len(), *id)))
                .min_by_key(|(at, len, _)| (*at, std::cmp::Reverse(*len)));
            match next {
                Some((at, len, id)) => {
                    self.encode_plain(&rest[..at], &mut ids);
                    ids.push(id);
                    rest = &rest[at + len..];
                }
                None => {
                    self.encode_plain(rest, &mut ids);
                    break;
                }
            }
        }
        let room = max_len.max(3) - 2;
        if ids.len() > room {
            let tail = room / 4;
            let head = room - tail;
            ids.drain(head..ids.len() - tail);
        }
        let mut framed = Vec::with_capacity(ids.len() + 2);
        framed.push(self.cls);
        framed.extend(ids);
        framed.push(self.sep);
        framed
    }

    fn encode_plain(&self, text: &str, ids: &mut Vec<u32>) {
        let normalized = self.normalize(text);
        for word in split_words(&normalized) {
            self.word_piece(word, ids);
        }
    }

    fn normalize(&self, text: &str) -> String {
        let mut s: String = if self.clean_text {
            text.chars()
                .filter(|&c| !(c == '\0' || c == '\u{fffd}' || is_control(c)))
                .map(|c| if is_whitespace(c) { ' ' } else { c })
                .collect()
        } else {
            text.to_string()
        };
        if self.chinese_chars && s.chars().any(is_chinese_char) {
            let mut spaced = String::with_capacity(s.len() + 16);
            for c in s.chars() {
                if is_chinese_char(c) {
                    spaced.push(' ');
                    spaced.push(c);
                    spaced.push(' ');
                } else {
                    spaced.push(c);
                }
            }
            s = spaced;
        }
        if self.strip_accents && !s.is_ascii() {
            s = s.nfd().filter(|c| !c.is_mark_nonspacing()).collect();
        }
        if self.lowercase {
            s = s.chars().flat_map(char::to_lowercase).collect();
        }
        s
    }

    /// Greedy longest-match-first over the vocabulary; a word with no split is one unknown token.
    fn word_piece(&self, word: &str, ids: &mut Vec<u32>) {
        if word.chars().count() > self.max_word_chars {
            ids.push(self.unk);
            return;
        }
        let mark = ids.len();
        let mut start = 0;
        let mut piece = String::new();
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while start < end {
                piece.clear();
                if start > 0 {
                    piece.push_str(&self.prefix);
                }
                piece.push_str(&word[start..end]);
                if let Some(&id) = self.vocab.get(piece.as_str()) {
                    found = Some(id);
                    break;
                }
                end -= word[..end].chars().next_back().map_or(1, char::len_utf8);
            }
            match found {
                Some(id) => {
                    ids.push(id);
                    start = end;
                }
                None => {
                    ids.truncate(mark);
                    ids.push(self.unk);
                    return;
                }
            }
        }
    }
}

/// Splits on whitespace (dropped) and punctuation (kept, one character a word).
fn split_words(text: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() || is_punctuation(c) {
            if let Some(s) = start.take() {
                words.push(&text[s..i]);
            }
            if !c.is_whitespace() {
                words.push(&text[i..i + c.len_utf8()]);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        words.push(&text[s..]);
    }
    words
}

fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Control, format, private-use and unassigned characters (tab, newline and CR count as whitespace).
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

/// The CJK ideograph blocks BERT tokenizes one character at a time.
fn is_chinese_char(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Tokenizer {
        let vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "hello", ",", "cafe", "中"];
        let vocab: serde_json::Map<String, Value> =
            vocab.iter().enumerate().map(|(i, t)| (t.to_string(), Value::from(i))).collect();
        let json = serde_json::json!({
            "added_tokens": [{"id": 4, "content": "[MASK]", "special": true}],
            "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": {"type": "TemplateProcessing"},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 10, "vocab": vocab},
        });
        Tokenizer::from_json(&json.to_string()).expect("tokenizer")
    }

    #[test]
    fn word_pieces_punctuation_accents_and_specials() {
        let t = tiny();
        assert_eq!(t.encode("Unaffable", 64), [2, 5, 6, 7, 3]);
        assert_eq!(t.encode("hello,\tCAFÉ", 64), [2, 8, 9, 10, 3], "punctuation split, accents and case folded");
        assert_eq!(t.encode("hello [MASK]中x", 64), [2, 8, 4, 11, 1, 3], "specials verbatim, CJK split, unknown word");
        assert_eq!(t.encode("unaffablexyz", 64), [2, 1, 3], "a word with no full split is one [UNK]");
        assert_eq!(t.encode("hellohellohello", 64), [2, 1, 3], "over max_input_chars_per_word");
    }

    #[test]
    fn long_input_keeps_head_and_tail() {
        let t = tiny();
        let text = format!("un {} cafe", "hello ".repeat(100));
        let ids = t.encode(&text, 10);
        assert_eq!(ids.len(), 10);
        assert_eq!(ids[..3], [2, 5, 8]);
        assert_eq!(ids[8..], [10, 3]);
    }

    #[test]
    fn other_pipelines_are_refused_by_name() {
        let mut json: Value = serde_json::from_str(
            &serde_json::json!({
                "normalizer": {"type": "NFC"},
                "pre_tokenizer": {"type": "BertPreTokenizer"},
                "model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2}},
            })
            .to_string(),
        )
        .unwrap();
        assert!(Tokenizer::from_json(&json.to_string()).unwrap_err().contains("normalizer is NFC"));
        json["normalizer"] = serde_json::json!({"type": "BertNormalizer"});
        json["model"]["type"] = "BPE".into();
        assert!(Tokenizer::from_json(&json.to_string()).unwrap_err().contains("model is BPE"));
        assert!(Tokenizer::from_json("{").unwrap_err().contains("not a tokenizer.json"));
    }
}
