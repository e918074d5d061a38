//! What a GGUF file says about itself, read from its header: its architecture, and whether it is a
//! decision model, which llama.cpp's server answers `/v1/systemone` for only when the file names a
//! decision type (`<architecture>.decision.type`) and carries the prompt template the server
//! renders a question with (`tokenizer.chat_template.systemone`). `engine install decider` reads it
//! before it installs a model, so that a plain language model is refused by name instead of
//! answering every decision with HTTP 501 later.
//!
//! The header is little-endian: the magic `GGUF`, a version (2 or 3), the tensor count, the count
//! of key-value pairs, then each pair as a string key, a value type and the value. Only the pairs
//! are read; every length is held to a bound, so a damaged or hostile file is an error, not a
//! huge allocation.

use std::io::{BufReader, Read};
use std::path::Path;

/// What the header of a GGUF says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub version: u32,
    /// `general.architecture` (`modern-bert`, `llama`, ...).
    pub architecture: Option<String>,
    /// `<architecture>.decision.type` (`laya`, `kev`, `openjev`, ...): set only in decision models.
    pub decision_type: Option<String>,
    /// Whether it carries the `systemone` prompt template.
    pub systemone_template: bool,
}

/// Why llama.cpp's server would not answer decisions with a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotDecision {
    /// No `<architecture>.decision.type`: a plain model of this architecture.
    Plain { architecture: String },
    /// A decision type, but no `systemone` prompt template.
    NoTemplate { decision_type: String },
}

impl std::fmt::Display for NotDecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotDecision::Plain { architecture: arch } => write!(
                f,
                "it is a plain {arch} model: its metadata names no decision type ({arch}.decision.type), so \
                 llama.cpp's server would answer every decision with HTTP 501 \"This model is not a decision model\""
            ),
            NotDecision::NoTemplate { decision_type: t } => write!(
                f,
                "it names the decision type {t:?} but has no \"systemone\" prompt template \
                 (tokenizer.chat_template.systemone), which llama.cpp's server renders each question with"
            ),
        }
    }
}

/// Why a header could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// Not `GGUF` at the start, or not even four bytes.
    NoMagic,
    Version(u32),
    TooManyPairs(u64),
    ArrayTooLong(u64),
    StringTooLong(u64),
    UnknownType(u32),
    /// The file ends before its header does.
    Truncated,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Damage::NoMagic => write!(f, "it does not start with the GGUF magic"),
            Damage::Version(v) => write!(f, "GGUF version {v} (known: 2 and 3)"),
            Damage::TooManyPairs(n) => write!(f, "{n} metadata pairs, more than {MAX_PAIRS}"),
            Damage::ArrayTooLong(n) => write!(f, "an array of {n} entries, more than {MAX_ARRAY}"),
            Damage::StringTooLong(n) => write!(f, "a string of {n} bytes, more than {MAX_STRING}"),
            Damage::UnknownType(k) => write!(f, "unknown value type {k}"),
            Damage::Truncated => write!(f, "it ends inside its header"),
        }
    }
}

impl Header {
    /// Why llama.cpp's server would not answer decisions with this model, or `None` when it would.
    pub fn not_a_decision_model(&self) -> Option<NotDecision> {
        let architecture = self.architecture.clone().unwrap_or_else(|| "unknown".into());
        match (&self.decision_type, self.systemone_template) {
            (None, _) => Some(NotDecision::Plain { architecture }),
            (Some(t), false) => Some(NotDecision::NoTemplate { decision_type: t.clone() }),
            (Some(_), true) => None,
        }
    }
}

/// The most a key or a string value may take: a prompt template is a few KB, a token a few bytes.
const MAX_STRING: u64 = 1 << 20;
/// The most entries an array may have (a tokenizer's vocabulary: 262,144 tokens in the largest).
const MAX_ARRAY: u64 = 1 << 24;
/// The most key-value pairs a header may have.
const MAX_PAIRS: u64 = 1 << 16;

/// Reads the header of the GGUF at `path`.
pub fn read(path: &Path) -> Result<Header, String> {
    let (file, _) = crate::fsutil::open_read(path, u64::MAX, crate::fsutil::Links::Follow)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&mut BufReader::new(file)).map_err(|e| format!("{} is not a GGUF file we can read: {e}", path.display()))
}

/// Reads a header from `r`.
pub fn parse(r: &mut impl Read) -> Result<Header, Damage> {
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic).map_err(|_| Damage::NoMagic)?;
    if &magic != b"GGUF" {
        return Err(Damage::NoMagic);
    }
    let version = u32_of(r)?;
    if !(2..=3).contains(&version) {
        return Err(Damage::Version(version));
    }
    let _tensors = u64_of(r)?;
    let pairs = u64_of(r)?;
    if pairs > MAX_PAIRS {
        return Err(Damage::TooManyPairs(pairs));
    }
    let mut header = Header { version, architecture: None, decision_type: None, systemone_template: false };
    // The decision type's key depends on the architecture, which may come after it.
    let mut decision_types: Vec<(String, String)> = Vec::new();
    for _ in 0..pairs {
        let key = string(r)?;
        let kind = u32_of(r)?;
        let wanted = key == "general.architecture" || key.ends_with(".decision.type");
        match value(r, kind, wanted)? {
            Some(text) if key == "general.architecture" => header.architecture = Some(text),
            Some(text) => decision_types.push((key.clone(), text)),
            None => {}
        }
        if key == "tokenizer.chat_template.systemone" {
            header.systemone_template = true;
        }
    }
    if let Some(arch) = &header.architecture {
        let key = format!("{arch}.decision.type");
        header.decision_type = decision_types.into_iter().find(|(k, _)| *k == key).map(|(_, t)| t);
    }
    Ok(header)
}

/// Reads one value of type `kind`; returns it when it is a string and `keep` is set.
fn value(r: &mut impl Read, kind: u32, keep: bool) -> Result<Option<String>, Damage> {
    match kind {
        8 => {
            let s = string(r)?;
            Ok(keep.then_some(s))
        }
        9 => {
            let inner = u32_of(r)?;
            let n = u64_of(r)?;
            if n > MAX_ARRAY {
                return Err(Damage::ArrayTooLong(n));
            }
            for _ in 0..n {
                value(r, inner, false)?;
            }
            Ok(None)
        }
        _ => {
            let width = scalar_width(kind).ok_or(Damage::UnknownType(kind))?;
            skip(r, width)?;
            Ok(None)
        }
    }
}

/// The byte width of a scalar GGUF value type.
fn scalar_width(kind: u32) -> Option<u64> {
    match kind {
        0 | 1 | 7 => Some(1), // u8, i8, bool
        2 | 3 => Some(2),     // u16, i16
        4..=6 => Some(4),     // u32, i32, f32
        10..=12 => Some(8),   // u64, i64, f64
        _ => None,
    }
}

fn string(r: &mut impl Read) -> Result<String, Damage> {
    let len = u64_of(r)?;
    if len > MAX_STRING {
        return Err(Damage::StringTooLong(len));
    }
    let mut buf = Vec::new();
    r.take(len).read_to_end(&mut buf).map_err(|_| Damage::Truncated)?;
    if buf.len() as u64 != len {
        return Err(Damage::Truncated);
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn skip(r: &mut impl Read, n: u64) -> Result<(), Damage> {
    let got = std::io::copy(&mut r.take(n), &mut std::io::sink()).map_err(|_| Damage::Truncated)?;
    if got == n { Ok(()) } else { Err(Damage::Truncated) }
}

fn u32_of(r: &mut impl Read) -> Result<u32, Damage> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b).map_err(|_| Damage::Truncated)?;
    Ok(u32::from_le_bytes(b))
}

fn u64_of(r: &mut impl Read) -> Result<u64, Damage> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b).map_err(|_| Damage::Truncated)?;
    Ok(u64::from_le_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header with `pairs`, each a key and an encoded value (type and bytes).
    fn header(pairs: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend(0u64.to_le_bytes());
        out.extend((pairs.len() as u64).to_le_bytes());
        for (key, value) in pairs {
            out.extend((key.len() as u64).to_le_bytes());
            out.extend(key.as_bytes());
            out.extend(value);
        }
        out
    }

    fn string_value(s: &str) -> Vec<u8> {
        let mut v = 8u32.to_le_bytes().to_vec();
        v.extend((s.len() as u64).to_le_bytes());
        v.extend(s.as_bytes());
        v
    }

    fn tokens(list: &[&str]) -> Vec<u8> {
        let mut v = 9u32.to_le_bytes().to_vec();
        v.extend(8u32.to_le_bytes());
        v.extend((list.len() as u64).to_le_bytes());
        for t in list {
            v.extend((t.len() as u64).to_le_bytes());
            v.extend(t.as_bytes());
        }
        v
    }

    fn u32_value(n: u32) -> Vec<u8> {
        let mut v = 4u32.to_le_bytes().to_vec();
        v.extend(n.to_le_bytes());
        v
    }

    #[test]
    fn a_decision_model_names_its_type_after_any_other_metadata() {
        let bytes = header(&[
            ("modern-bert.decision.type", string_value("laya")),
            ("tokenizer.ggml.tokens", tokens(&["[CLS]", "[SEP]", "a"])),
            ("modern-bert.block_count", u32_value(2)),
            ("general.architecture", string_value("modern-bert")),
            ("tokenizer.chat_template.systemone", string_value("[CLS]{{ instructions }}[SEP]")),
        ]);
        let h = parse(&mut bytes.as_slice()).unwrap();
        assert_eq!((h.architecture.as_deref(), h.decision_type.as_deref()), (Some("modern-bert"), Some("laya")));
        assert!(h.systemone_template);
        assert_eq!(h.not_a_decision_model(), None);
    }

    #[test]
    fn a_plain_model_and_one_without_its_template_are_named_for_what_they_lack() {
        let plain = header(&[("general.architecture", string_value("llama")), ("llama.block_count", u32_value(2))]);
        let why = parse(&mut plain.as_slice()).unwrap().not_a_decision_model();
        assert_eq!(why, Some(NotDecision::Plain { architecture: "llama".into() }));
        // Another architecture's decision key does not make this one a decision model.
        let other = header(&[
            ("general.architecture", string_value("llama")),
            ("bert.decision.type", string_value("laya")),
            ("tokenizer.chat_template.systemone", string_value("x")),
        ]);
        assert!(parse(&mut other.as_slice()).unwrap().decision_type.is_none());
        let untemplated =
            header(&[("general.architecture", string_value("bert")), ("bert.decision.type", string_value("laya"))]);
        let why = parse(&mut untemplated.as_slice()).unwrap().not_a_decision_model();
        assert_eq!(why, Some(NotDecision::NoTemplate { decision_type: "laya".into() }));
    }

    #[test]
    fn damaged_headers_are_errors_not_allocations() {
        assert_eq!(parse(&mut b"PK\x03\x04rest".as_slice()), Err(Damage::NoMagic));
        assert_eq!(parse(&mut b"GG".as_slice()), Err(Damage::NoMagic));
        let mut truncated = header(&[("general.architecture", string_value("llama"))]);
        truncated.truncate(truncated.len() - 3);
        assert_eq!(parse(&mut truncated.as_slice()), Err(Damage::Truncated));
        // A string that claims a terabyte is refused before anything is read into memory.
        let mut huge = b"GGUF".to_vec();
        huge.extend(3u32.to_le_bytes());
        huge.extend(0u64.to_le_bytes());
        huge.extend(1u64.to_le_bytes());
        huge.extend((1u64 << 40).to_le_bytes());
        assert_eq!(parse(&mut huge.as_slice()), Err(Damage::StringTooLong(1 << 40)));
        let mut v1 = b"GGUF".to_vec();
        v1.extend(1u32.to_le_bytes());
        assert_eq!(parse(&mut v1.as_slice()), Err(Damage::Version(1)));
        let odd = header(&[("x", 99u32.to_le_bytes().to_vec())]);
        assert_eq!(parse(&mut odd.as_slice()), Err(Damage::UnknownType(99)));
    }
}
