//! `system1 install` and `system1 uninstall`: the binary in `<install>/bin`, the first config, the
//! Claude Code registration, and on the way out the start-at-login entries. Each step reports what
//! it did as one line in `report` as it goes, so the caller prints what was done even when a later
//! step fails. Every path comes from `paths`; the start-at-login entries are the engine module's to
//! name and remove.

pub mod binary;
pub mod claude;
pub mod config_file;

use crate::engine::{self, autostart};
use crate::error::{Context, Error, Result};
use crate::paths;

/// Installs. Registration is skipped with `register = false` (the command is printed instead).
pub fn install(register: bool, report: &mut Vec<String>) -> Result<()> {
    let bin = match binary::install_self()? {
        binary::Copied::Installed(p) => {
            report.push(format!("installed {} (system1 {})", p.display(), env!("CARGO_PKG_VERSION")));
            p
        }
        binary::Copied::AlreadyInPlace(p) => {
            report.push(format!("binary: already running from {}", p.display()));
            p
        }
    };

    let config = paths::config_file();
    report.push(match config_file::write_if_missing()? {
        config_file::Outcome::Kept => format!("config: kept {}", config.display()),
        config_file::Outcome::WrittenWithEngine => format!("config: wrote {} (engine: laya)", config.display()),
        config_file::Outcome::WrittenWithLocal(why) => format!(
            "config: wrote {} (engine: local, the installed all-MiniLM-L6-v2; laya did not answer: {why})",
            config.display()
        ),
        config_file::Outcome::WrittenWithMock(why) => format!(
            "config: wrote {} with the mock engine, which abstains on every question, because no engine answered \
             ({why}); install one with /system1:choose-model, then set `provider` in that file",
            config.display()
        ),
    });

    let Some(cli) = claude::find_claude().filter(|_| register) else {
        let why = if register { "`claude` is not on PATH" } else { "--no-register" };
        report.push(format!("claude: not registered ({why}); run:"));
        report.push(format!("  {}", claude::add_command_shell(&bin)));
        report.push(format!("  in PowerShell: {}", claude::add_command_powershell(&bin)));
        return Ok(());
    };
    let outcome = claude::register(&cli, &bin)
        .map_err(|e| e.with_hint(format!("register by hand: {}", claude::add_command_shell(&bin))))?;
    report.push(match outcome {
        claude::Registered::Unchanged => "claude: system1 already registered (user scope)".to_string(),
        claude::Registered::Added => "claude: registered system1 (user scope); check: claude mcp list".to_string(),
        claude::Registered::Replaced(old) => {
            format!("claude: re-registered system1 (user scope), was: {}", old.join(" "))
        }
    });
    Ok(())
}

/// Uninstalls; with `purge`, also the config, the engines and the logs (the whole install dir).
/// A step that fails does not stop the others; the failures are returned together at the end.
pub fn uninstall(purge: bool, report: &mut Vec<String>) -> Result<()> {
    let mut failed: Vec<String> = Vec::new();
    match claude::find_claude() {
        Some(cli) => match claude::unregister(&cli) {
            Ok(true) => report.push("claude: removed the system1 registration".to_string()),
            Ok(false) => report.push("claude: system1 was not registered".to_string()),
            Err(e) => failed.push(format!("{e} (remove it by hand: {})", claude::remove_command())),
        },
        None => {
            report.push(format!("claude: not on PATH; if system1 is registered, run: {}", claude::remove_command()))
        }
    }

    // Start-at-login entries go whether or not the engines stay: nothing should start an engine
    // for a System-1 that is gone.
    let platform = autostart::Platform::current();
    for spec in engine::SPECS.iter().filter(|s| autostart::is_enabled(s, platform)) {
        match autostart::disable(spec, platform) {
            Ok(done) => report.extend(done.into_iter().map(|d| format!("{} start at login: {d}", spec.name))),
            Err(e) => failed.push(format!("{} start at login: {e}", spec.name)),
        }
    }

    let bin = paths::installed_binary();
    match binary::remove_installed() {
        Ok(true) => report.push(format!("removed {}", bin.display())),
        Ok(false) => report.push(format!("binary: none at {}", bin.display())),
        Err(e) => failed.push(e.to_string()),
    }

    if purge {
        if let Err(e) = purge_files(report) {
            failed.push(e.to_string());
        }
    } else {
        report.push(format!(
            "kept the config ({}) and {} (engines, logs); `system1 uninstall --purge` removes them",
            paths::config_file().display(),
            paths::install_dir().display()
        ));
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::failure(format!("uninstall incomplete:\n{}", failed.join("\n"))))
    }
}

fn purge_files(report: &mut Vec<String>) -> Result<()> {
    let dir = paths::install_dir();
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => report.push(format!("removed {} (engines, logs, calibration)", dir.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(Error::failure(format!("cannot remove {}: {e}", dir.display()))
                .with_hint("stop any engine still running from it (system1 engine stop <name>), then retry"));
        }
    }
    let config = paths::config_file();
    match std::fs::remove_file(&config) {
        Ok(()) => {
            report.push(format!("removed {}", config.display()));
            // The config's own folder, when nothing else is in it.
            if let Some(parent) = config.parent() {
                let _ = std::fs::remove_dir(parent);
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).context(|| format!("cannot remove {}", config.display())),
    }
}
