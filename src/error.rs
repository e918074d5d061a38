//! One error type for every subcommand. Each error has a kind that maps to a documented exit code,
//! and may carry a hint telling the user what to do next. `main` prints it once, in one place.

use std::fmt;

/// Exit codes, documented for users in docs/configuration.md ("Exit codes").
pub mod exit {
    pub const OK: i32 = 0;
    /// Something failed: an engine, a file, a check.
    pub const FAILURE: i32 = 1;
    /// The command line was wrong (clap uses the same code).
    pub const USAGE: i32 = 2;
    /// The configuration is broken.
    pub const CONFIG: i32 = 3;
    /// `system1 decide`: the engine abstained (no decision, not an error).
    pub const ABSTAINED: i32 = 4;
    /// `system1 smoke`: the server works, but no engine of the chain answers (stopped, not broken).
    pub const ENGINE_DOWN: i32 = 5;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Usage,
    Config,
    Failure,
    /// stdout's reader has gone (`system1 report | head`): the reader's choice, not a failure, so
    /// the run ends quietly with exit 0.
    StdoutClosed,
}

#[derive(Debug)]
pub struct Error {
    pub kind: Kind,
    pub message: String,
    pub hint: Option<String>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn usage(message: impl Into<String>) -> Self {
        Self { kind: Kind::Usage, message: message.into(), hint: None }
    }
    pub fn config(message: impl Into<String>) -> Self {
        Self { kind: Kind::Config, message: message.into(), hint: None }
    }
    pub fn failure(message: impl Into<String>) -> Self {
        Self { kind: Kind::Failure, message: message.into(), hint: None }
    }
    /// See [`Kind::StdoutClosed`]; made by `output::stdout_error` from a broken pipe on stdout only
    /// (a broken pipe elsewhere, to an engine or a child process, is a failure).
    pub fn stdout_closed() -> Self {
        Self { kind: Kind::StdoutClosed, message: "stdout is closed".into(), hint: None }
    }
    pub fn is_stdout_closed(&self) -> bool {
        self.kind == Kind::StdoutClosed
    }
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
    pub fn exit_code(&self) -> i32 {
        match self.kind {
            Kind::Usage => exit::USAGE,
            Kind::Config => exit::CONFIG,
            Kind::Failure => exit::FAILURE,
            Kind::StdoutClosed => exit::OK,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::failure(e.to_string())
    }
}

/// The transcripts' projects dir cannot be read (`report`, `outcomes`): where to point them instead.
impl From<system1_transcripts::ListError> for Error {
    fn from(e: system1_transcripts::ListError) -> Self {
        Error::failure(e.to_string()).with_hint("pass --dir, or set CLAUDE_CONFIG_DIR to the Claude Code directory")
    }
}

/// Adds what was being done to an I/O or parse error, so the one-line message says where.
pub trait Context<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: fmt::Display> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::failure(format!("{}: {e}", what())))
    }
}
