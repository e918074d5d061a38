//! Writing what `calibrate fit --apply` chose: the install dir's calibration file (merged with the fits it
//! already holds), and `[routing] min_confidence` and the rule (`rules`, `default_tier`) in the
//! user's config.
//!
//! The config is the user's file, with their comments and layout, so it is edited as a
//! format-preserving TOML document (toml_edit): only the keys change (or are added under
//! `[routing]`, or a `[routing]` table is appended), and the result is parsed back to check that it
//! says what was meant before it replaces the file.
//! Both files are written to a temp file beside them and renamed over, so a crash leaves the old
//! file or the new one, never half of one.

use crate::calibration::{File, Fit};
use crate::config::{Rule, parse_rules};
use crate::tier::Tier;

/// The same engine and the same question as fits match it (case and white space aside), or the
/// same option count.
fn same_slot(a: &Fit, b: &Fit) -> bool {
    let key = |f: &Fit| f.question.as_deref().map(crate::text::question_key);
    a.provider == b.provider && a.model == b.model && key(a) == key(b) && a.options == b.options
}

/// The install dir's fits (`existing`) with `new` replacing any fit for the same engine and question
/// (or option count). Fits for other engines stay.
pub fn merge_fitted(existing: Vec<Fit>, new: Vec<Fit>) -> File {
    let mut fits = existing;
    fits.retain(|old| !new.iter().any(|n| same_slot(old, n)));
    fits.extend(new);
    File::new(fits)
}

/// Sets `[routing] min_confidence = value` in the TOML `text`, touching nothing else: the key's
/// value (keeping its spacing and comment), else a new key right after the `[routing]` header, else
/// a new `[routing]` table at the end.
pub fn set_routing_min_confidence(text: &str, value: f64) -> Result<String, String> {
    let mut doc = document(text)?;
    let routing = routing_table(&mut doc)?;
    match routing.get_mut("min_confidence").and_then(toml_edit::Item::as_value_mut) {
        Some(old) => {
            let decor = old.decor().clone();
            *old = toml_edit::Value::from(value);
            *old.decor_mut() = decor;
        }
        None => {
            routing.remove("min_confidence");
            put_first(routing, vec![(toml_edit::Key::new("min_confidence"), toml_edit::value(value))], 0);
        }
    }
    let result = doc.to_string();
    // Check the edit says what was meant (a dotted `routing.min_confidence` elsewhere, say, would not).
    let parsed: toml::Table = result.parse().map_err(|e| format!("the edited config would not parse: {e}"))?;
    let got = parsed.get("routing").and_then(|r| r.get("min_confidence")).and_then(|v| v.as_float());
    if got != Some(value) {
        return Err(format!(
            "could not set [routing] min_confidence by editing the file (it reads {got:?}); set it to {value} by hand"
        ));
    }
    Ok(result)
}

fn document(text: &str) -> Result<toml_edit::DocumentMut, String> {
    text.parse().map_err(|e| format!("the config does not parse: {e}"))
}

/// The `[routing]` table, made at the end when there is none. An inline `routing = { ... }` is
/// refused: its keys sit on one line, where a learned rule over several lines would not read well.
fn routing_table(doc: &mut toml_edit::DocumentMut) -> Result<&mut toml_edit::Table, String> {
    if !doc.contains_key("routing") {
        let mut table = toml_edit::Table::new();
        // A blank line between it and the table before, as a person would write it.
        if !doc.as_table().is_empty() && !doc.to_string().ends_with("\n\n") {
            table.decor_mut().set_prefix("\n");
        }
        doc.insert("routing", toml_edit::Item::Table(table));
    }
    doc.get_mut("routing")
        .and_then(toml_edit::Item::as_table_mut)
        .ok_or_else(|| "[routing] is not a table of its own (an inline table?): set it by hand".to_string())
}

/// Puts `new` into `table` at entry `at` (0: right after the header), the other entries staying in
/// their order with their formatting.
fn put_first(table: &mut toml_edit::Table, new: Vec<(toml_edit::Key, toml_edit::Item)>, at: usize) {
    let keys: Vec<String> = table.iter().map(|(k, _)| k.to_string()).collect();
    let mut entries: Vec<(toml_edit::Key, toml_edit::Item)> =
        keys.iter().filter_map(|k| table.remove_entry(k)).collect();
    let at = at.min(entries.len());
    entries.splice(at..at, new);
    for (key, item) in entries {
        table.insert_formatted(&key, item);
    }
}

/// How the comment above a learned rule starts: an earlier one is replaced with the rule.
const LEARNED: &str = "# Learned by `system1 calibrate fit`";

/// The rule as `[routing]` lines: `default_tier`, then `rules`, one rule a line, under a comment
/// saying it was learned, and `note`.
pub fn rule_lines(rules: &[Rule], default_tier: Tier, note: &str) -> Vec<String> {
    let note: String = note.chars().filter(|c| !c.is_control()).collect();
    let mut out = vec![format!("{LEARNED}: {note}")];
    out.push(format!("default_tier = \"{default_tier}\""));
    if rules.is_empty() {
        out.push("rules = []".into());
        return out;
    }
    out.push("rules = [".into());
    for r in rules {
        let when: Vec<String> = r.when.iter().map(|(f, v)| format!("{f} = {v}")).collect();
        out.push(format!("  {{ when = {{ {} }}, tier = \"{}\" }},", when.join(", "), r.tier));
    }
    out.push("]".into());
    out
}

/// Sets `[routing] rules` and `default_tier` in the TOML `text` to `rules` and `default_tier`: the
/// old keys (and the comment an earlier learned rule had) are replaced by the new ones where the
/// first of them stood (else right after the `[routing]` header, else in a new `[routing]` table at
/// the end), with `note` in their comment. Other comments above the old keys stay above the new
/// ones; nothing else changes.
pub fn set_routing_rule(text: &str, rules: &[Rule], default_tier: Tier, note: &str) -> Result<String, String> {
    let mut doc = document(text)?;
    let routing = routing_table(&mut doc)?;
    let at = routing.iter().position(|(k, _)| k == "default_tier" || k == "rules").unwrap_or(0);
    // The comments the user wrote above the old keys, without an earlier learned rule's.
    let mut kept = String::new();
    for name in ["default_tier", "rules"] {
        if let Some((key, _)) = routing.remove_entry(name) {
            let above = key.leaf_decor().prefix().and_then(|p| p.as_str()).unwrap_or("");
            for line in above.split_inclusive('\n').filter(|l| !l.trim_start().starts_with(LEARNED)) {
                kept.push_str(line);
            }
        }
    }
    // The new keys as rule_lines writes them, read into the document with their layout.
    let lines = rule_lines(rules, default_tier, note);
    let mut block = document(&(lines.join("\n") + "\n"))?;
    let mut new: Vec<(toml_edit::Key, toml_edit::Item)> =
        ["default_tier", "rules"].iter().filter_map(|k| block.as_table_mut().remove_entry(k)).collect();
    if let Some((first, _)) = new.first_mut() {
        let learned = first.leaf_decor().prefix().and_then(|p| p.as_str()).unwrap_or("").to_string();
        first.leaf_decor_mut().set_prefix(format!("{kept}{learned}"));
    }
    put_first(routing, new, at);
    let result = doc.to_string();
    // Check the edit says what was meant (a dotted `routing.rules` elsewhere, say, would not).
    let parsed: toml::Table = result.parse().map_err(|e| format!("the edited config would not parse: {e}"))?;
    let routing = parsed.get("routing");
    let got_rules = routing.and_then(|r| r.get("rules")).map(parse_rules);
    let got_default = routing.and_then(|r| r.get("default_tier")).and_then(|v| v.as_str());
    if got_rules != Some(Ok(rules.to_vec())) || got_default != Some(default_tier.name()) {
        return Err("could not set [routing] rules and default_tier by editing the file; set them by hand".into());
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_only_the_key() {
        let text = "# my config\n[gateway]\nprovider = \"laya\"\n\n[routing]\nenabled = true  # on\nmin_confidence = 0.6 # old\nhint = false\n\n[skills]\nmin_confidence = 0.8\n";
        let out = set_routing_min_confidence(text, 0.75).unwrap();
        assert_eq!(
            out,
            "# my config\n[gateway]\nprovider = \"laya\"\n\n[routing]\nenabled = true  # on\nmin_confidence = 0.75 # old\nhint = false\n\n[skills]\nmin_confidence = 0.8\n"
        );
    }

    #[test]
    fn text_that_only_looks_like_a_key_is_left_alone() {
        // A multi-line string whose lines read like keys, and a comment naming the key: only the
        // real key changes (a line editor took the string's line for the key).
        let text = "[routing]\nnote = \"\"\"\nmin_confidence = 0.1\nrules = [\n\"\"\"\n# min_confidence = 0.2\nmin_confidence = 0.6\n";
        let out = set_routing_min_confidence(text, 0.8).unwrap();
        assert_eq!(out, text.replace("min_confidence = 0.6", "min_confidence = 0.8"));
        let out = set_routing_rule(text, &[], Tier::Haiku, "c").unwrap();
        let parsed: toml::Table = out.parse().unwrap();
        assert_eq!(parsed["routing"]["note"].as_str(), Some("min_confidence = 0.1\nrules = [\n"), "{out}");
        assert!(out.contains("# min_confidence = 0.2\nmin_confidence = 0.6\n"), "{out}");
    }

    #[test]
    fn comments_above_the_old_rule_stay() {
        let text = "[routing]\n# my tiers\ndefault_tier = \"opus\"\nhint = true\n";
        let out = set_routing_rule(text, &[], Tier::Sonnet, "c").unwrap();
        assert_eq!(
            out,
            "[routing]\n# my tiers\n# Learned by `system1 calibrate fit`: c\ndefault_tier = \"sonnet\"\nrules = []\nhint = true\n"
        );
    }

    #[test]
    fn adds_the_key_or_the_table() {
        let out = set_routing_min_confidence("[routing]\nenabled = true\n[skills]\nhint = true\n", 0.7).unwrap();
        assert_eq!(out, "[routing]\nmin_confidence = 0.7\nenabled = true\n[skills]\nhint = true\n");
        let out = set_routing_min_confidence("[gateway]\nprovider = \"mock\"", 0.65).unwrap();
        assert_eq!(out, "[gateway]\nprovider = \"mock\"\n\n[routing]\nmin_confidence = 0.65\n");
        assert_eq!(set_routing_min_confidence("", 0.6).unwrap(), "[routing]\nmin_confidence = 0.6\n");
    }

    #[test]
    fn refuses_an_edit_that_would_not_hold() {
        // An inline table cannot be edited line-wise: say so rather than write a broken file.
        let err = set_routing_min_confidence("routing = { enabled = true }\n", 0.7).unwrap_err();
        assert!(err.contains("would not parse") || err.contains("by hand"), "{err}");
    }

    fn fitted() -> Vec<Rule> {
        use crate::feature::Feature;
        vec![
            Rule { when: [(Feature::Design, true)].into(), tier: Tier::Opus },
            Rule { when: [(Feature::ReadOnly, false), (Feature::Specified, true)].into(), tier: Tier::Haiku },
        ]
    }

    #[test]
    fn the_rule_replaces_the_old_one_where_it_stood() {
        let text = "[gateway]\nprovider = \"laya\"\n\n[routing]\nenabled = true  # on\ndefault_tier = \"opus\"\nrules = [\n  { when = { design = true }, tier = \"opus\" },  # mine\n  { when = { review = true }, tier = \"opus\" },\n]\nhint = false\n\n[skills]\nenabled = true\n";
        let out = set_routing_rule(text, &fitted(), Tier::Sonnet, "fitted").unwrap();
        assert_eq!(
            out,
            "[gateway]\nprovider = \"laya\"\n\n[routing]\nenabled = true  # on\n# Learned by `system1 calibrate fit`: fitted\ndefault_tier = \"sonnet\"\nrules = [\n  { when = { design = true }, tier = \"opus\" },\n  { when = { read_only = false, specified = true }, tier = \"haiku\" },\n]\nhint = false\n\n[skills]\nenabled = true\n"
        );
        // One line each, or none: the same result where they stood, or under the header.
        let one_line = "[routing]\nhint = true\nrules = [{ when = { design = true }, tier = \"opus\" }]\n";
        let out = set_routing_rule(one_line, &[], Tier::Haiku, "c").unwrap();
        assert_eq!(
            out,
            "[routing]\nhint = true\n# Learned by `system1 calibrate fit`: c\ndefault_tier = \"haiku\"\nrules = []\n"
        );
        // Learned again: the earlier rule goes with its comment.
        let again = set_routing_rule(&out, &[], Tier::Sonnet, "d").unwrap();
        assert_eq!(
            again,
            "[routing]\nhint = true\n# Learned by `system1 calibrate fit`: d\ndefault_tier = \"sonnet\"\nrules = []\n"
        );
        let out = set_routing_rule("[routing]\nhint = true\n", &fitted()[..1], Tier::Sonnet, "c").unwrap();
        assert_eq!(
            out,
            "[routing]\n# Learned by `system1 calibrate fit`: c\ndefault_tier = \"sonnet\"\nrules = [\n  { when = { design = true }, tier = \"opus\" },\n]\nhint = true\n"
        );
        let out = set_routing_rule("[gateway]\nprovider = \"mock\"", &[], Tier::Sonnet, "c").unwrap();
        assert_eq!(
            out,
            "[gateway]\nprovider = \"mock\"\n\n[routing]\n# Learned by `system1 calibrate fit`: c\ndefault_tier = \"sonnet\"\nrules = []\n"
        );
        // An inline routing table cannot be edited line-wise.
        assert!(set_routing_rule("routing = { hint = true }\n", &[], Tier::Sonnet, "c").is_err());
    }

    #[test]
    fn merge_replaces_the_same_slot_only() {
        let fit = |q: Option<&str>, o: Option<usize>, m: &str, t: f64| Fit {
            provider: "laya".into(),
            model: m.into(),
            question: q.map(String::from),
            options: o,
            temperature: t,
            extra: Default::default(),
        };
        let old = vec![fit(Some("design"), None, "typed-decisions", 0.3), fit(Some("design"), None, "english", 0.9)];
        let merged = merge_fitted(
            old,
            vec![fit(Some("design"), None, "typed-decisions", 0.5), fit(None, Some(2), "typed-decisions", 0.7)],
        );
        let ts: Vec<(String, f64)> = merged.fits.iter().map(|f| (f.model.clone(), f.temperature)).collect();
        assert_eq!(ts, vec![("english".into(), 0.9), ("typed-decisions".into(), 0.5), ("typed-decisions".into(), 0.7)]);

        // A refit of the same question in another case or spacing replaces it: both would match.
        let old = vec![fit(Some("Is it done?"), None, "m", 0.3), fit(Some("Is it late?"), None, "m", 0.4)];
        let merged = merge_fitted(old, vec![fit(Some(" is IT  done?"), None, "m", 0.6)]);
        let qs: Vec<(&str, f64)> =
            merged.fits.iter().map(|f| (f.question.as_deref().unwrap_or(""), f.temperature)).collect();
        assert_eq!(qs, vec![("Is it late?", 0.4), (" is IT  done?", 0.6)]);
    }
}
