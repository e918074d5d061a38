//! `system1 config show|path|check`: the effective config with the source of every value, its
//! path, and a check that exits non-zero listing every error.

use serde::Serialize;

use crate::config::{Resolved, Source};
use crate::error::{Error, Result, exit};
use crate::gateway::Gateway;

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 config show
  system1 config show --json
  system1 config check && echo fine")]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Print every setting, its value and where it came from (default, file, env).
    Show {
        /// Print it as one JSON object (its fields are in docs/configuration.md).
        #[arg(long)]
        json: bool,
    },
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
        Action::Show { json } => {
            let shown = show(&gateway);
            if json {
                outln!("{}", serde_json::to_string_pretty(&shown).map_err(|e| Error::failure(e.to_string()))?)?;
            } else {
                print(&shown)?;
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

/// What `config show` prints, and `--json` as it is.
#[derive(Serialize)]
struct Shown {
    /// The config file's path, and whether it was read (else the defaults apply).
    file: String,
    file_read: bool,
    /// The engines asked, in order, each once.
    engines: Vec<String>,
    /// Engines with a `[providers.<name>]` table that are not in the chain (never asked).
    not_in_chain: Vec<String>,
    /// Every key read: the chain's first, then any other configured engine's.
    settings: Vec<Setting>,
    errors: Vec<String>,
}

#[derive(Serialize)]
struct Setting {
    /// Dotted, as in the file: `gateway.timeout_s`, `providers.laya.endpoint`.
    key: String,
    /// The value as TOML text (a string keeps its quotes); a secret is masked.
    value: String,
    source: SourceKind,
    /// The environment variable or the key file it came from, for those sources.
    from: Option<String>,
    /// Whether the value in effect is the default (also when the file or environment spells it out).
    is_default: bool,
    /// Why a refused value was refused (the default applies instead).
    invalid: Option<String>,
}

#[derive(Serialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum SourceKind {
    Default,
    File,
    Env,
    KeyFile,
}

fn show(gateway: &Gateway) -> Shown {
    let loaded = &gateway.loaded;
    let configured = loaded.configured_providers();
    let mut chain: Vec<String> = Vec::new();
    for name in loaded.chain() {
        if !chain.contains(&name) {
            chain.push(name);
        }
    }
    let not_in_chain: Vec<String> = configured.iter().filter(|n| !chain.contains(n)).cloned().collect();
    let mut rows: Vec<Resolved> = loaded.resolved.clone();
    // The chain first, then any other configured engine, each once, so every key read is listed.
    for name in &configured {
        let s = loaded.provider_settings(name);
        let _ = crate::providers::build(name, &s);
        rows.extend(s.resolved.borrow().iter().cloned());
    }
    let settings = rows
        .into_iter()
        .map(|r| {
            let (source, from) = match r.source {
                Source::Default => (SourceKind::Default, None),
                Source::File => (SourceKind::File, None),
                Source::Env(var) => (SourceKind::Env, Some(var)),
                Source::KeyFile(path) => (SourceKind::KeyFile, Some(path)),
            };
            Setting { key: r.key, value: r.value, source, from, is_default: r.is_default, invalid: r.invalid }
        })
        .collect();
    Shown {
        file: loaded.path.display().to_string(),
        file_read: loaded.file_read,
        engines: chain,
        not_in_chain,
        settings,
        errors: gateway.config_errors.clone(),
    }
}

fn print(shown: &Shown) -> Result<()> {
    let state = if shown.file_read { "read" } else { "not found; defaults apply" };
    outln!("# config file: {} ({state})", shown.file)?;
    outln!("# engines: {}", shown.engines.join(" → "))?;
    if !shown.not_in_chain.is_empty() {
        outln!("# configured but not in the chain (not asked): {}", shown.not_in_chain.join(", "))?;
    }
    let width = shown.settings.iter().map(|r| r.key.len() + r.value.len() + 3).max().unwrap_or(0).min(70);
    for r in &shown.settings {
        let from = r.from.as_deref().unwrap_or_default();
        let source = match r.source {
            SourceKind::Default => "default".to_string(),
            SourceKind::File => format!("file {}", shown.file),
            SourceKind::Env => format!("env {from}"),
            SourceKind::KeyFile => format!("key file {from}"),
        };
        let invalid = r.invalid.as_deref().map(|why| format!(" ({why})")).unwrap_or_default();
        // A value written out that is the default anyway reads as one the user chose: say so.
        let source = if r.is_default && r.source != SourceKind::Default {
            format!("{source}, the same as the default")
        } else {
            source
        };
        outln!("{:width$}  # {source}{invalid}", format!("{} = {}", r.key, r.value))?;
    }
    for e in &shown.errors {
        outln!("# error: {e}")?;
    }
    Ok(())
}
