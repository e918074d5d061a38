//! The `statusLine` entry of Claude Code's user settings (`settings.json` in the Claude Code
//! directory) that runs `system1 statusline`: set only where there is none, and removed only when
//! it is system1's own. Every other key of the file is kept as it was, in its order; a file that
//! is not a JSON object is left alone with an error.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::error::{Context, Error, Result};
use crate::{fsutil, paths, text};

/// What setting it did.
#[derive(Debug, Clone, PartialEq)]
pub enum Set {
    Added,
    /// The entry was system1's already.
    AlreadyOurs,
    /// Another status line is set (its command, or the entry as JSON): left as it is.
    Taken(String),
}

pub fn settings_file() -> PathBuf {
    paths::claude_dir().join("settings.json")
}

/// The command the entry runs: the installed binary, by its whole path.
pub fn command(bin: &Path) -> String {
    format!("{} statusline", text::shell_quote(&bin.display().to_string()))
}

/// Whether a `statusLine` command is system1's: a `system1` binary, by any path, with
/// `statusline` alone after it.
pub fn is_ours(command: &str) -> bool {
    let Some(program) = command.trim().strip_suffix(" statusline") else { return false };
    let program = program.trim().trim_matches(|c| c == '\'' || c == '"');
    let name = program.rsplit(['/', '\\']).next().unwrap_or(program);
    name == "system1" || name == "system1.exe"
}

fn read(settings: &Path) -> Result<Option<Map<String, Value>>> {
    match fsutil::read_json(settings) {
        Ok(None) => Ok(None),
        Ok(Some(Value::Object(o))) => Ok(Some(o)),
        Ok(Some(_)) => Err(Error::failure(format!("{} is not a JSON object; left as it is", settings.display()))),
        Err(e) => Err(Error::failure(format!("{} {e}; left as it is", settings.display()))),
    }
}

fn write(settings: &Path, o: Map<String, Value>) -> Result<()> {
    let mut text = serde_json::to_string_pretty(&Value::Object(o)).map_err(|e| Error::failure(e.to_string()))?;
    text.push('\n');
    paths::ensure_parent(settings).context(|| format!("cannot create the folder of {}", settings.display()))?;
    fsutil::write_through(settings, text.as_bytes()).context(|| format!("cannot write {}", settings.display()))
}

/// The command of the entry's `statusLine`, or the entry itself as JSON when it has none.
fn described(entry: &Value) -> String {
    entry.get("command").and_then(Value::as_str).map_or_else(|| entry.to_string(), String::from)
}

/// Sets `statusLine` to run `bin statusline`, unless another status line is set.
pub fn set(settings: &Path, bin: &Path) -> Result<Set> {
    let mut o = read(settings)?.unwrap_or_default();
    if let Some(entry) = o.get("statusLine") {
        let now = described(entry);
        return Ok(if is_ours(&now) { Set::AlreadyOurs } else { Set::Taken(now) });
    }
    o.insert("statusLine".into(), json!({"type": "command", "command": command(bin), "padding": 0}));
    write(settings, o)?;
    Ok(Set::Added)
}

/// Removes `statusLine` when it is system1's; whether it did.
pub fn remove(settings: &Path) -> Result<bool> {
    let Some(mut o) = read(settings)? else { return Ok(false) };
    if !o.get("statusLine").is_some_and(|e| is_ours(&described(e))) {
        return Ok(false);
    }
    o.remove("statusLine");
    if o.is_empty() {
        // Nothing else was in it: no `{}` file left behind (Claude Code reads no file as empty).
        std::fs::remove_file(settings).context(|| format!("cannot remove {}", settings.display()))?;
    } else {
        write(settings, o)?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_system1_binary_running_statusline_is_ours() {
        assert!(is_ours("/home/u/.system1-gateway/bin/system1 statusline"));
        assert!(is_ours("'/home/u/my tools/system1' statusline"));
        assert!(is_ours("system1 statusline"));
        assert!(is_ours(r"C:\Users\u\.system1-gateway\bin\system1.exe statusline"));
        assert!(!is_ours("ccusage statusline"));
        assert!(!is_ours("~/bin/my-system1 statusline"));
        assert!(!is_ours("system1 statusline --other"));
        assert!(!is_ours("bash ~/.claude/statusline.sh"));
    }
}
