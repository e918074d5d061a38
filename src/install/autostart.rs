//! Removing the start-at-login entries that `system1 engine` writes for local engines: a systemd
//! user unit `system1-<engine>.service` (Linux), a LaunchAgent `dev.system1.<engine>.plist` (macOS)
//! and `system1-<engine>.cmd` in the Startup folder (Windows). Entries are found by name pattern,
//! so engines added later are covered without a list here.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::install::claude::find_on_path;
use crate::paths;

/// Removes every entry; returns the files removed. Best effort: a file that cannot be removed is
/// reported in the second list.
pub fn remove_all() -> (Vec<PathBuf>, Vec<String>) {
    let mut removed = Vec::new();
    let mut failed = Vec::new();

    let units_dir = paths::systemd_user_dir();
    let units = matching(&units_dir, "system1-", ".service");
    if !units.is_empty() {
        // Stop and disable through systemd when it is there, so a running engine does not linger.
        if let Some(systemctl) = find_on_path(&["systemctl"]) {
            for unit in &units {
                if let Some(name) = unit.file_name().and_then(|n| n.to_str()) {
                    quiet(Command::new(&systemctl).args(["--user", "disable", "--now", name]));
                }
            }
        }
        // `enable` links the unit from `<target>.wants/`; remove dangling links systemctl left.
        if let Ok(entries) = fs::read_dir(&units_dir) {
            for wants in entries.flatten().map(|e| e.path()).filter(|p| is_wants_dir(p)) {
                for link in matching(&wants, "system1-", ".service") {
                    take(&link, &mut removed, &mut failed);
                }
                let _ = fs::remove_dir(&wants);
            }
        }
        for unit in &units {
            take(unit, &mut removed, &mut failed);
        }
        if let Some(systemctl) = find_on_path(&["systemctl"]) {
            quiet(Command::new(systemctl).args(["--user", "daemon-reload"]));
        }
    }

    for plist in matching(&paths::launch_agents_dir(), "dev.system1.", ".plist") {
        if cfg!(target_os = "macos") {
            quiet(Command::new("launchctl").arg("unload").arg("-w").arg(&plist));
        }
        take(&plist, &mut removed, &mut failed);
    }

    if let Some(startup) = paths::windows_startup_dir() {
        for cmd in matching(&startup, "system1-", ".cmd") {
            take(&cmd, &mut removed, &mut failed);
        }
    }
    (removed, failed)
}

fn is_wants_dir(p: &Path) -> bool {
    p.is_dir() && p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".wants"))
}

/// Files (or links) in `dir` named `<prefix>*<suffix>`.
fn matching(dir: &Path, prefix: &str, suffix: &str) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.len() > prefix.len() + suffix.len() && name.starts_with(prefix) && name.ends_with(suffix)
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

fn take(p: &Path, removed: &mut Vec<PathBuf>, failed: &mut Vec<String>) {
    match fs::remove_file(p) {
        Ok(()) => removed.push(p.to_path_buf()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => failed.push(format!("{}: {e}", p.display())),
    }
}

fn quiet(cmd: &mut Command) {
    let _ = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status();
}
