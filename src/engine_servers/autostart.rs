//! Start an engine, or `system1 serve`, at login: a `systemd --user` unit on Linux, a LaunchAgent on macOS, a `.cmd`
//! in the Windows Startup folder. Each file is filled from its template in `engines/<name>/`.
//! The service manager is told only when its tool (`systemctl`, `launchctl`) is on PATH; the
//! file alone takes effect at the next login.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::Spec;
use crate::error::{Context, Error, Result};
use crate::{paths, text};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    Linux,
    MacOs,
    Windows,
}

impl Platform {
    pub fn current() -> Self {
        if cfg!(windows) {
            Platform::Windows
        } else if cfg!(target_os = "macos") {
            Platform::MacOs
        } else {
            Platform::Linux
        }
    }

    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "linux" => Ok(Platform::Linux),
            "macos" => Ok(Platform::MacOs),
            "windows" => Ok(Platform::Windows),
            _ => Err(Error::usage(format!("unknown platform {s:?}; use linux, macos or windows"))),
        }
    }
}

/// Where the start-at-login file goes.
pub fn file(spec: &Spec, platform: Platform) -> PathBuf {
    file_named(spec.name, platform)
}

/// Where the start-at-login file of `name` (an engine, or `serve`) goes.
fn file_named(name: &str, platform: Platform) -> PathBuf {
    let home = paths::home();
    match platform {
        Platform::Linux => {
            paths::xdg_config_home().join("systemd").join("user").join(format!("system1-{name}.service"))
        }
        Platform::MacOs => home.join("Library").join("LaunchAgents").join(format!("com.system1.{name}.plist")),
        Platform::Windows => paths::appdata()
            .join("Microsoft")
            .join("Windows")
            .join("Start Menu")
            .join("Programs")
            .join("Startup")
            .join(format!("system1-{name}.cmd")),
    }
}

/// The file's text for this machine's engine directory.
pub fn contents(spec: &Spec, platform: Platform) -> String {
    let dir = spec.dir();
    let sh = dir.join("start.sh").display().to_string();
    let ps1 = dir.join("start.ps1").display().to_string();
    let template = match platform {
        Platform::Linux => spec.systemd_unit,
        Platform::MacOs => spec.launch_agent,
        Platform::Windows => spec.startup_cmd,
    };
    template.replace("@LAUNCHER@", &sh).replace("@LAUNCHER_PS1@", &ps1).replace("@DIR@", &dir.display().to_string())
}

/// Runs a service-manager command when the tool exists; returns a line saying what happened, with
/// `meanwhile` (what still holds when the command fails) after a failure.
fn tell(tool: &str, args: &[&str], meanwhile: &str) -> Option<String> {
    // Without the tool, the file alone takes effect at the next login.
    paths::find_on_path(&[tool, &format!("{tool}.exe")])?;
    let line = format!("{tool} {}", args.join(" "));
    Some(match Command::new(tool).args(args).status() {
        Ok(s) if s.success() => format!("ran `{line}`"),
        Ok(s) => format!("`{line}` failed ({s}); {meanwhile}"),
        Err(e) => format!("could not run `{line}` ({e}); {meanwhile}"),
    })
}

/// After a failed command on enable: the file is what makes it start.
const STARTS_AT_LOGIN: &str = "the file still takes effect at the next login";
/// After a failed command on disable: the file goes next, which is what stops it starting.
const STOPS_AT_LOGIN: &str = "the file is removed next, so it no longer starts at login (the service manager \
                              may keep its current copy until then)";

/// Writes the start-at-login file and tells the service manager. Returns what was done.
pub fn enable(spec: &Spec, platform: Platform) -> Result<Vec<String>> {
    if !spec.launcher_for(platform).is_file() {
        return Err(Error::failure(format!("{} is not installed", spec.name))
            .with_hint(format!("run `{}` first", text::command(&format!("engine install {}", spec.name)))));
    }
    let path = file(spec, platform);
    write(&path, &contents(spec, platform))?;
    let mut done = vec![format!("wrote {}", path.display())];
    done.extend(tell_enabled(spec.name, &path, platform));
    Ok(done)
}

/// Tells the service manager about a start-at-login file just written.
fn tell_enabled(name: &str, path: &Path, platform: Platform) -> Vec<String> {
    let p = path.display().to_string();
    let unit = format!("system1-{name}.service");
    match platform {
        Platform::Linux => tell("systemctl", &["--user", "daemon-reload"], STARTS_AT_LOGIN)
            .into_iter()
            .chain(tell("systemctl", &["--user", "enable", &unit], STARTS_AT_LOGIN))
            .collect(),
        Platform::MacOs => tell("launchctl", &["load", "-w", &p], STARTS_AT_LOGIN).into_iter().collect(),
        Platform::Windows => Vec::new(),
    }
}

/// Removes the start-at-login file (after telling the service manager). Returns what was done.
pub fn disable(spec: &Spec, platform: Platform) -> Result<Vec<String>> {
    disable_named(spec.name, platform)
}

fn disable_named(name: &str, platform: Platform) -> Result<Vec<String>> {
    let path = file_named(name, platform);
    let mut done = Vec::new();
    if !path.exists() {
        done.push(format!("{name} is not set to start at login ({} does not exist)", path.display()));
        return Ok(done);
    }
    let p = path.display().to_string();
    let unit = format!("system1-{name}.service");
    match platform {
        Platform::Linux => done.extend(tell("systemctl", &["--user", "disable", &unit], STOPS_AT_LOGIN)),
        Platform::MacOs => done.extend(tell("launchctl", &["unload", "-w", &p], STOPS_AT_LOGIN)),
        Platform::Windows => {}
    }
    std::fs::remove_file(&path).context(|| format!("cannot remove {}", path.display()))?;
    done.push(format!("removed {}", path.display()));
    if platform == Platform::Linux {
        done.extend(tell("systemctl", &["--user", "daemon-reload"], "the unit file is gone all the same"));
    }
    Ok(done)
}

pub fn is_enabled(spec: &Spec, platform: Platform) -> bool {
    file(spec, platform).is_file()
}

/// `system1 serve` at login: the installed binary run as `system1 serve` (its `[serve]` settings
/// apply). Kept beside the engines' entries, under the name `serve`.
const SERVE: &str = "serve";

/// The start-at-login file of `system1 serve` for `binary`, with `env` (the locations this run was
/// given: `SYSTEM1_INSTALL_DIR`, `SYSTEM1_CONFIG`) set for it, so that what starts at login uses
/// the same files. Each value is quoted as its format reads it: a path with a space, a `%` or a
/// quote is still one argument, taken literally.
pub fn serve_contents(platform: Platform, binary: &Path, env: &[(&str, String)]) -> String {
    let bin = binary.display().to_string();
    match platform {
        Platform::Linux => {
            let environment: String =
                env.iter().map(|(k, v)| format!("Environment={}\n", systemd_quote(&format!("{k}={v}")))).collect();
            // The command's own path is taken without variables (`$` stays as it is); its arguments here have none.
            let exec = systemd_quote(&bin);
            format!(
                "# systemd user unit written by `system1 serve --at-login on`: starts system1 serve at login.\n\
                 [Unit]\nDescription=System-1 gateway as a System One API server (system1 serve)\nAfter=network.target\n\n\
                 [Service]\nType=simple\n{environment}ExecStart={exec} serve\nRestart=on-failure\nRestartSec=10\n\n\
                 [Install]\nWantedBy=default.target\n"
            )
        }
        Platform::MacOs => {
            let bin = text::xml_escape(&bin);
            let environment = if env.is_empty() {
                String::new()
            } else {
                let pairs: String = env
                    .iter()
                    .map(|(k, v)| format!("    <key>{k}</key>\n    <string>{}</string>\n", text::xml_escape(v)))
                    .collect();
                format!("  <key>EnvironmentVariables</key>\n  <dict>\n{pairs}  </dict>\n")
            };
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                 <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
                 <!-- LaunchAgent written by `system1 serve --at-login on`: starts system1 serve at login. -->\n\
                 <plist version=\"1.0\">\n<dict>\n  <key>Label</key>\n  <string>com.system1.serve</string>\n\
                 \x20 <key>ProgramArguments</key>\n  <array>\n    <string>{bin}</string>\n    <string>serve</string>\n  </array>\n\
                 {environment}\
                 \x20 <key>RunAtLoad</key>\n  <true/>\n  <key>KeepAlive</key>\n  <false/>\n</dict>\n</plist>\n"
            )
        }
        // A .cmd file is read with CRLF line ends; `set "K=V"` takes V as it stands, spaces and all.
        Platform::Windows => {
            let environment: String =
                env.iter().map(|(k, v)| format!("set \"{k}={}\"\r\n", v.replace('%', "%%"))).collect();
            format!(
                "@echo off\r\nrem Written by `system1 serve --at-login on`: starts system1 serve at login.\r\n\
                 {environment}start \"\" /min \"{}\" serve\r\n",
                bin.replace('%', "%%")
            )
        }
    }
}

/// `s` as one systemd word, taken literally: double-quoted, with `\` and `"` escaped and `%` (a
/// specifier) doubled (as systemd reads a unit file).
fn systemd_quote(s: &str) -> String {
    let escaped: String = s
        .chars()
        .map(|c| match c {
            '\\' => "\\\\".to_string(),
            '"' => "\\\"".to_string(),
            '%' => "%%".to_string(),
            '\n' => "\\n".to_string(),
            c => c.to_string(),
        })
        .collect();
    format!("\"{escaped}\"")
}

/// The locations this run was given in the environment, absolute, for the entry that starts
/// `system1 serve` at login (which does not see this shell's environment).
fn serve_env() -> Vec<(&'static str, String)> {
    let given = |var: &str| std::env::var_os(var).is_some_and(|v| !v.is_empty());
    let absolute = |p: PathBuf| std::path::absolute(&p).unwrap_or(p).display().to_string();
    let mut env = Vec::new();
    if given("SYSTEM1_INSTALL_DIR") {
        env.push(("SYSTEM1_INSTALL_DIR", absolute(paths::install_dir())));
    }
    if given("SYSTEM1_CONFIG") {
        env.push(("SYSTEM1_CONFIG", absolute(paths::config_file())));
    }
    env
}

/// Writes the start-at-login file of `system1 serve` (running the installed binary) and tells
/// the service manager. Returns what was done.
pub fn enable_serve(platform: Platform) -> Result<Vec<String>> {
    let binary = paths::installed_binary();
    if !binary.is_file() {
        return Err(Error::failure(format!("system1 is not installed at {}", binary.display()))
            .with_hint(format!("run `{}` first: the entry runs the installed binary", text::command("install"))));
    }
    let path = file_named(SERVE, platform);
    write(&path, &serve_contents(platform, &binary, &serve_env()))?;
    let mut done = vec![format!("wrote {}", path.display())];
    done.extend(tell_enabled(SERVE, &path, platform));
    Ok(done)
}

/// Removes the start-at-login file of `system1 serve`. Returns what was done.
pub fn disable_serve(platform: Platform) -> Result<Vec<String>> {
    disable_named(SERVE, platform)
}

pub fn serve_enabled(platform: Platform) -> bool {
    file_named(SERVE, platform).is_file()
}

fn write(path: &Path, text: &str) -> Result<()> {
    paths::ensure_parent(path).context(|| format!("cannot create the folder of {}", path.display()))?;
    std::fs::write(path, text).context(|| format!("cannot write {}", path.display()))
}

impl Spec {
    /// The launcher a platform's start-at-login file runs.
    pub fn launcher_for(&self, platform: Platform) -> PathBuf {
        self.dir().join(if platform == Platform::Windows { "start.ps1" } else { "start.sh" })
    }
}
