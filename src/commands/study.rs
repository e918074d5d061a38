//! `system1 study`: every chosen engine answers every item of the chosen labelled sets; read-only.
//! Only the arguments live here; `tuning::study` does the work.

use std::path::PathBuf;

use crate::error::Result;
use crate::tuning::study::{self, Options};

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 study
  system1 study --providers laya,local --set routing --svg study.svg")]
pub struct Args {
    /// The engines to study, e.g. `laya,local` (default: every configured engine that answers its
    /// health probe, the mock only when named).
    #[arg(long, value_delimiter = ',', value_name = "A,B,...")]
    providers: Option<Vec<String>>,
    /// The labelled set: `routing` or `destructive` (the seed sets), `log` (your labelled routing
    /// log) or a JSON-lines file in either seed set's format; repeatable (default: both seed sets).
    #[arg(long = "set", value_name = "routing|destructive|log|FILE.jsonl")]
    sets: Vec<String>,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
    /// Also draw accuracy against median latency (one point per engine) and a reliability
    /// diagram per engine into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    svg: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<i32> {
    study::run(Options { providers: args.providers, sets: args.sets, json: args.json, svg: args.svg })
}
