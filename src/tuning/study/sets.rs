//! The labelled sets `study` can run on: the two seed sets built into the binary, the labelled
//! routing log, or any JSON-lines file in one of the seed sets' formats:
//!
//! - routing: `{"id": "r1", "prompt": "...", "labels": {"read_only": true, ...}, "tier": "haiku"}`
//!   (any of the four labels, and the tier, may be left out);
//! - destructive: `{"id": "d1", "command": "rm -rf build/", "destructive": true}`.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use crate::feature::Feature;
use crate::tier::Tier;
use crate::tuning::data::{self, Origin, RoutingItem};
use crate::tuning::seeds::{self, CommandSeed};

/// What a set holds.
#[derive(Debug, Clone)]
pub enum Items {
    Routing(Vec<RoutingItem>),
    Destructive(Vec<CommandSeed>),
}

#[derive(Debug, Clone)]
pub struct Set {
    /// How it was named on the command line: `routing`, `destructive`, `log` or the file's path.
    pub name: String,
    /// Where its items come from, for the output.
    pub source: String,
    pub items: Items,
}

impl Set {
    pub fn len(&self) -> usize {
        match &self.items {
            Items::Routing(v) => v.len(),
            Items::Destructive(v) => v.len(),
        }
    }

    /// The texts of its items, as they are written.
    pub fn texts(&self) -> Vec<&str> {
        match &self.items {
            Items::Routing(v) => v.iter().map(|i| i.text.as_str()).collect(),
            Items::Destructive(v) => v.iter().map(|c| c.command.as_str()).collect(),
        }
    }

    /// How many of its items are among `known`.
    pub fn known_items(&self, known: &HashSet<String>) -> usize {
        self.texts().iter().filter(|t| known.contains(**t)).count()
    }
}

/// One line of a routing file: the seed set's format, with the labels and the tier optional.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoutingLine {
    #[serde(default)]
    #[allow(dead_code)]
    id: Option<String>,
    prompt: String,
    #[serde(default)]
    labels: BTreeMap<Feature, bool>,
    #[serde(default)]
    tier: Option<Tier>,
}

/// The set a command-line name stands for. `log` reads the routing log through `log_items`.
pub fn load(name: &str, log_items: impl FnOnce() -> Result<Vec<RoutingItem>, String>) -> Result<Set, String> {
    let set = |source: &str, items| Set { name: name.to_string(), source: source.to_string(), items };
    match name {
        "routing" => Ok(set("calibration/routing.jsonl", Items::Routing(data::seed_items()?))),
        "destructive" => Ok(set("calibration/destructive.jsonl", Items::Destructive(seeds::destructive()?))),
        "log" => {
            let items = log_items()?;
            if items.is_empty() {
                return Err(
                    "the routing log has no entry with feature labels yet (label some with /system1:calibrate)".into(),
                );
            }
            Ok(set("the labelled routing log", Items::Routing(items)))
        }
        path => {
            // A regular file of at most 64 MiB, as `calibrate fit --set` reads: a FIFO would hang the read.
            let text = crate::fsutil::read_text(Path::new(path), 64 << 20, crate::fsutil::Links::Follow)
                .map_err(|e| format!("cannot read {path}: {e}"))?;
            Ok(set(path, parse_file(path, &text)?))
        }
    }
}

/// A file's items, in the routing format or the destructive one (told by the first line's keys).
pub fn parse_file(path: &str, text: &str) -> Result<Items, String> {
    let lines: Vec<(usize, &str)> = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).collect();
    let Some((_, first)) = lines.first() else {
        return Err(format!("{path} has no items"));
    };
    let first: serde_json::Value =
        serde_json::from_str(first).map_err(|e| format!("{path} line {}: {e}", lines[0].0 + 1))?;
    let at = |i: usize, e: serde_json::Error| format!("{path} line {}: {e}", i + 1);
    if first.get("prompt").is_some() {
        let mut items = Vec::new();
        for (i, l) in &lines {
            let r: RoutingLine = serde_json::from_str(l).map_err(|e| at(*i, e))?;
            if r.labels.is_empty() && r.tier.is_none() {
                return Err(format!("{path} line {}: no labels and no tier, so nothing to measure", i + 1));
            }
            items.push(RoutingItem { text: r.prompt, labels: r.labels, tier: r.tier, origin: Origin::Log });
        }
        Ok(Items::Routing(items))
    } else if first.get("command").is_some() {
        let items: Result<Vec<CommandSeed>, String> =
            lines.iter().map(|(i, l)| serde_json::from_str(l).map_err(|e| at(*i, e))).collect();
        Ok(Items::Destructive(items?))
    } else {
        Err(format!(
            "{path} line {}: neither a routing item (with \"prompt\") nor a command (with \"command\")",
            lines[0].0 + 1
        ))
    }
}

/// The texts the local engine's heads may have been fitted on: the seed sets always (the shipped
/// heads), and the labelled log when heads were fitted on this machine.
pub fn head_training_texts(local_heads: bool, log: &[RoutingItem]) -> Result<HashSet<String>, String> {
    let mut known: HashSet<String> = data::seed_items()?.into_iter().map(|i| i.text).collect();
    known.extend(seeds::destructive()?.into_iter().map(|c| c.command));
    if local_heads {
        known.extend(log.iter().map(|i| i.text.clone()));
    }
    Ok(known)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_in_either_format() {
        let routing = "{\"id\": \"a\", \"prompt\": \"Explain the parser\", \"labels\": {\"read_only\": true}, \"tier\": \"haiku\"}\n\n{\"prompt\": \"Design it\", \"tier\": \"opus\"}\n";
        let Items::Routing(items) = parse_file("f", routing).unwrap() else { panic!("routing") };
        assert_eq!(items.len(), 2);
        assert_eq!((items[0].labels.get(&Feature::ReadOnly), items[0].tier), (Some(&true), Some(Tier::Haiku)));
        assert_eq!((items[1].labels.len(), items[1].tier), (0, Some(Tier::Opus)));
        let commands = "{\"id\": \"d\", \"command\": \"rm -rf /\", \"destructive\": true}\n";
        let Items::Destructive(c) = parse_file("f", commands).unwrap() else { panic!("commands") };
        assert_eq!((c[0].command.as_str(), c[0].destructive), ("rm -rf /", true));
    }

    #[test]
    fn bad_files_say_where() {
        let err = |t: &str| parse_file("f.jsonl", t).unwrap_err();
        assert!(err("").contains("no items"));
        assert!(err("{\"text\": \"x\"}").contains("line 1: neither"), "{}", err("{\"text\": \"x\"}"));
        let e = err("{\"prompt\": \"a\", \"tier\": \"haiku\"}\n{\"prompt\": \"b\", \"labels\": {\"vibes\": true}}");
        assert!(e.starts_with("f.jsonl line 2:"), "{e}");
        assert!(err("{\"prompt\": \"a\", \"tier\": \"gpt\"}").contains("line 1"));
        assert!(err("{\"prompt\": \"a\"}").contains("nothing to measure"));
        assert!(err("{\"command\": \"ls\"}").contains("line 1"), "a command needs its label");
        assert!(err("not json").contains("line 1"));
    }

    #[test]
    fn the_seed_sets_are_known_to_the_heads() {
        let known = head_training_texts(false, &[]).unwrap();
        let routing = load("routing", || Ok(Vec::new())).unwrap();
        assert_eq!(routing.known_items(&known), routing.len());
        let destructive = load("destructive", || Ok(Vec::new())).unwrap();
        assert_eq!(destructive.known_items(&known), destructive.len());
        assert_eq!(routing.len(), seeds::routing().unwrap().len());
        let log = vec![RoutingItem { text: "mine".into(), labels: BTreeMap::new(), tier: None, origin: Origin::Log }];
        assert!(!head_training_texts(false, &log).unwrap().contains("mine"));
        assert!(head_training_texts(true, &log).unwrap().contains("mine"));
        assert!(load("log", || Ok(Vec::new())).unwrap_err().contains("no entry with feature labels"));
    }
}
