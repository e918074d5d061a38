//! Enforcement: what `[routing] enforce` does with a spawn's `model` once the rule has given the
//! brief a tier, and the rewrite of the Agent call's input that sets it.
//!
//! The rewrite changes `model` and nothing else: every other member of the input, known or not,
//! is copied as the exact bytes Claude Code sent, in its order. Claude Code (2.1.197 and 2.1.332)
//! applies a PreToolUse hook's `updatedInput` to an Agent call without any `permissionDecision`,
//! so the hook grants nothing: the user's own permission rules decide about the rewritten call as
//! they would have about the original (docs/routing.md#enforcement).

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use std::fmt;

use super::entry::Kept;
use super::gate::{Unsettled, serialize_as_sentence};
use crate::config::Enforce;
use crate::tier::Tier;

/// The `subagent_type` that always runs on its parent's model, whatever `model` says.
pub const FORK: &str = "fork";

/// Why a call passes as Claude made it.
#[derive(Debug, Clone, PartialEq)]
pub enum Left {
    /// `[routing] enforce = "off"`.
    RecordOnly,
    Fork,
    /// The brief has this many words, fewer than `MIN_WORDS`.
    ShortBrief(usize),
    /// The call's `model` names no tier (`inherit`, something not text), as its text.
    NotATier(String),
    /// `fill`, and the call names this tier.
    ModelGiven(Tier),
    /// The rule's tier is not sure enough to act on.
    Unsettled(Unsettled),
    /// The call already names the rule's tier.
    AtTier(Tier),
    /// The call names a tier above the rule's, and the mode only raises.
    AboveRule {
        named: Tier,
        rule: Tier,
    },
    /// The call's input could not be rewritten (the rewrite's words).
    RewriteFailed(String),
    /// Claude Code's `CLAUDE_CODE_SUBAGENT_MODEL` is set in the hook's environment: it, not the
    /// call's `model`, decides the subagent's model, so a rewrite would change nothing.
    SubagentModel(crate::claude_code::SubagentModel),
    /// `CLAUDE_CODE_SUBAGENT_NO_SMALL_MODELS` is set and the rule's tier is one the session refuses.
    NoSmallModels(Tier),
}

impl Left {
    /// The reason as the routing log keeps it: `None` for the ones that write no entry or need no
    /// code (record-only, an engine that gave no answer).
    pub fn kept(&self) -> Option<Kept> {
        match self {
            Left::RecordOnly | Left::RewriteFailed(_) => None,
            Left::Fork => Some(Kept::Fork),
            Left::ShortBrief(_) => Some(Kept::ShortBrief),
            Left::NotATier(_) => Some(Kept::NotATier),
            Left::ModelGiven(_) => Some(Kept::ModelGiven),
            Left::Unsettled(Unsettled::Abstained(_)) => Some(Kept::Abstained),
            Left::Unsettled(Unsettled::LowConfidence { .. }) => Some(Kept::LowConfidence),
            Left::Unsettled(Unsettled::EngineFailed(_) | Unsettled::NoTier) => None,
            Left::AtTier(_) => Some(Kept::AtTier),
            Left::AboveRule { .. } => Some(Kept::AboveRule),
            Left::SubagentModel(_) => Some(Kept::SubagentModel),
            Left::NoSmallModels(_) => Some(Kept::NoSmallModels),
        }
    }
}

impl fmt::Display for Left {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Left::RecordOnly => f.write_str("record only ([routing] enforce = \"off\")"),
            Left::Fork => f.write_str("a fork always runs on its parent's model"),
            Left::ShortBrief(words) => write!(f, "the brief has {words} words, fewer than {}", super::MIN_WORDS),
            Left::NotATier(model) => write!(f, "model {model:?} names no tier"),
            Left::ModelGiven(tier) => write!(f, "the call names a model ({tier}), and fill sets only a missing one"),
            Left::Unsettled(u) => u.fmt(f),
            Left::AtTier(tier) => write!(f, "the call already names {tier}"),
            Left::AboveRule { named, rule } => {
                write!(f, "the call names {named}, above the rule's {rule}, and only set lowers a model")
            }
            Left::RewriteFailed(e) => f.write_str(e),
            Left::SubagentModel(var) if var.force => {
                write!(
                    f,
                    "{var} is set: Claude Code's own setting decides every subagent's model over the call's, so no rewrite"
                )
            }
            Left::SubagentModel(var) => write!(
                f,
                "{var} is set: Claude Code 2.1.197 lets it decide every subagent's model over the call's (2.1.332 only with {}), so no rewrite",
                crate::claude_code::SUBAGENT_MODEL_FORCE
            ),
            Left::NoSmallModels(tier) => write!(
                f,
                "{} is set: Claude Code refuses {tier} to subagents here, so no rewrite to it",
                crate::claude_code::SUBAGENT_NO_SMALL_MODELS
            ),
        }
    }
}

serialize_as_sentence!(Left);

/// The `model` an Agent call names, as enforcement reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    /// No `model` (absent, `null` or empty): the agent definition's model or the parent's applies.
    None,
    /// A model naming a tier (`haiku`, `claude-opus-4-8`).
    Tier(Tier),
    /// A model that names no tier (`inherit`, `best`, something of another type), as its text.
    Other(String),
}

impl Model {
    pub fn read(value: Option<&serde_json::Value>) -> Model {
        match value {
            None | Some(serde_json::Value::Null) => Model::None,
            Some(serde_json::Value::String(s)) if s.trim().is_empty() => Model::None,
            Some(serde_json::Value::String(s)) => Tier::of(s).map_or_else(|| Model::Other(s.clone()), Model::Tier),
            Some(other) => Model::Other(other.to_string()),
        }
    }

    pub fn tier(&self) -> Option<Tier> {
        match self {
            Model::Tier(t) => Some(*t),
            _ => None,
        }
    }
}

/// Why `mode` leaves the call alone whatever tier the rule gives, known before any engine is asked.
pub fn before_engine(mode: Enforce, model: &Model, subagent_type: Option<&str>, brief_words: usize) -> Option<Left> {
    if mode == Enforce::Off {
        return Some(Left::RecordOnly);
    }
    if subagent_type == Some(FORK) {
        return Some(Left::Fork);
    }
    if brief_words < super::MIN_WORDS {
        return Some(Left::ShortBrief(brief_words));
    }
    match model {
        Model::Other(m) => Some(Left::NotATier(m.clone())),
        Model::Tier(t) if mode == Enforce::Fill => Some(Left::ModelGiven(*t)),
        _ => None,
    }
}

/// Whether some tier of the rule could change the call (when not, and nothing is logged, the hook
/// need not ask the engine at all): the only such case `before_engine` leaves open is raise on a
/// call that already names the top tier.
pub fn could_change(mode: Enforce, model: &Model) -> bool {
    let top = Tier::ALL[Tier::COUNT - 1];
    !(mode == Enforce::Raise && model.tier() == Some(top))
}

/// What `mode` does with a call naming `model` when the rule's tier for its brief is `rule`
/// (`before_engine` has let it through): the tier to set, or why the call stays.
pub fn verdict(mode: Enforce, model: &Model, rule: Tier) -> Result<Tier, Left> {
    match model.tier() {
        None => Ok(rule),
        Some(t) if t == rule => Err(Left::AtTier(rule)),
        Some(t) if t < rule => Ok(rule),
        Some(_) if mode == Enforce::Set => Ok(rule),
        Some(named) => Err(Left::AboveRule { named, rule }),
    }
}

/// The tool input `raw` (a JSON object) with `model` set to `tier`'s name: every other member is
/// copied byte for byte, in order; `model` keeps its place, or comes last when it was absent.
pub fn rewrite(raw: &str, tier: Tier) -> Result<String, String> {
    let Members(members) =
        serde_json::from_str(raw).map_err(|e| format!("the tool input is not a JSON object: {e}"))?;
    let model = serde_json::to_string(tier.name()).map_err(|e| e.to_string())?;
    let mut out = String::with_capacity(raw.len() + 16);
    out.push('{');
    let mut set = false;
    for (key, value) in &members {
        let value = if key == "model" {
            if set {
                // A second `model` member would override the one set; JSON gives no order to keep.
                continue;
            }
            set = true;
            model.as_str()
        } else {
            value.get()
        };
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(key).map_err(|e| e.to_string())?);
        out.push(':');
        out.push_str(value);
    }
    if !set {
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str("\"model\":");
        out.push_str(&model);
    }
    out.push('}');
    Ok(out)
}

/// The PreToolUse answer that rewrites the call to `updated_input` (a JSON object's text).
pub fn hook_output(updated_input: &str) -> String {
    let event = crate::claude_code::event::PRE_TOOL_USE;
    format!(r#"{{"hookSpecificOutput":{{"hookEventName":"{event}","updatedInput":{updated_input}}}}}"#)
}

/// A JSON object's members in order, each value as the text it was written in.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut out = Vec::new();
                while let Some(member) = map.next_entry::<String, &'de RawValue>()? {
                    out.push(member);
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn model(v: Value) -> Model {
        Model::read(Some(&v))
    }

    #[test]
    fn models_read_as_tiers_or_not() {
        assert_eq!(Model::read(None), Model::None);
        assert_eq!(model(Value::Null), Model::None);
        assert_eq!(model(json!(" ")), Model::None);
        assert_eq!(model(json!("haiku")), Model::Tier(Tier::Haiku));
        assert_eq!(model(json!("claude-opus-4-8[1m]")), Model::Tier(Tier::Opus));
        assert_eq!(model(json!("inherit")), Model::Other("inherit".into()));
        assert_eq!(model(json!(3)), Model::Other("3".into()));
    }

    #[test]
    fn each_mode_changes_only_what_it_says() {
        use Enforce::*;
        use Tier::*;
        let none = Model::None;
        let t = |tier| Model::Tier(tier);
        // fill: only a call without a model.
        assert_eq!(verdict(Fill, &none, Sonnet), Ok(Sonnet));
        assert_eq!(before_engine(Fill, &t(Haiku), None, 20).and_then(|l| l.kept()), Some(Kept::ModelGiven));
        // raise: haiku → sonnet; opus stays above sonnet; sonnet stays sonnet.
        assert_eq!(before_engine(Raise, &t(Haiku), None, 20), None);
        assert_eq!(verdict(Raise, &t(Haiku), Sonnet), Ok(Sonnet));
        assert_eq!(verdict(Raise, &none, Haiku), Ok(Haiku));
        assert_eq!(verdict(Raise, &t(Opus), Sonnet).unwrap_err().kept(), Some(Kept::AboveRule));
        assert_eq!(verdict(Raise, &t(Sonnet), Sonnet).unwrap_err().kept(), Some(Kept::AtTier));
        // set: opus → sonnet as well.
        assert_eq!(verdict(Set, &t(Opus), Sonnet), Ok(Sonnet));
        assert_eq!(verdict(Set, &t(Haiku), Opus), Ok(Opus));
        assert_eq!(verdict(Set, &t(Fable), Haiku), Ok(Haiku));
        assert_eq!(verdict(Set, &t(Opus), Opus).unwrap_err().kept(), Some(Kept::AtTier));
    }

    #[test]
    fn some_calls_pass_whatever_the_engine_says() {
        use Enforce::*;
        let kept = |mode, model: &Model, ty, words| before_engine(mode, model, ty, words).map(|l| l.kept());
        assert_eq!(kept(Off, &Model::None, None, 20), Some(None), "record only");
        for mode in [Fill, Raise, Set] {
            assert_eq!(kept(mode, &Model::None, Some("fork"), 20), Some(Some(Kept::Fork)));
            assert_eq!(kept(mode, &Model::None, None, 9), Some(Some(Kept::ShortBrief)));
            assert_eq!(kept(mode, &Model::Other("inherit".into()), None, 20), Some(Some(Kept::NotATier)));
            assert_eq!(kept(mode, &Model::None, Some("general-purpose"), 10), None);
        }
        assert!(could_change(Set, &Model::Tier(Tier::Fable)));
        assert!(!could_change(Raise, &Model::Tier(Tier::Fable)), "nothing is above the top tier");
        assert!(could_change(Raise, &Model::Tier(Tier::Opus)));
    }

    #[test]
    fn the_rewrite_sets_model_and_copies_every_other_byte() {
        // Members Claude Code sends, and some it might: odd numbers, escapes, nesting, unicode.
        let raw = r#"{"description":"survey","prompt":"Say \"hi\" \u00e9\n","subagent_type":"general-purpose","model":"haiku","run_in_background":false,"x_future":{"n":1.50,"big":123456789012345678901234567890,"e":1E+2,"list":[null,{"a":"}"}]},"name":"é"}"#;
        let out = rewrite(raw, Tier::Sonnet).unwrap();
        assert_eq!(out, raw.replace(r#""model":"haiku""#, r#""model":"sonnet""#));
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["model"], "sonnet");

        // No model: added last. Empty object: the only member.
        let raw = r#"{"prompt":"p","subagent_type":"Explore"}"#;
        assert_eq!(rewrite(raw, Tier::Opus).unwrap(), r#"{"prompt":"p","subagent_type":"Explore","model":"opus"}"#);
        assert_eq!(rewrite("{}", Tier::Haiku).unwrap(), r#"{"model":"haiku"}"#);
        // A null model is replaced in place; a duplicate is dropped so that the one set holds.
        assert_eq!(
            rewrite(r#"{"model":null,"prompt":"p","model":"opus"}"#, Tier::Haiku).unwrap(),
            r#"{"model":"haiku","prompt":"p"}"#
        );
        // Whitespace between members is not a member.
        assert_eq!(
            rewrite("{ \"a\" : [1, 2] ,\"model\":\"x\" }", Tier::Fable).unwrap(),
            r#"{"a":[1, 2],"model":"fable"}"#
        );

        for bad in ["[1]", "\"x\"", "{", "{\"a\":}", ""] {
            assert!(rewrite(bad, Tier::Haiku).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_hook_answer_carries_only_the_updated_input() {
        let out: Value = serde_json::from_str(&hook_output(r#"{"model":"sonnet","prompt":"p"}"#)).unwrap();
        assert_eq!(
            out,
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "updatedInput": {"model": "sonnet", "prompt": "p"}}})
        );
    }
}
