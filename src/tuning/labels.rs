//! Labels in the routing log: the entries that still need them (`calibrate pending`) and recording
//! them (`calibrate label`). Pure functions over the log's entries; the command runs `label` inside
//! `routing::log::update`, on the one entry, under the log's lock. What an entry needs is `Entry::needs`, the one
//! definition the session-start nudge counts by too.
//!
//! Fields written: `labels` (`{"read_only": true, ...}`), `label_tier`, `labelled_by`; for outcomes
//! `outcome`, `outcome_reason`, `outcome_source` (`user` when a person confirmed it, `claude` when
//! Claude labelled it alone), and `outcome_doubtful` is removed.

use serde::Serialize;

use crate::feature::Feature;
use crate::routing::entry::{Entry, Labeller, LoggedAnswer, Need, Outcome, OutcomeSource, PerFeature, Source};
use crate::tier::Tier;

/// The part of an entry a labeller needs to see, and what it needs.
#[derive(Debug, Serialize)]
pub struct View<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'a Source>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_type: Option<&'a str>,
    /// The engine's answers, for proposing labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub features: Option<&'a PerFeature<LoggedAnswer>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_tier: Option<Tier>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chosen: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<&'a PerFeature<bool>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_tier: Option<Tier>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome_tier: Option<Tier>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome_source: Option<OutcomeSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome_doubtful: Option<&'a str>,
    pub needs: Vec<Need>,
}

fn view(e: &Entry, needs: Vec<Need>) -> View<'_> {
    View {
        id: e.id.as_deref(),
        time: e.time.as_deref(),
        source: e.source.as_ref(),
        repo: e.repo.as_deref(),
        prompt: e.prompt.as_deref(),
        description: e.call.description.as_deref(),
        subagent_type: e.call.subagent_type.as_deref(),
        features: e.routing.features.as_ref(),
        rule_tier: e.routing.rule_tier,
        chosen: e.call.chosen.as_deref(),
        labels: e.labelling.labels.as_ref(),
        label_tier: e.labelling.label_tier,
        outcome: e.judged.outcome,
        outcome_reason: e.judged.outcome_reason.as_deref(),
        outcome_tier: e.judged.outcome_tier,
        outcome_source: e.judged.outcome_source,
        outcome_doubtful: e.judged.outcome_doubtful.as_deref(),
        needs,
    }
}

/// Counts of what is labelled so far.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub entries: usize,
    pub with_feature_labels: usize,
    pub with_outcome: usize,
    pub failed: usize,
    pub pending: usize,
}

impl Tally {
    /// Counts one entry; true when it waits for labels.
    fn count(&mut self, e: &Entry) -> bool {
        if !e.is_routing() {
            return false;
        }
        self.entries += 1;
        self.with_feature_labels += usize::from(!e.feature_labels().is_empty());
        self.with_outcome += usize::from(e.judged.outcome.is_some());
        self.failed += usize::from(e.judged.outcome == Some(Outcome::Failed));
        let waits = e.needs_labels();
        self.pending += usize::from(waits);
        waits
    }
}

/// The entries waiting for labels, oldest first, at most `limit`, plus the tally.
pub fn pending(entries: &[Entry], limit: usize) -> (Vec<View<'_>>, Tally) {
    let mut t = Tally::default();
    let mut out = Vec::new();
    for e in entries {
        if t.count(e) && out.len() < limit {
            out.push(view(e, e.needs()));
        }
    }
    (out, t)
}

/// [`pending`] over a log read one entry at a time: every entry is counted, and only the first
/// `limit` waiting for labels are kept, so that a log of gigabytes is never held whole.
#[derive(Debug, Default)]
pub struct PendingKept {
    pub tally: Tally,
    pub kept: Vec<Entry>,
}

impl PendingKept {
    pub fn add(&mut self, e: Entry, limit: usize) {
        if self.tally.count(&e) && self.kept.len() < limit {
            self.kept.push(e);
        }
    }
}

/// What `calibrate label` records on one entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Labels {
    pub features: Vec<(Feature, bool)>,
    pub tier: Option<Tier>,
    pub outcome: Option<Outcome>,
    pub by: Labeller,
}

impl Labels {
    /// Reads `calibrate label`'s arguments, naming what is wrong, so that a typo never lands in the log.
    pub fn parse(features: &[String], tier: Option<&str>, outcome: Option<&str>, by: &str) -> Result<Labels, String> {
        let l = Labels {
            features: features.iter().map(|f| parse_feature(f)).collect::<Result<_, _>>()?,
            tier: tier.map(str::parse).transpose()?,
            outcome: outcome.map(str::parse).transpose()?,
            by: by.parse()?,
        };
        if l.features.is_empty() && l.tier.is_none() && l.outcome.is_none() {
            return Err("nothing to label: give --feature, --tier or --outcome".into());
        }
        Ok(l)
    }
}

/// Parses `read_only=true` (also `yes`/`no`, `1`/`0`).
pub fn parse_feature(s: &str) -> Result<(Feature, bool), String> {
    let (name, value) = s.split_once('=').ok_or_else(|| format!("{s:?}: use FEATURE=true|false"))?;
    let v = match value.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" => true,
        "false" | "no" | "0" => false,
        other => return Err(format!("{name}: {other:?} is not true or false")),
    };
    Ok((name.trim().parse()?, v))
}

/// Records `l` on `e`, the entry with `id`. Errors when it is not a prompt or agent entry (or an
/// outcome is given for a prompt).
pub fn label(e: &mut Entry, id: &str, l: &Labels) -> Result<(), String> {
    if !e.is_routing() {
        let source = e.source.as_ref().map_or("", Source::as_str);
        return Err(format!("entry {id} is a {source:?} entry; only prompt and agent entries take labels"));
    }
    if l.outcome.is_some() && !e.is_agent() {
        return Err(format!("entry {id} is a prompt, not a subagent spawn: it has no outcome"));
    }
    if !l.features.is_empty() {
        let labels = e.labelling.labels.get_or_insert_default();
        for (f, v) in &l.features {
            labels.insert(*f, *v);
        }
    }
    if let Some(t) = l.tier {
        e.labelling.label_tier = Some(t);
    }
    if !l.features.is_empty() || l.tier.is_some() {
        e.labelling.labelled_by = Some(l.by);
    }
    if let Some(o) = l.outcome {
        e.judged.outcome = Some(o);
        e.judged.outcome_reason = Some(format!("labelled by {}", l.by));
        e.judged.outcome_source = Some(l.by.into());
        e.judged.outcome_doubtful = None;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn log() -> Vec<Entry> {
        [
            json!({"id": "p1", "source": "prompt", "prompt": "x", "features": {"design": {"answer": true, "confidence": 0.7}}}),
            json!({"id": "p2", "source": "prompt", "labels": {"read_only": true, "design": false, "review": false, "specified": true}, "label_tier": "haiku"}),
            json!({"id": "a1", "source": "agent", "labels": {"read_only": true, "design": false, "review": false, "specified": true}, "label_tier": "haiku", "outcome": "failed", "outcome_source": "auto", "outcome_doubtful": "same-role re-spawn"}),
            json!({"id": "a2", "source": "agent", "labels": {"read_only": true, "design": false, "review": false, "specified": true}, "outcome": "succeeded", "outcome_source": "auto"}),
            json!({"id": "s1", "source": "skill"}),
        ]
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect()
    }

    fn json_of<T: Serialize>(x: &T) -> Value {
        serde_json::to_value(x).unwrap()
    }

    #[test]
    fn pending_lists_what_is_missing() {
        let entries = log();
        let (p, t) = pending(&entries, 10);
        let p = json_of(&p);
        let ids: Vec<&str> = p.as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
        assert_eq!(ids, vec!["p1", "a1"]);
        assert_eq!(p[0]["needs"], json!(["labels", "tier"]));
        assert_eq!(p[1]["needs"], json!(["outcome"]), "a doubtful automatic outcome needs a person");
        assert_eq!(p[0]["features"]["design"]["confidence"], 0.7, "the engine's answers go along, for proposing");
        assert_eq!(t, Tally { entries: 4, with_feature_labels: 3, with_outcome: 2, failed: 1, pending: 2 });
        assert_eq!(pending(&entries, 1).0.len(), 1);
        let mut kept = PendingKept::default();
        for e in log() {
            kept.add(e, 1);
        }
        assert_eq!(kept.tally, t, "one entry at a time, the same tally");
        assert_eq!(kept.kept.iter().map(|e| e.id.as_deref()).collect::<Vec<_>>(), vec![Some("p1")]);
    }

    #[test]
    fn label_records_and_validates() {
        let mut entries = log();
        let l = Labels::parse(&["read_only=true".into(), "design = no".into()], Some("sonnet"), None, "user").unwrap();
        label(&mut entries[0], "p1", &l).unwrap();
        let p1 = json_of(&entries[0]);
        assert_eq!(p1["labels"], json!({"read_only": true, "design": false}));
        assert_eq!(p1["label_tier"], "sonnet");
        assert_eq!(p1["labelled_by"], "user");
        let o = Labels::parse(&[], None, Some("succeeded"), "user").unwrap();
        label(&mut entries[2], "a1", &o).unwrap();
        let a1 = json_of(&entries[2]);
        assert_eq!(a1["outcome"], "succeeded");
        assert_eq!(a1["outcome_source"], "user");
        assert_eq!(a1["outcome_reason"], "labelled by user");
        assert!(a1.get("outcome_doubtful").is_none());
        assert!(label(&mut entries[0], "p1", &o).unwrap_err().contains("no outcome"));
        assert!(label(&mut entries[4], "s1", &l).unwrap_err().contains("only prompt and agent"));
        assert!(parse_feature("design=maybe").is_err());
        let err = |f: &[&str], t: Option<&str>, o: Option<&str>, by: &str| {
            Labels::parse(&f.iter().map(|s| s.to_string()).collect::<Vec<_>>(), t, o, by).unwrap_err()
        };
        assert!(err(&["vibes=true"], None, None, "user").contains("unknown feature"));
        assert!(err(&[], Some("gpt"), None, "user").contains("unknown tier"));
        assert!(err(&[], None, Some("partly"), "user").contains("succeeded or failed"));
        assert!(err(&[], Some("opus"), None, "me").contains("--by must be user or claude"));
        assert!(err(&[], None, None, "user").contains("nothing to label"));
        assert_eq!(Labels::parse(&[], Some("fable"), None, "claude").unwrap().tier, Some(Tier::Fable));
    }
}
