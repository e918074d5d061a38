//! Writing what `calibrate fit --apply` chose: the install dir's calibration file (merged with the fits it
//! already holds), and `[routing] min_confidence` and the rule (`rules`, `default_tier`) in the
//! user's config.
//!
//! The config is the user's file, with their comments and layout, so it is edited as text: only the
//! keys' lines change (or are added under `[routing]`, or a `[routing]` table is appended), and
//! the result is parsed back to check that it says what was meant before it replaces the file.
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

/// Sets `[routing] min_confidence = value` in the TOML `text`, touching nothing else: the key's line
/// (keeping its comment), else a line right after the `[routing]` header, else a new `[routing]`.
pub fn set_routing_min_confidence(text: &str, value: f64) -> Result<String, String> {
    let new_line = format!("min_confidence = {value:?}");
    let result = replace_in_routing(
        text,
        |l| key_of(l) == Some("min_confidence"),
        |old| {
            // Keep a trailing comment on the line.
            let comment = old.and_then(|l| l.find('#').map(|c| format!("  {}", l[c..].trim_end())));
            vec![format!("{new_line}{}", comment.unwrap_or_default())]
        },
    );
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

/// Whether `line` opens a table (`[x]`, not an array of tables).
fn is_header(l: &str) -> bool {
    let t = l.trim();
    t.starts_with('[') && !t.starts_with("[[")
}

fn is_routing_header(l: &str) -> bool {
    let t = l.split('#').next().unwrap_or("").trim();
    t.strip_prefix('[').and_then(|r| r.strip_suffix(']')).is_some_and(|r| r.trim() == "routing")
}

/// The key a `key = value` line sets, if it is one.
fn key_of(l: &str) -> Option<&str> {
    let t = l.trim_start();
    if t.starts_with('#') || !t.contains('=') {
        return None;
    }
    Some(t.split('=').next().unwrap_or("").trim())
}

/// How far the brackets of `l` (before a comment) open (+) or close (-): enough to find where a
/// `rules = [` value written over several lines ends.
fn bracket_depth(l: &str) -> i64 {
    let code = l.split('#').next().unwrap_or("");
    code.chars().map(|c| i64::from(c == '[') - i64::from(c == ']')).sum()
}

/// `text` with the lines of the first `[routing]` table that `replaced` picks (a key's line, and
/// the rest of a value over several lines, as a `rules = [` list) taken out, and `new(first line
/// taken out)` put where the first of them stood, else right after the header; without a
/// `[routing]` table, a new one at the end holds them. Nothing else changes.
fn replace_in_routing(
    text: &str,
    replaced: impl Fn(&str) -> bool,
    new: impl FnOnce(Option<&str>) -> Vec<String>,
) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len() + 8);
    let Some(header) = lines.iter().position(|l| is_routing_header(l)) else {
        out.extend(lines.iter().map(|l| l.to_string()));
        if out.last().is_some_and(|l| !l.trim().is_empty()) {
            out.push(String::new());
        }
        out.push("[routing]".into());
        out.extend(new(None));
        return out.join("\n") + "\n";
    };
    out.extend(lines[..=header].iter().map(|l| l.to_string()));
    let mut kept: Vec<&str> = Vec::new();
    let mut at: Option<(usize, &str)> = None;
    let mut j = header + 1;
    while j < lines.len() && !is_header(lines[j]) {
        if !replaced(lines[j]) {
            kept.push(lines[j]);
            j += 1;
            continue;
        }
        at.get_or_insert((kept.len(), lines[j]));
        let mut depth = bracket_depth(lines[j]);
        j += 1;
        while depth > 0 && j < lines.len() {
            depth += bracket_depth(lines[j]);
            j += 1;
        }
    }
    let (at, first) = at.map_or((0, None), |(at, line)| (at, Some(line)));
    out.extend(kept[..at].iter().map(|l| l.to_string()));
    out.extend(new(first));
    out.extend(kept[at..].iter().map(|l| l.to_string()));
    out.extend(lines[j..].iter().map(|l| l.to_string()));
    out.join("\n") + "\n"
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
/// old keys' lines (a `rules` list over several lines included, and the comment an earlier learned
/// rule had) are replaced by the new ones where the first of them stood (else right after the
/// `[routing]` header, else in a new `[routing]` table at the end), with `note` in their comment.
/// Nothing else changes.
pub fn set_routing_rule(text: &str, rules: &[Rule], default_tier: Tier, note: &str) -> Result<String, String> {
    let result = replace_in_routing(
        text,
        |l| l.trim_start().starts_with(LEARNED) || matches!(key_of(l), Some("default_tier" | "rules")),
        |_| rule_lines(rules, default_tier, note),
    );
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
            "# my config\n[gateway]\nprovider = \"laya\"\n\n[routing]\nenabled = true  # on\nmin_confidence = 0.75  # old\nhint = false\n\n[skills]\nmin_confidence = 0.8\n"
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
