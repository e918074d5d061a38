//! The typed view of one transcript line. Only the fields some consumer reads are named; serde skips
//! everything else without allocating. Strings borrow from the line when they hold no escapes, and the
//! big, rarely needed parts (tool inputs, tool results, text blocks, hook output) stay as borrowed raw
//! JSON until a consumer asks for them, so parsing an assistant line full of code costs one pass.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::claude_code::{Effort, is_spawn_tool};

/// One line of a transcript (`type` is `user`, `assistant`, `attachment`, `system`, ...).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Line<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub uuid: Option<Cow<'a, str>>,
    #[serde(rename = "parentUuid", borrow)]
    pub parent_uuid: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub timestamp: Option<Cow<'a, str>>,
    /// The working directory of the session (its project's path).
    #[serde(borrow)]
    pub cwd: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain")]
    pub is_sidechain: Option<bool>,
    /// Lines Claude Code adds on its own (skill bodies, command caveats), not typed by the user.
    #[serde(rename = "isMeta")]
    pub is_meta: Option<bool>,
    #[serde(rename = "isCompactSummary")]
    pub is_compact_summary: Option<bool>,
    /// Set on the assistant line Claude Code writes when an API call failed.
    #[serde(rename = "isApiErrorMessage")]
    pub is_api_error_message: Option<bool>,
    #[serde(rename = "requestId", borrow)]
    pub request_id: Option<Cow<'a, str>>,
    /// An assistant line's reasoning effort, as its request sent it (Claude Code 2.1.332 and later).
    #[serde(deserialize_with = "lenient_effort")]
    pub effort: Option<Effort>,
    /// The model id an assistant line's request named (2.1.332 and later): a provider's own id
    /// (Bedrock's `us.anthropic.claude-…`) where `message.model` may be the plain one.
    #[serde(rename = "requestedModel", borrow)]
    pub requested_model: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub message: Option<Message<'a>>,
    #[serde(borrow)]
    pub attachment: Option<Attachment<'a>>,
    /// The structured result of a tool (an object for Agent, often an array or a string otherwise).
    #[serde(rename = "toolUseResult", borrow)]
    pub tool_use_result: Option<&'a RawValue>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Message<'a> {
    #[serde(borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub model: Option<Cow<'a, str>>,
    pub usage: Option<Usage>,
    #[serde(borrow)]
    pub content: Option<Content<'a>>,
}

/// API usage of one request, as the Messages API reports it.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(default)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_creation_input_tokens: Option<u64>,
    pub cache_read_input_tokens: Option<u64>,
    pub cache_creation: Option<CacheCreation>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(default)]
pub struct CacheCreation {
    pub ephemeral_5m_input_tokens: Option<u64>,
    pub ephemeral_1h_input_tokens: Option<u64>,
}

/// Usage split the way it is priced.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    pub cache_read: u64,
}

impl Tokens {
    pub fn total(&self) -> u64 {
        self.input + self.output + self.cache_write_5m + self.cache_write_1h + self.cache_read
    }

    pub fn add(&mut self, o: &Tokens) {
        self.input += o.input;
        self.output += o.output;
        self.cache_write_5m += o.cache_write_5m;
        self.cache_write_1h += o.cache_write_1h;
        self.cache_read += o.cache_read;
    }
}

impl Usage {
    /// The priced split. Cache writes use the 5-minute/1-hour breakdown when present; otherwise the
    /// older single `cache_creation_input_tokens` counts as 5-minute writes (the API's default TTL).
    pub fn tokens(&self) -> Tokens {
        let total_writes = self.cache_creation_input_tokens.unwrap_or(0);
        let (w5, w1) = match self.cache_creation {
            Some(c) if c.ephemeral_5m_input_tokens.is_some() || c.ephemeral_1h_input_tokens.is_some() => {
                let w5 = c.ephemeral_5m_input_tokens.unwrap_or(0);
                let w1 = c.ephemeral_1h_input_tokens.unwrap_or(0);
                // A breakdown of all zeros next to a non-zero total is not a breakdown.
                if w5 + w1 == 0 && total_writes > 0 { (total_writes, 0) } else { (w5, w1) }
            }
            _ => (total_writes, 0),
        };
        Tokens {
            input: self.input_tokens.unwrap_or(0),
            output: self.output_tokens.unwrap_or(0),
            cache_write_5m: w5,
            cache_write_1h: w1,
            cache_read: self.cache_read_input_tokens.unwrap_or(0),
        }
    }
}

/// `message.content`: a plain string (a typed prompt) or a list of blocks.
#[derive(Debug)]
pub enum Content<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
    Other,
}

impl<'a> Content<'a> {
    pub fn blocks(&self) -> &[Block<'a>] {
        match self {
            Content::Blocks(b) => b,
            _ => &[],
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::new();
                while let Some(b) = seq.next_element::<Block<'a>>()? {
                    blocks.push(b);
                }
                Ok(Content::Blocks(blocks))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Content::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// One content block: `text`, `tool_use`, `tool_result`, `thinking`, `image`, ...
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Block<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Option<Cow<'a, str>>,
    /// `tool_use`: the tool use id.
    #[serde(borrow)]
    pub id: Option<Cow<'a, str>>,
    /// `tool_use`: the tool's name (`Agent`, `Task` in older versions, `Bash`, ...).
    #[serde(borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub input: Option<&'a RawValue>,
    /// `tool_result`: which tool use it answers.
    #[serde(borrow)]
    pub tool_use_id: Option<Cow<'a, str>>,
    pub is_error: Option<bool>,
    #[serde(borrow)]
    pub text: Option<&'a RawValue>,
    #[serde(borrow)]
    pub content: Option<&'a RawValue>,
}

impl Block<'_> {
    pub fn is(&self, kind: &str) -> bool {
        self.kind.as_deref() == Some(kind)
    }

    /// A `tool_use` that spawns a subagent (`Agent`; `Task` before Claude Code 2.1).
    pub fn is_agent_spawn(&self) -> bool {
        self.is("tool_use") && self.name.as_deref().is_some_and(is_spawn_tool)
    }

    /// The input of an Agent tool use, leniently: missing or odd fields are `None`.
    pub fn agent_input(&self) -> AgentInput {
        self.input.and_then(|raw| serde_json::from_str::<AgentInput>(raw.get()).ok()).unwrap_or_default()
    }

    /// The text of a `text` block, or of a `tool_result` whose content is a string or text blocks.
    pub fn text(&self) -> Option<String> {
        if let Some(raw) = self.text {
            return serde_json::from_str::<String>(raw.get()).ok();
        }
        self.content.and_then(|raw| texts_of(raw.get()))
    }
}

/// The parts of an Agent tool use's input that matter here.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct AgentInput {
    #[serde(deserialize_with = "lenient_string")]
    pub model: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    pub subagent_type: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    pub description: Option<String>,
    /// The brief.
    #[serde(deserialize_with = "lenient_string")]
    pub prompt: Option<String>,
}

/// What Claude Code stores in `toolUseResult` after an Agent tool use finished (or was launched in
/// the background).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct AgentResult {
    #[serde(deserialize_with = "lenient_string")]
    pub status: Option<String>,
    #[serde(rename = "agentId", deserialize_with = "lenient_string")]
    pub agent_id: Option<String>,
    /// The model the subagent ran on, sometimes with a suffix such as `[1m]`.
    #[serde(rename = "resolvedModel", deserialize_with = "lenient_string")]
    pub resolved_model: Option<String>,
}

impl Line<'_> {
    pub fn is(&self, kind: &str) -> bool {
        self.kind.as_deref() == Some(kind)
    }

    pub fn sidechain(&self) -> bool {
        self.is_sidechain.unwrap_or(false)
    }

    pub fn blocks(&self) -> &[Block<'_>] {
        self.message.as_ref().and_then(|m| m.content.as_ref()).map(|c| c.blocks()).unwrap_or(&[])
    }

    /// `toolUseResult` read as an Agent result, when it is an object.
    pub fn agent_result(&self) -> Option<AgentResult> {
        let raw = self.tool_use_result?.get();
        if !raw.starts_with('{') {
            return None;
        }
        serde_json::from_str(raw).ok()
    }

    /// A prompt the user typed (or pasted, or a slash command): a main-thread `user` line whose content
    /// is a string, or blocks without any tool result, and which Claude Code did not add itself.
    pub fn is_user_prompt(&self) -> bool {
        if !self.is("user") || self.sidechain() || self.is_meta == Some(true) || self.is_compact_summary == Some(true) {
            return false;
        }
        let Some(content) = self.message.as_ref().and_then(|m| m.content.as_ref()) else {
            return false;
        };
        match content {
            Content::Text(t) => !is_generated_text(t),
            Content::Blocks(blocks) => {
                !blocks.is_empty()
                    && !blocks.iter().any(|b| b.is("tool_result"))
                    && blocks.iter().any(|b| b.is("text") || b.is("image"))
                    && !blocks.iter().any(|b| b.is("text") && b.text().is_some_and(|t| is_generated_text(&t)))
            }
            Content::Other => false,
        }
    }
}

/// Text Claude Code writes into a `user` line itself: local command output, interruptions, background
/// task notifications. These are not prompts.
fn is_generated_text(t: &str) -> bool {
    const GENERATED: [&str; 7] = [
        "<local-command-stdout>",
        "<local-command-stderr>",
        "<local-command-caveat>",
        "<task-notification>",
        "<bash-stdout>",
        "<bash-stderr>",
        "[Request interrupted",
    ];
    let t = t.trim_start();
    GENERATED.iter().any(|g| t.starts_with(g))
}

/// `attachment` on an `attachment` line: hook output, listings.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Attachment<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(rename = "hookEvent", borrow)]
    pub hook_event: Option<Cow<'a, str>>,
    /// A list of strings for `hook_additional_context`, a string for `hook_success`.
    #[serde(borrow)]
    pub content: Option<&'a RawValue>,
}

impl Attachment<'_> {
    /// Each piece of additional context a hook added (empty for other attachments).
    pub fn contexts(&self) -> Vec<String> {
        let Some(raw) = self.content else { return Vec::new() };
        match serde_json::from_str::<serde_json::Value>(raw.get()) {
            Ok(serde_json::Value::String(s)) => vec![s],
            Ok(serde_json::Value::Array(items)) => items
                .into_iter()
                .filter_map(|v| if let serde_json::Value::String(s) = v { Some(s) } else { None })
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// A string or a list of text blocks, joined by newlines.
fn texts_of(raw: &str) -> Option<String> {
    match serde_json::from_str::<serde_json::Value>(raw).ok()? {
        serde_json::Value::String(s) => Some(s),
        serde_json::Value::Array(items) => {
            let texts: Vec<&str> = items.iter().filter_map(|b| b.get("text").and_then(|t| t.as_str())).collect();
            if texts.is_empty() { None } else { Some(texts.join("\n")) }
        }
        _ => None,
    }
}

/// A string field that tolerates any other JSON value (read as absent), so one odd field never makes
/// a whole line unreadable.
pub(crate) fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_any(Lenient(|s: &str| Some(s.to_string())))
}

/// An effort level that tolerates any other value (read as absent): a level this build does not
/// know, or another shape, never makes the line unreadable.
pub(crate) fn lenient_effort<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Effort>, D::Error> {
    d.deserialize_any(Lenient(Effort::named))
}

/// Reads a string with its function, and any other JSON value (skipped whole) as absent.
struct Lenient<F>(F);

impl<'de, T, F: Fn(&str) -> Option<T>> Visitor<'de> for Lenient<F> {
    type Value = Option<T>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok((self.0)(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
        d.deserialize_any(self)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// Parses one line. `Err` means the line is not a JSON object of the expected shape.
pub fn parse(raw: &[u8]) -> serde_json::Result<Line<'_>> {
    serde_json::from_slice(raw)
}
