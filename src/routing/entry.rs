//! One line of the routing log, typed. The hooks write entries (`prompt`, `agent`, `skill`); labelling
//! and `system1 outcomes` add labels and outcomes to them in place; the session-start nudge,
//! `calibrate`, `evaluate` and the fits read them. Every one of them goes through [`Entry`].
//!
//! On disk an entry is one compact JSON object, its keys in the order of the fields below, a field
//! without a value left out (earlier versions wrote some of them as `null`, which reads the same).
//! Keys this version does not know are kept in [`Entry::other`], and a feature key or value it
//! cannot read is kept inside its map, so that a rewrite by this version loses nothing a newer one
//! wrote. A line whose known keys have the wrong type is no entry: readers skip it and rewrites keep
//! it verbatim (see `log`).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::rule::Chosen;
use crate::config::Enforce;
use crate::feature::Feature;
use crate::tier::Tier;

/// One record of the routing log. Which groups a record fills depends on its [`Source`]: a prompt
/// record has [`Routing`] and [`Decided`]; an agent record those, [`Call`] and [`Enforcement`]; a
/// skill record [`Decided`] and [`SkillPick`]; a spawn record [`Ran`] and `tool_use_id`. Labels ([`Labelling`])
/// go on prompt and agent records, outcomes ([`Judged`]) on agent records. On disk the groups are
/// flattened: one object, keys in the order of the groups and their fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Entry {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// RFC 3339, UTC, milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The nearest folder above `cwd` holding `.git`, else the `log_dirs` entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The prompt, or for an agent entry the subagent's brief.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,

    #[serde(flatten)]
    pub routing: Routing,
    #[serde(flatten)]
    pub decided: Decided,
    #[serde(flatten)]
    pub skill_pick: SkillPick,
    #[serde(flatten)]
    pub call: Call,
    #[serde(flatten)]
    pub enforcement: Enforcement,
    #[serde(flatten)]
    pub ran: Ran,
    #[serde(flatten)]
    pub labelling: Labelling,
    #[serde(flatten)]
    pub judged: Judged,
    /// Every key this version does not know, as it was. Last: the groups before it take their keys
    /// first, and this keeps what is left.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// What routing gave (prompt and agent records).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Routing {
    /// The engine's answer per feature, calibrated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub features: Option<PerFeature<LoggedAnswer>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_tier: Option<Tier>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<Chosen>,
}

/// What was decided and by which engine (prompt, agent and skill records).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Decided {
    /// The rule's tier for prompt and agent records; the skill picked for skill records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// Whether the hint reached Claude.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hinted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
    /// What went off this machine to engines hosted elsewhere (absent when nothing did, and in
    /// entries older versions wrote).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sent: Vec<crate::state::Sent>,
}

/// The skill picker (skill records).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SkillPick {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidates: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill_confidence: Option<f64>,
}

/// The Agent tool call a subagent was spawned by (agent records; spawn records share `tool_use_id`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Call {
    /// The `model` the orchestrator gave the Agent tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chosen: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Enforcement (agent records): what the agent hook did with the spawn's `model`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Enforcement {
    /// The `[routing] enforce` mode the hook ran in (`off`: record only; absent in older entries,
    /// which were all record-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enforce: Option<Enforce>,
    /// Which of Claude Code's hooks acted on the spawn (absent in older entries, which were all
    /// written by the PreToolUse hook).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
    /// The tier `chosen` names, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier_before: Option<Tier>,
    /// The tier the hook set `model` to; absent when it left the call as Claude made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier_after: Option<Tier>,
    /// Why an enforcing hook left the call as it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<Kept>,
}

/// What the spawn ran on (spawn records, written by the PostToolUse hook; `tool_use_id` names the
/// agent record they complete).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Ran {
    /// The tool response's `resolvedModel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ran_tier: Option<Tier>,
    /// Whether the spawn ran on the agent entry's `tier_after`; absent when the hook changed nothing
    /// or the tier that ran is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub took_effect: Option<bool>,
}

/// Labels (`calibrate label`), on prompt and agent records.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Labelling {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<PerFeature<bool>>,
    /// The tier the task needed, by the labeller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_tier: Option<Tier>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labelled_by: Option<Labeller>,
}

/// Outcomes of agent records (`system1 outcomes --apply`, or a labeller).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Judged {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome_reason: Option<String>,
    /// The tier that ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome_tier: Option<Tier>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome_source: Option<OutcomeSource>,
    /// Why an automatic outcome wants a person's look.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome_doubtful: Option<String>,
}

/// Which hook wrote the entry. A source this version does not know is kept as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The prompt hook's routing of a prompt.
    Prompt,
    /// The agent hook's routing of a subagent brief.
    Agent,
    /// The prompt hook's skill pick.
    Skill,
    /// What a spawn ran on, from the PostToolUse hook (completes the agent entry of its `tool_use_id`).
    Spawn,
    Other(String),
}

impl Source {
    pub fn as_str(&self) -> &str {
        match self {
            Source::Prompt => "prompt",
            Source::Agent => "agent",
            Source::Skill => "skill",
            Source::Spawn => "spawn",
            Source::Other(s) => s,
        }
    }
}

impl Serialize for Source {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Source, D::Error> {
        let s = String::deserialize(d)?;
        Ok(match s.as_str() {
            "prompt" => Source::Prompt,
            "agent" => Source::Agent,
            "skill" => Source::Skill,
            "spawn" => Source::Spawn,
            _ => Source::Other(s),
        })
    }
}

/// One feature's answer as the log keeps it: `{"answer": true, "confidence": 0.82}`; `answer` is
/// `null` where the engine abstained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedAnswer {
    pub answer: Option<bool>,
    pub confidence: f64,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Why an enforcing agent hook left a spawn's `model` as Claude gave it. A reason this version
/// does not know is kept as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// A fork always runs on its parent's model.
    Fork,
    /// A brief under the word limit says too little to route on.
    ShortBrief,
    /// The engine abstained on a feature.
    Abstained,
    /// A feature's confidence is under `[routing] min_confidence`.
    LowConfidence,
    /// The call already names the rule's tier.
    AtTier,
    /// `fill`: the call names a model.
    ModelGiven,
    /// `fill` or `raise`: the call names a model above the rule's tier.
    AboveRule,
    /// The call's `model` names no tier (such as `inherit`).
    NotATier,
    /// `CLAUDE_CODE_SUBAGENT_MODEL` was set in the hook's environment: Claude Code's own setting
    /// decides the subagent's model.
    SubagentModel,
    /// `CLAUDE_CODE_SUBAGENT_NO_SMALL_MODELS` was set and the rule's tier is one the session
    /// refuses subagents.
    NoSmallModels,
    Other(String),
}

impl Kept {
    const NAMES: [(Kept, &'static str); 10] = [
        (Kept::Fork, "fork"),
        (Kept::ShortBrief, "short_brief"),
        (Kept::Abstained, "abstained"),
        (Kept::LowConfidence, "low_confidence"),
        (Kept::AtTier, "at_tier"),
        (Kept::ModelGiven, "model_given"),
        (Kept::AboveRule, "above_rule"),
        (Kept::NotATier, "not_a_tier"),
        (Kept::SubagentModel, "subagent_model_env"),
        (Kept::NoSmallModels, "no_small_models_env"),
    ];

    pub fn as_str(&self) -> &str {
        match self {
            Kept::Other(s) => s,
            known => Kept::NAMES.iter().find(|(k, _)| k == known).map_or("", |(_, name)| name),
        }
    }
}

impl Serialize for Kept {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Kept {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Kept, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Kept::NAMES.iter().find(|(_, name)| *name == s).map_or(Kept::Other(s), |(k, _)| k.clone()))
    }
}

/// The Claude Code hook an agent record was written from: the PreToolUse hook on the Agent call,
/// or the plugin's function-hook module at `agent.spawn` (docs/routing.md#two-ways-to-set-the-model).
/// A name this version does not know is kept as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    PreToolUse,
    AgentSpawn,
    Other(String),
}

impl Via {
    const NAMES: [(Via, &'static str); 2] = [(Via::PreToolUse, "pre_tool_use"), (Via::AgentSpawn, "agent_spawn")];

    pub fn as_str(&self) -> &str {
        match self {
            Via::Other(s) => s,
            known => Via::NAMES.iter().find(|(k, _)| k == known).map_or("", |(_, name)| name),
        }
    }
}

impl Serialize for Via {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Via {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Via, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Via::NAMES.iter().find(|(_, name)| *name == s).map_or(Via::Other(s), |(k, _)| k.clone()))
    }
}

/// Whether a subagent got the job done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Succeeded,
    Failed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
        }
    }
}

impl std::str::FromStr for Outcome {
    type Err = String;

    fn from_str(s: &str) -> Result<Outcome, String> {
        match s {
            "succeeded" => Ok(Outcome::Succeeded),
            "failed" => Ok(Outcome::Failed),
            _ => Err(format!("outcome must be succeeded or failed, got {s:?}")),
        }
    }
}

/// Who labelled: a person who confirmed it, or Claude alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Labeller {
    User,
    Claude,
}

impl std::str::FromStr for Labeller {
    type Err = String;

    fn from_str(s: &str) -> Result<Labeller, String> {
        match s {
            "user" => Ok(Labeller::User),
            "claude" => Ok(Labeller::Claude),
            _ => Err(format!("--by must be user or claude, got {s:?}")),
        }
    }
}

impl fmt::Display for Labeller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Labeller::User => "user",
            Labeller::Claude => "claude",
        })
    }
}

/// Where an outcome came from: the outcome rules over the transcripts, or a labeller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutcomeSource {
    Auto,
    User,
    Claude,
}

impl From<Labeller> for OutcomeSource {
    fn from(l: Labeller) -> Self {
        match l {
            Labeller::User => OutcomeSource::User,
            Labeller::Claude => OutcomeSource::Claude,
        }
    }
}

/// What an entry still lacks, as `calibrate pending` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Need {
    /// A label for one of the four features or more.
    Labels,
    /// The tier the task needed (asked along with the features).
    Tier,
    /// A subagent spawn's outcome, or a person's look at a doubtful automatic one.
    Outcome,
}

impl Entry {
    /// Prompt and agent entries: the ones routing wrote, and the only ones that take labels.
    pub fn is_routing(&self) -> bool {
        matches!(self.source, Some(Source::Prompt | Source::Agent))
    }

    pub fn is_agent(&self) -> bool {
        self.source == Some(Source::Agent)
    }

    /// The entry's feature labels (values it cannot read left out).
    pub fn feature_labels(&self) -> BTreeMap<Feature, bool> {
        self.labelling.labels.as_ref().map(|l| l.iter().map(|(f, v)| (f, *v)).collect()).unwrap_or_default()
    }

    /// What the entry still lacks: every feature's label (and then the tier), and for a spawn its
    /// outcome, or a person's word on an automatic outcome flagged doubtful. Empty for entries that
    /// take no labels.
    pub fn needs(&self) -> Vec<Need> {
        Decisive {
            source: self.source.as_ref(),
            labels: self.labelling.labels.as_ref(),
            label_tier: self.labelling.label_tier,
            outcome: self.judged.outcome,
            outcome_source: self.judged.outcome_source,
            doubtful: self.judged.outcome_doubtful.is_some(),
        }
        .needs()
    }

    /// Whether the entry waits for labels: what `calibrate pending` lists and the session-start
    /// nudge counts, so that the number the nudge gives is the number `/system1:calibrate` shows.
    pub fn needs_labels(&self) -> bool {
        !self.needs().is_empty()
    }
}

/// [`Entry::needs_labels`] of a log line, reading only the fields it depends on (so that counting a
/// long log stays fast); `false` when those do not read.
pub fn line_needs_labels(line: &str) -> bool {
    #[derive(Deserialize)]
    struct Fields {
        #[serde(default)]
        source: Option<Source>,
        #[serde(default)]
        labels: Option<PerFeature<bool>>,
        #[serde(default)]
        label_tier: Option<Tier>,
        #[serde(default)]
        outcome: Option<Outcome>,
        #[serde(default)]
        outcome_source: Option<OutcomeSource>,
        #[serde(default)]
        outcome_doubtful: Option<String>,
    }
    let Ok(f) = serde_json::from_str::<Fields>(line) else { return false };
    let decisive = Decisive {
        source: f.source.as_ref(),
        labels: f.labels.as_ref(),
        label_tier: f.label_tier,
        outcome: f.outcome,
        outcome_source: f.outcome_source,
        doubtful: f.outcome_doubtful.is_some(),
    };
    !decisive.needs().is_empty()
}

/// The fields of an entry that decide what it needs: the one definition behind `Entry::needs` and
/// `line_needs_labels`.
struct Decisive<'a> {
    source: Option<&'a Source>,
    labels: Option<&'a PerFeature<bool>>,
    label_tier: Option<Tier>,
    outcome: Option<Outcome>,
    outcome_source: Option<OutcomeSource>,
    doubtful: bool,
}

impl Decisive<'_> {
    fn needs(&self) -> Vec<Need> {
        let mut out = Vec::new();
        if !matches!(self.source, Some(Source::Prompt | Source::Agent)) {
            return out;
        }
        if !self.labels.is_some_and(PerFeature::has_all) {
            out.push(Need::Labels);
            // Nothing measured needs the tier on its own, so an entry whose features are labelled
            // is not kept waiting for it.
            if self.label_tier.is_none() {
                out.push(Need::Tier);
            }
        }
        if self.source == Some(&Source::Agent) {
            let doubtful = self.doubtful && self.outcome_source == Some(OutcomeSource::Auto);
            if self.outcome.is_none() || doubtful {
                out.push(Need::Outcome);
            }
        }
        out
    }
}

/// A value per routing feature, as the log keeps them: `{"read_only": ..., "design": ...}`. Known
/// features come first, in their order. A key that is no feature of this version, or a value it
/// cannot read, is kept as it was (and counts as no value).
#[derive(Debug, Clone, PartialEq)]
pub struct PerFeature<T> {
    known: BTreeMap<Feature, T>,
    other: Map<String, Value>,
}

impl<T> Default for PerFeature<T> {
    fn default() -> Self {
        PerFeature { known: BTreeMap::new(), other: Map::new() }
    }
}

impl<T> PerFeature<T> {
    pub fn get(&self, f: Feature) -> Option<&T> {
        self.known.get(&f)
    }

    /// Sets `f`'s value, replacing an unreadable one kept under its name.
    pub fn insert(&mut self, f: Feature, value: T) {
        self.other.remove(f.name());
        self.known.insert(f, value);
    }

    pub fn iter(&self) -> impl Iterator<Item = (Feature, &T)> {
        self.known.iter().map(|(f, v)| (*f, v))
    }

    /// Whether every feature has a value.
    pub fn has_all(&self) -> bool {
        Feature::ALL.iter().all(|f| self.get(*f).is_some())
    }
}

impl<T> FromIterator<(Feature, T)> for PerFeature<T> {
    fn from_iter<I: IntoIterator<Item = (Feature, T)>>(iter: I) -> Self {
        PerFeature { known: iter.into_iter().collect(), other: Map::new() }
    }
}

impl<T: Serialize> Serialize for PerFeature<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.known.len() + self.other.len()))?;
        for (f, v) in &self.known {
            map.serialize_entry(f.name(), v)?;
        }
        for (k, v) in &self.other {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for PerFeature<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut out = PerFeature::default();
        for (k, v) in Map::<String, Value>::deserialize(d)? {
            match Feature::named(&k).map(|f| (f, T::deserialize(&v))) {
                Some((f, Ok(value))) => {
                    out.known.insert(f, value);
                }
                _ => {
                    out.other.insert(k, v);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A prompt entry exactly as the hook wrote it before `Entry` existed (nulls included).
    const TODAY_PROMPT: &str = r#"{"id":"18c5f2a9b3e10-3f2a-0","time":"2026-11-30T10:41:30.123Z","source":"prompt","session_id":null,"repo":"/home/me/app","cwd":"/home/me/app/web","prompt":"Read src/main.rs and explain how the command line is parsed","features":{"read_only":{"answer":true,"confidence":0.82},"design":{"answer":false,"confidence":0.7},"review":{"answer":null,"confidence":0.0},"specified":{"answer":true,"confidence":0.64}},"rule_tier":"haiku","rule":3,"decision":"haiku","hinted":false,"provider":"laya","model":"typed-decisions","latency_ms":12.3}"#;

    fn parse(line: &str) -> Entry {
        serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// `v` without its top-level null members: what a rewrite by `Entry` writes (a feature's
    /// `"answer": null`, an abstention, stays).
    fn without_nulls(v: &Value) -> Value {
        let Value::Object(m) = v else { panic!("an object") };
        Value::Object(m.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), v.clone())).collect())
    }

    #[test]
    fn todays_lines_read_typed() {
        let e = parse(TODAY_PROMPT);
        assert_eq!(e.source, Some(Source::Prompt));
        assert_eq!(
            (e.routing.rule_tier, e.routing.rule, e.decided.decision.as_deref()),
            (Some(Tier::Haiku), Some(Chosen::Rule(3)), Some("haiku"))
        );
        let f = e.routing.features.as_ref().unwrap();
        assert_eq!(f.get(Feature::ReadOnly).map(|a| (a.answer, a.confidence)), Some((Some(true), 0.82)));
        assert_eq!(f.get(Feature::Review).map(|a| a.answer), Some(None), "an abstention");
        assert_eq!(e.session_id, None);
        assert!(e.other.is_empty());
        let agent = parse(
            r#"{"id":"a","source":"agent","rule":"default","chosen":null,"subagent_type":"Explore","tool_use_id":"toolu_1","description":"look","outcome":"failed","outcome_source":"auto","outcome_doubtful":"same-role re-spawn","outcome_tier":"sonnet","labels":{"read_only":true},"label_tier":"opus","labelled_by":"claude"}"#,
        );
        assert_eq!((agent.routing.rule, agent.call.chosen), (Some(Chosen::Default), None));
        assert_eq!(
            (agent.judged.outcome, agent.judged.outcome_source),
            (Some(Outcome::Failed), Some(OutcomeSource::Auto))
        );
        assert_eq!(
            (agent.labelling.label_tier, agent.labelling.labelled_by),
            (Some(Tier::Opus), Some(Labeller::Claude))
        );
        let skill = parse(r#"{"source":"skill","decision":"pdf","candidates":3,"skill":"pdf","skill_confidence":0.9}"#);
        assert_eq!((skill.skill_pick.candidates, skill.skill_pick.skill.as_deref()), (Some(3), Some("pdf")));
    }

    #[test]
    fn enforcement_and_spawn_fields_read_typed_and_write_back_as_they_were() {
        let agent = r#"{"id":"a","source":"agent","chosen":"opus","tool_use_id":"toolu_1","enforce":"set","tier_before":"opus","tier_after":"sonnet"}"#;
        let e = parse(agent);
        assert_eq!(
            (e.enforcement.enforce, e.enforcement.tier_before, e.enforcement.tier_after),
            (Some(Enforce::Set), Some(Tier::Opus), Some(Tier::Sonnet))
        );
        assert_eq!(serde_json::to_string(&e).unwrap(), agent);
        let kept = parse(r#"{"source":"agent","enforce":"fill","kept":"model_given"}"#);
        assert_eq!(kept.enforcement.kept, Some(Kept::ModelGiven));
        let newer = r#"{"source":"agent","enforce":"raise","kept":"budget_spent"}"#;
        let e = parse(newer);
        assert_eq!(e.enforcement.kept, Some(Kept::Other("budget_spent".into())), "a reason this version does not know");
        assert_eq!(serde_json::to_string(&e).unwrap(), newer);
        for (k, name) in Kept::NAMES {
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{name}\""));
        }
        let spawn = r#"{"id":"s","source":"spawn","session_id":"x","tool_use_id":"toolu_1","resolved_model":"claude-sonnet-5","ran_tier":"sonnet","took_effect":true}"#;
        let e = parse(spawn);
        assert_eq!(
            (e.source.clone(), e.ran.ran_tier, e.ran.took_effect),
            (Some(Source::Spawn), Some(Tier::Sonnet), Some(true))
        );
        assert!(!e.needs_labels(), "a spawn record takes no labels");
        assert_eq!(serde_json::to_string(&e).unwrap(), spawn);
    }

    #[test]
    fn a_fresh_entry_is_written_as_today_without_the_nulls() {
        let e = parse(TODAY_PROMPT);
        let written = serde_json::to_string(&e).unwrap();
        assert_eq!(written, TODAY_PROMPT.replace(r#""session_id":null,"#, ""), "same keys, same order");
    }

    #[test]
    fn unknown_fields_survive_a_rewrite() {
        // Today's format, plus what a newer version might add: a top-level key, a key inside a
        // feature's answer, a fifth feature and a label value this version cannot read.
        let line = r#"{"id":"p1","time":"2026-11-30T10:41:30.123Z","source":"prompt","session_id":"s","repo":"/r","cwd":"/r","prompt":"x","features":{"read_only":{"answer":true,"confidence":0.82,"raw":0.9},"design":{"answer":false,"confidence":0.7},"review":{"answer":false,"confidence":0.9},"specified":{"answer":true,"confidence":0.64},"urgent":{"answer":true,"confidence":0.5}},"rule_tier":"haiku","rule":3,"decision":"haiku","hinted":false,"provider":"laya","model":"m","latency_ms":12.3,"labels":{"design":"unsure","urgent":true},"enforced":{"mode":"raise","from":"haiku","to":"sonnet"},"score":[1,2.5,null]}"#;
        let mut e = parse(line);
        assert_eq!(e.other.keys().collect::<Vec<_>>(), ["enforced", "score"]);
        assert_eq!(e.feature_labels(), BTreeMap::new(), "an unreadable label is no label");
        assert!(e.needs_labels());
        let before: Value = serde_json::from_str(line).unwrap();
        let after: Value = serde_json::to_value(&e).unwrap();
        assert_eq!(after, before, "read and written back, nothing changes");

        // A label written over the unreadable one replaces it; everything else stays.
        e.labelling.labels.get_or_insert_default().insert(Feature::Design, false);
        let mut want = before.clone();
        want["labels"]["design"] = json!(false);
        assert_eq!(serde_json::to_value(&e).unwrap(), want);
    }

    #[test]
    fn a_rewrite_keeps_everything_but_nulls() {
        let before: Value = serde_json::from_str(TODAY_PROMPT).unwrap();
        assert_eq!(serde_json::to_value(parse(TODAY_PROMPT)).unwrap(), without_nulls(&before));
    }

    #[test]
    fn lines_of_the_wrong_shape_are_no_entries() {
        for bad in [
            r#"[1,2]"#,
            r#""x""#,
            r#"{"id":1}"#,
            r#"{"rule_tier":"gpt"}"#,
            r#"{"outcome":"partial"}"#,
            r#"{"features":[]}"#,
        ] {
            assert!(serde_json::from_str::<Entry>(bad).is_err(), "{bad}");
        }
        let odd = parse(r#"{"source":"probe","n":1}"#);
        assert_eq!(odd.source, Some(Source::Other("probe".into())));
        assert_eq!(serde_json::to_string(&odd).unwrap(), r#"{"source":"probe","n":1}"#);
    }

    fn labels_all(v: bool) -> PerFeature<bool> {
        Feature::ALL.map(|f| (f, v)).into_iter().collect()
    }

    #[test]
    fn what_an_entry_needs() {
        let prompt = |labels: Option<PerFeature<bool>>, tier: Option<Tier>| Entry {
            source: Some(Source::Prompt),
            labelling: Labelling { labels, label_tier: tier, ..Labelling::default() },
            ..Entry::default()
        };
        assert_eq!(prompt(None, None).needs(), [Need::Labels, Need::Tier]);
        assert_eq!(
            prompt(Some(PerFeature::default()), None).needs(),
            [Need::Labels, Need::Tier],
            "empty labels are none"
        );
        let partial: PerFeature<bool> = [(Feature::ReadOnly, true)].into_iter().collect();
        assert_eq!(prompt(Some(partial), Some(Tier::Haiku)).needs(), [Need::Labels], "three features unlabelled");
        assert!(prompt(Some(labels_all(false)), None).needs().is_empty(), "the tier alone keeps nothing waiting");

        let agent = |outcome: Option<Outcome>, source: Option<OutcomeSource>, doubtful: Option<&str>| Entry {
            source: Some(Source::Agent),
            labelling: Labelling { labels: Some(labels_all(true)), ..Labelling::default() },
            judged: Judged {
                outcome,
                outcome_source: source,
                outcome_doubtful: doubtful.map(String::from),
                ..Judged::default()
            },
            ..Entry::default()
        };
        assert_eq!(agent(None, None, None).needs(), [Need::Outcome]);
        assert!(agent(Some(Outcome::Failed), Some(OutcomeSource::Auto), None).needs().is_empty());
        assert_eq!(agent(Some(Outcome::Failed), Some(OutcomeSource::Auto), Some("why")).needs(), [Need::Outcome]);
        assert!(
            agent(Some(Outcome::Failed), Some(OutcomeSource::User), Some("why")).needs().is_empty(),
            "a person decided"
        );

        for s in [Source::Skill, Source::Spawn, Source::Other("x".into())] {
            assert!(!Entry { source: Some(s), ..Entry::default() }.needs_labels());
        }
        assert!(!Entry::default().needs_labels(), "no source: not routing's");
    }
}
