//! One sentence-embedding model on disk: `config.json`, `tokenizer.json` and `model.safetensors`
//! (plus `sentence_bert_config.json` for the window, when present), loaded and checked together.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::bert::{Bert, Config};
use super::tokenizer::Tokenizer;

/// The files a model directory must hold.
pub const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The longest window the engine runs, whatever a model's files claim: the forward pass holds a
/// window × window score matrix per head, and `[providers.local] max_tokens` allows no more.
pub const MAX_WINDOW: usize = 8192;

/// The most each of a model folder's files may hold; a bigger one is refused unread. A
/// sentence-embedding model's `config.json` is under 1 KB and its `sentence_bert_config.json`
/// under 100 bytes; a `tokenizer.json` with a 250,000-word vocabulary is 17 MB; the weights of a
/// large BERT are 1.3 GB in F32.
const MAX_CONFIG_BYTES: u64 = 1 << 20;
const MAX_TOKENIZER_BYTES: u64 = 64 << 20;
const MAX_SENTENCE_CONFIG_BYTES: u64 = 64 << 10;
pub(crate) const MAX_WEIGHTS_BYTES: u64 = 4 << 30;

/// A model folder's file, when it is a regular file of at most `cap` bytes. Links are followed
/// wherever they lead: a Hugging Face cache snapshot is a folder of links into its blobs; a link
/// to a FIFO or a device is refused like the thing itself.
fn read_model_file(path: &Path, cap: u64) -> std::io::Result<String> {
    system1_fsread::read_text(path, cap, system1_fsread::Links::Follow)
}

/// The text of `dir`'s `config.json`.
fn read_config(dir: &Path) -> std::io::Result<String> {
    read_model_file(&dir.join("config.json"), MAX_CONFIG_BYTES)
}

/// The embedding size the model in `dir` declares (its `config.json`'s `hidden_size`), read
/// without loading the model; `None` when that file is missing, unreadable or not a BERT config.
pub fn declared_dims(dir: &Path) -> Option<usize> {
    Config::parse(&read_config(dir).ok()?).ok().map(|c| c.hidden_size)
}

/// Why a model directory cannot be used: the file at fault and what is wrong with it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    pub file: PathBuf,
    pub problem: String,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.problem)
    }
}

pub struct Model {
    pub(crate) tokenizer: Tokenizer,
    pub(crate) bert: Bert,
    /// The longest input in tokens, `[CLS]` and `[SEP]` included.
    pub(crate) max_tokens: usize,
}

impl Model {
    /// Loads the model in `dir`. `max_tokens` caps the window (0: the model's own, from
    /// `sentence_bert_config.json`, else its position table).
    pub fn load(dir: &Path, max_tokens: usize) -> Result<Model, LoadError> {
        let at = |name: &str| dir.join(name);
        let fail = |name: &str, problem: String| LoadError { file: at(name), problem };
        let read = |name: &str, cap: u64| {
            read_model_file(&at(name), cap).map_err(|e| fail(name, format!("cannot read it: {e}")))
        };
        let config = Config::parse(&read("config.json", MAX_CONFIG_BYTES)?).map_err(|e| fail("config.json", e))?;
        let tokenizer = Tokenizer::from_json(&read("tokenizer.json", MAX_TOKENIZER_BYTES)?)
            .map_err(|e| fail("tokenizer.json", e))?;
        if tokenizer.vocab_size() > config.vocab_size {
            return Err(fail(
                "tokenizer.json",
                format!(
                    "its vocabulary has {} tokens but config.json's model has {}: the tokenizer is not this model's",
                    tokenizer.vocab_size(),
                    config.vocab_size
                ),
            ));
        }
        // Optional: absent, unreadable or not what it should be, the window comes from config.json.
        let own = read_model_file(&at("sentence_bert_config.json"), MAX_SENTENCE_CONFIG_BYTES)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.get("max_seq_length").and_then(serde_json::Value::as_u64))
            .map(|n| n as usize);
        let positions = config.max_position_embeddings;
        let window = match max_tokens {
            0 => own.unwrap_or(positions),
            n => n,
        }
        .clamp(3, positions.min(MAX_WINDOW));
        let bert = Bert::load(&at("model.safetensors"), config).map_err(|e| fail("model.safetensors", e))?;
        Ok(Model { tokenizer, bert, max_tokens: window })
    }

    /// The longest input in tokens, `[CLS]` and `[SEP]` included.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The length of an embedding.
    pub fn dims(&self) -> usize {
        self.bert.config.hidden_size
    }

    /// The normalised embedding of `text`, cut to the window (head and tail kept).
    pub fn embed(&self, text: &str) -> Vec<f32> {
        self.bert.embed(&self.tokenizer.encode(text, self.max_tokens))
    }

    /// [`Model::embed`], given up (`None`) once `deadline` has passed: the tokenizer reads only
    /// what the window holds, and the forward pass checks the deadline before each layer.
    pub fn embed_until(&self, text: &str, deadline: Instant) -> Option<Vec<f32>> {
        let ids = self.tokenizer.encode(text, self.max_tokens);
        if Instant::now() >= deadline {
            return None;
        }
        self.bert.embed_until(&ids, Some(deadline))
    }
}

/// Whether `dir` holds the three files (without reading them): the cheap check done before a load.
/// Only absence counts here; a name that is there but is not a regular file (a FIFO, a device, a
/// folder) is left to the load, whose error says what it is.
pub fn missing_file(dir: &Path) -> Option<PathBuf> {
    FILES.iter().map(|f| dir.join(f)).find(|p| !p.exists())
}
