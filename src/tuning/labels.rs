//! Labels in the routing log: which entries still need them (`calibrate pending`) and recording
//! them (`calibrate label`). Pure functions over the log's entries; the command runs them inside
//! `routing::log::rewrite`, under the log's lock.
//!
//! Fields written (the team's log contract): `labels` (`{"read_only": true, ...}`), `label_tier`,
//! `labelled_by`; for outcomes `outcome`, `outcome_reason`, `outcome_source` (`user` when a person
//! confirmed it, `claude` when Claude labelled it alone), and `outcome_doubtful` is removed.

use serde_json::{Map, Value, json};

use crate::feature::Feature;
use crate::tier::Tier;

/// What an entry still lacks.
pub fn needs(e: &Value) -> Vec<&'static str> {
    let source = e.get("source").and_then(Value::as_str).unwrap_or("");
    if source != "prompt" && source != "agent" {
        return Vec::new();
    }
    let mut out = Vec::new();
    let labels = e.get("labels").and_then(Value::as_object);
    if Feature::ALL.iter().any(|f| labels.and_then(|l| l.get(f.name())).and_then(Value::as_bool).is_none()) {
        out.push("labels");
        // The tier is asked along with the features; nothing measured needs it on its own, so an
        // entry whose features are labelled is not kept waiting for it.
        if e.get("label_tier").and_then(Value::as_str).is_none() {
            out.push("tier");
        }
    }
    if source == "agent" {
        let has_outcome = e.get("outcome").and_then(Value::as_str).is_some();
        let doubtful = e.get("outcome_doubtful").is_some_and(|d| !d.is_null())
            && e.get("outcome_source").and_then(Value::as_str) == Some("auto");
        if !has_outcome || doubtful {
            out.push("outcome");
        }
    }
    out
}

/// The part of an entry a labeller needs to see.
fn view(e: &Value, needs: &[&str]) -> Value {
    let mut m = Map::new();
    for key in [
        "id",
        "time",
        "source",
        "repo",
        "prompt",
        "description",
        "subagent_type",
        "features",
        "rule_tier",
        "chosen",
        "labels",
        "label_tier",
        "outcome",
        "outcome_reason",
        "outcome_tier",
        "outcome_source",
        "outcome_doubtful",
    ] {
        if let Some(v) = e.get(key).filter(|v| !v.is_null()) {
            m.insert(key.to_string(), v.clone());
        }
    }
    m.insert("needs".into(), json!(needs));
    Value::Object(m)
}

/// Counts of what is labelled so far.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Tally {
    pub entries: usize,
    pub with_feature_labels: usize,
    pub with_outcome: usize,
    pub failed: usize,
    pub pending: usize,
}

/// The entries waiting for labels, oldest first, at most `limit`, plus the tally.
pub fn pending(entries: &[Value], limit: usize) -> (Vec<Value>, Tally) {
    let mut t = Tally::default();
    let mut out = Vec::new();
    for e in entries {
        let source = e.get("source").and_then(Value::as_str).unwrap_or("");
        if source != "prompt" && source != "agent" {
            continue;
        }
        t.entries += 1;
        if e.get("labels").and_then(Value::as_object).is_some_and(|l| !l.is_empty()) {
            t.with_feature_labels += 1;
        }
        match e.get("outcome").and_then(Value::as_str) {
            Some("failed") => {
                t.with_outcome += 1;
                t.failed += 1;
            }
            Some(_) => t.with_outcome += 1,
            None => {}
        }
        let n = needs(e);
        if !n.is_empty() {
            t.pending += 1;
            if out.len() < limit {
                out.push(view(e, &n));
            }
        }
    }
    (out, t)
}

/// What `calibrate label` records on one entry.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Labels {
    pub features: Vec<(Feature, bool)>,
    pub tier: Option<Tier>,
    pub outcome: Option<String>,
    pub by: String,
}

impl Labels {
    /// Checks names and values, so a typo never lands in the log.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(o) = &self.outcome
            && o != "succeeded"
            && o != "failed"
        {
            return Err(format!("outcome must be succeeded or failed, got {o:?}"));
        }
        if self.by != "user" && self.by != "claude" {
            return Err(format!("--by must be user or claude, got {:?}", self.by));
        }
        if self.features.is_empty() && self.tier.is_none() && self.outcome.is_none() {
            return Err("nothing to label: give --feature, --tier or --outcome".into());
        }
        Ok(())
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

/// Records `labels` on the entry with `id`. Errors when there is none, or when it is not a prompt
/// or agent entry (or an outcome is given for a prompt).
pub fn label(entries: &mut [Value], id: &str, l: &Labels) -> Result<(), String> {
    let e = entries
        .iter_mut()
        .find(|e| e.get("id").and_then(Value::as_str) == Some(id))
        .ok_or_else(|| format!("no entry with id {id:?} in the routing log"))?;
    let source = e.get("source").and_then(Value::as_str).unwrap_or("").to_string();
    if source != "prompt" && source != "agent" {
        return Err(format!("entry {id} is a {source:?} entry; only prompt and agent entries take labels"));
    }
    if l.outcome.is_some() && source != "agent" {
        return Err(format!("entry {id} is a prompt, not a subagent spawn: it has no outcome"));
    }
    let Value::Object(m) = e else { return Err(format!("entry {id} is not an object")) };
    if !l.features.is_empty() {
        let labels = m.entry("labels").or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        if let Value::Object(lm) = labels {
            for (f, v) in &l.features {
                lm.insert(f.name().to_string(), json!(v));
            }
        }
    }
    if let Some(t) = &l.tier {
        m.insert("label_tier".into(), json!(t));
    }
    if !l.features.is_empty() || l.tier.is_some() {
        m.insert("labelled_by".into(), json!(l.by));
    }
    if let Some(o) = &l.outcome {
        m.insert("outcome".into(), json!(o));
        m.insert("outcome_reason".into(), json!(format!("labelled by {}", l.by)));
        m.insert("outcome_source".into(), json!(l.by));
        m.remove("outcome_doubtful");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> Vec<Value> {
        vec![
            json!({"id": "p1", "source": "prompt", "prompt": "x", "features": {"design": {"answer": true, "confidence": 0.7}}}),
            json!({"id": "p2", "source": "prompt", "labels": {"read_only": true, "design": false, "review": false, "specified": true}, "label_tier": "haiku"}),
            json!({"id": "a1", "source": "agent", "labels": {"read_only": true, "design": false, "review": false, "specified": true}, "label_tier": "haiku", "outcome": "failed", "outcome_source": "auto", "outcome_doubtful": "same-role re-spawn"}),
            json!({"id": "a2", "source": "agent", "labels": {"read_only": true, "design": false, "review": false, "specified": true}, "outcome": "succeeded", "outcome_source": "auto"}),
            json!({"id": "s1", "source": "skill"}),
        ]
    }

    #[test]
    fn pending_lists_what_is_missing() {
        let (p, t) = pending(&log(), 10);
        let ids: Vec<&str> = p.iter().map(|e| e["id"].as_str().unwrap()).collect();
        assert_eq!(ids, vec!["p1", "a1"]);
        assert_eq!(p[0]["needs"], json!(["labels", "tier"]));
        assert_eq!(p[1]["needs"], json!(["outcome"]), "a doubtful automatic outcome needs a person");
        assert_eq!(p[0]["features"]["design"]["confidence"], 0.7, "the engine's answers go along, for proposing");
        assert_eq!(t, Tally { entries: 4, with_feature_labels: 3, with_outcome: 2, failed: 1, pending: 2 });
        assert_eq!(pending(&log(), 1).0.len(), 1);
    }

    #[test]
    fn label_records_and_validates() {
        let mut entries = log();
        let l = Labels {
            features: vec![parse_feature("read_only=true").unwrap(), parse_feature("design = no").unwrap()],
            tier: Some(Tier::Sonnet),
            outcome: None,
            by: "user".into(),
        };
        l.validate().unwrap();
        label(&mut entries, "p1", &l).unwrap();
        assert_eq!(entries[0]["labels"], json!({"read_only": true, "design": false}));
        assert_eq!(entries[0]["label_tier"], "sonnet");
        assert_eq!(entries[0]["labelled_by"], "user");
        let o = Labels { outcome: Some("succeeded".into()), by: "user".into(), ..Labels::default() };
        label(&mut entries, "a1", &o).unwrap();
        assert_eq!(entries[2]["outcome"], "succeeded");
        assert_eq!(entries[2]["outcome_source"], "user");
        assert!(entries[2].get("outcome_doubtful").is_none());
        assert!(label(&mut entries, "p1", &o).unwrap_err().contains("no outcome"));
        assert!(label(&mut entries, "zz", &l).unwrap_err().contains("no entry"));
        assert!(label(&mut entries, "s1", &l).unwrap_err().contains("only prompt and agent"));
        assert!(parse_feature("design=maybe").is_err());
        assert!(parse_feature("vibes=true").unwrap_err().contains("unknown feature"));
        assert!(Labels { by: "user".into(), ..Labels::default() }.validate().is_err());
    }
}
