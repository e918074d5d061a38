//! What commands print on stdout. Every command writes through `outln!` and `out!` (declared with
//! `#[macro_use]` in main.rs, so every module has them), which return a [`Result`] where `println!`
//! would panic: when stdout's reader has gone away (`system1 report | head`), the write fails with
//! `ErrorKind::BrokenPipe`, that becomes [`Error::stdout_closed`], and `main` ends the run quietly
//! with exit 0. Any other failure to write is an ordinary error. The hooks and the MCP server write
//! their own protocol output, and ignore a reader that has gone.

use std::fmt;
use std::io::{self, Write};

use crate::error::{Error, Result};

/// Writes `args` to stdout, terminal-safe ([`crate::text::terminal_safe`]: no command's output
/// drives the terminal, whatever text from outside it holds), and flushes it, so a closed pipe is
/// reported by this call.
pub fn write(args: fmt::Arguments<'_>) -> Result<()> {
    let formatted;
    let text = match args.as_str() {
        Some(s) => s,
        None => {
            formatted = args.to_string();
            &formatted
        }
    };
    let text = crate::text::terminal_safe(text);
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()).map_err(stdout_error)
}

/// What a word on a line means, which its colour shows on a terminal: ok, a warning, a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    Good,
    Warn,
    Bad,
}

impl Tone {
    fn style(self) -> anstyle::Style {
        let colour = match self {
            Tone::Good => anstyle::AnsiColor::Green,
            Tone::Warn => anstyle::AnsiColor::Yellow,
            Tone::Bad => anstyle::AnsiColor::Red,
        };
        anstyle::Style::new().fg_color(Some(colour.into())).bold()
    }
}

/// Whether stdout gets colour, decided once by anstream's rules (those clap's help follows): off
/// with `NO_COLOR` set, else on with `CLICOLOR_FORCE` set, else on only for a terminal that takes
/// colour (not `TERM=dumb`, not `CLICOLOR=0`).
pub fn colour() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| anstream::AutoStream::choice(&io::stdout()) != anstream::ColorChoice::Never)
}

/// Writes one line made of `parts`, each terminal-safe like [`write`]; a part with a tone is in its
/// colour when [`colour`] is on. The colour's codes are added after the escaping, so they are the
/// only ones that reach the terminal.
pub fn write_line(parts: &[(Option<Tone>, &str)]) -> Result<()> {
    let on = colour();
    let mut line = String::new();
    for (tone, text) in parts {
        let text = crate::text::terminal_safe(text);
        match tone {
            Some(tone) if on => {
                let style = tone.style();
                line.push_str(&format!("{}{text}{}", style.render(), style.render_reset()));
            }
            _ => line.push_str(&text),
        }
    }
    line.push('\n');
    let mut stdout = io::stdout().lock();
    stdout.write_all(line.as_bytes()).and_then(|()| stdout.flush()).map_err(stdout_error)
}

/// Writes `bytes` to stdout as they are, for text this binary made itself for a program to read
/// (a shell's completion script), which holds nothing from outside to escape.
pub fn write_bytes(bytes: &[u8]) -> Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(bytes).and_then(|()| stdout.flush()).map_err(stdout_error)
}

/// A failed write to stdout as an [`Error`]: a reader that has gone is not a failure.
pub fn stdout_error(e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Error::stdout_closed()
    } else {
        Error::failure(format!("cannot write to stdout: {e}"))
    }
}

/// `println!` that returns a [`Result`] instead of panicking: `outln!("{x}")?`.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` that returns a [`Result`] instead of panicking: `out!("{text}")?`.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*))
    };
}

/// `eprintln!` made terminal-safe like [`write`] (`errln!("{x}")`): for the lines a command
/// writes on stderr beside its output, which may quote an engine, a server or a file. A closed
/// stderr is ignored, as the lines are only for people.
pub fn write_err(args: fmt::Arguments<'_>) {
    let line = args.to_string();
    let _ = io::stderr().lock().write_all(crate::text::terminal_safe(&line).as_bytes());
}

/// A line on stderr through [`write_err`].
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::write_err(format_args!("{}\n", format_args!($($arg)*)))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_pipe_is_a_closed_stdout_and_other_errors_fail() {
        let closed = stdout_error(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(closed.is_stdout_closed());
        assert_eq!(closed.exit_code(), crate::error::exit::OK);
        let full = stdout_error(io::Error::other("disk full"));
        assert!(!full.is_stdout_closed());
        assert_eq!(full.exit_code(), crate::error::exit::FAILURE);
        assert!(full.message.contains("disk full"), "{}", full.message);
    }
}
