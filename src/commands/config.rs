//! `system1 config show|path|check`: the effective config with the source of every value, its
//! path, and a check that exits non-zero listing every error.

use crate::config::{Resolved, Source};
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
            let configured = loaded.configured_providers();
            let mut chain: Vec<String> = Vec::new();
            for name in loaded.chain() {
                if !chain.contains(&name) {
                    chain.push(name);
                }
            }
            let outside: Vec<&String> = configured.iter().filter(|n| !chain.contains(n)).collect();
            outln!("# engines: {}", chain.join(" → "))?;
            if !outside.is_empty() {
                let names: Vec<&str> = outside.iter().map(|n| n.as_str()).collect();
                outln!("# configured but not in the chain (not asked): {}", names.join(", "))?;
            }
            let mut rows: Vec<Resolved> = loaded.resolved.clone();
            // The chain first, then any other configured engine, each once, so every key read is listed.
            for name in &configured {
                let s = loaded.provider_settings(name);
                let _ = crate::providers::build(name, &s);
                rows.extend(s.resolved.borrow().iter().cloned());
            }
            let width = rows.iter().map(|r| r.key.len() + r.value.len() + 3).max().unwrap_or(0).min(70);
            for r in rows {
                let source = if r.source == Source::File {
                    format!("file {}", loaded.path.display())
                } else {
                    r.source.to_string()
                };
                let invalid = r.invalid.map(|why| format!(" ({why})")).unwrap_or_default();
                // A value written out that is the default anyway reads as one the user chose: say so.
                let source = if r.is_default && r.source != Source::Default {
                    format!("{source}, the same as the default")
                } else {
                    source
                };
                outln!("{:width$}  # {source}{invalid}", format!("{} = {}", r.key, r.value))?;
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
                    errln!("error: {e}");
                }
                Ok(exit::CONFIG)
            }
        }
    }
}
