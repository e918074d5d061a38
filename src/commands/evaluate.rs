//! `system1 evaluate --provider P`: read-only; says whether engine P is ready for routing hints.
//! Only the arguments live here; `tuning::readiness` does the work.

use crate::error::Result;
use crate::tuning::readiness::{self, Options};

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 evaluate --provider laya
  system1 evaluate --provider local --json")]
pub struct Args {
    /// The engine to evaluate (laya, von, systemone, decisions, gemini, openrouter, ollama, local, mock, or the name of a
    /// `[providers.<name>]` table); only it is asked, no fallback.
    #[arg(long)]
    provider: String,
    /// Every feature must be at least this accurate at the routing threshold.
    #[arg(long, default_value_t = 0.85)]
    min_feature_accuracy: f64,
    /// The share of failed spawns where the rule must pick a higher tier than the one that ran.
    #[arg(long, default_value_t = 0.95)]
    min_safety: f64,
    /// At least this many failed spawns must be labelled.
    #[arg(long, default_value_t = 30)]
    min_failures: usize,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<i32> {
    readiness::run(Options {
        provider: args.provider,
        min_feature_accuracy: args.min_feature_accuracy,
        min_safety: args.min_safety,
        min_failures: args.min_failures,
        json: args.json,
    })
}
