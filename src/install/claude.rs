//! Registering `system1 mcp` with Claude Code as a user-scoped stdio server, through the `claude`
//! CLI itself (its config format is Claude Code's to change). What is registered now is read from
//! `.claude.json` first, so a re-run with the same binary changes nothing, and a registration with
//! another command is replaced.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::claude_code::ClaudeJson;
use crate::error::{Error, Result};
use crate::{paths, text};

/// The server's name in Claude Code (its tools are `mcp__system1__<tool>`).
pub const SERVER: &str = "system1";

/// What `.claude.json` says about the `system1` server.
#[derive(Debug, PartialEq)]
pub enum Current {
    Absent,
    /// Registered with this command line.
    Registered(Vec<String>),
    /// The file could not be read or parsed.
    Unknown,
}

#[derive(Debug, PartialEq)]
pub enum Registered {
    /// Already registered with this binary; nothing was run.
    Unchanged,
    Added,
    /// Was registered with another command line, which was removed first.
    Replaced(Vec<String>),
}

/// `claude` on PATH (on Windows also `claude.cmd`, the npm shim).
pub fn find_claude() -> Option<PathBuf> {
    let names: &[&str] = if cfg!(windows) { &["claude.exe", "claude.cmd", "claude.bat"] } else { &["claude"] };
    paths::find_on_path(names)
}

/// Reads the current user-scoped registration from `.claude.json`.
pub fn current() -> Current {
    match ClaudeJson::read() {
        Ok(None) => Current::Absent,
        Err(_) => Current::Unknown,
        Ok(Some(doc)) => match doc.user_server(SERVER) {
            None => Current::Absent,
            Some(server) => Current::Registered(server.command_line()),
        },
    }
}

/// The command line Claude Code should launch.
pub fn server_command(bin: &Path) -> Vec<String> {
    vec![bin.display().to_string(), "mcp".to_string()]
}

/// Registers `<bin> mcp`, idempotently.
pub fn register(claude: &Path, bin: &Path) -> Result<Registered> {
    let wanted = server_command(bin);
    let outcome = match current() {
        Current::Registered(line) if line == wanted => return Ok(Registered::Unchanged),
        Current::Registered(line) => {
            remove(claude)?;
            Registered::Replaced(line)
        }
        Current::Absent => Registered::Added,
        Current::Unknown => {
            // Cannot tell: clear any old entry so `add` does not fail on a duplicate.
            let _ = remove(claude);
            Registered::Added
        }
    };
    let mut args = vec!["mcp", "add", "--scope", "user", "--transport", "stdio", SERVER, "--"];
    args.extend(wanted.iter().map(String::as_str));
    run(claude, &args)?;
    Ok(outcome)
}

/// Removes the user-scoped registration when there is one. Returns whether one was removed.
pub fn unregister(claude: &Path) -> Result<bool> {
    match current() {
        Current::Absent => Ok(false),
        Current::Registered(_) => remove(claude).map(|()| true),
        // Unknown state: try, and treat "not found" as nothing to do.
        Current::Unknown => Ok(remove(claude).is_ok()),
    }
}

fn remove(claude: &Path) -> Result<()> {
    run(claude, &["mcp", "remove", "--scope", "user", SERVER])
}

fn run(claude: &Path, args: &[&str]) -> Result<()> {
    let out = Command::new(claude)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Error::failure(format!("cannot run {}: {e}", claude.display())))?;
    if out.status.success() {
        return Ok(());
    }
    let said =
        String::from_utf8_lossy(if out.stderr.is_empty() { &out.stdout } else { &out.stderr }).trim().to_string();
    Err(Error::failure(format!("`claude {}` failed ({}): {said}", args.join(" "), out.status)))
}

/// The registration command for a POSIX shell or cmd.exe.
pub fn add_command_shell(bin: &Path) -> String {
    format!(
        "claude mcp add --scope user --transport stdio {SERVER} -- {} mcp",
        text::shell_quote(&bin.display().to_string())
    )
}

/// The same for PowerShell, where the npm `claude.ps1` shim would swallow a bare `--`.
pub fn add_command_powershell(bin: &Path) -> String {
    format!(
        "claude mcp add --scope user --transport stdio {SERVER} '--' {} mcp",
        text::powershell_quote(&bin.display().to_string())
    )
}

pub fn remove_command() -> String {
    format!("claude mcp remove --scope user {SERVER}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_command_quotes_only_when_needed() {
        let plain = Path::new("/home/u/.system1-gateway/bin/system1");
        assert_eq!(
            add_command_shell(plain),
            "claude mcp add --scope user --transport stdio system1 -- /home/u/.system1-gateway/bin/system1 mcp"
        );
        if !cfg!(windows) {
            assert_eq!(
                add_command_shell(Path::new("/home/o'k d/bin/system1")),
                "claude mcp add --scope user --transport stdio system1 -- '/home/o'\\''k d/bin/system1' mcp"
            );
        }
    }

    #[test]
    fn powershell_command_quotes_the_separator() {
        let cmd = add_command_powershell(Path::new("C:\\Users\\Jo Doe\\.system1-gateway\\bin\\system1.exe"));
        assert_eq!(
            cmd,
            "claude mcp add --scope user --transport stdio system1 '--' 'C:\\Users\\Jo Doe\\.system1-gateway\\bin\\system1.exe' mcp"
        );
    }
}
