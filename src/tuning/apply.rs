//! Writing what `calibrate fit --apply` chose: the local calibration file (merged with the fits it
//! already holds) and `[routing] min_confidence` in the user's config.
//!
//! The config is the user's file, with their comments and layout, so it is edited as text: only the
//! one key's line changes (or is added under `[routing]`, or a `[routing]` table is appended), and
//! the result is parsed back to check that it says what was meant before it replaces the file.
//! Both files are written to a temp file beside them and renamed over, so a crash leaves the old
//! file or the new one, never half of one.

use crate::calibration::{File, Fit};

fn same_slot(a: &Fit, b: &Fit) -> bool {
    a.provider == b.provider && a.model == b.model && a.question == b.question && a.options == b.options
}

/// The local file's fits with `new` replacing any fit for the same engine and question (or option
/// count). Fits for other engines stay. A local file that does not parse is an error: replacing it
/// would lose whatever it held.
pub fn merge_local(existing: Option<&str>, new: Vec<Fit>) -> Result<File, String> {
    let mut fits: Vec<Fit> = match existing {
        None => Vec::new(),
        Some(text) => File::parse(text)?.fits,
    };
    fits.retain(|old| !new.iter().any(|n| same_slot(old, n)));
    fits.extend(new);
    Ok(File::new(fits))
}

/// Sets `[routing] min_confidence = value` in the TOML `text`, touching nothing else.
pub fn set_routing_min_confidence(text: &str, value: f64) -> Result<String, String> {
    let new_line = format!("min_confidence = {value:?}");
    let lines: Vec<&str> = text.lines().collect();
    let header = |l: &str| {
        let t = l.trim();
        t.starts_with('[') && !t.starts_with("[[")
    };
    let is_routing = |l: &str| {
        let t = l.split('#').next().unwrap_or("").trim();
        t.strip_prefix('[').and_then(|r| r.strip_suffix(']')).map(|r| r.trim() == "routing").unwrap_or(false)
    };
    let mut out: Vec<String> = Vec::with_capacity(lines.len() + 2);
    let mut done = false;
    let mut i = 0;
    while i < lines.len() {
        out.push(lines[i].to_string());
        if !done && is_routing(lines[i]) {
            // Look through the section for the key; add it right after the header if absent.
            let mut j = i + 1;
            let mut found = None;
            while j < lines.len() && !header(lines[j]) {
                let key = lines[j].split('=').next().unwrap_or("").trim();
                if lines[j].contains('=') && key == "min_confidence" {
                    found = Some(j);
                }
                j += 1;
            }
            match found {
                Some(k) => {
                    for (idx, l) in lines.iter().enumerate().take(j).skip(i + 1) {
                        if idx == k {
                            // Keep a trailing comment on the line.
                            let comment = l.find('#').map(|c| format!("  {}", l[c..].trim_end())).unwrap_or_default();
                            out.push(format!("{new_line}{comment}"));
                        } else {
                            out.push(l.to_string());
                        }
                    }
                }
                None => {
                    out.push(new_line.clone());
                    out.extend(lines[i + 1..j].iter().map(|l| l.to_string()));
                }
            }
            i = j;
            done = true;
            continue;
        }
        i += 1;
    }
    if !done {
        if out.last().is_some_and(|l| !l.trim().is_empty()) {
            out.push(String::new());
        }
        out.push("[routing]".into());
        out.push(new_line);
    }
    let mut result = out.join("\n");
    result.push('\n');
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
        let old = File::new(vec![
            fit(Some("design"), None, "typed-decisions", 0.3),
            fit(Some("design"), None, "english", 0.9),
        ]);
        let text = serde_json::to_string(&old).unwrap();
        let merged = merge_local(
            Some(&text),
            vec![fit(Some("design"), None, "typed-decisions", 0.5), fit(None, Some(2), "typed-decisions", 0.7)],
        )
        .unwrap();
        let ts: Vec<(String, f64)> = merged.fits.iter().map(|f| (f.model.clone(), f.temperature)).collect();
        assert_eq!(ts, vec![("english".into(), 0.9), ("typed-decisions".into(), 0.5), ("typed-decisions".into(), 0.7)]);
        assert!(merge_local(Some("{broken"), vec![]).is_err());
    }
}
