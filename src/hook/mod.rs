//! The hooks' common frame: read the hook JSON from stdin (its first object, within a deadline),
//! run the handler, print its output.
//! Any failure (bad input, a broken config, a panic) is logged to the log file when one is set,
//! and the hook stays silent with exit 0.

pub mod agent;
pub mod prompt;
pub mod session_start;

use std::io::{Read, Write};
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::logging;

#[derive(Debug, Clone, Copy)]
pub enum Event {
    SessionStart,
    Prompt,
    /// PreToolUse on Agent/Task.
    Agent,
    /// The plugin's function-hook module at `agent.spawn`.
    AgentSpawn,
    /// PostToolUse on Agent/Task.
    Spawned,
}

impl Event {
    /// The event's name as Claude Code gives it (`hookEventName`).
    pub fn name(self) -> &'static str {
        use crate::claude_code::event;
        match self {
            Event::SessionStart => event::SESSION_START,
            Event::Prompt => event::USER_PROMPT_SUBMIT,
            Event::Agent => event::PRE_TOOL_USE,
            Event::AgentSpawn => event::AGENT_SPAWN,
            Event::Spawned => event::POST_TOOL_USE,
        }
    }
}

/// What a handler wants printed (one JSON object's text for Claude Code), or `None` for silence.
pub type Output = Option<String>;

/// A handler's failure, logged and otherwise swallowed.
pub type HookResult = Result<Output, String>;

pub fn run(event: Event) -> i32 {
    // A panic message on stderr would be noise in the user's session: it goes to the log file
    // only, and none is written before the config has said where that file is.
    std::panic::set_hook(Box::new(|info| {
        if logging::initialized() {
            logging::error("hook", &format!("internal error: {info}"))
        }
    }));
    // Everything runs under the unwind guard, the config loading too: whatever happens, the hook
    // exits 0 with nothing on stdout unless the handler produced an answer.
    let output = std::panic::catch_unwind(AssertUnwindSafe(|| answer(event))).ok().flatten();
    if let Some(out) = output {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{out}").and_then(|_| stdout.flush());
    }
    0
}

/// Reads the hook's input, loads the config and runs the handler; `None` for silence.
fn answer(event: Event) -> Output {
    let read = read_input(std::io::stdin().lock(), STDIN_DEADLINE);
    // Where the plugin's module acts, the PreToolUse hook steps aside before the config is read:
    // it runs on every spawn there, for nothing.
    if let (Event::Agent, Ok((_, payload))) = (event, &read)
        && agent::steps_aside(payload)
    {
        return None;
    }
    let loaded = crate::config::load();
    let g = &loaded.config.gateway;
    logging::init(&g.log_level, &g.log_file, false);
    let (input, payload) = match read {
        Ok(read) => read,
        Err(why) => {
            logging::warn("hook", &why);
            return None;
        }
    };
    let outcome = match event {
        Event::SessionStart => session_start::handle(&loaded, &payload),
        Event::Prompt => prompt::handle(&loaded, &payload),
        Event::Agent => agent::before(&loaded, &input, &payload),
        Event::AgentSpawn => agent::at_spawn(&loaded, &input, &payload),
        Event::Spawned => agent::after(&loaded, &payload),
    };
    outcome.unwrap_or_else(|e| {
        logging::warn("hook", &format!("{event:?}: {e}"));
        None
    })
}

/// How long a hook waits for its input: Claude Code writes it at once, and gives a hook 5 s in all.
pub const STDIN_DEADLINE: Duration = Duration::from_secs(2);
/// The most hook input read; a bigger payload is no hook input Claude Code sends.
pub const MAX_INPUT: u64 = 16 * 1024 * 1024;

/// The hook input: the first JSON object on `stdin`, as its text and parsed. Reading stops at that
/// object's closing brace, so a caller that writes it and leaves stdin open is not waited on, and
/// at `deadline` when no complete object has come by then.
pub fn read_input(stdin: impl Read, deadline: Duration) -> Result<(String, Value), String> {
    let mut reader = Recorded {
        inner: std::io::BufReader::with_capacity(
            64 * 1024,
            Timed { inner: stdin, until: std::time::Instant::now() + deadline },
        )
        .take(MAX_INPUT),
        seen: Vec::new(),
    };
    let parsed = Value::deserialize(&mut serde_json::Deserializer::from_reader(&mut reader));
    let payload = match parsed {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return Err("hook input is not a JSON object".into()),
        Err(e) if e.is_io() => return Err(format!("hook input could not be read: {e}")),
        Err(e) => return Err(format!("hook input is not JSON: {e}")),
    };
    let text = String::from_utf8(reader.seen).map_err(|_| "hook input is not UTF-8 text".to_string())?;
    Ok((text, payload))
}

/// A reader that keeps what its caller took from it: the hook input's own text.
struct Recorded<R> {
    inner: R,
    seen: Vec<u8>,
}

impl<R: Read> Read for Recorded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.seen.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

/// Stdin with a deadline: each read first waits, at most until `until`, for something to read.
struct Timed<R> {
    inner: R,
    until: std::time::Instant,
}

impl<R: Read> Read for Timed<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(std::time::Instant::now());
        if !stdin_readable_within(left)? {
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no complete hook input in time"));
        }
        self.inner.read(buf)
    }
}

/// Whether stdin has something to read (or has ended) within `wait`: one poll(2).
#[cfg(unix)]
#[allow(unsafe_code, reason = "poll(2) on stdin: std has no read with a timeout")]
fn stdin_readable_within(wait: Duration) -> std::io::Result<bool> {
    let ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
    let mut fd = libc::pollfd { fd: libc::STDIN_FILENO, events: libc::POLLIN, revents: 0 };
    loop {
        // SAFETY: `fd` is one valid pollfd that lives across the call, and the count given is 1.
        let n = unsafe { libc::poll(&mut fd, 1, ms) };
        if n >= 0 {
            return Ok(n > 0);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Elsewhere there is no portable wait on a pipe: the read itself waits.
#[cfg(not(unix))]
fn stdin_readable_within(_wait: Duration) -> std::io::Result<bool> {
    Ok(true)
}

/// The `hookSpecificOutput` object Claude Code reads from a hook's stdout.
pub fn additional_context(event_name: &str, text: &str) -> Value {
    serde_json::json!({"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}})
}
