//! `system1 calibrate`: the commands the calibrate skill drives (`pending`, `label`, `fit`). Only
//! the arguments live here; `tuning::calibrate` does the work.

use std::path::PathBuf;

use clap::Subcommand;

use crate::error::Result;
use crate::tuning::calibrate::{self, FitOptions};

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 calibrate pending --limit 10
  system1 calibrate label --id 01JD... --feature read_only=true
  system1 calibrate fit --apply --plot reliability.svg
  system1 calibrate fit --provider local --question \"Is this shell command destructive?\" --set labels.jsonl --apply")]
pub struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// List routing-log entries waiting for labels, as JSON (features, tier, or a doubtful outcome).
    Pending {
        /// At most this many entries.
        #[arg(long, default_value_t = 30)]
        limit: usize,
    },
    /// Record labels on one routing-log entry.
    Label {
        /// The entry's `id` (from `calibrate pending`).
        #[arg(long)]
        id: String,
        /// A feature label, e.g. `--feature read_only=true` (repeatable).
        #[arg(long = "feature", value_name = "FEATURE=BOOL")]
        features: Vec<String>,
        /// The tier the task needed: haiku, sonnet, opus or fable.
        #[arg(long)]
        tier: Option<String>,
        /// For a subagent spawn: succeeded or failed.
        #[arg(long)]
        outcome: Option<String>,
        /// Who decided: `user` (a person confirmed it) or `claude`.
        #[arg(long, default_value = "user")]
        by: String,
    },
    /// Fit the temperatures from the labelled log plus the seed sets, and measure them; for the local
    /// engine, fit its trained heads (or, with --question and --set, teach it a question).
    Fit(FitArgs),
}

#[derive(clap::Args)]
struct FitArgs {
    /// Write the fits to the install dir's calibration file and the chosen threshold to the config.
    #[arg(long)]
    apply: bool,
    /// Also write a reliability diagram (before and after) to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Ask this provider instead of the configured chain.
    #[arg(long)]
    provider: Option<String>,
    /// The routing threshold chosen is the lowest at which every feature is this accurate.
    #[arg(long, default_value_t = 0.85)]
    target_accuracy: f64,
    /// Fit on the labelled log only, without the built-in seed sets.
    #[arg(long)]
    no_seeds: bool,
    /// Teach the local engine this question (with --set): a yes/no one, or one with a fixed set of options.
    #[arg(long, requires = "set", value_name = "TEXT")]
    question: Option<String>,
    /// Its labelled examples, one JSON object a line: {"text": "..." | "context": {...}, "label": true|false|"<option>"}.
    #[arg(long, requires = "question", value_name = "FILE.jsonl")]
    set: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<i32> {
    match args.command {
        Cmd::Pending { limit } => calibrate::pending(limit),
        Cmd::Label { id, features, tier, outcome, by } => {
            calibrate::label(&id, &features, tier.as_deref(), outcome.as_deref(), &by)
        }
        Cmd::Fit(a) => calibrate::fit(FitOptions {
            apply: a.apply,
            plot: a.plot,
            provider: a.provider,
            target_accuracy: a.target_accuracy,
            no_seeds: a.no_seeds,
            question: a.question,
            set: a.set,
        }),
    }
}
