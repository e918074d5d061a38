//! The routing rule, as data the user owns: an ordered list of `{ when = {feature = bool}, tier }`
//! and a default tier (`[routing] rules`, `default_tier`; parsed and validated in `config`). The
//! first rule whose every condition holds wins; a rule with an empty `when` always matches.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::config::Rule;

/// Which rule chose the tier.
#[derive(Debug, Clone, PartialEq)]
pub enum Chosen {
    /// The 1-based position of the rule in the list.
    Rule(usize),
    Default,
}

impl Chosen {
    /// As the routing log keeps it: the rule's number, or `"default"`.
    pub fn to_json(&self) -> Value {
        match self {
            Chosen::Rule(n) => json!(n),
            Chosen::Default => json!("default"),
        }
    }
}

/// Applies the rules to the feature answers. A condition on a feature without an answer does not hold.
pub fn choose<'a>(rules: &'a [Rule], default_tier: &'a str, answers: &BTreeMap<&str, bool>) -> (&'a str, Chosen) {
    for (i, rule) in rules.iter().enumerate() {
        if rule.when.iter().all(|(feature, want)| answers.get(feature.as_str()) == Some(want)) {
            return (&rule.tier, Chosen::Rule(i + 1));
        }
    }
    (default_tier, Chosen::Default)
}

/// A rule's condition in words, e.g. `read_only and specified` or `not design`.
pub fn describe(rule: &Rule) -> String {
    if rule.when.is_empty() {
        return "always".to_string();
    }
    let parts: Vec<String> = rule.when.iter().map(|(f, v)| if *v { f.clone() } else { format!("not {f}") }).collect();
    parts.join(" and ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::default_rules;

    fn answers(pairs: &[(&'static str, bool)]) -> BTreeMap<&'static str, bool> {
        pairs.iter().copied().collect()
    }

    #[test]
    fn default_rule_reproduces_the_policy() {
        let r = default_rules();
        let all = |ro, de, rv, sp| answers(&[("read_only", ro), ("design", de), ("review", rv), ("specified", sp)]);
        assert_eq!(choose(&r, "sonnet", &all(false, true, false, false)), ("opus", Chosen::Rule(1)));
        assert_eq!(choose(&r, "sonnet", &all(true, false, true, true)), ("opus", Chosen::Rule(2)));
        assert_eq!(choose(&r, "sonnet", &all(true, false, false, true)), ("haiku", Chosen::Rule(3)));
        assert_eq!(choose(&r, "sonnet", &all(true, false, false, false)), ("sonnet", Chosen::Default));
        assert_eq!(choose(&r, "sonnet", &all(false, false, false, true)), ("sonnet", Chosen::Default));
    }

    #[test]
    fn first_match_wins_and_missing_answers_never_match() {
        let rules = vec![
            Rule { when: [("design".to_string(), false)].into(), tier: "haiku".into() },
            Rule { when: BTreeMap::new(), tier: "opus".into() },
        ];
        assert_eq!(choose(&rules, "sonnet", &answers(&[("design", false)])), ("haiku", Chosen::Rule(1)));
        assert_eq!(choose(&rules, "sonnet", &answers(&[])), ("opus", Chosen::Rule(2)));
        assert_eq!(describe(&rules[0]), "not design");
        assert_eq!(describe(&rules[1]), "always");
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
