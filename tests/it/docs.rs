//! The documentation stays navigable: every relative link in README.md, CONTRIBUTING.md and docs/
//! points at a file that exists (and, with `#anchor`, at a heading that exists in it), and every
//! repository path the docs name in backticks (`src/...`, `scripts/...`) is still there, so a moved
//! module or script breaks this test instead of the docs. README keeps the one install command and
//! the one test command, and the test command is the one CI runs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, CONTRIBUTING.md and every Markdown file under docs/.
fn doc_files() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md"), root.join("CONTRIBUTING.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The lines outside fenced code blocks, with their line numbers (fences hold commands, not links).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((n + 1, line));
        }
    }
    out
}

/// `line` without its inline code spans, so that `[x](y)` shown as code is not read as a link.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// The targets of inline links `[text](target)` in `text`, outside code.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for (_, line) in prose_lines(text) {
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            match after.find(')') {
                Some(end) => {
                    targets.push(after[..end].trim().to_string());
                    rest = &after[end + 1..];
                }
                None => break,
            }
        }
    }
    targets
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor the headings of a Markdown file define (a repeated heading gets `-1`, `-2`, ...).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let Some(heading) = line.strip_prefix('#') else { continue };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base = slug(heading);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// What is wrong with one link target of `file`, if anything.
fn broken(file: &Path, target: &str) -> Option<String> {
    if target.is_empty() {
        return Some("an empty link".into());
    }
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    if target.starts_with('/') {
        return Some(format!("{target}: an absolute path, which does not resolve on GitHub or in a clone"));
    }
    let (path, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let resolved = if path.is_empty() { file.to_path_buf() } else { file.parent().expect("a parent").join(path) };
    if !resolved.exists() {
        return Some(format!("{target}: {} does not exist", resolved.display()));
    }
    let root = root().canonicalize().expect("root");
    match resolved.canonicalize() {
        Ok(p) if p.starts_with(&root) => {}
        _ => return Some(format!("{target}: leads out of the repository")),
    }
    if let Some(anchor) = anchor {
        if resolved.extension().is_none_or(|x| x != "md") {
            return Some(format!("{target}: an anchor into a file that is not Markdown"));
        }
        if !anchors(&read(&resolved)).contains(anchor) {
            return Some(format!("{target}: {} has no heading with the anchor #{anchor}", resolved.display()));
        }
    }
    None
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in doc_files() {
        for target in link_targets(&read(&file)) {
            checked += 1;
            if let Some(why) = broken(&file, &target) {
                problems.push(format!("{}: {why}", file.strip_prefix(root()).unwrap_or(&file).display()));
            }
        }
    }
    assert!(checked > 50, "only {checked} links found: is the link reader broken?");
    assert!(problems.is_empty(), "broken links:\n{}", problems.join("\n"));
}

/// Top-level folders whose paths the docs name in backticks.
const REPO_DIRS: &[&str] =
    &["src/", "scripts/", "tests/", "docs/", "hooks/", "engines/", "calibration/", "schema/", "skills/", ".github/"];

/// The words of `text` that are code: inside inline code spans, or on lines of fenced blocks.
fn code_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let code: Vec<&str> = if fenced { vec![line] } else { line.split('`').skip(1).step_by(2).collect() };
        for span in code {
            words.extend(
                span.split_whitespace().map(|w| w.trim_matches([',', '.', ':', ';', '(', ')', '"', '\'']).to_string()),
            );
        }
    }
    words
}

#[test]
fn every_repository_path_the_docs_name_exists() {
    let mut problems = Vec::new();
    for file in doc_files() {
        for word in code_words(&read(&file)) {
            let word = word.strip_prefix("./").unwrap_or(&word);
            if !REPO_DIRS.iter().any(|d| word.starts_with(d)) || word.contains(['<', '*', '{', '…']) {
                continue;
            }
            if !root().join(word).exists() {
                problems
                    .push(format!("{}: `{word}` does not exist", file.strip_prefix(root()).unwrap_or(&file).display()));
            }
        }
    }
    assert!(problems.is_empty(), "paths named in the docs that are gone:\n{}", problems.join("\n"));
}

#[test]
fn every_inline_code_span_closes_on_its_line() {
    // The path check above reads code spans line by line; a span wrapped onto the next line would
    // turn prose into "code" and code into prose.
    let mut problems = Vec::new();
    for file in doc_files() {
        for (n, line) in prose_lines(&read(&file)) {
            if line.matches('`').count() % 2 == 1 {
                problems.push(format!("{}:{n}: {line}", file.strip_prefix(root()).unwrap_or(&file).display()));
            }
        }
    }
    assert!(problems.is_empty(), "code spans that do not close on their line:\n{}", problems.join("\n"));
}

#[test]
fn readme_keeps_the_install_command_and_the_test_command_ci_runs() {
    let readme = read(&root().join("README.md"));
    assert!(
        readme.contains("sh scripts/install.sh") && root().join("scripts/install.sh").is_file(),
        "README's install command is `sh scripts/install.sh`"
    );
    assert!(readme.contains("```sh\nscripts/test\n```"), "README shows its one test command, scripts/test");
    let ci = read(&root().join(".ci/run"));
    assert!(ci.lines().any(|l| l.trim() == "scripts/test"), ".ci/run runs README's test command");
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; what a new user reads first fits in 300, the rest goes in docs/"
    );
}

#[test]
fn the_link_reader_finds_links_and_anchors() {
    assert_eq!(link_targets("see [a](b.md#c) and `[x](not-a-link)` and [d](https://e)"), ["b.md#c", "https://e"]);
    assert!(link_targets("```\n[a](inside-a-fence)\n```").is_empty());
    let a =
        anchors("# The MCP tools (schema \"1\")\n## `[providers.mock]`\n## Cost\n## Cost\n```\n# not a heading\n```");
    assert_eq!(
        a.into_iter().collect::<Vec<_>>(),
        ["cost", "cost-1", "providersmock", "the-mcp-tools-schema-1"].map(String::from)
    );
}

/// The top-level modules of the crate in the order of CONTRIBUTING.md's module map, top first.
fn module_map() -> Vec<String> {
    let text = read(&root().join("CONTRIBUTING.md"));
    let after = text.split("## The module map").nth(1).expect("CONTRIBUTING.md has a module map");
    let block = after.split("```").nth(1).expect("the map is a fenced block");
    let mut order = Vec::new();
    for line in block.lines() {
        // A module is a word ending in `/` or `.rs`: `hook/`, `checks.rs`, `commands/<name>.rs`.
        for word in line.split_whitespace() {
            let name = word.strip_suffix(".rs").or_else(|| word.strip_suffix('/')).unwrap_or("");
            let name = name.split('/').next().unwrap_or("");
            if !name.is_empty()
                && name.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                && !order.iter().any(|m| m == name)
            {
                order.push(name.to_string());
            }
        }
    }
    order
}

/// The product (non-test) source of every file under `dir`, without line comments.
fn product_sources(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).expect("read src").map(|e| e.expect("entry").path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            product_sources(&path, out);
        } else if name.ends_with(".rs") && name != "tests.rs" && name != "testing.rs" {
            let text = read(&path);
            let product = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
            let code: Vec<&str> = product.lines().map(|l| l.split("//").next().unwrap_or("")).collect();
            out.push((path, code.join("\n")));
        }
    }
}

/// The crate's top-level modules each `crate::` path in `code` names (`crate::a::b`, `crate::{a, b}`).
fn crate_imports(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for part in code.split("crate::").skip(1) {
        let names: Vec<&str> = match part.strip_prefix('{') {
            Some(group) => group.split('}').next().unwrap_or("").split(',').collect(),
            None => vec![part],
        };
        for n in names {
            let ident: String = n.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !ident.is_empty() {
                found.insert(ident);
            }
        }
    }
    found
}

#[test]
fn the_module_map_in_contributing_is_the_import_graph() {
    let order = module_map();
    let src = root().join("src");
    let mut files = Vec::new();
    product_sources(&src, &mut files);
    let mut problems = Vec::new();
    for (path, code) in &files {
        let rel = path.strip_prefix(&src).expect("under src");
        let module = rel.components().next().and_then(|c| c.as_os_str().to_str()).unwrap_or("");
        let module = module.strip_suffix(".rs").unwrap_or(module);
        let Some(at) = order.iter().position(|m| m == module) else {
            problems.push(format!("src/{module} is not in CONTRIBUTING.md's module map"));
            continue;
        };
        for import in crate_imports(code) {
            if import == module {
                continue;
            }
            match order.iter().position(|m| *m == import) {
                Some(to) if to > at => {}
                Some(_) => {
                    problems.push(format!("src/{} imports {import}, which the map puts above {module}", rel.display()))
                }
                None => problems.push(format!("src/{} imports {import}, which is not in the map", rel.display())),
            }
        }
    }
    // Each crate of the workspace beside the product has its line, as `crates/<name>/`.
    let text = read(&root().join("CONTRIBUTING.md"));
    let block = text.split("## The module map").nth(1).and_then(|a| a.split("```").nth(1)).unwrap_or("");
    for entry in std::fs::read_dir(root().join("crates")).expect("read crates") {
        let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
        if !block.split_whitespace().any(|w| w == format!("crates/{name}/")) {
            problems.push(format!("crates/{name}/ is not in CONTRIBUTING.md's module map"));
        }
    }
    problems.sort();
    problems.dedup();
    assert!(order.len() > 15, "the map names only {order:?}: is the map reader broken?");
    assert!(problems.is_empty(), "CONTRIBUTING.md's module map and the code disagree:\n{}", problems.join("\n"));
}

#[test]
fn the_import_reader_sees_grouped_and_nested_paths() {
    let code = "use crate::{logging, paths::x};\nuse crate::gateway::Gateway;\nlet s = crate::state::is_paused();";
    assert_eq!(crate_imports(code).into_iter().collect::<Vec<_>>(), ["gateway", "logging", "paths", "state"]);
}

/// Every file of the code, scripts and tests whose comments could cite a document: src/, crates/,
/// scripts/, tests/ (this file aside: it names the patterns), hooks/, engines/, .ci/ and .github/.
fn cited_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for path in entries.map(|e| e.expect("entry").path()) {
            if path.is_dir() {
                walk(&path, out);
            } else if path
                .extension()
                .is_none_or(|x| ["rs", "sh", "ps1", "py", "toml", "yml", ""].iter().any(|e| x == *e))
            {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    for dir in ["src", "crates", "scripts", "tests", "hooks", "engines", ".ci", ".github"] {
        walk(&root().join(dir), &mut files);
    }
    files.retain(|p| !p.ends_with("tests/it/docs.rs") && !p.components().any(|c| c.as_os_str() == "snapshots"));
    files.sort();
    files
}

/// Patterns that cite a document outside the repository, with what each one is.
static OUTSIDE: std::sync::LazyLock<Vec<(regex::Regex, &str)>> = std::sync::LazyLock::new(|| {
    [
        (r"(?i)\bseeds?\s*0\d\d\b", "a seed file"),
        (r"\bSPEC\b", "the product spec"),
        (r"/work/|shared/seeds|shared/real-engines", "a path outside the repository"),
        (r"§", "a section of an outside document"),
        (r#"README "[^"]*""#, "a README section by name (sections move: name a file under docs/)"),
    ]
    .into_iter()
    .map(|(p, what)| (regex::Regex::new(p).expect("pattern"), what))
    .collect()
});

static MARKDOWN: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"[\w./-]*\b[\w-]+\.md\b").expect("pattern"));

/// Why `comment` cites a document that is not in the repository, if it does.
fn outside_citation(comment: &str) -> Option<String> {
    for (pattern, what) in OUTSIDE.iter() {
        if let Some(m) = pattern.find(comment) {
            return Some(format!("{what}: {:?}", m.as_str()));
        }
    }
    // A Markdown file is fine where it is one of the repository's (docs/<name>.md, calibration/README.md,
    // README.md, CONTRIBUTING.md), or a skill's SKILL.md, which is a kind of file, not a document.
    for m in MARKDOWN.find_iter(comment) {
        let name = m.as_str().trim_start_matches("./");
        let here = root().join(name).is_file()
            || ["README.md", "CONTRIBUTING.md"].contains(&name)
            || name.ends_with("SKILL.md");
        if !here {
            return Some(format!("{name}, which is not a file in the repository (link one under docs/)"));
        }
    }
    None
}

/// The part of `line` a citation could be in: a Rust file's comments; any other file's whole line
/// (shell and PowerShell comments, Python docstrings, YAML).
fn commentary<'a>(file: &Path, line: &'a str) -> Option<&'a str> {
    if file.extension().is_some_and(|x| x == "rs") { line.split_once("//").map(|(_, c)| c) } else { Some(line) }
}

#[test]
fn no_comment_cites_a_document_outside_the_repository() {
    let mut problems = Vec::new();
    for file in cited_files() {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        for (n, line) in text.lines().enumerate() {
            if let Some(why) = commentary(&file, line).and_then(outside_citation) {
                problems.push(format!("{}:{}: {why}", file.strip_prefix(root()).unwrap_or(&file).display(), n + 1));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "state the fact, or link a doc under docs/, instead of citing a document outside the repository:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_citation_check_knows_inside_from_outside() {
    for outside in [
        "//! (seed 003 \"Configure\")",
        "// SPEC section 7",
        "//! see `claude-code.md` section 6",
        "/// engines.md §3",
        "// README \"Exit codes\"",
        "# from /work/shared/engines.md",
    ] {
        assert!(outside_citation(outside).is_some(), "{outside}");
    }
    for inside in [
        "//! for users: docs/configuration.md",
        "// see calibration/README.md",
        "// README.md's test command",
        "let specified = true; // a SPECIFIED prompt",
        "// the seed sets in calibration/",
    ] {
        assert_eq!(outside_citation(inside), None, "{inside}");
    }
}

/// README's context cost is docs/tools.md's measured total (characters / 4 of what the requests
/// carry), and where either names Claude Code's own larger `/context` estimate it says whose it is.
#[test]
fn the_context_cost_in_readme_is_the_measured_one_and_claude_codes_estimate_is_named() {
    let flat = |p: &str| read(&root().join(p)).split_whitespace().collect::<Vec<_>>().join(" ");
    let (readme, tools) = (flat("README.md"), flat("docs/tools.md"));
    // The total row's last figure: the later Claude Code version's.
    let row = tools.split("| **total** |").nth(1).and_then(|r| r.split(" | |").next()).expect("the total row");
    let measured = row.rsplit("**about ").next().and_then(|r| r.split(' ').next()).expect("a figure");
    assert!(
        readme.contains(&format!("the plugin adds about {measured} tokens to each session")),
        "README gives docs/tools.md's {measured}"
    );
    for text in [&readme, &tools] {
        let estimate = text.find("283 tokens").expect("Claude Code's estimate");
        let before = &text[estimate.saturating_sub(200)..estimate];
        assert!(before.contains("Claude Code's own") && before.contains("/context"), "{before}");
        assert!(text.contains("characters / 4"), "the measured figure says how it is counted");
    }
}

/// calibration/README.md's figures for the second, blind reading of the seed tiers are the two files':
/// the table of the two readings, their agreement and kappa, and the rules' agreement with each.
#[test]
fn the_second_reading_figures_in_the_calibration_readme_are_the_files() {
    let tiers = |p: &str| -> Vec<(serde_json::Value, String)> {
        read(&root().join(p))
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{p}: {e}: {l}"));
                (v["labels"].clone(), v["tier"].as_str().expect("a tier").to_string())
            })
            .collect()
    };
    let (first, second) = (tiers("calibration/routing.jsonl"), tiers("calibration/routing-second-reading.jsonl"));
    assert_eq!(first.len(), second.len());
    assert!(first.iter().zip(&second).all(|(a, b)| a.0 == b.0), "the feature labels are the first reading's");
    let names = ["haiku", "sonnet", "opus"];
    let mut table = [[0usize; 3]; 3];
    for ((_, a), (_, b)) in first.iter().zip(&second) {
        let at = |t: &str| names.iter().position(|n| *n == t).expect("a tier the seed set uses");
        table[at(a)][at(b)] += 1;
    }
    let n = first.len() as f64;
    let agree: usize = (0..3).map(|i| table[i][i]).sum();
    let row = |i: usize| table[i].iter().sum::<usize>() as f64;
    let col = |j: usize| (0..3).map(|i| table[i][j]).sum::<usize>() as f64;
    let expected = (0..3).map(|i| row(i) * col(i)).sum::<f64>() / (n * n);
    let kappa = (agree as f64 / n - expected) / (1.0 - expected);
    let flat = read(&root().join("calibration/README.md")).split_whitespace().collect::<Vec<_>>().join(" ");
    for (i, name) in names.iter().enumerate() {
        let line = format!("| {name} ({}) | {} | {} | {} |", row(i), table[i][0], table[i][1], table[i][2]);
        assert!(flat.contains(&line), "missing {line}");
    }
    let said = format!(
        "agree on {agree} of {} prompts ({:.1}%, Cohen's kappa {kappa:.2})",
        first.len(),
        100.0 * agree as f64 / n
    );
    assert!(flat.contains(&said), "missing {said}");
    // The default rule (config.example.toml), and `specified -> haiku` in place of its third rule.
    let rule = |labels: &serde_json::Value, spec_alone: bool| {
        let l = |k: &str| labels[k].as_bool().unwrap_or(false);
        if l("design") || l("review") {
            "opus"
        } else if l("specified") && (spec_alone || l("read_only")) {
            "haiku"
        } else {
            "sonnet"
        }
    };
    let share = |set: &[(serde_json::Value, String)], spec_alone: bool| {
        100.0 * set.iter().filter(|(l, t)| rule(l, spec_alone) == t).count() as f64 / n
    };
    for spec_alone in [false, true] {
        let said = format!("({:.1}% against {:.1}%", share(&second, spec_alone), share(&first, spec_alone));
        assert!(flat.contains(&said), "missing {said}");
    }
}
