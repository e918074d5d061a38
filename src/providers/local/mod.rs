//! The local engine: a BERT-family sentence-embedding model run inside the `system1` process.
//!
//! One embedding of the request's state answers every question of the request:
//! - a yes/no question with a trained head (a logistic regression over the embedding, see
//!   [`heads`]) gets that head's probability;
//! - a choice question gets zero-shot similarity: the cosine between the state and each option
//!   (with its description when the context lists one, as the skill picker's does), turned into
//!   probabilities by a softmax at a temperature measured for the model on a labelled set of
//!   choice questions ([`zero_shot`]); an option named `none` scores `none_similarity`, the bar a
//!   real option must clear;
//! - a yes/no question without a head is passed on to the next engine of the chain (and says
//!   how to teach it).
//!
//! ```toml
//! [providers.local]
//! model = "all-MiniLM-L6-v2"   # the name heads and calibration fits are keyed by
//! model_dir = ""               # default: <install dir>/engines/local/<model>/
//! max_tokens = 0               # window in tokens (0: the model's own, 256 for MiniLM)
//! temperature = 0              # zero-shot softmax temperature over cosine similarities (0: the measured one)
//! none_similarity = 0.3        # the similarity an option named `none` gets
//! choices = "any"              # "taught": pass untaught choices on to the next engine of the chain
//! max_options = 256
//! ```

pub mod cache;
pub mod download;
pub mod heads;
pub mod wheel;
pub mod zero_shot;

/// The model runtime: tokenizer, forward pass and kernels, a crate of their own (crates/embed).
pub use system1_embed as model;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::answers;
use super::{
    Capabilities, Cause, EngineAnswer, EngineRequest, Failure, Fix, PassCause, Probe, Provider, Question, Scope, Taught,
};
use crate::config::Settings;
use crate::{paths, text};
use heads::Head;
use model::Model;

pub const DEFAULT_MODEL: &str = "all-MiniLM-L6-v2";

/// What a load gives: the model and the heads that fit it (local ones first).
struct Loaded {
    model: Model,
    heads: Vec<Head>,
    cache: cache::Cache,
    /// Problems with the heads files, shown by the health probe.
    notes: Vec<String>,
}

pub struct Local {
    name: String,
    dir: PathBuf,
    /// Whether `model_dir` was set (rather than the install dir's default): it changes the fix.
    given: bool,
    max_tokens: usize,
    /// The softmax temperature of its zero-shot choices, and where it comes from.
    zero_shot: zero_shot::Temperature,
    /// Which choices it answers: any (untaught ones by similarity), or only those it was taught,
    /// passing the others on to the next engine of the chain (a decision server).
    choices: Scope,
    none_similarity: f64,
    max_options: usize,
    /// The largest share of non-Latin letters a text may have before the engine abstains on it.
    max_non_latin: f64,
    loaded: OnceLock<Result<Arc<Loaded>, Failure>>,
    /// The last text embedded and its embedding: the routing features and the skill picker ask
    /// about the same prompt, which then costs one pass.
    last: Mutex<Option<(String, Arc<Vec<f32>>)>>,
}

/// The model directory the settings name, and the default one for a model name.
pub fn default_dir(model: &str) -> PathBuf {
    paths::engines_dir().join("local").join(model)
}

/// The command that installs `model` into its default folder.
pub fn install_command(model: &str) -> String {
    if model == DEFAULT_MODEL {
        "engine install local".to_string()
    } else {
        format!("engine install local --model {model}")
    }
}

/// Where heads fitted on this machine are kept (beside the install dir's calibration file).
pub fn local_heads_file() -> PathBuf {
    paths::install_dir().join("local-heads.json")
}

/// The model name and folder a `[providers.local]` section names (`model`, `model_dir`), and
/// whether the folder was given (rather than the install dir's default).
pub fn configured(s: &Settings) -> (String, PathBuf, bool) {
    let name = s.string("model", DEFAULT_MODEL).trim().to_string();
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        s.error(format!("{}.model must be a model name such as {DEFAULT_MODEL:?}, got {name:?}", s.section()));
    }
    let given = s.string("model_dir", "");
    let given = given.trim();
    if given.is_empty() { (name.clone(), default_dir(&name), false) } else { (name, PathBuf::from(given), true) }
}

impl Local {
    pub fn new(s: &Settings) -> Self {
        let (name, dir, given) = configured(s);
        let zero_shot = zero_shot::Temperature::for_model(&name, s.f64("temperature", 0.0, 0.0, 10.0));
        let choices = match s.string("choices", "any").trim() {
            "any" => Scope::Any,
            "taught" => Scope::Taught,
            other => {
                s.error(format!("{}.choices must be \"any\" or \"taught\", got {other:?}", s.section()));
                Scope::Any
            }
        };
        Self {
            name,
            dir,
            given,
            max_tokens: s.u64("max_tokens", 0, 0, model::MAX_WINDOW as u64) as usize,
            zero_shot,
            choices,
            none_similarity: s.f64("none_similarity", 0.3, -1.0, 1.0),
            max_options: s.u64("max_options", 256, 2, 256) as usize,
            max_non_latin: s.f64("max_non_latin", 0.3, 0.0, 1.0),
            loaded: OnceLock::new(),
            last: Mutex::new(None),
        }
    }

    fn load(&self) -> Result<Arc<Loaded>, Failure> {
        self.loaded
            .get_or_init(|| {
                // Checked here, not when the config is read: a section that names a model which is
                // not installed is only a problem for a chain that uses the local engine.
                if let Some(missing) = model::missing_file(&self.dir) {
                    let fix = if self.given {
                        format!("point [providers.local] model_dir at a folder with {}", model::FILES.join(", "))
                    } else {
                        format!("run `{}`", text::command(&install_command(&self.name)))
                    };
                    return Err(Failure::new(
                        Cause::NotInstalled,
                        format!("the local model is not installed: {} is missing; {fix}", missing.display()),
                    ));
                }
                let model = Model::load(&self.dir, self.max_tokens).map_err(|e| {
                    let detail = if self.given {
                        // Not ours to reinstall: the user's own files.
                        format!(
                            "{e}; replace that file in [providers.local] model_dir with a working copy, or remove \
                             model_dir to use the model `{}` downloads",
                            text::command("engine install local")
                        )
                    } else {
                        format!("{e}; reinstall the model with `{}`", text::command(&install_command(&self.name)))
                    };
                    Failure::new(Cause::ModelBroken, detail)
                })?;
                let (heads, notes) = load_heads(&self.name, Some(model.dims()), &local_heads_file());
                let cache = cache::Cache::open(&cache::file_for(&self.name), model.dims());
                Ok(Arc::new(Loaded { model, heads, cache, notes }))
            })
            .clone()
    }

    /// The state's embedding, `None` when `deadline` passed first.
    fn embed(&self, loaded: &Loaded, text: &str, deadline: Instant) -> Option<Arc<Vec<f32>>> {
        if let Ok(guard) = self.last.lock()
            && let Some((t, e)) = guard.as_ref()
            && t == text
        {
            return Some(e.clone());
        }
        let e = Arc::new(loaded.model.embed_until(text, deadline)?);
        if let Ok(mut guard) = self.last.lock() {
            *guard = Some((text.to_string(), e.clone()));
        }
        Some(e)
    }

    fn label(&self) -> String {
        format!("local {}", self.name)
    }

    /// Why a question is not answered: the text the model reads, or the question's own words, is
    /// mostly not Latin script. The model and its heads learned English; on Chinese or Japanese
    /// text their answers are confident and meaningless, so the engine does not answer: it passes
    /// the question on to the next engine of the chain (a multilingual one can answer it), as
    /// Laya's English checkpoints do.
    fn non_latin_reason(&self, state: &str, q: &Question) -> Option<String> {
        if self.max_non_latin >= 1.0 {
            return None;
        }
        let mut own: Vec<&str> = vec![q.text.as_str()];
        own.extend(q.options.iter().map(String::as_str));
        for (what, parts) in [("the context", vec![state]), ("the question", own)] {
            let share = answers::non_latin_share(&parts);
            if share > self.max_non_latin {
                return Some(format!(
                    "{}: {:.0}% of the letters in {what} are not Latin script (the limit is {:.0}%, \
                     [providers.local] max_non_latin); the model reads English, so it passes the question on rather than guess",
                    self.label(),
                    share * 100.0,
                    self.max_non_latin * 100.0
                ));
            }
        }
        None
    }

    /// The answer to `q`; `None` when `deadline` passed before the options were embedded.
    fn answer(
        &self,
        loaded: &Loaded,
        request: &EngineRequest,
        q: &Question,
        state: &[f32],
        deadline: Instant,
    ) -> Option<EngineAnswer> {
        if let Some((yes, no)) = answers::yes_no(&q.options) {
            // Without a head the engine has nothing to say: it passes the question on to the next
            // engine in the chain rather than abstaining, which would end the chain.
            let Some(head) = find_head(&loaded.heads, q) else {
                // Only the fact: the model reads this in `attempts`; how to teach the question is for
                // the person (`teach_hint`, which `system1 decide` and doctor print).
                return Some(EngineAnswer::Passed {
                    cause: PassCause::NoHead,
                    reason: format!("{}: no trained head for this yes/no question", self.label()),
                });
            };
            if let Some(why) = missing_context(&head.context, request.context.as_ref()) {
                return Some(EngineAnswer::Abstained {
                    rationale: Some(format!("{}: {why}", self.label())),
                    detail: None,
                });
            }
            let p = answers::round4(head.p_yes(state));
            let mut probs = vec![0.0; 2];
            probs[yes] = p;
            probs[no] = answers::round4(1.0 - p);
            return Some(
                answers::choice_answer("local", &self.name, &q.options, &probs, None)
                    .with_detail(format!("trained head, n={}", head.n)),
            );
        }
        if let Some(taught) = option_heads(&loaded.heads, q) {
            // One head per option, each against the rest: their P(yes), normalised.
            let ps: Vec<f64> = taught.iter().map(|h| h.p_yes(state)).collect();
            let total: f64 = ps.iter().sum();
            let probs: Vec<f64> = ps
                .iter()
                .map(|p| answers::round4(if total > 0.0 { p / total } else { 1.0 / ps.len() as f64 }))
                .collect();
            let n = taught.first().map_or(0, |h| h.n);
            return Some(
                answers::choice_answer("local", &self.name, &q.options, &probs, None)
                    .with_detail(format!("trained heads, n={n}")),
            );
        }
        if self.choices == Scope::Taught {
            return Some(EngineAnswer::Passed {
                cause: PassCause::NoHead,
                reason: format!(
                    "{}: no trained heads for this choice, and [providers.local] choices = \"taught\" passes untaught \
                     choices on rather than answer them by similarity; to teach it, label 20 or more examples \
                     ({{\"text\": \"...\", \"label\": \"<option>\"}}) and run `{}`",
                    self.label(),
                    text::command(&teach_command(&q.text))
                ),
            });
        }
        let sims = self.similarities(loaded, request, q, state, deadline)?;
        let probs = softmax(&sims, self.zero_shot.temperature());
        Some(
            answers::choice_answer("local", &self.name, &q.options, &probs, None)
                .with_detail(format!("zero-shot similarity, {}", self.zero_shot)),
        )
    }

    /// The cosine between the state and each option of `q` (with its description when the context
    /// has one); an option named `none` gets `none_similarity`. `None` when `deadline` passed first.
    fn similarities(
        &self,
        loaded: &Loaded,
        request: &EngineRequest,
        q: &Question,
        state: &[f32],
        deadline: Instant,
    ) -> Option<Vec<f64>> {
        let descriptions = descriptions(request.context.as_ref(), &q.options);
        q.options
            .iter()
            .map(|o| {
                if o.trim().eq_ignore_ascii_case("none") {
                    return Some(self.none_similarity);
                }
                let text = match descriptions.and_then(|d| d.get(o)).and_then(Value::as_str) {
                    Some(d) if !d.trim().is_empty() => format!("{o}: {d}"),
                    _ => o.clone(),
                };
                let e = loaded.cache.get_or_insert(&text, || loaded.model.embed_until(&text, deadline))?;
                Some(cosine(state, &e))
            })
            .collect()
    }

    /// What a zero-shot answer to each question of `request` starts from: the option similarities
    /// the softmax turns into probabilities (for measuring the zero-shot temperature).
    #[cfg(test)]
    pub fn zero_shot_similarities(&self, request: &EngineRequest, timeout: Duration) -> Result<Vec<Vec<f64>>, Failure> {
        let deadline = Instant::now() + timeout;
        let loaded = self.load()?;
        let state = self.embed(&loaded, &state_text(request), deadline).ok_or_else(|| Failure::timeout(timeout))?;
        request
            .questions
            .iter()
            .map(|q| self.similarities(&loaded, request, q, &state, deadline).ok_or_else(|| Failure::timeout(timeout)))
            .collect()
    }
}

/// Heads for `model` with `dims` dimensions, as they take effect: the install dir's first, then the
/// shipped ones for questions that file does not have (a question's heads all come from one
/// file, so a refit with other options replaces the shipped set whole). The install dir's file is
/// `calibrate fit`'s own, read only when it is a regular file of bounded size in place (a FIFO
/// there would hang the engine's load).
fn load_heads(model: &str, dims: Option<usize>, local: &Path) -> (Vec<Head>, Vec<String>) {
    let mut notes = Vec::new();
    let fits = |h: &Head| h.model == model && dims.is_none_or(|d| h.dims == d);
    let mut out: Vec<Head> = Vec::new();
    match crate::fsutil::read_versioned::<heads::File>(local) {
        Ok(Some(f)) => out.extend(f.heads.into_iter().filter(fits)),
        Ok(None) => {}
        Err(e) => notes.push(format!("{}: {e} (ignored)", local.display())),
    }
    let fitted_here: std::collections::HashSet<String> = out.iter().map(|h| text::question_key(&h.question)).collect();
    match heads::File::parse(heads::SHIPPED) {
        Ok(f) => out.extend(
            f.heads.into_iter().filter(fits).filter(|h| !fitted_here.contains(&text::question_key(&h.question))),
        ),
        Err(e) => notes.push(format!("the shipped heads: {e}")),
    }
    // Within one file, the first head for a question (and option) wins.
    let mut seen = std::collections::HashSet::new();
    out.retain(|h| seen.insert((text::question_key(&h.question), h.option.as_deref().map(text::question_key))));
    (out, notes)
}

/// The heads that answer for `model`: per question, the install dir's or else the shipped ones.
pub fn heads_in_force(model: &str) -> Vec<Head> {
    load_heads(model, None, &local_heads_file()).0
}

/// The heads that answer for the model in `dir` named `model`, as a load finds them (a head fitted
/// on another model of the same name, with other dimensions, is left out). `None` when `dir` has
/// no readable `config.json` (the load then fails and says why).
pub fn fitting_heads(model: &str, dir: &Path) -> Option<Vec<Head>> {
    let dims = system1_embed::declared_dims(dir)?;
    Some(load_heads(model, Some(dims), &local_heads_file()).0)
}

/// The questions `heads` answer, one entry per question, in order.
pub fn taught(heads: &[Head]) -> Vec<Taught> {
    let local: std::collections::HashSet<String> = crate::fsutil::read_versioned::<heads::File>(&local_heads_file())
        .ok()
        .flatten()
        .map(|f| f.heads.iter().map(|h| text::question_key(&h.question)).collect())
        .unwrap_or_default();
    let mut out: Vec<Taught> = Vec::new();
    for h in heads {
        let key = text::question_key(&h.question);
        if let Some(t) = out.iter_mut().find(|t| text::question_key(&t.question) == key) {
            t.options.extend(h.option.clone());
            continue;
        }
        let context = if crate::feature::Feature::named(&h.question).is_some() {
            "a prompt or a subagent's brief (the hooks and `system1 route` ask it)".to_string()
        } else if crate::tier::Tier::of_head_key(&h.question).is_some() {
            "a prompt or a subagent's brief (the hooks and `system1 route` ask it with [routing] tier_head)".to_string()
        } else if h.context.is_empty() {
            "an object with one text field (any key)".to_string()
        } else {
            format!("an object with {}", h.context.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", "))
        };
        out.push(Taught {
            question: h.question.clone(),
            options: h.option.clone().into_iter().collect(),
            context,
            n: h.n,
            fitted_here: local.contains(&key),
        });
    }
    out
}

/// The head for a yes/no question: by its key (a routing feature's name), else by its text.
fn find_head<'a>(heads: &'a [Head], q: &Question) -> Option<&'a Head> {
    let yes_no = heads.iter().filter(|h| h.option.is_none());
    let text = text::question_key(&q.text);
    yes_no
        .clone()
        .find(|h| h.question == q.key)
        .or_else(|| yes_no.clone().find(|h| text::question_key(&h.question) == text))
}

/// The heads for a question with a fixed set of options, one per option asked, in the question's
/// order; None unless every option asked has one.
fn option_heads<'a>(heads: &'a [Head], q: &Question) -> Option<Vec<&'a Head>> {
    let text = text::question_key(&q.text);
    let of_question: Vec<&Head> =
        heads.iter().filter(|h| h.option.is_some() && text::question_key(&h.question) == text).collect();
    if of_question.is_empty() {
        return None;
    }
    q.options
        .iter()
        .map(|o| {
            let o = text::question_key(o);
            of_question.iter().copied().find(|h| h.option.as_deref().map(text::question_key).as_deref() == Some(&o))
        })
        .collect()
}

/// The command that teaches the local engine a question.
/// How to teach the local engine `question`, for the person: the examples' format and the command.
pub fn teach_hint(question: &str) -> String {
    format!(
        "to teach the local engine this question, write 20 or more labelled examples, one JSON line each \
         ({{\"text\": \"...\", \"label\": true}}), and run `{}` (docs/calibration.md; in Claude Code, the calibrate skill walks you through it)",
        text::command(&teach_command(question))
    )
}

pub fn teach_command(question: &str) -> String {
    // Single quotes: a shell takes everything inside them as it is, but a single quote.
    let q = question.split_whitespace().collect::<Vec<_>>().join(" ").replace('\'', "'\\''");
    format!("calibrate fit --provider local --question '{q}' --set FILE.jsonl --apply")
}

/// Why a head taught on contexts with the fields `taught` cannot read this request's `context`:
/// there is none (the model would read the question's own words, which no example looked like),
/// or an object without one of those fields, or with it blank. A head taught on one field also
/// reads a plain string as that field (see [`state_text`]: both are the same text to the model).
fn missing_context(taught: &[String], context: Option<&Value>) -> Option<String> {
    if taught.is_empty() {
        return None;
    }
    let filled = |v: &Value| match v {
        Value::Null => false,
        Value::String(s) => !s.trim().is_empty(),
        _ => true,
    };
    let missing: Vec<&String> = match context {
        Some(Value::String(s)) if taught.len() == 1 && !s.trim().is_empty() => Vec::new(),
        Some(Value::Object(o)) => taught.iter().filter(|k| !o.get(k.as_str()).is_some_and(filled)).collect(),
        _ => taught.iter().collect(),
    };
    if missing.is_empty() {
        return None;
    }
    let names = |keys: &[&String]| keys.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", ");
    let all: Vec<&String> = taught.iter().collect();
    let example = taught.iter().map(|k| format!("{k:?}: \"...\"")).collect::<Vec<_>>().join(", ");
    Some(format!(
        "this question was taught on a context with {}, and the request {}; no answer without it: pass \"context\": {{{example}}}",
        names(&all),
        if context.is_none_or(Value::is_null) {
            "has no context".to_string()
        } else {
            format!("lacks {}", names(&missing))
        }
    ))
}

/// A context object's map of option descriptions (`{"skills": {name: description}}`), when one of
/// its values is an object keyed by the options.
fn descriptions<'a>(context: Option<&'a Value>, options: &[String]) -> Option<&'a serde_json::Map<String, Value>> {
    context?.as_object()?.values().filter_map(Value::as_object).find(|m| options.iter().any(|o| m.contains_key(o)))
}

/// The text the model reads for a request: the context (a string as it is; an object's single
/// text value alone, or its fields as `key: value` lines, leaving out a map of option
/// descriptions), else the questions' text.
pub fn state_text(request: &EngineRequest) -> String {
    let options: Vec<String> = request.questions.iter().flat_map(|q| q.options.clone()).collect();
    match &request.context {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => {
            let fields: Vec<(&String, &Value)> = o
                .iter()
                .filter(|(_, v)| !v.as_object().is_some_and(|m| options.iter().any(|opt| m.contains_key(opt))))
                .collect();
            match fields.as_slice() {
                [(_, Value::String(s))] => s.clone(),
                _ => fields
                    .iter()
                    .map(|(k, v)| match v {
                        Value::String(s) => format!("{k}: {s}"),
                        other => format!("{k}: {other}"),
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            }
        }
        Some(v) if !v.is_null() => v.to_string(),
        _ => request.questions.iter().map(|q| q.text.as_str()).collect::<Vec<_>>().join("\n"),
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    // Both are normalised: the dot product is the cosine.
    a.iter().zip(b).map(|(x, y)| (*x as f64) * (*y as f64)).sum()
}

fn softmax(scores: &[f64], temperature: f64) -> Vec<f64> {
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = scores.iter().map(|s| ((s - max) / temperature).exp()).collect();
    let sum: f64 = exps.iter().sum();
    exps.iter().map(|e| answers::round4(e / sum)).collect()
}

impl Provider for Local {
    fn name(&self) -> &'static str {
        "local"
    }

    fn model(&self) -> String {
        self.name.clone()
    }

    fn capabilities(&self) -> Capabilities {
        // Yes/no only from a trained head; a choice from the embeddings' similarity, for any options
        // (unless `choices = "taught"`).
        Capabilities { yes_no: Scope::Taught, choice: self.choices, ..Capabilities::any(self.max_options, true) }
    }

    fn decide(&self, request: &EngineRequest, timeout: Duration) -> Result<Vec<EngineAnswer>, Failure> {
        let deadline = Instant::now() + timeout;
        answers::check_option_limit("local", request, self.max_options, "")?;
        let text = state_text(request);
        let refused: Vec<Option<String>> = request.questions.iter().map(|q| self.non_latin_reason(&text, q)).collect();
        // Nothing to answer: neither the model nor the embedding is needed.
        if !refused.is_empty() && refused.iter().all(Option::is_some) {
            return Ok(refused
                .into_iter()
                .flatten()
                .map(|reason| EngineAnswer::Passed { cause: PassCause::NotRead, reason })
                .collect());
        }
        let loaded = self.load().map_err(|f| f.prefixed("local: "))?;
        // The deadline is checked between the forward pass's layers and between embeddings, so a
        // long text or a big model gives a timeout about when it is due, not when the pass ends.
        let state = self.embed(&loaded, &text, deadline).ok_or_else(|| Failure::timeout(timeout))?;
        let out: Vec<EngineAnswer> = request
            .questions
            .iter()
            .zip(refused)
            .map(|(q, why)| match why {
                Some(reason) => Some(EngineAnswer::Passed { cause: PassCause::NotRead, reason }),
                None => self.answer(&loaded, request, q, &state, deadline),
            })
            .collect::<Option<_>>()
            .ok_or_else(|| Failure::timeout(timeout))?;
        if Instant::now() > deadline {
            return Err(Failure::timeout(timeout));
        }
        Ok(out)
    }

    fn taught(&self) -> Vec<Taught> {
        // The heads alone, without loading the model: capabilities stay quick.
        taught(&heads_in_force(&self.name))
    }

    fn health(&self, _timeout: Duration) -> Probe {
        match self.load() {
            Ok(l) => {
                let taught = taught(&l.heads);
                let mut detail = format!(
                    "{} in {} ({} dims, window {} tokens), {} trained {}",
                    self.name,
                    self.dir.display(),
                    l.model.dims(),
                    l.model.max_tokens(),
                    taught.len(),
                    if taught.len() == 1 { "question" } else { "questions" }
                );
                if !taught.is_empty() {
                    let names: Vec<String> = taught.iter().map(|t| t.question.clone()).collect();
                    detail.push_str(&format!(" ({})", names.join("; ")));
                }
                if l.heads.is_empty() {
                    detail.push_str(&format!(
                        "; no trained heads fit {}: it passes its yes/no questions (the routing features) on until \
                         `{}` trains them",
                        self.name,
                        text::command("calibrate fit --apply")
                    ));
                }
                for n in &l.notes {
                    detail.push_str("; ");
                    detail.push_str(n);
                }
                Probe::up(detail)
            }
            Err(f) => Probe::Down(f),
        }
    }

    /// A model given by `model_dir` is the user's own files, not ours to reinstall.
    fn fix(&self, failure: &Failure) -> Fix {
        let install = text::command(&install_command(&self.name));
        match (failure.cause, self.given) {
            (Cause::NotInstalled, false) => Fix::new(format!("install its model with `{install}`")),
            (Cause::NotInstalled, true) => Fix::new(format!(
                "point [providers.local] model_dir at the folder that holds the model, or remove model_dir and run `{}`",
                text::command("engine install local")
            )),
            (Cause::ModelBroken, false) => {
                Fix::new(format!("reinstall the model with `{install}` (it downloads and checks every file again)"))
            }
            (Cause::ModelBroken, true) => Fix::new(
                "replace the file it names in [providers.local] model_dir with a working copy (the model's \
                 config.json, tokenizer.json and model.safetensors belong together), or remove model_dir to use the \
                 model `engine install local` downloads",
            ),
            _ => super::failure::generic_fix(self.name(), failure),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
