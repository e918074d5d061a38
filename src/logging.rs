//! Log lines for humans: `<time> <LEVEL> [<request id>] <message>`, on stderr (never stdout, which
//! carries the MCP protocol and hook output) and, when `log_file` is set, appended to that file.
//! Hooks log to the file only: their stderr must stay quiet.

use std::io::Write;
use std::sync::{Mutex, OnceLock};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warning,
    Error,
}

impl Level {
    pub fn parse(s: &str) -> Level {
        match s.to_ascii_uppercase().as_str() {
            "DEBUG" => Level::Debug,
            "WARNING" | "WARN" => Level::Warning,
            "ERROR" => Level::Error,
            _ => Level::Info,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warning => "WARNING",
            Level::Error => "ERROR",
        }
    }
}

struct Logger {
    level: Level,
    stderr: bool,
    /// Opened once, in append mode: each line is one `write`, so processes sharing the file
    /// (the server and the hooks) never interleave within a line.
    file: Option<Mutex<std::fs::File>>,
}

static LOGGER: OnceLock<Logger> = OnceLock::new();

/// Sets the level and destinations once per process; later calls are ignored.
pub fn init(level: &str, log_file: &str, stderr: bool) {
    let file = if log_file.trim().is_empty() { None } else { open_log(log_file.trim(), stderr) };
    let _ = LOGGER.set(Logger { level: Level::parse(level), stderr, file: file.map(Mutex::new) });
}

fn open_log(path: &str, stderr: bool) -> Option<std::fs::File> {
    let path = crate::paths::expand_tilde(path);
    let _ = crate::paths::ensure_parent(&path);
    // In place only, like system1's other files: never through a link planted under its name.
    match crate::fsutil::open_private(&path, std::fs::OpenOptions::new().create(true).append(true)) {
        Ok(f) => Some(f),
        Err(e) => {
            if stderr {
                let _ = writeln!(std::io::stderr(), "system1: cannot open log file {}: {e}", path.display());
            }
            None
        }
    }
}

/// Whether [`init`] has run in this process.
pub fn initialized() -> bool {
    LOGGER.get().is_some()
}

pub fn enabled(level: Level) -> bool {
    LOGGER.get().map(|l| level >= l.level).unwrap_or(level >= Level::Warning)
}

pub fn log(level: Level, request_id: &str, message: &str) {
    if !enabled(level) {
        return;
    }
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
    // One write per line, so concurrent requests never interleave within a line.
    let line = format!("{now} {} [{request_id}] {}\n", level.name(), message.replace('\n', " "));
    let logger = LOGGER.get();
    // The file's lock is held across both writes, so the file and stderr list lines in one order.
    let mut file = logger.and_then(|l| l.file.as_ref()).and_then(|f| f.lock().ok());
    if logger.map(|l| l.stderr).unwrap_or(true) {
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
    if let Some(f) = file.as_mut() {
        let _ = f.write_all(line.as_bytes());
    }
}

pub fn debug(rid: &str, msg: &str) {
    log(Level::Debug, rid, msg)
}
pub fn info(rid: &str, msg: &str) {
    log(Level::Info, rid, msg)
}
pub fn warn(rid: &str, msg: &str) {
    log(Level::Warning, rid, msg)
}
pub fn error(rid: &str, msg: &str) {
    log(Level::Error, rid, msg)
}
