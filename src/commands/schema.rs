//! `system1 schema [--write] [--dir DIR]`: the JSON Schemas of schema "1": the decide request and
//! response, and the health and capabilities results.

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::error::{Context, Result};
use crate::gateway::schema;

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 schema > schemas.json
  system1 schema --write --dir schema")]
pub struct Args {
    /// Write schema/request.json, response.json, health.json and capabilities.json instead of printing them.
    #[arg(long)]
    write: bool,
    /// The folder to write into.
    #[arg(long, default_value = "schema")]
    dir: PathBuf,
}

pub fn run(args: Args) -> Result<i32> {
    if !args.write {
        // One object, each schema under its file's name without `.json`.
        let all: Map<String, Value> =
            schema::FILES.iter().map(|(name, make)| (name.trim_end_matches(".json").to_string(), make())).collect();
        outln!("{}", serde_json::to_string_pretty(&all).unwrap_or_default())?;
        return Ok(0);
    }
    std::fs::create_dir_all(&args.dir).context(|| format!("cannot create {}", args.dir.display()))?;
    for (name, make) in schema::FILES {
        let path = args.dir.join(name);
        std::fs::write(&path, schema::file_text(&make())).context(|| format!("cannot write {}", path.display()))?;
        outln!("wrote {}", path.display())?;
    }
    Ok(0)
}
