//! Engine servers on this machine (laya, von, and the decision server `decider`): install into their
//! own venv, start, stop, status, and start at login. The launchers and start-at-login templates live in `engines/<name>/` and are built
//! into the binary, so an installed `system1` needs no clone to set an engine up.
//!
//! Layout under `paths::engines_dir()/<name>/`: `venv/` (the engine's Python environment),
//! `start.sh` and `start.ps1` (the launchers), `<server>.log`, `<server>.pid`.

pub mod autostart;
pub mod decider;
pub mod fix;
pub mod gguf;
pub mod probe;

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::error::{Context, Error, Result};
use crate::{paths, text};

/// One engine server System-1 knows how to run.
pub struct Spec {
    pub name: &'static str,
    /// What `pip install` gets.
    pub package: &'static str,
    /// The server's name (its log and pid files are named after it).
    pub server: &'static str,
    /// What the server's command line contains, to tell it from whatever process holds its pid now.
    pub command: &'static str,
    pub default_port: u16,
    /// The environment variable the launcher reads the port from.
    pub port_var: &'static str,
    pub start_sh: &'static str,
    pub start_ps1: &'static str,
    pub systemd_unit: &'static str,
    pub launch_agent: &'static str,
    pub startup_cmd: &'static str,
    /// Other files the launchers run, written beside them: (name, contents).
    pub files: &'static [(&'static str, &'static str)],
}

pub const SPECS: [Spec; 3] = [
    Spec {
        name: "laya",
        package: "laya[serve]",
        server: "laya-serve",
        command: "laya-serve",
        default_port: 8765,
        port_var: "LAYA_PORT",
        start_sh: include_str!("../../engines/laya/start.sh"),
        start_ps1: include_str!("../../engines/laya/start.ps1"),
        systemd_unit: include_str!("../../engines/laya/system1-laya.service"),
        launch_agent: include_str!("../../engines/laya/com.system1.laya.plist"),
        startup_cmd: include_str!("../../engines/laya/system1-laya.cmd"),
        files: &[],
    },
    Spec {
        name: "von",
        package: "von-sdk",
        server: "von-serve",
        command: "von serve",
        default_port: 8777,
        port_var: "VON_PORT",
        start_sh: include_str!("../../engines/von/start.sh"),
        start_ps1: include_str!("../../engines/von/start.ps1"),
        systemd_unit: include_str!("../../engines/von/system1-von.service"),
        launch_agent: include_str!("../../engines/von/com.system1.von.plist"),
        startup_cmd: include_str!("../../engines/von/system1-von.cmd"),
        files: &[],
    },
    Spec {
        name: decider::NAME,
        package: decider::PACKAGE,
        server: "llama-server",
        // The launcher runs the venv's Python on it.
        command: "serve.py",
        default_port: decider::DEFAULT_PORT,
        port_var: "DECIDER_PORT",
        start_sh: include_str!("../../engines/decider/start.sh"),
        start_ps1: include_str!("../../engines/decider/start.ps1"),
        systemd_unit: include_str!("../../engines/decider/system1-decider.service"),
        launch_agent: include_str!("../../engines/decider/com.system1.decider.plist"),
        startup_cmd: include_str!("../../engines/decider/system1-decider.cmd"),
        files: &[("serve.py", include_str!("../../engines/decider/serve.py"))],
    },
];

pub fn spec(name: &str) -> Result<&'static Spec> {
    SPECS.iter().find(|s| s.name == name).ok_or_else(|| {
        if name == "local" {
            return Error::usage(
                "the local engine runs inside system1: there is no server to start, stop or autostart",
            )
            .with_hint(format!(
                "`{}` downloads its model; `{}` shows it",
                text::command("engine install local"),
                text::command("engine status local")
            ));
        }
        Error::usage(format!(
            "unknown engine {name:?}; System-1 runs laya, von, decider (a decision model on llama.cpp) and local \
             (Ollama runs itself)"
        ))
    })
}

impl Spec {
    pub fn dir(&self) -> PathBuf {
        paths::engines_dir().join(self.name)
    }

    pub fn venv(&self) -> PathBuf {
        self.dir().join("venv")
    }

    /// The launcher `engine start` runs on this machine.
    pub fn launcher(&self) -> PathBuf {
        self.launcher_for(autostart::Platform::current())
    }

    pub fn log_file(&self) -> PathBuf {
        self.dir().join(format!("{}.log", self.server))
    }

    pub fn pid_file(&self) -> PathBuf {
        self.dir().join(format!("{}.pid", self.server))
    }

    pub fn is_installed(&self) -> bool {
        self.venv().join(if cfg!(windows) { "Scripts" } else { "bin" }).is_dir()
    }

    /// The port the gateway expects the engine on: the configured endpoint's, else the default.
    pub fn port(&self) -> u16 {
        let loaded = crate::config::load();
        let settings = loaded.provider_settings(self.name);
        let endpoint = settings.string("endpoint", "");
        port_of(&endpoint).unwrap_or(self.default_port)
    }
}

/// One engine server's state, as `engine status` shows it (and prints it with `--json`).
#[derive(Debug, serde::Serialize)]
pub struct Status {
    pub engine: &'static str,
    pub installed: bool,
    pub dir: String,
    pub port: u16,
    pub listening: bool,
    /// What its pid file says, when there is one.
    pub pid: Option<String>,
    /// Whether its health probe passed; `None` where its config is broken and no probe ran.
    pub healthy: Option<bool>,
    pub detail: Option<String>,
    pub autostart: bool,
    pub log: String,
}

impl Status {
    /// Reads the engine's state: its files, its port and its health probe (at most 2 s).
    pub fn read(spec: &Spec, loaded: &crate::config::Loaded) -> Status {
        let settings = loaded.provider_settings(spec.name);
        let health = crate::providers::build(spec.name, &settings).map(|p| p.health(Duration::from_secs(2)));
        let port = spec.port();
        Status {
            engine: spec.name,
            installed: spec.is_installed(),
            dir: spec.dir().display().to_string(),
            port,
            listening: listening(port),
            pid: std::fs::read_to_string(spec.pid_file()).ok().map(|t| t.trim().to_string()),
            healthy: health.as_ref().map(|h| h.ok()),
            // An engine the config does not name yet (the decision server before its install) has
            // no provider to probe: its line says how to set it up.
            detail: match &health {
                Some(h) => h.detail().map(String::from),
                None if loaded.kind_of(spec.name).is_none() => Some(format!(
                    "not set up: `{}` installs it",
                    text::command(&format!("engine install {}", spec.name))
                )),
                None => None,
            },
            autostart: autostart::is_enabled(spec, autostart::Platform::current()),
            log: spec.log_file().display().to_string(),
        }
    }

    /// The status as lines for a person.
    pub fn lines(&self) -> Vec<String> {
        let yes = |b: bool| if b { "yes" } else { "no" };
        let mut lines = vec![
            format!("{}:", self.engine),
            format!("  installed:  {} ({})", yes(self.installed), self.dir),
            format!("  listening:  {} (127.0.0.1:{})", yes(self.listening), self.port),
        ];
        if let Some(d) = &self.detail {
            lines.push(format!("  health:     {d}"));
        }
        lines.push(format!("  at login:   {}", if self.autostart { "on" } else { "off" }));
        lines.push(format!("  log:        {}", self.log));
        lines
    }
}

/// The port of an `http://host:port` URL, when it names one.
pub fn port_of(url: &str) -> Option<u16> {
    let rest = url.trim().split_once("://").map(|(_, r)| r)?;
    let authority = rest.split('/').next()?;
    let (_, port) = authority.rsplit_once(':')?;
    port.parse().ok()
}

/// Whether something accepts connections on 127.0.0.1:`port`.
pub fn listening(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok()
}

/// The Python used to create engine venvs: `SYSTEM1_ENGINE_PYTHON`, else `python3` (`py -3` on Windows).
fn python() -> (String, Vec<String>) {
    if let Some(p) = std::env::var_os("SYSTEM1_ENGINE_PYTHON").filter(|p| !p.is_empty()) {
        return (p.to_string_lossy().to_string(), Vec::new());
    }
    if cfg!(windows) { ("py".into(), vec!["-3".into()]) } else { ("python3".into(), Vec::new()) }
}

fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd.status().context(|| format!("cannot run {what}"))?;
    if status.success() { Ok(()) } else { Err(Error::failure(format!("{what} failed ({status})"))) }
}

/// Where pip takes a package from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipSource {
    /// pip's own index (PyPI, or PIP_INDEX_URL).
    Default,
    /// This index (a mirror's `/simple`).
    Index(String),
    /// Only the wheels in this folder: a machine without the index.
    Folder(PathBuf),
}

impl PipSource {
    /// `SYSTEM1_PYPI_ENDPOINT`'s index (a mirror of PyPI, as the local engine's download uses it),
    /// else pip's own.
    pub fn from_env() -> Self {
        match crate::providers::local::wheel::index_mirror() {
            Some(mirror) => PipSource::Index(format!("{mirror}/simple")),
            None => PipSource::Default,
        }
    }

    fn args(&self) -> Vec<String> {
        match self {
            PipSource::Default => Vec::new(),
            PipSource::Index(url) => vec!["--index-url".into(), url.clone()],
            PipSource::Folder(dir) => vec!["--no-index".into(), "--find-links".into(), dir.display().to_string()],
        }
    }
}

/// Creates the venv, installs `package` into it, and writes the launchers. Returns what was done.
pub fn install(spec: &Spec, package: Option<&str>) -> Result<Vec<String>> {
    install_with(spec, package, &PipSource::from_env())
}

/// [`install`], with pip taking the package from `source`.
pub fn install_with(spec: &Spec, package: Option<&str>, source: &PipSource) -> Result<Vec<String>> {
    let dir = spec.dir();
    paths::create_dirs(&dir).context(|| format!("cannot create {}", dir.display()))?;
    let mut done = Vec::new();
    let venv = spec.venv();
    if !spec.is_installed() {
        let (py, mut args) = python();
        args.extend(["-m".into(), "venv".into(), venv.display().to_string()]);
        run(Command::new(&py).args(&args), &format!("{py} -m venv"))?;
        done.push(format!("created the venv {}", venv.display()));
    }
    let pip = venv.join(if cfg!(windows) { "Scripts\\pip.exe" } else { "bin/pip" });
    let package = package.unwrap_or(spec.package);
    run(
        Command::new(&pip)
            .args(["install", "--upgrade", "--disable-pip-version-check"])
            .args(source.args())
            .arg(package),
        &format!("pip install {package}"),
    )?;
    done.push(match source {
        PipSource::Folder(dir) => format!("installed {package} from {}", dir.display()),
        PipSource::Index(url) => format!("installed {package} from {url}"),
        PipSource::Default => format!("installed {package}"),
    });
    write_launchers(spec, &dir)?;
    done.push(format!("wrote the launchers {} and start.ps1", dir.join("start.sh").display()));
    Ok(done)
}

fn write_launchers(spec: &Spec, dir: &Path) -> Result<()> {
    let sh = dir.join("start.sh");
    std::fs::write(&sh, spec.start_sh).context(|| format!("cannot write {}", sh.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&sh, std::fs::Permissions::from_mode(0o755))
            .context(|| format!("cannot make {} executable", sh.display()))?;
    }
    let ps1 = dir.join("start.ps1");
    std::fs::write(&ps1, spec.start_ps1).context(|| format!("cannot write {}", ps1.display()))?;
    for (name, contents) in spec.files {
        let path = dir.join(name);
        std::fs::write(&path, contents).context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Runs the launcher (which starts the server in the background and returns). Returns its output.
pub fn start(spec: &Spec) -> Result<String> {
    let launcher = spec.launcher();
    if !launcher.is_file() {
        return Err(Error::failure(format!("{} is not installed ({} is missing)", spec.name, launcher.display()))
            .with_hint(format!("run `{}` first", text::command(&format!("engine install {}", spec.name)))));
    }
    let port = spec.port();
    let mut cmd = if cfg!(windows) {
        let mut c = Command::new("powershell");
        c.args(["-NoProfile", "-ExecutionPolicy", "Bypass", "-File"]).arg(&launcher);
        c
    } else {
        Command::new(&launcher)
    };
    cmd.env(spec.port_var, port.to_string());
    let out = cmd.output().context(|| format!("cannot run {}", launcher.display()))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        return Err(Error::failure(format!("{} failed: {}", launcher.display(), text.trim())));
    }
    Ok(text.trim().to_string())
}

/// Polls `provider`'s health until it passes or `limit` is over; returns its detail.
pub fn wait_healthy(
    name: &str,
    provider: &dyn crate::providers::Provider,
    limit: Duration,
    log: &Path,
) -> Result<String> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let probe = provider.health(Duration::from_secs(2));
        if probe.ok() {
            return Ok(probe.detail().unwrap_or_default().to_string());
        }
        if std::time::Instant::now() >= deadline {
            return Err(Error::failure(format!(
                "{name} is not ready after {} s: {}",
                limit.as_secs(),
                probe.detail().unwrap_or_default()
            ))
            .with_hint(format!("see its log, {}", log.display())));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Stops the server the launcher started (by the pid it recorded). Returns what happened.
pub fn stop(spec: &Spec) -> Result<String> {
    let pid_file = spec.pid_file();
    let Ok(text) = std::fs::read_to_string(&pid_file) else {
        return Ok(format!("{}: no pid file ({}); nothing started by System-1 to stop", spec.name, pid_file.display()));
    };
    // `kill 0` would signal this whole process group, and pid 1 is init: neither is an engine.
    let pid: u32 = text
        .trim()
        .parse()
        .ok()
        .filter(|p| *p > 1)
        .ok_or_else(|| Error::failure(format!("{} holds no engine pid", pid_file.display())))?;
    // After a reboot the pid file is stale, and its pid may now belong to any process of the user.
    if is_other_process(spec, pid) {
        let _ = std::fs::remove_file(&pid_file);
        return Ok(format!(
            "{}: pid {pid} is not {} (a stale pid file, removed); nothing stopped",
            spec.name, spec.server
        ));
    }
    let status = if cfg!(windows) {
        Command::new("taskkill").args(["/PID", &pid.to_string(), "/T", "/F"]).status()
    } else {
        Command::new("kill").arg(pid.to_string()).status()
    };
    let _ = std::fs::remove_file(&pid_file);
    match status {
        Ok(s) if s.success() => Ok(format!("{}: stopped {} (pid {pid})", spec.name, spec.server)),
        _ => Ok(format!("{}: {} (pid {pid}) was not running", spec.name, spec.server)),
    }
}

/// Whether `pid` runs something other than the engine's server, by its command line. False when
/// no process has the pid (then `kill` says it was not running) or the command line cannot be read
/// (Windows, or a macOS without `ps`).
fn is_other_process(spec: &Spec, pid: u32) -> bool {
    command_line(pid).is_some_and(|args| !args.contains(spec.command))
}

/// A running process's command line, arguments joined by spaces; `None` when no process has the pid
/// or its command line cannot be read.
fn command_line(pid: u32) -> Option<String> {
    if cfg!(windows) {
        return None;
    }
    if cfg!(target_os = "linux") {
        // /proc is always there on Linux, where a slim system may have no `ps`. An empty command
        // line is a process that exists but runs no engine: a zombie, a kernel thread, or one
        // between fork and exec (whose arguments are not set up yet). None of them is ours to kill.
        let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let args = String::from_utf8_lossy(&raw).replace('\0', " ");
        return Some(args.trim().to_string());
    }
    let out = Command::new("ps").args(["-p", &pid.to_string(), "-o", "args="]).output().ok()?;
    let args = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !args.is_empty()).then_some(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_from_endpoints() {
        assert_eq!(port_of("http://127.0.0.1:8765"), Some(8765));
        assert_eq!(port_of("http://localhost:9000/"), Some(9000));
        assert_eq!(port_of("http://[::1]:8777/x"), Some(8777));
        assert_eq!(port_of("http://127.0.0.1"), None);
    }

    #[test]
    fn every_template_has_its_placeholders() {
        for s in &SPECS {
            assert!(s.systemd_unit.contains("@LAUNCHER@ --foreground"), "{}", s.name);
            assert!(s.launch_agent.contains("<string>@LAUNCHER@</string>"), "{}", s.name);
            assert!(s.startup_cmd.contains("@LAUNCHER_PS1@"), "{}", s.name);
            assert!(s.start_sh.contains("127.0.0.1") && s.start_ps1.contains("127.0.0.1"), "{}", s.name);
        }
    }
}
