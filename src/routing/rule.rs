//! The routing rule, as data the user owns: an ordered list of `{ when = {feature = bool}, tier }`
//! and a default tier (`[routing] rules`, `default_tier`; parsed and validated in `config`). The
//! first rule whose every condition holds wins; a rule with an empty `when` always matches.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::config::Rule;
use crate::feature::Feature;
use crate::tier::Tier;

/// Which rule chose the tier.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Chosen {
    /// The 1-based position of the rule in the list.
    Rule(usize),
    Default,
    /// The tier head, sure enough to go before the rules (`[routing] tier_head`).
    Head,
}

/// As the routing log keeps it: the rule's number, `"default"` or `"head"`.
impl Serialize for Chosen {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Chosen::Rule(n) => s.serialize_u64(*n as u64),
            Chosen::Default => s.serialize_str("default"),
            Chosen::Head => s.serialize_str("head"),
        }
    }
}

impl<'de> Deserialize<'de> for Chosen {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Chosen, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Number(usize),
            Text(String),
        }
        match Wire::deserialize(d)? {
            Wire::Number(n) if n > 0 => Ok(Chosen::Rule(n)),
            Wire::Text(t) if t == "default" => Ok(Chosen::Default),
            Wire::Text(t) if t == "head" => Ok(Chosen::Head),
            _ => Err(serde::de::Error::custom("a rule is a number from 1, \"default\" or \"head\"")),
        }
    }
}

/// Applies the rules to the feature answers. A condition on a feature without an answer does not hold.
pub fn choose(rules: &[Rule], default_tier: Tier, answers: &BTreeMap<Feature, bool>) -> (Tier, Chosen) {
    for (i, rule) in rules.iter().enumerate() {
        if rule.when.iter().all(|(feature, want)| answers.get(feature) == Some(want)) {
            return (rule.tier, Chosen::Rule(i + 1));
        }
    }
    (default_tier, Chosen::Default)
}

/// The features whose answers decided the rule's pick, in `Feature::ALL` order: every condition of
/// the rule that matched, and for each rule skipped before it the failed condition answered most
/// surely (one failed condition is enough to skip a rule). `answers` holds each answered feature
/// with its confidence; a condition on a feature without an answer counts as failed at confidence 0.
/// Only these answers need to be sure for the pick to be: a feature no deciding rule reads cannot
/// change it, however unsure its answer.
pub fn deciding(rules: &[Rule], chosen: Chosen, answers: &BTreeMap<Feature, (bool, f64)>) -> Vec<Feature> {
    let upto = match chosen {
        Chosen::Rule(n) => n.min(rules.len()),
        Chosen::Default => rules.len(),
        // The head decided before any rule was read.
        Chosen::Head => 0,
    };
    let mut out: Vec<Feature> = Vec::new();
    for (i, rule) in rules[..upto].iter().enumerate() {
        if Chosen::Rule(i + 1) == chosen {
            out.extend(rule.when.keys().copied());
            continue;
        }
        let confidence = |f: &Feature| answers.get(f).map_or(0.0, |a| a.1);
        let surest = rule
            .when
            .iter()
            .filter(|(f, want)| answers.get(*f).map(|a| a.0) != Some(**want))
            .map(|(f, _)| *f)
            .max_by(|a, b| confidence(a).total_cmp(&confidence(b)));
        out.extend(surest);
    }
    out.sort();
    out.dedup();
    out
}

/// A rule's condition in words, e.g. `read_only and specified` or `not design`.
pub fn describe(rule: &Rule) -> String {
    if rule.when.is_empty() {
        return "always".to_string();
    }
    let parts: Vec<String> =
        rule.when.iter().map(|(f, v)| if *v { f.to_string() } else { format!("not {f}") }).collect();
    parts.join(" and ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::default_rules;

    fn answers(pairs: &[(Feature, bool)]) -> BTreeMap<Feature, bool> {
        pairs.iter().copied().collect()
    }

    #[test]
    fn default_rule_reproduces_the_policy() {
        use Feature::*;
        use Tier::*;
        let r = default_rules();
        let all = |ro, de, rv, sp| answers(&[(ReadOnly, ro), (Design, de), (Review, rv), (Specified, sp)]);
        assert_eq!(choose(&r, Sonnet, &all(false, true, false, false)), (Opus, Chosen::Rule(1)));
        assert_eq!(choose(&r, Sonnet, &all(true, false, true, true)), (Opus, Chosen::Rule(2)));
        assert_eq!(choose(&r, Sonnet, &all(true, false, false, true)), (Haiku, Chosen::Rule(3)));
        assert_eq!(choose(&r, Sonnet, &all(true, false, false, false)), (Sonnet, Chosen::Default));
        assert_eq!(choose(&r, Sonnet, &all(false, false, false, true)), (Sonnet, Chosen::Default));
    }

    #[test]
    fn first_match_wins_and_missing_answers_never_match() {
        let rules = vec![
            Rule { when: [(Feature::Design, false)].into(), tier: Tier::Haiku },
            Rule { when: BTreeMap::new(), tier: Tier::Fable },
        ];
        assert_eq!(choose(&rules, Tier::Sonnet, &answers(&[(Feature::Design, false)])), (Tier::Haiku, Chosen::Rule(1)));
        assert_eq!(choose(&rules, Tier::Sonnet, &answers(&[])), (Tier::Fable, Chosen::Rule(2)));
        assert_eq!(describe(&rules[0]), "not design");
        assert_eq!(describe(&rules[1]), "always");
    }

    #[test]
    fn only_the_deciding_answers_count() {
        use Feature::*;
        let r = default_rules();
        let with =
            |v: [(bool, f64); 4]| -> BTreeMap<Feature, (bool, f64)> { Feature::ALL.into_iter().zip(v).collect() };
        // Rule 1 (design) matched: design alone decided; read_only at 0.58 does not matter.
        let a = with([(true, 0.58), (true, 0.97), (false, 0.9), (false, 0.7)]);
        assert_eq!(deciding(&r, Chosen::Rule(1), &a), vec![Design]);
        // Rule 2 (review) matched: design (skipped rule 1) and review.
        let a = with([(true, 0.58), (false, 0.8), (true, 0.9), (false, 0.55)]);
        assert_eq!(deciding(&r, Chosen::Rule(2), &a), vec![Design, Review]);
        // Default: rule 3 (read_only and specified) was skipped by both failing; the surer one decides.
        let a = with([(false, 0.55), (false, 0.9), (false, 0.9), (false, 0.85)]);
        assert_eq!(deciding(&r, Chosen::Default, &a), vec![Design, Review, Specified]);
        // Only read_only failed: it decides, however unsure, while specified (which held) does not.
        let a = with([(false, 0.52), (false, 0.9), (false, 0.9), (true, 0.99)]);
        assert_eq!(deciding(&r, Chosen::Default, &a), vec![ReadOnly, Design, Review]);
        // Rule 3 matched: everything before it and both its conditions.
        let a = with([(true, 0.9), (false, 0.9), (false, 0.9), (true, 0.9)]);
        assert_eq!(deciding(&r, Chosen::Rule(3), &a), Feature::ALL.to_vec());
        // A condition on an unanswered feature failed at confidence 0: another failed one is surer.
        let mut a = with([(false, 0.7), (false, 0.9), (false, 0.9), (true, 0.9)]);
        a.remove(&Specified);
        assert_eq!(deciding(&r, Chosen::Default, &a), vec![ReadOnly, Design, Review]);
    }

    #[test]
    fn the_chosen_rule_reads_as_the_log_keeps_it() {
        for (chosen, text) in [(Chosen::Rule(3), "3"), (Chosen::Default, "\"default\""), (Chosen::Head, "\"head\"")] {
            assert_eq!(serde_json::to_string(&chosen).unwrap(), text);
            assert_eq!(serde_json::from_str::<Chosen>(text).unwrap(), chosen);
        }
        for bad in ["0", "\"first\"", "true", "-1"] {
            assert!(serde_json::from_str::<Chosen>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn config_example_writes_out_the_default_rule() {
        let example: toml::Table = include_str!("../../config.example.toml").parse().unwrap();
        let routing = example["routing"].as_table().unwrap();
        assert_eq!(crate::config::parse_rules(&routing["rules"]).unwrap(), default_rules());
        assert_eq!(routing["default_tier"].as_str(), Some("sonnet"));
        assert_eq!(routing["budget_ms"].as_integer(), Some(1500));
        assert_eq!(routing["min_confidence"].as_float(), Some(0.6));
        let skills = example["skills"].as_table().unwrap();
        assert_eq!(skills["min_confidence"].as_float(), Some(0.8));
        assert_eq!(skills["enabled"].as_bool(), Some(false));
    }
}
