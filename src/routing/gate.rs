//! Why a routing hook stays silent, gives no hint, or lets a spawn pass as Claude made it: one
//! variant per reason. The hooks match the variants; `system1 route` prints their sentences
//! (`Display`), and `--json` carries the same sentences (`Serialize`). A new reason is one variant
//! and its sentence; a new gate checked before any engine is asked is also one check in
//! [`PROMPT_GATES`] or [`SPAWN_GATES`].

use std::fmt;

use super::MIN_WORDS;
use crate::config::Loaded;
use crate::feature::Feature;
use crate::gateway::{Gateway, Purpose, Refusal};
use crate::state;

/// Why a routing hook does nothing at all. A run meets them in order; the hooks stop at the first.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// The prompt hook: routing and the skill picker are both off.
    AllOff,
    /// The spawn hooks: routing is off.
    RoutingOff,
    /// `system1 toggle off`.
    Paused,
    /// The config file, or a provider's own settings, do not load; the errors as the loader gave them.
    ConfigError(Vec<String>),
    /// A PreToolUse or PostToolUse call on a tool other than Agent or Task.
    NotASpawn(String),
    /// The prompt is a subagent's hand-back, not the user's task.
    HandBack,
    /// The prompt is a slash command (its first word).
    SlashCommand(String),
    /// The prompt has this many words, fewer than [`MIN_WORDS`].
    ShortPrompt(usize),
    /// The prompt hook: no hint is on, and `cwd` is outside `[routing] log_dirs`.
    NothingToHintOrLog,
    /// The agent hook: no tier could change the call, and `cwd` is outside `[routing] log_dirs`.
    NothingToSetOrLog,
}

const ROUTING_OFF: &str = "routing is off ([routing] enabled = false)";

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Gate::AllOff => f.write_str("routing and the skill picker are off ([routing] enabled, [skills] enabled)"),
            Gate::RoutingOff => f.write_str(ROUTING_OFF),
            Gate::Paused => write!(f, "System-1 is paused (`{}` resumes it)", crate::text::command("toggle on")),
            Gate::ConfigError(errors) => write!(f, "config error: {}", errors.join("; ")),
            Gate::NotASpawn(tool) => write!(f, "the {tool} tool spawns no subagent"),
            Gate::HandBack => f.write_str("a subagent hand-back, not a task"),
            Gate::SlashCommand(first) => write!(f, "a slash command ({first})"),
            Gate::ShortPrompt(words) => write!(f, "{words} words, fewer than {MIN_WORDS}"),
            Gate::NothingToHintOrLog => {
                f.write_str("nothing to hint and nothing to log (cwd is outside [routing] log_dirs)")
            }
            Gate::NothingToSetOrLog => {
                f.write_str("nothing enforcement could change, and nothing to log (cwd is outside [routing] log_dirs)")
            }
        }
    }
}

/// A check of the prompt hook's: the gate this prompt meets, if any.
pub type PromptCheck = fn(&Loaded, &str) -> Option<Gate>;
/// A check of the spawn hooks': the gate a call of this tool meets, if any.
pub type SpawnCheck = fn(&Loaded, Option<&str>) -> Option<Gate>;

/// The prompt hook's gates before any engine is asked, in order. Each is cheap (no engine, no file
/// walk) and runs only when the ones before it let the prompt pass.
pub const PROMPT_GATES: [PromptCheck; 4] =
    [|l, _| all_off(l), |l, _| paused(l), |l, _| config_error(l), |_, prompt| prompt_gate(prompt)];

/// The spawn hooks' gates before any engine is asked, in order (the PostToolUse hook meets them too).
pub const SPAWN_GATES: [SpawnCheck; 4] =
    [|l, _| routing_off(l), |l, _| paused(l), |l, _| config_error(l), |_, tool| not_a_spawn(tool)];

fn all_off(loaded: &Loaded) -> Option<Gate> {
    let c = &loaded.config;
    (!c.routing.enabled && !c.skills.enabled).then_some(Gate::AllOff)
}

fn routing_off(loaded: &Loaded) -> Option<Gate> {
    (!loaded.config.routing.enabled).then_some(Gate::RoutingOff)
}

fn paused(_: &Loaded) -> Option<Gate> {
    state::is_paused().then_some(Gate::Paused)
}

/// A config file that does not load, with the loader's errors. (A provider's own settings are
/// checked later, when the run builds its gateway; they are the same gate.)
fn config_error(loaded: &Loaded) -> Option<Gate> {
    (!loaded.errors.is_empty()).then(|| Gate::ConfigError(loaded.errors.clone()))
}

/// The gate of a gateway that takes no question: its providers' own settings do not load (checked
/// once the run has built it; the config file's errors and the pause are gates before that).
pub fn refused(gateway: &Gateway) -> Option<Gate> {
    match gateway.admit(Purpose::Check) {
        Err(Refusal::Config(errors)) => Some(Gate::ConfigError(errors)),
        _ => None,
    }
}

fn not_a_spawn(tool_name: Option<&str>) -> Option<Gate> {
    match tool_name {
        Some(t) if !crate::claude_code::is_spawn_tool(t) => Some(Gate::NotASpawn(t.to_string())),
        _ => None,
    }
}

/// Why a prompt is not for routing whatever the config says: a hand-back, a slash command, too short.
pub fn prompt_gate(prompt: &str) -> Option<Gate> {
    let text = prompt.trim_start();
    if text.starts_with("<agent-message") || text.starts_with("<task-notification") {
        return Some(Gate::HandBack);
    }
    if let Some(first) = text.split_whitespace().next()
        && first.len() > 1
        && first.starts_with('/')
        && first[1..].chars().all(|c| c.is_alphanumeric() || "-_:.".contains(c))
    {
        return Some(Gate::SlashCommand(first.to_string()));
    }
    let words = words(text);
    (words < MIN_WORDS).then_some(Gate::ShortPrompt(words))
}

/// How many words a text has, for the length gates: runs of characters between spaces, except that
/// each Chinese or Japanese character counts as a word of its own. Those scripts put no spaces
/// between words, so counting by spaces made a 40-character Chinese request one or two "words";
/// counting each character, as word processors do for them, puts it at a length its English
/// translation has. Korean separates its words with spaces and is counted by them.
pub fn words(text: &str) -> usize {
    let (mut n, mut in_word) = (0, false);
    for c in text.chars() {
        if is_cjk(c) {
            n += 1;
            in_word = false;
        } else if c.is_whitespace() || is_cjk_punctuation(c) {
            in_word = false;
        } else if !in_word {
            n += 1;
            in_word = true;
        }
    }
    n
}

/// Han ideographs, Hiragana and Katakana (full and half width).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x31F0..=0x31FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF
        | 0xFF66..=0xFF9F | 0x20000..=0x2FA1F)
}

/// The ideographic space and punctuation, and full-width punctuation: they end a word, as a space does.
fn is_cjk_punctuation(c: char) -> bool {
    matches!(c as u32, 0x3000..=0x303F | 0xFF01..=0xFF0F | 0xFF1A..=0xFF20 | 0xFF3B..=0xFF40 | 0xFF5B..=0xFF65)
}

/// The first of the spawn hooks' gates that a call of `tool_name` meets.
pub fn spawn_gate(loaded: &Loaded, tool_name: Option<&str>) -> Option<Gate> {
    SPAWN_GATES.iter().find_map(|check| check(loaded, tool_name))
}

/// Why the rule's tier is not settled: the one bar both the hint and enforcement must clear.
#[derive(Debug, Clone, PartialEq)]
pub enum Unsettled {
    /// The engine failed, timed out or was not there, or the gateway took no question.
    EngineFailed(Refusal),
    Abstained(Feature),
    LowConfidence {
        feature: Feature,
        confidence: f64,
        min: f64,
    },
    /// The rule gave no tier.
    NoTier,
}

impl fmt::Display for Unsettled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unsettled::EngineFailed(e) => write!(f, "no engine answer: {e}"),
            Unsettled::Abstained(feature) => write!(f, "the engine abstained on {feature}"),
            Unsettled::LowConfidence { feature, confidence, min } => {
                write!(f, "{feature} confidence {confidence:.2} is below [routing] min_confidence {min:.2}")
            }
            Unsettled::NoTier => f.write_str("no tier"),
        }
    }
}

/// Why the prompt hook gives no routing hint (once past its gates).
#[derive(Debug, Clone, PartialEq)]
pub enum NoRoutingHint {
    RoutingOff,
    Unsettled(Unsettled),
    /// `[routing] hint = false`: the prompt is logged only.
    HintsOff,
    /// The rule's tier is one Claude Code refuses subagents in this session
    /// (`CLAUDE_CODE_SUBAGENT_NO_SMALL_MODELS`).
    RefusedTier(crate::tier::Tier),
}

impl fmt::Display for NoRoutingHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoRoutingHint::RoutingOff => f.write_str(ROUTING_OFF),
            NoRoutingHint::Unsettled(u) => u.fmt(f),
            NoRoutingHint::HintsOff => f.write_str("hints are off ([routing] hint = false): log only"),
            NoRoutingHint::RefusedTier(tier) => write!(
                f,
                "{} is set: Claude Code refuses {tier} to subagents here, so no hint to it",
                crate::claude_code::SUBAGENT_NO_SMALL_MODELS
            ),
        }
    }
}

/// Why the skill picker picked nothing, or why its pick gives no hint.
#[derive(Debug, Clone, PartialEq)]
pub enum NoSkillHint {
    PickerOff,
    /// No engine was asked.
    NotAsked(super::skills::NotAsked),
    /// The engine failed or timed out, or the gateway took no question.
    EngineFailed(Refusal),
    Abstained,
    /// The engine picked `none`.
    PickedNone,
    LowConfidence {
        confidence: f64,
        min: f64,
    },
    /// `[skills] hint = false`: the pick is recorded only.
    HintsOff,
}

impl fmt::Display for NoSkillHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoSkillHint::PickerOff => f.write_str("the skill picker is off ([skills] enabled = false)"),
            NoSkillHint::NotAsked(why) => why.fmt(f),
            NoSkillHint::EngineFailed(e) => e.fmt(f),
            NoSkillHint::Abstained => f.write_str("the engine abstained"),
            NoSkillHint::PickedNone => f.write_str("the engine picked no skill"),
            NoSkillHint::LowConfidence { confidence, min } => {
                write!(f, "confidence {confidence:.2} is below [skills] min_confidence {min:.2}")
            }
            NoSkillHint::HintsOff => f.write_str("hints are off ([skills] hint = false): record only"),
        }
    }
}

/// `Serialize` as the reason's sentence: `--json` carries what the text output says.
macro_rules! serialize_as_sentence {
    ($($t:ty),* $(,)?) => {$(
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    )*};
}
pub(crate) use serialize_as_sentence;

serialize_as_sentence!(Gate, Unsettled, NoRoutingHint, NoSkillHint);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_that_are_no_task() {
        let gate = prompt_gate;
        assert!(
            matches!(gate("/compact keep the routing notes and the test plan for later please ok"), Some(Gate::SlashCommand(c)) if c == "/compact")
        );
        assert_eq!(gate("/system1:toggle off"), Some(Gate::SlashCommand("/system1:toggle".into())));
        assert_eq!(gate("Plan is ok, implement"), Some(Gate::ShortPrompt(4)));
        assert_eq!(gate("Plan is ok, implement").map(|g| g.to_string()).as_deref(), Some("4 words, fewer than 10"));
        assert_eq!(
            gate(
                "<task-notification><status>completed</status> lots of words here to pass the count</task-notification>"
            ),
            Some(Gate::HandBack)
        );
        assert_eq!(
            gate("  <agent-message from=x> one two three four five six seven eight nine ten"),
            Some(Gate::HandBack)
        );
        let task = "Read src/main.rs and explain how the command line is parsed and dispatched";
        assert_eq!(gate(task), None);
        assert_eq!(gate("/home/u/app/main.rs crashes on start, find out why and fix the cause please"), None);
    }

    #[test]
    fn chinese_and_japanese_characters_count_as_words() {
        // Without them, the count is the spaces' count.
        for text in ["Plan is ok, implement", "  a\tb\nc  ", "", "fix: the `x`-flag, (see #12)"] {
            assert_eq!(words(text), text.split_whitespace().count(), "{text:?}");
        }
        // 40 characters of Chinese (design a schema for a multi-tenant billing system ...): 36 Han,
        // and the full-width comma and full stop end words without being ones.
        let zh = "为多租户计费系统设计数据库模式，包括发票、订阅和用量记录，并说明索引选择。";
        assert_eq!(words(zh), zh.chars().filter(|c| !"，、。".contains(*c)).count());
        assert!(words(zh) >= MIN_WORDS);
        assert_eq!(prompt_gate(zh), None);
        // Mixed: each Han character one word, each Latin run one.
        assert_eq!(words("修复 src/main.rs 的拼写错误"), 2 + 1 + 1 + 4);
        // Japanese kana and kanji; Korean by its spaces.
        assert_eq!(words("タイポを直して"), 7);
        assert_eq!(words("이 함수의 오타를 고쳐 주세요"), 5);
        assert_eq!(prompt_gate("修复拼写错误"), Some(Gate::ShortPrompt(6)));
    }

    #[test]
    fn reasons_serialize_as_their_sentences() {
        let low = Unsettled::LowConfidence { feature: Feature::Design, confidence: 0.554, min: 0.6 };
        assert_eq!(low.to_string(), "design confidence 0.55 is below [routing] min_confidence 0.60");
        assert_eq!(serde_json::to_value(NoRoutingHint::Unsettled(low.clone())).unwrap(), low.to_string());
        assert_eq!(
            serde_json::to_value(Gate::ConfigError(vec!["a".into(), "b".into()])).unwrap(),
            "config error: a; b"
        );
        assert_eq!(NoRoutingHint::RoutingOff.to_string(), Gate::RoutingOff.to_string());
    }
}
