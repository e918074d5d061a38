//! `system1 config show|path|check`: the effective config with the source of every value, its
//! path, and a check that exits non-zero listing every error.

use crate::config::Source;
use crate::error::{Result, exit};
use crate::gateway::Gateway;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Print every setting, its value and where it came from (default, file, env).
    Show,
    /// Print the config file's path.
    Path,
    /// Check the config; exit 3 and list the errors when it is broken.
    Check,
}

pub fn run(args: Args) -> Result<i32> {
    let gateway = Gateway::from_env();
    let loaded = &gateway.loaded;
    match args.action {
        Action::Path => {
            outln!("{}", loaded.path.display())?;
            Ok(exit::OK)
        }
        Action::Show => {
            let state = if loaded.file_read { "read" } else { "not found; defaults apply" };
            outln!("# config file: {} ({state})", loaded.path.display())?;
            let mut rows: Vec<(String, String, Source)> =
                loaded.resolved.iter().map(|r| (r.key.clone(), r.value.clone(), r.source.clone())).collect();
            // The chain first, then any other configured engine, so every key read is listed.
            for name in &loaded.configured_providers() {
                let s = loaded.provider_settings(name);
                let _ = crate::providers::build(name, &s);
                rows.extend(s.resolved.borrow().iter().map(|r| (r.key.clone(), r.value.clone(), r.source.clone())));
            }
            let width = rows.iter().map(|r| r.0.len() + r.1.len() + 3).max().unwrap_or(0).min(70);
            for (key, value, source) in rows {
                let source =
                    if source == Source::File { format!("file {}", loaded.path.display()) } else { source.to_string() };
                outln!("{:width$}  # {source}", format!("{key} = {value}"))?;
            }
            for e in &gateway.config_errors {
                outln!("# error: {e}")?;
            }
            Ok(exit::OK)
        }
        Action::Check => {
            if gateway.config_errors.is_empty() {
                outln!(
                    "config ok ({})",
                    if loaded.file_read { loaded.path.display().to_string() } else { "defaults".into() }
                )?;
                Ok(exit::OK)
            } else {
                for e in &gateway.config_errors {
                    eprintln!("error: {e}");
                }
                Ok(exit::CONFIG)
            }
        }
    }
}
