//! The teacher-labelled seed sets in `calibration/`, built into the binary so that an installed
//! `system1` can refit without the repository: routing prompts with the four feature labels and a
//! tier, and shell commands labelled destructive or not (see `calibration/README.md`).
//!
//! The seed files hold labels only, no engine output: `calibrate fit` asks the configured engine
//! about every seed item itself, so the fit always matches the model that is actually installed.

use serde::Deserialize;

use std::collections::BTreeMap;

use crate::feature::Feature;
use crate::tier::Tier;

pub const ROUTING: &str = include_str!("../../calibration/routing.jsonl");
pub const DESTRUCTIVE: &str = include_str!("../../calibration/destructive.jsonl");

/// The question the destructive-command set is asked under; also its calibration key, so that a
/// `system1_decide` call asking exactly this (with the command in `context`) gets the fit.
pub const DESTRUCTIVE_QUESTION: &str = "Is this shell command destructive?";

#[derive(Debug, Clone, Deserialize)]
pub struct RoutingSeed {
    pub id: String,
    pub prompt: String,
    pub labels: BTreeMap<Feature, bool>,
    /// The tier the teacher gave: `study` measures the rule and the direct tier head against it.
    pub tier: Tier,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CommandSeed {
    /// `id` and `why` are for a reader of the file (`why` explains the label; a test holds every
    /// label to one); the fit reads only the command and its label.
    #[serde(default)]
    #[allow(dead_code)]
    pub id: String,
    pub command: String,
    pub destructive: bool,
    #[serde(default)]
    #[allow(dead_code)]
    pub why: String,
}

fn parse_lines<T: for<'de> Deserialize<'de>>(name: &str, text: &str) -> Result<Vec<T>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("calibration/{name} line {}: {e}", i + 1)))
        .collect()
}

pub fn routing() -> Result<Vec<RoutingSeed>, String> {
    let seeds: Vec<RoutingSeed> = parse_lines("routing.jsonl", ROUTING)?;
    for s in &seeds {
        if Feature::ALL.iter().any(|f| !s.labels.contains_key(f)) {
            return Err(format!("calibration/routing.jsonl {}: needs a label for each of {}", s.id, Feature::names()));
        }
    }
    Ok(seeds)
}

pub fn destructive() -> Result<Vec<CommandSeed>, String> {
    parse_lines("destructive.jsonl", DESTRUCTIVE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn routing_seeds_are_complete_and_varied() {
        let seeds = routing().expect("routing seeds parse");
        // The local engine's heads learn from this set: it must stay large enough to train on.
        assert!(seeds.len() >= 200, "{} routing prompts", seeds.len());
        let ids: HashSet<_> = seeds.iter().map(|s| &s.id).collect();
        assert_eq!(ids.len(), seeds.len(), "ids are unique");
        let prompts: HashSet<_> = seeds.iter().map(|s| &s.prompt).collect();
        assert_eq!(prompts.len(), seeds.len(), "prompts are unique");
        for s in &seeds {
            assert!(s.prompt.split_whitespace().count() >= 10, "{} is under 10 words: the hook skips those", s.id);
        }
        // Every feature has both answers at a quarter of the set or more, and every tier the default
        // rule can pick a fifth (a tier it never picks, fable, needs none), or a head would have too
        // few examples of one side to learn from and the set could not measure it.
        for f in Feature::ALL {
            let (yes, n) = (seeds.iter().filter(|s| s.labels[&f]).count(), seeds.len());
            assert!(4 * yes >= n && 4 * (n - yes) >= n, "{f}: {yes} yes of {n}");
        }
        let picked = crate::config::default_rules().into_iter().map(|r| r.tier).chain([crate::config::DEFAULT_TIER]);
        for t in picked.collect::<std::collections::BTreeSet<Tier>>() {
            let n = seeds.iter().filter(|s| s.tier == t).count();
            assert!(5 * n >= seeds.len(), "tier {t}: {n} of {}", seeds.len());
        }
    }

    #[test]
    fn destructive_seeds_are_balanced() {
        let seeds = destructive().expect("destructive seeds parse");
        assert!(seeds.len() >= 120, "{} commands", seeds.len());
        // About half each way, so that "always yes" and "always no" both score near chance.
        let yes = seeds.iter().filter(|s| s.destructive).count();
        assert!(5 * yes >= 2 * seeds.len() && 5 * yes <= 3 * seeds.len(), "{yes} destructive of {}", seeds.len());
        assert!(seeds.iter().all(|s| !s.why.is_empty()), "every label says why");
        let ids: HashSet<_> = seeds.iter().map(|s| &s.id).collect();
        assert_eq!(ids.len(), seeds.len(), "ids are unique");
        let commands: HashSet<_> = seeds.iter().map(|s| &s.command).collect();
        assert_eq!(commands.len(), seeds.len(), "commands are unique");
    }

    #[test]
    fn seed_set_labels_are_these_features_and_pass_the_gate() {
        let seeds = routing().unwrap();
        for s in &seeds {
            let got: Vec<Feature> = s.labels.keys().copied().collect();
            assert_eq!(got, Feature::ALL, "{}", s.id);
            assert_eq!(crate::routing::gate::prompt_gate(&s.prompt), None, "{}", s.id);
        }
        assert!(seeds.len() >= 40, "the seed set has {} prompts", seeds.len());
    }
}
