//! system1: one binary for the whole product. `main` parses the command line, runs the command,
//! and turns its outcome into one message and an exit code, here and nowhere else.

mod calibration;
mod cli;
mod commands;
mod config;
mod engine;
mod error;
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
mod state;
mod transcripts;

fn main() {
    let code = match cli::run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("system1: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}
