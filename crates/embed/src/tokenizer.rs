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

/// The fewest bytes [`Tokenizer::encode`] tokenizes at a time; small in the unit tests, so that
/// their short texts are read in many pieces from both ends.
const MIN_PIECE: usize = if cfg!(test) { 8 } else { 1024 };

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
    ///
    /// Only what the window can use is tokenized: the text is read in pieces from the front until
    /// more ids than the window holds are known to be there, then from the back for the last
    /// quarter; the middle of a long text is never looked at. A piece ends at a cut that changes
    /// nothing ([`Tokenizer::is_cut`]), so the ids are those of tokenizing the whole text and
    /// dropping its middle, at a cost bounded by the window rather than by the text.
    pub fn encode(&self, text: &str, max_len: usize) -> Vec<u32> {
        let room = max_len.max(3) - 2;
        let tail = room / 4;
        let head = room - tail;
        // A piece holds a few times the bytes its share of the window needs in plain prose (about
        // four bytes a token), so that one or two pieces usually do.
        let piece = room.saturating_mul(8).max(MIN_PIECE);
        let mut front = Vec::new();
        let mut at = 0;
        while at < text.len() && front.len() <= room {
            let end = self.cut_after(text, at.saturating_add(piece));
            self.encode_span(&text[at..end], &mut front);
            at = end;
        }
        let mut ids = if at >= text.len() {
            // The whole text is tokenized.
            if front.len() > room {
                front.drain(head..front.len() - tail);
            }
            front
        } else {
            // More than the window holds: its head from the front, its tail from the back.
            let mut back: Vec<Vec<u32>> = Vec::new();
            let (mut from, mut got) = (text.len(), 0);
            while from > at && got < tail {
                let start = self.cut_before(text, from.saturating_sub(piece), at);
                let mut ids = Vec::new();
                self.encode_span(&text[start..from], &mut ids);
                got += ids.len();
                back.push(ids);
                from = start;
            }
            if from <= at {
                // The back met the front: every id is known, and the front has more than `room`.
                back.push(front.split_off(head));
            }
            let rest: Vec<u32> = back.into_iter().rev().flatten().collect();
            front.truncate(head);
            front.extend_from_slice(&rest[rest.len() - tail.min(rest.len())..]);
            front
        };
        let mut framed = Vec::with_capacity(ids.len() + 2);
        framed.push(self.cls);
        framed.append(&mut ids);
        framed.push(self.sep);
        framed
    }

    /// Whether tokenizing `text[..at]` and `text[at..]` apart gives the ids of tokenizing `text`:
    /// `at` is the end, or falls before a space, tab, newline, CR, ASCII punctuation mark or CJK ideograph (each
    /// ends a word and stays its own character through every normalizing step, none of which looks
    /// across it), where no occurrence of a special token
    /// straddles (the special-token scan takes the earliest match, so one that does not cross the
    /// cut is found the same on either side of it).
    fn is_cut(&self, text: &str, at: usize) -> bool {
        let bytes = text.as_bytes();
        let Some(&b) = bytes.get(at) else { return at == bytes.len() };
        let ends_a_word = if b.is_ascii() {
            // Not every ASCII space: clean_text drops a vertical tab or a form feed as a control
            // character, joining the words on either side.
            matches!(b, b' ' | b'\t' | b'\n' | b'\r') || b.is_ascii_punctuation()
        } else {
            // A CJK ideograph is a word of its own too (normalizing spaces it out).
            self.chinese_chars && text.is_char_boundary(at) && text[at..].chars().next().is_some_and(is_chinese_char)
        };
        if !ends_a_word {
            return false;
        }
        !self.specials.iter().any(|(content, _)| {
            let len = content.len();
            let (lo, hi) = (at.saturating_sub(len - 1), at.saturating_add(len - 1).min(bytes.len()));
            memchr::memmem::find_iter(&bytes[lo..hi], content.as_bytes()).any(|i| lo + i < at && lo + i + len > at)
        })
    }

    /// The first cut at or after `from` (the end when there is none).
    fn cut_after(&self, text: &str, from: usize) -> usize {
        (from..text.len()).find(|&at| self.is_cut(text, at)).unwrap_or(text.len())
    }

    /// The last cut at or before `to` and after `floor` (itself a cut); `floor` when there is none.
    fn cut_before(&self, text: &str, to: usize, floor: usize) -> usize {
        (floor + 1..=to.max(floor)).rev().find(|&at| self.is_cut(text, at)).unwrap_or(floor)
    }

    /// Appends the ids of `text` (no framing): special tokens matched verbatim, the plain text
    /// between them word-pieced. Each special token's next occurrence is remembered and searched
    /// for again only once the scan has passed it, so each is looked for across the text once:
    /// linear in the text, where searching the rest of the text for every special token at every
    /// match was quadratic (a text of 100,000 `[CLS]` took 42 s).
    fn encode_span(&self, text: &str, ids: &mut Vec<u32>) {
        let find = |content: &str, from: usize| text[from..].find(content).map(|k| from + k);
        let mut next: Vec<Option<usize>> = self.specials.iter().map(|(content, _)| find(content, 0)).collect();
        let mut pos = 0;
        loop {
            let mut best: Option<(usize, usize, u32)> = None;
            for ((content, id), next) in self.specials.iter().zip(next.iter_mut()) {
                if next.is_some_and(|at| at < pos) {
                    *next = find(content, pos);
                }
                // Longest first at the same place: the specials are sorted longest first.
                if let Some(at) = *next
                    && best.is_none_or(|(b, _, _)| at < b)
                {
                    best = Some((at, content.len(), *id));
                }
            }
            match best {
                Some((at, len, id)) => {
                    self.encode_plain(&text[pos..at], ids);
                    ids.push(id);
                    pos = at + len;
                }
                None => {
                    self.encode_plain(&text[pos..], ids);
                    return;
                }
            }
        }
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

    /// The tokenizer as it was: every special token searched for in the rest of the text at every
    /// match, and the whole text tokenized before its middle is dropped.
    fn reference(t: &Tokenizer, text: &str, max_len: usize) -> Vec<u32> {
        let mut ids = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let next = t
                .specials
                .iter()
                .filter_map(|(content, id)| rest.find(content.as_str()).map(|at| (at, content.len(), *id)))
                .min_by_key(|(at, len, _)| (*at, std::cmp::Reverse(*len)));
            match next {
                Some((at, len, id)) => {
                    t.encode_plain(&rest[..at], &mut ids);
                    ids.push(id);
                    rest = &rest[at + len..];
                }
                None => {
                    t.encode_plain(rest, &mut ids);
                    break;
                }
            }
        }
        let room = max_len.max(3) - 2;
        if ids.len() > room {
            let tail = room / 4;
            ids.drain(room - tail..ids.len() - tail);
        }
        [vec![t.cls], ids, vec![t.sep]].concat()
    }

    #[test]
    fn reading_only_the_window_gives_the_ids_of_reading_everything() {
        let vocab = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "hello", ",", "cafe", "中", "[",
            "]", "x",
        ];
        let vocab: serde_json::Map<String, Value> =
            vocab.iter().enumerate().map(|(i, t)| (t.to_string(), Value::from(i))).collect();
        let json = serde_json::json!({
            "added_tokens": [{"id": 2, "content": "[CLS]", "special": true}, {"id": 3, "content": "[SEP]", "special": true},
                             {"id": 4, "content": "[MASK]", "special": true}, {"id": 20, "content": "<a b>", "special": true},
                             {"id": 21, "content": "[MASK]]", "special": true}],
            "normalizer": {"type": "BertNormalizer", "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "max_input_chars_per_word": 12, "vocab": vocab},
        });
        let t = Tokenizer::from_json(&json.to_string()).unwrap();
        let parts = [
            "[CLS]",
            "[SEP]",
            "[MASK]",
            "[MASK]]",
            "<a b>",
            "<a",
            " b>",
            "un",
            "affable",
            "hello",
            ",",
            " ",
            "  ",
            "\t",
            "\n",
            "中",
            "café",
            "É",
            "\u{301}",
            "[",
            "]",
            "x",
            "xyz",
            "\u{0}",
            "\u{b}",
            "\u{c}",
            "é.",
            "hellohellohello",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for case in 0..2000 {
            let n = (next() % 400) as usize;
            let text: String = (0..n).map(|_| parts[(next() % parts.len() as u64) as usize]).collect();
            let max_len = 3 + (next() % 60) as usize;
            assert_eq!(t.encode(&text, max_len), reference(&t, &text, max_len), "case {case}: {text:?} at {max_len}");
        }
        // The long texts that were quadratic give the same ids.
        for text in ["[CLS]".repeat(2000), format!("{}{}", "hello ".repeat(1000), "[MASK]".repeat(1000))] {
            assert_eq!(t.encode(&text, 256), reference(&t, &text, 256));
        }
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
