//! `system1 schema [--write] [--dir DIR]`: the request and response JSON Schemas of schema "1".

use std::path::PathBuf;

use crate::error::{Context, Result};
use crate::gateway::schema;

#[derive(clap::Args)]
pub struct Args {
    /// Write schema/request.json and schema/response.json instead of printing them.
    #[arg(long)]
    write: bool,
    /// The folder to write into.
    #[arg(long, default_value = "schema")]
    dir: PathBuf,
}

pub fn run(args: Args) -> Result<i32> {
    let files = [("request.json", schema::request()), ("response.json", schema::response())];
    if !args.write {
        let both = serde_json::json!({"request": files[0].1, "response": files[1].1});
        println!("{}", serde_json::to_string_pretty(&both).unwrap_or_default());
        return Ok(0);
    }
    std::fs::create_dir_all(&args.dir).context(|| format!("cannot create {}", args.dir.display()))?;
    for (name, value) in files {
        let path = args.dir.join(name);
        std::fs::write(&path, schema::file_text(&value)).context(|| format!("cannot write {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(0)
}
