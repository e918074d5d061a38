//! system1: one binary for the whole product. `main` parses the command line, runs the command,
//! and turns its outcome into one message and an exit code, here and nowhere else.

mod calibration;
mod checks;
mod claude_code;
mod cli;
mod commands;
mod config;
mod engine;
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
mod state;
mod text;
mod tier;
mod transcripts;
mod tuning;

fn main() {
    // Broken pipe is success (`system1 report | head`): `println!` panics when stdout's reader has
    // gone, so that one panic ends the process quietly with exit 0. Any other panic reports as usual.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default_hook(info)
    }));
    let code = match cli::run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("system1: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}
