//! system1: one binary for the whole product. `main` parses the command line, runs the command,
//! and turns its outcome into one message and an exit code, here and nowhere else.

// First, so that its `outln!` and `out!` reach every module below.
#[macro_use]
mod output;

mod calibration;
mod checks;
mod claude_code;
mod cli;
mod commands;
mod config;
mod engine_servers;
mod error;
mod feature;
mod fsutil;
mod gateway;
mod hook;
mod install;
mod logging;
mod mcp;
mod outcomes;
mod paths;
mod providers;
mod report;
mod routing;
mod serve;
mod state;
mod text;
mod tier;
mod tuning;
mod zone;

use std::io::Write;

#[global_allocator]
static ALLOCATOR: system1_arena::Arena<{ system1_arena::ARENA_BYTES }> = system1_arena::Arena::new();

fn main() {
    let code = match cli::run() {
        Ok(code) => code,
        // Broken pipe is success (`system1 report | head`): every command prints through
        // `output`, which reports a reader that has gone as this error kind rather than panicking.
        Err(e) if e.is_stdout_closed() => e.exit_code(),
        Err(e) => {
            // Written, not `eprintln!`, which would panic should stderr be a closed pipe too.
            // Terminal-safe like everything printed: a message may quote a file or an engine.
            let _ = writeln!(std::io::stderr(), "system1: {}", text::terminal_safe(&e.to_string()));
            e.exit_code()
        }
    };
    std::process::exit(code);
}
