//! The skill picker: which of the skills Claude can load fits a prompt, asked as one choice among
//! the skill names plus `none`.
//!
//! Candidates come from the hook input when Claude Code sends a list (2.1.197 does not), else
//! from the file system: `~/.claude/skills`, the project's `.claude/skills` (the hook's `cwd` and
//! its repo root), and the `skills/` of every enabled plugin, found through `enabledPlugins` in
//! Claude Code's settings and the `installPath` records of `plugins/installed_plugins.json`.
//! Skills with `disable-model-invocation: true` are the user's to call and are left out; a skill
//! whose frontmatter does not parse is skipped alone. Plugin skills are named `plugin:skill`, as
//! Claude Code names them.
//!
//! A repository's `.claude/skills` is anyone's to fill, and the picker runs on every prompt: a
//! `SKILL.md` is read only when it is a regular file of at most [`MAX_SKILL_BYTES`] inside its
//! skills folder (a link out of it, a FIFO or a device is skipped), the walk stops at the hook's
//! deadline, and a name is kept only when it is made of `[A-Za-z0-9:_.-]`, since the chosen name
//! is written into Claude's context.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Map, Value, json};

use super::gate::NoSkillHint;
use crate::claude_code::{self, InstalledPlugins, PluginManifest};
use crate::fsutil::ReadError;
use crate::gateway::request::MAX_OPTIONS;
use crate::gateway::{Answer, Ask, Gateway, Purpose, Query, Refusal};
use crate::logging;
use crate::paths;
use crate::providers::Question;

/// The option meaning "no skill fits".
pub const NONE: &str = "none";
/// Descriptions are clipped: the engine needs the gist, and the request stays small.
const MAX_DESCRIPTION_CHARS: usize = 300;
/// A larger SKILL.md is skipped: its frontmatter is all the picker reads.
pub const MAX_SKILL_BYTES: u64 = 64 * 1024;
/// Skill folders looked at in one skills folder; more than the engines take as options anyway.
const MAX_SKILL_DIRS: usize = 256;
/// Skill names longer than this are skipped (Claude Code's own are at most 64 characters).
const MAX_NAME_CHARS: usize = 128;

/// Whether a skill name may be offered and written into Claude's context: letters, digits and
/// `:_.-`, nothing that could close the hint's quoting or start a line of its own.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_CHARS
        && name.chars().all(|c| c.is_ascii_alphanumeric() || ":_.-".contains(c))
}

/// Keeps the skills whose names are plain ([`is_plain_name`]); the others are logged and dropped.
fn plain_names(skills: Vec<Skill>) -> Vec<Skill> {
    skills
        .into_iter()
        .filter(|s| {
            let ok = is_plain_name(&s.name);
            if !ok {
                logging::warn(
                    "skills",
                    &format!("skipping a {} skill named {:?}: names are [A-Za-z0-9:_.-]", s.origin, s.name),
                );
            }
            ok
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// Where it was found: `input`, `user`, `project` or `plugin`.
    pub origin: &'static str,
}

/// Candidates sent in the hook input, if Claude Code sent a list: `skills` as names or
/// `{name, description}` objects.
pub fn from_input(payload: &Value) -> Option<Vec<Skill>> {
    let items = payload.get("skills")?.as_array()?;
    let skills = items
        .iter()
        .filter_map(|item| match item {
            Value::String(name) => Some((name.clone(), String::new())),
            Value::Object(o) => Some((
                o.get("name")?.as_str()?.to_string(),
                o.get("description").and_then(Value::as_str).unwrap_or("").to_string(),
            )),
            _ => None,
        })
        .filter(|(name, _)| !name.trim().is_empty())
        .map(|(name, description)| Skill { name, description, origin: "input" })
        .collect();
    Some(dedupe(plain_names(skills)))
}

/// Candidates from the file system, for a session in `cwd`, as many as are found by `deadline`.
pub fn discover(cwd: Option<&Path>, deadline: Instant) -> Vec<Skill> {
    let claude = paths::claude_dir();
    let mut skills = scan(&claude.join("skills"), "user", None, deadline);
    let projects = cwd.map(project_dirs).unwrap_or_default();
    for project in &projects {
        skills.extend(scan(&project.join(".claude").join("skills"), "project", None, deadline));
    }
    for (plugin, root) in enabled_plugins(&claude, &projects) {
        for dir in plugin_skill_dirs(&root) {
            skills.extend(scan(&dir, "plugin", Some(&plugin), deadline));
        }
    }
    dedupe(plain_names(skills))
}

/// The first of several skills with one name wins (user over project over plugin, as listed).
fn dedupe(skills: Vec<Skill>) -> Vec<Skill> {
    let mut seen = std::collections::HashSet::new();
    skills.into_iter().filter(|s| seen.insert(s.name.clone()) && s.name != NONE).collect()
}

/// `cwd` and, when it is inside a git repo, the repo root.
fn project_dirs(cwd: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![cwd.to_path_buf()];
    if let Some(root) = cwd.ancestors().skip(1).find(|a| a.join(".git").exists()) {
        dirs.push(root.to_path_buf());
    }
    dirs
}

/// Each `<dir>/<skill>/SKILL.md` that Claude may load on its own.
fn scan(dir: &Path, origin: &'static str, plugin: Option<&str>, deadline: Instant) -> Vec<Skill> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let Ok(root) = std::fs::canonicalize(dir) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok()).take(MAX_SKILL_DIRS).map(|e| e.path()).collect();
    dirs.sort();
    let mut out = Vec::new();
    for skill_dir in dirs {
        if Instant::now() >= deadline {
            logging::warn("skills", &format!("stopped reading {}: the hook's time is up", dir.display()));
            break;
        }
        let file = skill_dir.join("SKILL.md");
        let Some(text) = read_skill_file(&root, &file) else { continue };
        let fields = match frontmatter(&text) {
            Ok(f) => f,
            Err(e) => {
                logging::warn("skills", &format!("skipping {}: {e}", file.display()));
                continue;
            }
        };
        if fields.get("disable-model-invocation").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            continue;
        }
        let dir_name = skill_dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        let base = fields.get("name").filter(|n| !n.is_empty()).cloned().unwrap_or(dir_name);
        let name = match plugin {
            Some(p) => format!("{p}:{base}"),
            None => base,
        };
        let description = fields.get("description").cloned().unwrap_or_default();
        out.push(Skill { name, description, origin });
    }
    out
}

/// A SKILL.md's text, when it is a regular file of at most [`MAX_SKILL_BYTES`] that resolves to a
/// place inside `root` (the skills folder, resolved); `None` (logged unless absent) otherwise.
fn read_skill_file(root: &Path, file: &Path) -> Option<String> {
    match crate::fsutil::read_text(file, MAX_SKILL_BYTES, crate::fsutil::Links::Within(root)) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            logging::warn("skills", &format!("skipping {}: {e}", file.display()));
            None
        }
    }
}

/// The top-level scalar fields of a SKILL.md's YAML frontmatter. Handles what skills use: plain,
/// quoted and folded (`>`, `|`) scalars; nested values are kept as raw text. Anything else is an error.
pub fn frontmatter(text: &str) -> Result<BTreeMap<String, String>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Ok(BTreeMap::new()); // no frontmatter: a skill with only its folder name
    }
    let mut fields: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<(String, bool)> = None; // key, and whether it takes continuation lines
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            return Ok(fields.into_iter().map(|(k, v)| (k, v.trim().to_string())).collect());
        }
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with('\t') {
            return Err("tab indentation is not YAML".into());
        }
        if line.starts_with(' ') || line.starts_with('-') {
            match &current {
                Some((key, true)) => {
                    let v = fields.entry(key.clone()).or_default();
                    v.push(' ');
                    v.push_str(line.trim());
                }
                Some((_, false)) => {} // a nested list or map: not a scalar we use
                None => return Err(format!("indented line before any key: {line:?}")),
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!("line is not `key: value`: {line:?}"));
        };
        let key = key.trim();
        if key.is_empty() || key.contains(' ') && !key.starts_with('"') {
            return Err(format!("bad key in {line:?}"));
        }
        if fields.contains_key(key) {
            return Err(format!("duplicate key {key:?}"));
        }
        let value = value.trim();
        let (value, continues) = match value.chars().next() {
            None => (String::new(), false),
            Some('>' | '|') => (String::new(), true),
            Some(q @ ('"' | '\'')) => {
                if value.len() < 2 || !value.ends_with(q) {
                    return Err(format!("unterminated quote in {key:?}"));
                }
                (value[1..value.len() - 1].to_string(), false)
            }
            Some('[' | '{') => (value.to_string(), false),
            Some(_) => (value.to_string(), true),
        };
        fields.insert(key.to_string(), value);
        current = Some((key.to_string(), continues));
    }
    Err("frontmatter has no closing `---`".into())
}

/// `(plugin name, install root)` of every plugin enabled in Claude Code's settings (user, then the
/// project's `settings.json` and `settings.local.json`, later ones overriding) and recorded in
/// `installed_plugins.json`.
fn enabled_plugins(claude: &Path, projects: &[PathBuf]) -> Vec<(String, PathBuf)> {
    let mut enabled: BTreeMap<String, bool> = BTreeMap::new();
    for file in claude_code::settings_files(claude, projects) {
        enabled.extend(claude_code::enabled_plugins(&file).unwrap_or_else(|e| skip(&file, e)).unwrap_or_default());
    }
    let installed =
        InstalledPlugins::read(claude).unwrap_or_else(|e| skip(&InstalledPlugins::path(claude), e)).unwrap_or_default();
    let mut out = Vec::new();
    for (id, on) in enabled {
        let Some(plugin) = installed.get(&id).filter(|_| on) else { continue };
        // The last install that counts here; a project-scoped one only inside its project.
        if let Some(path) =
            plugin.installs.iter().rev().find(|i| i.applies_to(projects)).and_then(|i| i.install_path.clone())
        {
            out.push((plugin.name().to_string(), path));
        }
    }
    out
}

/// A plugin's skill folders: `skills/`, plus what its manifest's `skills` field names.
fn plugin_skill_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![root.join("skills")];
    let manifest = PluginManifest::read(root).unwrap_or_else(|e| skip(&PluginManifest::path(root), e));
    for e in manifest.map(|m| m.skills).unwrap_or_default() {
        let d = root.join(e.trim_start_matches("./"));
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

/// A Claude Code file the picker cannot use counts as absent; one that is not JSON is logged.
fn skip<T>(path: &Path, e: ReadError) -> Option<T> {
    if let ReadError::NotJson(e) = e {
        logging::warn("skills", &format!("{} is not JSON: {e}", path.display()));
    }
    None
}

/// What the picker did for one prompt.
#[derive(Debug, Clone)]
pub enum Pick {
    /// No engine call, and why.
    NotAsked(NotAsked),
    /// The engine failed or timed out, or the gateway took no question.
    Failed(Refusal),
    /// The engine abstained.
    Abstained,
    /// The engine's pick (`NONE` when no skill fits) with its calibrated confidence.
    Picked { skill: String, confidence: f64 },
}

impl Pick {
    /// The skill picked (`NONE` when none fits) and its calibrated confidence, or why there is none.
    pub fn skill(&self) -> Result<(&str, f64), NoSkillHint> {
        match self {
            Pick::NotAsked(why) => Err(NoSkillHint::NotAsked(why.clone())),
            Pick::Failed(e) => Err(NoSkillHint::EngineFailed(e.clone())),
            Pick::Abstained => Err(NoSkillHint::Abstained),
            Pick::Picked { skill, confidence } => Ok((skill, *confidence)),
        }
    }
}

/// Why the picker asked no engine.
#[derive(Debug, Clone, PartialEq)]
pub enum NotAsked {
    /// Routing used up the prompt's engine budget.
    BudgetSpent,
    NoCandidates,
    /// More skills (plus `none`) than the engine takes at once, with elimination rounds off.
    OverEngineLimit {
        skills: usize,
        max: usize,
    },
    /// More skills (plus `none`) than one decision may have.
    OverDecisionLimit {
        skills: usize,
    },
}

impl std::fmt::Display for NotAsked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotAsked::BudgetSpent => f.write_str("skipped: routing used up the engine budget"),
            NotAsked::NoCandidates => f.write_str("no skills to choose from"),
            NotAsked::OverEngineLimit { skills, max } => write!(
                f,
                "dormant: {skills} skills plus `none` exceed the engine's limit of {max} options (elimination rounds are off: [gateway] tournament = false)"
            ),
            NotAsked::OverDecisionLimit { skills } => {
                write!(f, "dormant: {skills} skills plus `none` exceed the {MAX_OPTIONS} options of one decision")
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Picked {
    pub candidates: Vec<Skill>,
    pub pick: Pick,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub latency_ms: f64,
    /// What went off this machine, for an engine hosted elsewhere.
    pub sent: Vec<crate::state::Sent>,
}

/// The picker's question and its options: every candidate's name, then `none`; calibrated by its
/// key, `skill`.
pub fn request(prompt: &str, candidates: &[Skill], purpose: Purpose) -> Ask {
    let descriptions: Map<String, Value> = candidates
        .iter()
        .map(|s| (s.name.clone(), json!(s.description.chars().take(MAX_DESCRIPTION_CHARS).collect::<String>())))
        .collect();
    let mut options: Vec<String> = candidates.iter().map(|s| s.name.clone()).collect();
    options.push(NONE.to_string());
    let question = Question {
        key: "skill".to_string(),
        text: "Which one of the listed skills should the assistant load to handle this request? \
               Answer none unless one clearly fits."
            .to_string(),
        options,
    };
    Ask::new(Some(json!({"request": prompt, "skills": descriptions})), vec![Query::keyed(question)], purpose)
}

/// Asks the engine to pick among `candidates` (in elimination rounds when they are more than it
/// takes at once), unless they cannot be asked (then dormant, with no engine call) or the budget is
/// gone.
pub fn pick(
    gateway: &Gateway,
    prompt: &str,
    candidates: Vec<Skill>,
    deadline: Instant,
    purpose: Purpose,
    rid: &str,
) -> Picked {
    let not_asked = |candidates, why: NotAsked| Picked {
        candidates,
        pick: Pick::NotAsked(why),
        provider: None,
        model: None,
        latency_ms: 0.0,
        sent: Vec::new(),
    };
    // Checked first: discovery itself stops at the deadline, so its list may be empty for that reason.
    if Instant::now() >= deadline {
        return not_asked(candidates, NotAsked::BudgetSpent);
    }
    if candidates.is_empty() {
        return not_asked(candidates, NotAsked::NoCandidates);
    }
    // Above the engine's own limit the gateway narrows the skills in elimination rounds; with the
    // rounds off, or past what one decision may have, the picker sleeps and costs nothing.
    let max = gateway.primary().map(|p| p.capabilities().max_options).unwrap_or(0);
    let options = candidates.len() + 1;
    let rounds = gateway.loaded.config.gateway.tournament;
    let skills = candidates.len();
    if options > max && !rounds {
        return not_asked(candidates, NotAsked::OverEngineLimit { skills, max });
    }
    if options > MAX_OPTIONS {
        return not_asked(candidates, NotAsked::OverDecisionLimit { skills });
    }
    let started = Instant::now();
    let outcome = gateway.ask(&request(prompt, &candidates, purpose).until(deadline), rid);
    let latency_ms = crate::gateway::millis(started.elapsed());
    let sent = match &outcome {
        Ok(a) => crate::gateway::response::sent(&a.attempts),
        Err(r) => crate::gateway::response::sent(r.attempts()),
    };
    let (pick, provider, model) = match outcome {
        Ok(mut a) => {
            let pick = match a.answers.pop() {
                Some(Answer::Decided { decision, confidence, .. }) => Pick::Picked { skill: decision, confidence },
                _ => Pick::Abstained,
            };
            (pick, a.provider, a.model)
        }
        Err(refusal) => (Pick::Failed(refusal), None, None),
    };
    Picked { candidates, pick, provider, model, latency_ms, sent }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_fields() {
        let f = frontmatter("---\nname: pdf\ndescription: >\n  Fill PDF forms\n  and merge files\nallowed-tools:\n  - Read\ndisable-model-invocation: true\n---\nbody").unwrap();
        assert_eq!(f["name"], "pdf");
        assert_eq!(f["description"], "Fill PDF forms and merge files");
        assert_eq!(f["disable-model-invocation"], "true");
        let f = frontmatter("---\nname: \"q: x\"\ndescription: plain text\n  continued\n---\n").unwrap();
        assert_eq!(f["name"], "q: x");
        assert_eq!(f["description"], "plain text continued");
        assert!(frontmatter("no frontmatter").unwrap().is_empty());
    }

    #[test]
    fn bad_frontmatter_is_an_error() {
        assert!(frontmatter("---\nname: x\n").is_err(), "unclosed");
        assert!(frontmatter("---\njust words\n---\n").is_err());
        assert!(frontmatter("---\nname: \"open\n---\n").is_err());
        assert!(frontmatter("---\nname: a\nname: b\n---\n").is_err());
        assert!(frontmatter("---\n\tname: a\n---\n").is_err());
    }

    #[test]
    fn picker_options_end_with_none() {
        let skills = vec![Skill { name: "pdf".into(), description: "d".repeat(1000), origin: "user" }];
        let r = request("fill the form", &skills, Purpose::Use);
        assert_eq!(r.questions[0].question.options, ["pdf", "none"]);
        assert_eq!(r.questions[0].calibration, "skill");
        let ctx = r.context.unwrap();
        assert_eq!(ctx["skills"]["pdf"].as_str().unwrap().len(), MAX_DESCRIPTION_CHARS);
    }
}
