//! The report's per-file pass: what one transcript says, as compact facts (usage per API request,
//! prompts, hints, spawns), ready to be merged across files. Nothing here keeps prompt text.
//!
//! Turns: a main-thread prompt opens a turn that lasts until the next prompt. A routing hint belongs
//! to the turn of the prompt it answers: the attachment's `parentUuid` names that prompt when Claude
//! Code writes it after the prompt; a hint written before its prompt (no assistant reply since the
//! last prompt is the tell) waits for the next prompt. Agent spawns in a hinted turn are "after a hint".
//!
//! Hint overhead rides on the usage records: each main-thread request carries how many hint tokens it
//! wrote to the prompt cache for the first time (hints since the previous request) and how many it
//! read back from earlier hints, so deduplication across forked files dedupes the overhead too.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use system1_transcripts::{FileInfo, FileVisitor, Line, Needle, Stats, Tokens};

use crate::claude_code::{Effort, Provider};
use crate::report::prices::{Minute, minute_of_timestamp};
use crate::tier::Tier;

use crate::routing::gate::words;
use crate::routing::{HINT_MARKER as ROUTING_HINT, SKILL_HINT_MARKER as SKILL_HINT};

/// One API request's usage as this file has it (the largest copy within the file).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UsageRec {
    /// Hash of `message.id` + `requestId`; `None` when either is missing (counted as unique).
    pub key: Option<u128>,
    /// Index into [`FileFacts::models`].
    pub model: u32,
    pub tokens: Tokens,
    pub sidechain: bool,
    pub hint_write: u64,
    pub hint_read: u64,
    /// The line's timestamp, whose UTC day picks the price in force.
    pub minute: Minute,
    /// The reasoning effort the request was sent with, where the line says (2.1.332 and later).
    #[serde(default)]
    pub effort: Option<Effort>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct PromptRec {
    /// Hash of the prompt line's uuid.
    pub key: u128,
    /// Its turn got a routing hint.
    pub hinted: bool,
    /// Long enough for the routing hook to consider it (it stays silent under `MIN_WORDS` words).
    pub long: bool,
    pub minute: Minute,
    /// The tier its turn's routing hint named, when it had one that names a tier.
    #[serde(default)]
    pub tier: Option<Tier>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HintRec {
    pub key: u128,
    pub routing: bool,
    pub tokens: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SpawnRec {
    pub tool_use_id: String,
    /// Set when the spawn came in a turn with a routing hint; the inner value is the hinted tier.
    pub hint: Option<Option<Tier>>,
    /// The `model` the orchestrator passed, if any (`haiku`, `sonnet`, `opus`, `inherit`, an id).
    pub requested: Option<String>,
    /// From the tool result (`resolvedModel`).
    pub resolved: Option<String>,
    pub agent_id: Option<String>,
    /// The model of the assistant reply that spawned it (what `inherit` means).
    pub parent_model: Option<String>,
    /// The Agent call's `subagent_type`.
    pub subagent_type: Option<String>,
    /// When the spawn was made.
    pub minute: Minute,
    /// The brief (the call's `prompt`), kept only for `--what-if` ([`Collector::with_briefs`]).
    pub brief: Option<String>,
    /// The session and project it was made in: set by the aggregator (an index into its origins).
    pub origin: u32,
}

/// Everything the report needs from one file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FileFacts {
    pub session_id: String,
    pub agent_id: Option<String>,
    /// The spawning tool use, from the subagent's `.meta.json`.
    pub agent_tool_use_id: Option<String>,
    /// The subagent type, from the same.
    pub agent_type: Option<String>,
    /// The effort level the spawning Agent call named, from the same.
    #[serde(default)]
    pub agent_effort: Option<Effort>,
    /// The provider a model id of the file can only have come from (Bedrock's, Vertex's), with
    /// that id; `None` when every id is one all providers share.
    #[serde(default)]
    pub provider: Option<(Provider, String)>,
    pub models: Vec<String>,
    pub usage: Vec<UsageRec>,
    pub prompts: Vec<PromptRec>,
    pub hints: Vec<HintRec>,
    pub spawns: Vec<SpawnRec>,
    /// The first model the subagent's own replies name.
    pub first_model: Option<String>,
    /// The working directory the file's lines name first (the project's path).
    pub cwd: Option<String>,
}

/// 128-bit FNV-1a: ids are hashed rather than kept, so memory per request stays small.
pub fn hash(parts: &[&str]) -> u128 {
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h ^= 0xff;
            h = h.wrapping_mul(PRIME);
        }
        for b in p.bytes() {
            h ^= u128::from(b);
            h = h.wrapping_mul(PRIME);
        }
    }
    h
}

/// The tier a hint names: `model "haiku"` and the like.
pub fn hinted_tier(text: &str) -> Option<Tier> {
    Tier::ALL.into_iter().find(|t| text.contains(&format!("model \"{t}\"")))
}

/// Words in a prompt line's text (counted, never kept), as the hook's length gate counts them.
fn prompt_words(line: &Line<'_>) -> usize {
    match line.message.as_ref().and_then(|m| m.content.as_ref()) {
        Some(system1_transcripts::line::Content::Text(t)) => words(t),
        Some(system1_transcripts::line::Content::Blocks(blocks)) => {
            blocks.iter().filter(|b| b.is("text")).filter_map(|b| b.text()).map(|t| words(&t)).sum()
        }
        _ => 0,
    }
}

/// About four characters per token: the usual rule of thumb for English text and code.
pub fn approx_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// The turn a file's reader is in (main-thread lines only): what a later line needs of the earlier
/// ones.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Turn {
    turn_open: bool,
    turn_hint: Option<Option<Tier>>,
    turn_has_reply: bool,
    turn_prompt: Option<(String, usize)>,
    pending_hint: Option<Option<Tier>>,
    hint_ctx: u64,
    hint_new: u64,
}

/// What a collector has read of a file so far, kept between two reads of a file that grows (the
/// statusline's cache): its facts and its turn, from which [`Collector::resume`] reads on.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Resume {
    pub facts: FileFacts,
    turn: Turn,
}

pub struct Collector {
    subagent_file: bool,
    facts: FileFacts,
    model_index: HashMap<String, u32>,
    usage_index: HashMap<u128, usize>,
    spawn_index: HashMap<String, usize>,
    turn: Turn,
    /// Keep each spawn's brief (for `--what-if`); the report itself never keeps prompt text.
    keep_briefs: bool,
    needles: &'static Needles,
}

/// Built once: the pre-filter's substring searchers.
static NEEDLES: std::sync::LazyLock<Needles> = std::sync::LazyLock::new(Needles::new);

struct Needles {
    usage: Needle,
    hook_context: Needle,
    agent_id: Needle,
    user: Needle,
    tool_use_id: Needle,
    compact: Needle,
}

impl Needles {
    fn new() -> Self {
        Needles {
            usage: Needle::new("\"usage\""),
            hook_context: Needle::new("\"hook_additional_context\""),
            agent_id: Needle::new("\"agentId\""),
            user: Needle::new("\"user\""),
            tool_use_id: Needle::new("\"tool_use_id\""),
            compact: Needle::new("\"isCompactSummary\""),
        }
    }
}

impl Collector {
    pub fn new(info: &FileInfo) -> Self {
        let agent = info.agent.as_ref();
        Collector {
            subagent_file: info.is_subagent(),
            facts: FileFacts {
                session_id: info.session_id.clone(),
                agent_id: agent.map(|a| a.agent_id.clone()),
                agent_tool_use_id: agent.and_then(|a| a.meta.as_ref()).and_then(|m| m.tool_use_id.clone()),
                agent_type: agent.and_then(|a| a.meta.as_ref()).and_then(|m| m.agent_type.clone()),
                agent_effort: agent
                    .and_then(|a| a.meta.as_ref())
                    .and_then(|m| m.effort.as_deref())
                    .and_then(Effort::named),
                ..FileFacts::default()
            },
            model_index: HashMap::new(),
            usage_index: HashMap::new(),
            spawn_index: HashMap::new(),
            turn: Turn::default(),
            keep_briefs: false,
            needles: &NEEDLES,
        }
    }

    /// A collector that reads on where `from` stopped, with the indexes rebuilt from its facts.
    pub fn resume(info: &FileInfo, from: Resume) -> Self {
        let mut c = Collector::new(info);
        c.model_index = from.facts.models.iter().enumerate().map(|(i, m)| (m.clone(), i as u32)).collect();
        c.usage_index = from.facts.usage.iter().enumerate().filter_map(|(i, u)| u.key.map(|k| (k, i))).collect();
        c.spawn_index = from.facts.spawns.iter().enumerate().map(|(i, s)| (s.tool_use_id.clone(), i)).collect();
        c.facts = from.facts;
        c.turn = from.turn;
        c
    }

    /// What has been read so far, to read on from later.
    pub fn into_resume(self) -> Resume {
        Resume { facts: self.facts, turn: self.turn }
    }

    /// A collector that also keeps each spawn's brief, which `--what-if` replays.
    pub fn with_briefs(info: &FileInfo) -> Self {
        Collector { keep_briefs: true, ..Collector::new(info) }
    }

    /// The first working directory a line names.
    fn note_cwd(&mut self, line: &Line<'_>) {
        if self.facts.cwd.is_none()
            && let Some(cwd) = line.cwd.as_deref().filter(|c| !c.is_empty())
        {
            self.facts.cwd = Some(cwd.to_string());
        }
    }

    /// The provider a model id can only have come from, the first time one says.
    fn note_provider(&mut self, id: &str) {
        if let Some(p) = Provider::of_model_id(id) {
            self.facts.provider = Some((p, id.to_string()));
        }
    }

    fn model(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.model_index.get(name) {
            return i;
        }
        let i = self.facts.models.len() as u32;
        self.facts.models.push(name.to_string());
        self.model_index.insert(name.to_string(), i);
        i
    }

    fn assistant(&mut self, line: &Line<'_>) {
        let Some(msg) = &line.message else { return };
        let main_thread = !self.subagent_file && !line.sidechain();
        if main_thread {
            self.turn.turn_has_reply = true;
        }
        let model = msg.model.as_deref().unwrap_or("unknown");
        if self.facts.provider.is_none() {
            self.note_provider(model);
            if let Some(requested) = line.requested_model.as_deref() {
                self.note_provider(requested);
            }
        }
        if self.subagent_file && self.facts.first_model.is_none() && model != "<synthetic>" && model != "unknown" {
            self.facts.first_model = Some(model.to_string());
        }
        if let Some(usage) = &msg.usage {
            let tokens = usage.tokens();
            let key = match (msg.id.as_deref(), line.request_id.as_deref()) {
                (Some(id), Some(req)) => Some(hash(&[id, req])),
                _ => None,
            };
            let sidechain = self.subagent_file || line.sidechain();
            match key.and_then(|k| self.usage_index.get(&k).copied()) {
                Some(i) => {
                    // Another content block of the same reply: keep the fullest copy, and its time
                    // (when the reply finished), as copies in other files are kept; a reply whose
                    // blocks straddle midnight then counts on the day ccusage counts it.
                    let rec = &mut self.facts.usage[i];
                    if tokens.total() > rec.tokens.total() {
                        rec.tokens = tokens;
                        rec.minute = minute_of_timestamp(line.timestamp.as_deref());
                    }
                }
                None => {
                    let model = self.model(model);
                    let (hint_write, hint_read) =
                        if main_thread { (self.turn.hint_new, self.turn.hint_ctx) } else { (0, 0) };
                    if main_thread {
                        self.turn.hint_ctx += self.turn.hint_new;
                        self.turn.hint_new = 0;
                    }
                    if let Some(k) = key {
                        self.usage_index.insert(k, self.facts.usage.len());
                    }
                    let minute = minute_of_timestamp(line.timestamp.as_deref());
                    let effort = line.effort;
                    self.facts.usage.push(UsageRec {
                        key,
                        model,
                        tokens,
                        sidechain,
                        hint_write,
                        hint_read,
                        minute,
                        effort,
                    });
                }
            }
        }
        for block in line.blocks() {
            if !block.is_agent_spawn() {
                continue;
            }
            let Some(id) = block.id.as_deref() else { continue };
            if self.spawn_index.contains_key(id) {
                continue;
            }
            let input = block.agent_input();
            let hint = if main_thread { self.turn.turn_hint } else { None };
            self.spawn_index.insert(id.to_string(), self.facts.spawns.len());
            self.facts.spawns.push(SpawnRec {
                tool_use_id: id.to_string(),
                hint,
                requested: input.model,
                parent_model: msg.model.as_deref().map(str::to_string),
                subagent_type: input.subagent_type,
                minute: minute_of_timestamp(line.timestamp.as_deref()),
                brief: if self.keep_briefs { input.prompt } else { None },
                ..SpawnRec::default()
            });
        }
    }

    fn user(&mut self, line: &Line<'_>) {
        if line.is_compact_summary == Some(true) {
            // The summary replaces the history, hints included.
            self.turn.hint_ctx = 0;
            self.turn.hint_new = 0;
        }
        if !self.subagent_file && line.is_user_prompt() {
            self.turn.turn_open = true;
            self.turn.turn_hint = self.turn.pending_hint.take();
            self.turn.turn_has_reply = false;
            let uuid = line.uuid.as_deref().unwrap_or_default();
            // Forks copy lines with their uuid, which makes it the key; a line without one is unique.
            let n = self.facts.prompts.len().to_string();
            let key =
                if uuid.is_empty() { hash(&["prompt", &self.facts.session_id, &n]) } else { hash(&["prompt", uuid]) };
            self.turn.turn_prompt = Some((uuid.to_string(), self.facts.prompts.len()));
            let long = prompt_words(line) >= crate::routing::MIN_WORDS;
            let minute = minute_of_timestamp(line.timestamp.as_deref());
            let (hinted, tier) = (self.turn.turn_hint.is_some(), self.turn.turn_hint.flatten());
            self.facts.prompts.push(PromptRec { key, hinted, long, minute, tier });
            return;
        }
        if self.spawn_index.is_empty() {
            return;
        }
        for block in line.blocks() {
            if !block.is("tool_result") {
                continue;
            }
            let Some(&i) = block.tool_use_id.as_deref().and_then(|id| self.spawn_index.get(id)) else { continue };
            if let Some(result) = line.agent_result() {
                let spawn = &mut self.facts.spawns[i];
                spawn.resolved = result.resolved_model.or(spawn.resolved.take());
                spawn.agent_id = result.agent_id.or(spawn.agent_id.take());
            }
        }
    }

    fn attachment(&mut self, line: &Line<'_>) {
        let Some(att) = &line.attachment else { return };
        if att.kind.as_deref() != Some("hook_additional_context")
            || att.hook_event.as_deref() != Some(crate::claude_code::event::USER_PROMPT_SUBMIT)
        {
            return;
        }
        // The hook joins its routing and skill hints into one context, a line each.
        let contexts = att.contexts();
        for text in contexts.iter().flat_map(|c| c.lines()) {
            let text = text.trim_start();
            let routing = text.starts_with(ROUTING_HINT);
            if !routing && !text.starts_with(SKILL_HINT) {
                continue;
            }
            let tokens = approx_tokens(text);
            let tier = if routing { hinted_tier(text) } else { None };
            let uuid = line.uuid.as_deref().unwrap_or_default();
            self.facts.hints.push(HintRec { key: hash(&["hint", uuid, text]), routing, tokens });
            self.turn.hint_new += tokens;
            if !routing {
                continue;
            }
            let names_current = match (&self.turn.turn_prompt, line.parent_uuid.as_deref()) {
                (Some((prompt, _)), Some(parent)) => prompt == parent,
                _ => false,
            };
            if names_current || (self.turn.turn_open && !self.turn.turn_has_reply && self.turn.turn_hint.is_none()) {
                self.turn.turn_hint = Some(tier);
                if let Some((_, i)) = &self.turn.turn_prompt {
                    self.facts.prompts[*i].hinted = true;
                    self.facts.prompts[*i].tier = tier;
                }
            } else {
                self.turn.pending_hint = Some(tier);
            }
        }
    }
}

impl FileVisitor for Collector {
    type Output = FileFacts;

    fn wants(&mut self, raw: &[u8]) -> bool {
        let n = self.needles;
        if n.usage.is_in(raw) {
            return true;
        }
        if self.subagent_file {
            return false;
        }
        n.hook_context.is_in(raw)
            || n.agent_id.is_in(raw)
            || n.compact.is_in(raw)
            || (n.user.is_in(raw) && !n.tool_use_id.is_in(raw))
    }

    fn line(&mut self, line: &Line<'_>, _raw: &[u8]) {
        self.note_cwd(line);
        match line.kind.as_deref() {
            Some("assistant") => self.assistant(line),
            Some("user") => self.user(line),
            Some("attachment") if !self.subagent_file => self.attachment(line),
            _ => {}
        }
    }

    fn finish(self, _stats: &Stats) -> FileFacts {
        self.facts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_name_their_tier_and_tokens_are_a_quarter_of_the_characters() {
        assert_eq!(
            hinted_tier("System-1 routing hint: spawn subagents with model \"haiku\" (read-only)"),
            Some(Tier::Haiku)
        );
        assert_eq!(hinted_tier("System-1 routing hint: use model \"opus\""), Some(Tier::Opus));
        assert_eq!(hinted_tier("System-1 routing hint: nothing"), None);
        // The hook's own wording, whatever it becomes, must stay readable here.
        for tier in Tier::ALL {
            let text = crate::routing::hint_text(tier);
            assert!(text.starts_with(ROUTING_HINT));
            assert_eq!(hinted_tier(&text), Some(tier));
        }
        assert_eq!(approx_tokens("abcd"), 1);
        assert_eq!(approx_tokens("abcde"), 2);
        assert_eq!(approx_tokens(""), 0);
    }

    #[test]
    fn a_routing_and_a_skill_hint_in_one_context_count_as_one_each() {
        let info =
            FileInfo { path: "s.jsonl".into(), project: "-p".into(), session_id: "s".into(), agent: None, size: 0 };
        let mut c = Collector::new(&info);
        let context = format!(
            "{}\nSystem-1 skill hint: consider the `pdf` skill if it fits",
            crate::routing::hint_text(Tier::Haiku)
        );
        let raw = serde_json::json!({"type": "attachment", "uuid": "h1", "attachment": {
            "type": "hook_additional_context", "hookEvent": "UserPromptSubmit", "content": [context]}})
        .to_string();
        c.line(&system1_transcripts::line::parse(raw.as_bytes()).unwrap(), raw.as_bytes());
        let hints = &c.facts.hints;
        assert_eq!(hints.iter().map(|h| h.routing).collect::<Vec<_>>(), vec![true, false]);
        assert_eq!(c.turn.pending_hint, Some(Some(Tier::Haiku)));
    }

    #[test]
    fn hash_separates_parts() {
        assert_ne!(hash(&["ab", "c"]), hash(&["a", "bc"]));
        assert_eq!(hash(&["m", "r"]), hash(&["m", "r"]));
    }
}
