//! One file per subcommand: its `clap::Args` (whose doc comments are the help text) and its `run`.

pub mod calibrate;
pub mod completions;
pub mod config;
pub mod decide;
pub mod doctor;
pub mod engine;
pub mod evaluate;
pub mod hook;
pub mod install;
pub mod mcp;
pub mod mcp_config;
pub mod outcomes;
pub mod report;
pub mod route;
pub mod schema;
pub mod serve;
pub mod smoke;
pub mod statusline;
pub mod study;
pub mod toggle;
