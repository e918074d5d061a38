//! `system1 install` and `system1 uninstall`: the binary in `<install>/bin`, the first config, the
//! Claude Code registration, and on the way out the start-at-login entries. Each step says what
//! it did as one line in `lines` as it goes, so the caller prints what was done even when a later
//! step fails. Every path comes from `paths`; the start-at-login entries are `servers`' to
//! name and remove.

pub mod binary;
pub mod claude;
pub mod config_file;
pub mod statusline;

use crate::engine_servers::{self, autostart};
use crate::error::{Context, Error, Result};
use crate::{paths, text};

/// Installs. Registration is skipped with `register = false` (the command is printed instead).
pub fn install(register: bool, lines: &mut Vec<String>) -> Result<()> {
    let bin = match binary::install_self()? {
        binary::Copied::Installed(p) => {
            lines.push(format!("installed {} (system1 {})", p.display(), env!("CARGO_PKG_VERSION")));
            p
        }
        binary::Copied::AlreadyInPlace(p) => {
            lines.push(format!("binary: already running from {}", p.display()));
            p
        }
    };
    lines.extend(not_on_path(&bin));

    let config = paths::config_file();
    lines.push(match config_file::write_if_missing()? {
        config_file::Outcome::Kept => format!("config: kept {}", config.display()),
        config_file::Outcome::WrittenWithEngine => format!("config: wrote {} (engine: laya)", config.display()),
        config_file::Outcome::WrittenWithLocal(why) => format!(
            "config: wrote {} (engine: local, the installed all-MiniLM-L6-v2; laya did not answer: {why})",
            config.display()
        ),
        config_file::Outcome::WrittenWithMock(why) => format!(
            "config: wrote {} with the mock engine, which abstains on every question, because no engine answered \
             ({why}); `{} engine install local` installs the local engine (91 MB, runs on the CPU) and switches \
             this config to it, or /system1:choose-model picks another",
            config.display(),
            text::shell_path(&bin)
        ),
    });

    let Some(cli) = claude::find_claude().filter(|_| register) else {
        let why = if register { "`claude` is not on PATH" } else { "--no-register" };
        lines.push(format!("claude: not registered ({why}); run:"));
        lines.push(format!("  {}", claude::add_command_shell(&bin)));
        if cfg!(windows) {
            lines.push(format!("  in PowerShell: {}", claude::add_command_powershell(&bin)));
        }
        return Ok(());
    };
    let outcome = claude::register(&cli, &bin)
        .map_err(|e| e.with_hint(format!("register by hand: {}", claude::add_command_shell(&bin))))?;
    lines.push(match outcome {
        claude::Registered::Unchanged => "claude: system1 already registered (user scope)".to_string(),
        claude::Registered::Added => "claude: registered system1 (user scope); check: claude mcp list".to_string(),
        claude::Registered::Replaced(old) => {
            format!("claude: re-registered system1 (user scope), was: {}", old.join(" "))
        }
    });
    Ok(())
}

/// Where the binary is, since `install` leaves PATH alone: how to run it, and how to put it on PATH.
/// Nothing when `system1` on PATH is this binary already.
fn not_on_path(bin: &std::path::Path) -> Vec<String> {
    if text::binary_on_path(bin) {
        return Vec::new();
    }
    let dir = bin.parent().unwrap_or(bin);
    let how = if cfg!(windows) {
        format!("add {} to your PATH (System settings, Environment Variables)", dir.display())
    } else {
        let home = paths::home();
        let line = match dir.strip_prefix(&home) {
            Ok(rest)
                if !home.as_os_str().is_empty()
                    && !rest.as_os_str().is_empty()
                    && !rest.display().to_string().contains(['"', '$', '`', '\\']) =>
            {
                format!("export PATH=\"$HOME/{}:$PATH\"", rest.display())
            }
            _ => format!("export PATH={}:\"$PATH\"", text::shell_quote(&dir.display().to_string())),
        };
        format!(
            "add `{line}` to your shell's profile (~/.profile, ~/.bashrc or ~/.zprofile); removing the line undoes it"
        )
    };
    vec![format!(
        "PATH: system1 is not on PATH (install leaves PATH alone): run it as {}, or {how}",
        text::shell_path(bin)
    )]
}

/// Uninstalls; with `purge`, also the config and what system1 keeps in the install dir (engines,
/// logs, calibration, state), never anything else there.
/// A step that fails does not stop the others; the failures are returned together at the end.
pub fn uninstall(purge: bool, lines: &mut Vec<String>) -> Result<()> {
    let mut failed: Vec<String> = Vec::new();
    match claude::find_claude() {
        Some(cli) => match claude::unregister(&cli) {
            Ok(true) => lines.push("claude: removed the system1 registration".to_string()),
            Ok(false) => lines.push("claude: system1 was not registered".to_string()),
            Err(e) => failed.push(format!("{e} (remove it by hand: {})", claude::remove_command())),
        },
        None => lines.push(format!("claude: not on PATH; if system1 is registered, run: {}", claude::remove_command())),
    }

    // Engines System-1 started are stopped, and their start-at-login entries go, whether or not the
    // engines stay: nothing should run or start an engine for a System-1 that is gone.
    for spec in engine_servers::SPECS.iter().filter(|s| s.pid_file().exists()) {
        match engine_servers::stop(spec) {
            Ok(line) => lines.push(line),
            Err(e) => failed.push(format!("{}: {e}", spec.name)),
        }
    }
    let platform = autostart::Platform::current();
    for spec in engine_servers::SPECS.iter().filter(|s| autostart::is_enabled(s, platform)) {
        match autostart::disable(spec, platform) {
            Ok(done) => lines.extend(done.into_iter().map(|d| format!("{} start at login: {d}", spec.name))),
            Err(e) => failed.push(format!("{} start at login: {e}", spec.name)),
        }
    }

    if autostart::serve_enabled(platform) {
        match autostart::disable_serve(platform) {
            Ok(done) => lines.extend(done.into_iter().map(|d| format!("system1 serve start at login: {d}"))),
            Err(e) => failed.push(format!("system1 serve start at login: {e}")),
        }
    }

    // The status line would run a binary that is gone: system1's goes, anyone else's stays.
    let settings = statusline::settings_file();
    match statusline::remove(&settings) {
        Ok(true) => lines.push(format!("statusLine: removed system1's from {}", settings.display())),
        Ok(false) => {}
        Err(e) => failed.push(e.to_string()),
    }

    let bin = paths::installed_binary();
    match binary::remove_installed() {
        Ok(true) => lines.push(format!("removed {}", bin.display())),
        Ok(false) => lines.push(format!("binary: none at {}", bin.display())),
        Err(e) => failed.push(e.to_string()),
    }

    // The plugin is Claude Code's to remove: its hooks now find no binary and stay silent, but its
    // skills and commands stay listed until it goes.
    lines.extend(plugin_left());

    if purge {
        if let Err(e) = purge_files(lines) {
            failed.push(e.to_string());
        }
    } else {
        lines.push(kept_line());
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::failure(format!("uninstall incomplete:\n{}", failed.join("\n"))))
    }
}

/// A line for each install of the system1 plugin Claude Code still records, with how to remove it.
fn plugin_left() -> Vec<String> {
    let Ok(Some(records)) = crate::claude_code::InstalledPlugins::read(&paths::claude_dir()) else { return Vec::new() };
    records
        .plugins
        .iter()
        .filter(|p| p.name() == "system1" && !p.installs.is_empty())
        .map(|p| {
            format!(
                "claude: the plugin {} is still installed (its hooks now do nothing); remove it in Claude Code with \
                 `/plugin uninstall {}`",
                p.id, p.id
            )
        })
        .collect()
}

/// What `uninstall` without `--purge` left, and the command that deletes it: the binary is gone,
/// so `uninstall --purge` cannot be run any more. Only system1's own files are named (those purge
/// removes), as the install dir may hold other programs' files too.
fn kept_line() -> String {
    let kept = own_files_left();
    if kept.is_empty() {
        return "nothing else was left".to_string();
    }
    let names: Vec<String> = kept.iter().map(|p| p.display().to_string()).collect();
    let remove = if cfg!(windows) {
        let quoted: Vec<String> = names.iter().map(|n| text::powershell_quote(n)).collect();
        format!("Remove-Item -Recurse -Force {}", quoted.join(", "))
    } else {
        let quoted: Vec<String> = names.iter().map(|n| text::shell_quote(n)).collect();
        format!("rm -rf {}", quoted.join(" "))
    };
    format!(
        "kept the config, engines, logs and calibration ({}); to delete them too: {remove}",
        text::count(kept.len() as u64, "path")
    )
}

/// The config and what system1 keeps in the install dir, those of them that exist: the logs
/// folder whole when it holds only system1's logs, else its own files one by one.
fn own_files_left() -> Vec<std::path::PathBuf> {
    let dir = paths::install_dir();
    let mut kept: Vec<std::path::PathBuf> = vec![paths::config_file()];
    kept.extend(OWN_ENGINES.iter().map(|n| paths::engines_dir().join(n)));
    kept.push(dir.join(BUILD_DIR));
    kept.push(paths::statusline_cache());
    let logs = paths::logs_dir();
    let mut entries: Vec<(bool, std::path::PathBuf)> = std::fs::read_dir(&logs)
        .map(|e| e.flatten().map(|e| (is_own_log(&e.file_name().to_string_lossy()), e.path())).collect())
        .unwrap_or_default();
    entries.sort();
    if !entries.is_empty() && entries.iter().all(|(own, _)| *own) {
        kept.push(logs);
    } else {
        kept.extend(entries.into_iter().filter(|(own, _)| *own).map(|(_, p)| p));
    }
    kept.extend(OWN_FILES.iter().map(|n| dir.join(n)));
    kept.retain(|p| std::fs::symlink_metadata(p).is_ok());
    kept
}

fn purge_files(lines: &mut Vec<String>) -> Result<()> {
    purge_install_dir(lines)?;
    let config = paths::config_file();
    match std::fs::remove_file(&config) {
        Ok(()) => {
            lines.push(format!("removed {}", config.display()));
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

/// The files system1 keeps directly in the install dir (the binary and its folder go first, with
/// `binary::remove_installed`).
const OWN_FILES: [&str; 5] = ["calibration.json", "local-heads.json", "paused", "told-no-engine", "what-if.json"];
/// The engine folders under `engines/`: the servers system1 runs, and the local engine's model.
const OWN_ENGINES: [&str; 3] = ["laya", "von", "local"];
/// Where `scripts/install.sh` has cargo build (out of the clone, whose files Claude Code copies).
const BUILD_DIR: &str = "build";

/// Whether `name`, a file in `logs/`, is one system1 writes: the routing log, its lock, a
/// leftover temp copy of it, and the daily decision tallies.
fn is_own_log(name: &str) -> bool {
    name == "routing.jsonl"
        || name == "routing.jsonl.lock"
        || (name.starts_with(".routing.jsonl.") && name.ends_with(".tmp"))
        || (name.starts_with("decisions-") && name.ends_with(".jsonl"))
}

/// Removes what system1 put in the install dir, entry by entry, and the folders it made once they
/// are empty. The install dir may be a folder other programs use too (`SYSTEM1_INSTALL_DIR` set to
/// `~/.local`, say): nothing else in it is touched, and the folder stays, with a line saying so.
fn purge_install_dir(lines: &mut Vec<String>) -> Result<()> {
    let dir = paths::install_dir();
    if std::fs::symlink_metadata(&dir).is_err() {
        return Ok(());
    }
    let mut removed: Vec<String> = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    let mut remove = |path: std::path::PathBuf, whole_dir: bool| {
        let rel = path.strip_prefix(&dir).unwrap_or(&path).display().to_string();
        let outcome = match std::fs::symlink_metadata(&path) {
            Err(_) => return,
            // A link is removed as a link: what it points to is not system1's.
            Ok(m) if whole_dir && m.is_dir() => std::fs::remove_dir_all(&path),
            Ok(_) => std::fs::remove_file(&path),
        };
        match outcome {
            Ok(()) => removed.push(rel),
            Err(e) => failed.push(format!("cannot remove {}: {e}", path.display())),
        }
    };
    let engines = paths::engines_dir();
    for name in OWN_ENGINES {
        remove(engines.join(name), true);
    }
    remove(dir.join(BUILD_DIR), true);
    remove(paths::statusline_cache(), true);
    let logs = paths::logs_dir();
    if let Ok(entries) = std::fs::read_dir(&logs) {
        let mut own: Vec<_> =
            entries.flatten().filter(|e| is_own_log(&e.file_name().to_string_lossy())).map(|e| e.path()).collect();
        own.sort();
        for path in own {
            remove(path, false);
        }
    }
    for name in OWN_FILES {
        remove(dir.join(name), false);
    }
    // Temp copies of those files left by a killed write (`.calibration.json.<pid>-<n>.tmp`).
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut leftovers: Vec<_> = entries
            .flatten()
            .filter(|e| {
                let n = e.file_name().to_string_lossy().to_string();
                n.ends_with(".tmp") && OWN_FILES.iter().any(|f| n.starts_with(&format!(".{f}.")))
            })
            .map(|e| e.path())
            .collect();
        leftovers.sort();
        for path in leftovers {
            remove(path, false);
        }
    }
    for folder in [&engines, &logs, &paths::bin_dir()] {
        if std::fs::remove_dir(folder).is_ok() {
            removed.push(folder.strip_prefix(&dir).unwrap_or(folder).display().to_string());
        }
    }
    if !removed.is_empty() {
        lines.push(format!("removed from {}: {}", dir.display(), removed.join(", ")));
    }
    if !failed.is_empty() {
        return Err(Error::failure(failed.join("\n"))
            .with_hint("something still uses a file in it (an engine or an MCP client System-1 did not start): stop it, then retry"));
    }
    match std::fs::remove_dir(&dir) {
        Ok(()) => lines.push(format!("removed {}", dir.display())),
        Err(_) => {
            let mut others: Vec<String> = std::fs::read_dir(&dir)
                .map(|entries| entries.flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect())
                .unwrap_or_default();
            others.sort();
            let shown = if others.len() > 5 {
                format!("{}, and {} more", others[..5].join(", "), others.len() - 5)
            } else {
                others.join(", ")
            };
            lines.push(format!(
                "kept {}: it holds files system1 did not create ({shown}), which were left alone",
                dir.display()
            ));
        }
    }
    Ok(())
}
