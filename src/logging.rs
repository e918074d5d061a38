//! Log lines for humans: `<time> <LEVEL> [<request id>] <message>`, on stderr (never stdout, which
//! carries the MCP protocol and hook output) and, when `log_file` is set, appended to that file.
//! Hooks log to the file only: their stderr must stay quiet. The MCP server's stderr lines go
//! through a bounded queue to a writer thread ([`init_server`]), so a client that never reads the
//! server's stderr costs log lines (dropped, counted, and the count reported), never tool calls.

use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

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

/// Where stderr lines go.
enum Stderr {
    /// Not written (hooks: their stderr must stay quiet).
    Off,
    /// Written at once, by the caller (a command whose stderr is a person's terminal).
    Direct,
    /// Handed to a writer thread through a queue of at most [`QUEUE_BYTES`] (the MCP server, whose stderr is a pipe
    /// its client may never read). When the queue is full the line is dropped and counted, and
    /// the count is written once stderr moves again: a client that does not read stderr must
    /// never stall tool calls.
    Queued(std::sync::mpsc::Sender<String>),
}

struct Logger {
    level: Level,
    stderr: Stderr,
    /// Opened once, in append mode: each line is one `write`, so processes sharing the file
    /// (the server and the hooks) never interleave within a line.
    file: Option<Mutex<std::fs::File>>,
}

static LOGGER: OnceLock<Logger> = OnceLock::new();

/// Lines dropped because the stderr queue was full, not yet reported.
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Bytes queued for stderr and not yet written.
static QUEUED: AtomicUsize = AtomicUsize::new(0);
/// Flush marks the writer has reached (see [`flush`]).
static FLUSHED: AtomicU64 = AtomicU64::new(0);
/// How much the stderr queue holds, beside the pipe's own 64 KiB.
const QUEUE_BYTES: usize = 256 << 10;

/// Sets the level and destinations once per process; later calls are ignored. `stderr` says
/// whether lines also go to stderr, written at once.
pub fn init(level: &str, log_file: &str, stderr: bool) {
    set(level, log_file, if stderr { Stderr::Direct } else { Stderr::Off });
}

/// [`init`] for the MCP server: stderr lines go through a queue and a writer thread, so a full
/// stderr pipe drops log lines (and counts them) instead of blocking the server.
pub fn init_server(level: &str, log_file: &str) {
    if initialized() {
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let writer = std::thread::Builder::new().name("stderr".into()).spawn(move || {
        for line in rx {
            let mut err = std::io::stderr().lock();
            let dropped = DROPPED.swap(0, Ordering::Relaxed);
            if dropped > 0 {
                let _ = writeln!(err, "system1: {dropped} log lines dropped: stderr was not being read");
            }
            if line.is_empty() {
                // A flush mark: everything queued before it is written.
                FLUSHED.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let _ = err.write_all(line.as_bytes());
            QUEUED.fetch_sub(line.len(), Ordering::Relaxed);
        }
    });
    match writer {
        Ok(_) => set(level, log_file, Stderr::Queued(tx)),
        Err(_) => set(level, log_file, Stderr::Direct),
    }
}

fn set(level: &str, log_file: &str, stderr: Stderr) {
    let loud = !matches!(stderr, Stderr::Off);
    let file = if log_file.trim().is_empty() { None } else { open_log(log_file.trim(), loud) };
    let _ = LOGGER.set(Logger { level: Level::parse(level), stderr, file: file.map(Mutex::new) });
}

/// Waits, at most `limit`, for queued stderr lines (and the count of those dropped) to be
/// written: the server calls it on its way out, so its last lines are not lost to an early exit.
pub fn flush(limit: Duration) {
    let Some(Logger { stderr: Stderr::Queued(tx), .. }) = LOGGER.get() else { return };
    let mark = FLUSHED.load(Ordering::Relaxed);
    if tx.send(String::new()).is_err() {
        return;
    }
    let deadline = Instant::now() + limit;
    while FLUSHED.load(Ordering::Relaxed) == mark && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn open_log(setting: &str, stderr: bool) -> Option<std::fs::File> {
    let path = match crate::paths::log_file(setting) {
        Ok(p) => p,
        Err(e) => {
            if stderr {
                let _ = writeln!(std::io::stderr(), "system1: log_file {e}; not logging to a file");
            }
            return None;
        }
    };
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
    let now = crate::text::now();
    // One write per line, so concurrent requests never interleave within a line. A request id is
    // the client's text: a newline in it (or in a message) must not start a forged line.
    let line = format!("{now} {} [{}] {}\n", level.name(), escaped(request_id), escaped(&message.replace('\n', " ")));
    let logger = LOGGER.get();
    // The file's lock is held across both writes, so the file and stderr list lines in one order.
    let mut file = logger.and_then(|l| l.file.as_ref()).and_then(|f| f.lock().ok());
    match logger.map(|l| &l.stderr) {
        Some(Stderr::Off) => {}
        Some(Stderr::Queued(tx)) => {
            let queued = QUEUED.fetch_add(line.len(), Ordering::Relaxed) + line.len();
            if queued > QUEUE_BYTES || tx.send(line.clone()).is_err() {
                QUEUED.fetch_sub(line.len(), Ordering::Relaxed);
                DROPPED.fetch_add(1, Ordering::Relaxed);
            }
        }
        Some(Stderr::Direct) | None => {
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
    }
    if let Some(f) = file.as_mut() {
        let _ = f.write_all(line.as_bytes());
    }
}

/// `text` with its control characters (newlines, carriage returns, escape sequences) written as
/// `\u{..}`, so that it stays on its line and cannot drive a terminal.
fn escaped(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
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
