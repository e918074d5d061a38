//! `engine install decider`: a decision model on this machine, behind the local engine in the chain.
//! llama.cpp's server (the PyPI wheel xllamacpp, prebuilt for CPU, no compiler) serves the System
//! One API for a decision GGUF; the GGUF comes from the Hugging Face hub at a pinned revision, each
//! byte checked against its pinned size and SHA-256 (docs/engines.md says which model and why), or
//! from a file the user names with `--from`. Where a decision server already answers on this machine
//! (a llama-server at [providers.systemone]'s endpoint, Ollama with a decision model), the
//! `systemone` provider is pointed at it instead and nothing is installed.
//!
//! The order keeps a failure from leaving half an engine: the model is verified (checksum, then its
//! GGUF header names a decision type and template) before anything else is made; a venv this run
//! created is removed again when pip fails; the chain is changed only once the server has answered a
//! decision, whose latency is measured and stored in the config (`latency_ms`), so that a hook whose
//! budget is shorter passes it over.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{Spec, gguf};
use crate::config::Settings;
use crate::error::{Context, Error, Result};
use crate::providers::local::download::{self, File, Limits, Pinned};
use crate::providers::{self, EngineRequest, Provider, Question};
use crate::text;

/// The engine's name: in `engine install|start|stop|status|autostart` and in the chain.
pub const NAME: &str = "decider";
/// What pip installs into the venv: the llama.cpp build whose server was checked here to serve the
/// System One API for decision GGUFs (tests/it/engines_xllamacpp.rs).
pub const PACKAGE: &str = "xllamacpp==2026.10.11549";
/// The package's name, to find its wheel in a `--from` folder.
const WHEEL_PREFIX: &str = "xllamacpp-";
pub const DEFAULT_PORT: u16 = 8788;
pub const DEFAULT_MODEL: &str = "julia-1";

/// The decision GGUFs `engine install decider` knows, each pinned to a revision of its repository
/// on the hub, with the size and SHA-256 of its one file (the figures and sources are in
/// docs/engines.md#a-decision-model-on-this-machine).
pub const MODELS: &[Pinned] = &[
    Pinned {
        name: "julia-1",
        repo: "ggml-org/Julia-1-GGUF",
        revision: "16fee17949206fbf58da9347daea44d792a81211",
        files: &[File {
            path: "Julia-1-Q8_0.gguf",
            size: 168_166_496,
            sha256: "1ea6a7e87156eeeda88cb7a36a61265b37ba7b993897b7289b99aea5b5e47069",
        }],
        wheel: None,
    },
    Pinned {
        name: "laya",
        repo: "ggml-org/Laya-GGUF",
        revision: "da4b4753d62197659d8c90103cd4c43bef9afea6",
        files: &[File {
            path: "Laya-Q8_0.gguf",
            size: 449_397_600,
            sha256: "c06528c5746d3bb8baa72a27938be95abbfd0b226f8471e8a9e365ed0bb066d2",
        }],
        wheel: None,
    },
];

/// What the user asked `engine install decider` for.
#[derive(Debug, Default)]
pub struct Options {
    /// A pinned model's name (`julia-1`, `laya`).
    pub model: Option<String>,
    /// Any decision GGUF on the hub: `OWNER/REPO/FILE.gguf@REVISION`, with `sha256` and `size`.
    pub gguf: Option<String>,
    pub sha256: Option<String>,
    pub size: Option<u64>,
    /// The GGUF file, or a folder that holds it (and, for a machine without the package index, the
    /// xllamacpp wheel).
    pub from: Option<PathBuf>,
    /// Another pip requirement than [`PACKAGE`].
    pub package: Option<String>,
    /// Install even where a decision server already answers.
    pub force: bool,
}

/// The model `options` name: a pinned one, or the user's own pin.
pub fn resolve(options: &Options) -> Result<&'static Pinned> {
    match (&options.gguf, &options.model) {
        (Some(_), Some(_)) => Err(Error::usage("--gguf names its own model; leave out --model")),
        (Some(spec), None) => own_pin(spec, options.sha256.as_deref(), options.size),
        (None, name) => {
            if options.sha256.is_some() || options.size.is_some() {
                return Err(Error::usage("--sha256 and --size pin a model named with --gguf"));
            }
            let name = name.as_deref().unwrap_or(DEFAULT_MODEL);
            MODELS.iter().find(|m| m.name == name).ok_or_else(|| {
                let known: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
                Error::usage(format!("no pinned decision model {name:?} (known: {})", known.join(", "))).with_hint(
                    "any other decision GGUF on the hub: --gguf OWNER/REPO/FILE.gguf@REVISION --sha256 HEX --size BYTES \
                     (the file's page on the hub shows its SHA-256 and size)",
                )
            })
        }
    }
}

/// A pin the user gives: `OWNER/REPO/FILE.gguf@REVISION`, its SHA-256 and size. It lives as long as
/// the command, which installs one model and exits: leaked, as the pinned table's entries are static.
fn own_pin(spec: &str, sha256: Option<&str>, size: Option<u64>) -> Result<&'static Pinned> {
    let usage = || {
        Error::usage(format!("--gguf {:?} is not OWNER/REPO/FILE.gguf@REVISION", text::printable(spec, 200))).with_hint(
            "for instance --gguf ggml-org/Julia-1-GGUF/Julia-1-Q8_0.gguf@16fee17949206fbf58da9347daea44d792a81211",
        )
    };
    let (path, revision) = spec.trim().rsplit_once('@').ok_or_else(usage)?;
    let mut parts = path.splitn(3, '/');
    let (Some(owner), Some(repo), Some(file)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(usage());
    };
    let plain = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !plain(owner) || !plain(repo) || !plain(file) || !file.ends_with(".gguf") || file.starts_with('.') {
        return Err(usage());
    }
    if revision.len() != 40 || !revision.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(Error::usage(format!(
            "--gguf names the revision {:?}: a commit's 40 hex digits pin the file (a branch name moves)",
            text::printable(revision, 80)
        )));
    }
    let sha256 = sha256
        .map(str::trim)
        .map(str::to_ascii_lowercase)
        .filter(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()));
    let (Some(sha256), Some(size)) = (sha256, size.filter(|s| *s > 0)) else {
        return Err(Error::usage("--gguf needs --sha256 (64 hex digits) and --size (bytes): they pin the file")
            .with_hint("the file's page on the hub shows both, under its Git LFS details"));
    };
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let files: &'static [File] =
        Box::leak(Box::new([File { path: leak(file.to_string()), size, sha256: leak(sha256) }]));
    Ok(Box::leak(Box::new(Pinned {
        name: leak(file.trim_end_matches(".gguf").to_ascii_lowercase()),
        repo: leak(format!("{owner}/{repo}")),
        revision: leak(revision.to_ascii_lowercase()),
        files,
        wheel: None,
    })))
}

/// The pinned model's one file.
fn gguf_file(model: &Pinned) -> &'static File {
    &model.files[0]
}

/// Where an installed model lives: `engines/decider/models/<name>/`.
pub fn model_dir(spec: &Spec, model: &Pinned) -> PathBuf {
    spec.dir().join("models").join(model.name)
}

/// What `engine install decider` did, and the server the chain is to get: the caller (the command,
/// which owns the config file) puts it there, and only once this returned, so a failure leaves the
/// chain as it was.
pub struct Outcome {
    pub lines: Vec<String>,
    pub server: ToChain,
    /// Lines to say after the config changed.
    pub closing: Vec<String>,
}

/// A System One server to put in the chain behind the local engine.
pub struct ToChain {
    /// The provider it is: `decider`, or `systemone` for a server found answering.
    pub provider: &'static str,
    pub endpoint: String,
    pub model: String,
    /// A routing-sized decision's median time, measured at install.
    pub latency_ms: Option<u64>,
}

/// `engine install decider`.
pub fn install(spec: &Spec, options: &Options) -> Result<Outcome> {
    if !options.force
        && let Some(found) = answering_server()?
    {
        return Ok(use_found(found));
    }
    let model = resolve(options)?;
    let mut done = install_model(spec, model, options.from.as_deref())?;
    done.extend(install_server(spec, options)?);
    let relative = Path::new("models").join(model.name).join(gguf_file(model).path);
    let pointer = spec.dir().join("model.txt");
    std::fs::write(&pointer, format!("{}\n", relative.display()))
        .context(|| format!("cannot write {}", pointer.display()))?;
    done.push(format!("serves {} ({})", model.name, relative.display()));
    let (started, server) = start_and_measure(spec, model)?;
    done.extend(started);
    let closing = server.latency_ms.map(budget_line).into_iter().collect();
    Ok(Outcome { lines: done, server, closing })
}

/// The GGUF into `engines/decider/models/<name>/`, checked against its pin, then read: a file that
/// is not a decision model is removed again, however it got there.
fn install_model(spec: &Spec, model: &'static Pinned, from: Option<&Path>) -> Result<Vec<String>> {
    let target = model_dir(spec, model);
    let file = gguf_file(model);
    let lines = match from {
        Some(from) => download::install_from(model, &folder_of(model, from)?, &target)?,
        None if target.is_dir() && download::verify(model, &target).is_empty() => {
            vec![format!("{} is already installed in {} (checksums verified)", model.name, target.display())]
        }
        None => {
            let hub = download::endpoint();
            errln!(
                "decider: downloading {} ({:.0} MB) from {hub}/{} at revision {}",
                file.path,
                file.size as f64 / 1e6,
                model.repo,
                &model.revision[..12]
            );
            let limits = Limits::new(download::stall_limit(), download::deadline());
            download::install_into(model, &target, &hub, limits).map_err(|e| {
                Error::failure(format!("{}; nothing was installed", e.message)).with_hint(ways_forward(model))
            })?
        }
    };
    let header = gguf::read(&target.join(file.path));
    let refused = match &header {
        Err(unreadable) => Some(unreadable.clone()),
        Ok(h) => h.not_a_decision_model().map(|why| why.to_string()),
    };
    if let Some(why) = refused {
        let _ = std::fs::remove_dir_all(&target);
        return Err(Error::failure(format!("{} is not a decision model: {why}; nothing was installed", file.path))
            .with_hint("choose a decision GGUF: llama.cpp's \"Decision models\" collection on the hub lists them (Julia-1, Laya, Kev, lev)"));
    }
    Ok(lines)
}

/// The folder `--from` names the model's file in: the folder itself, or the file's own folder
/// when the file keeps its pinned name.
fn folder_of(model: &Pinned, from: &Path) -> Result<PathBuf> {
    if from.is_dir() {
        return Ok(from.to_path_buf());
    }
    let name = gguf_file(model).path;
    match (from.is_file(), from.file_name().and_then(|n| n.to_str())) {
        (true, Some(n)) if n == name => Ok(from.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."))),
        (true, _) => Err(Error::usage(format!(
            "--from {}: the pinned file is {name}; give that file, or the folder that holds it",
            from.display()
        ))),
        (false, _) => Err(Error::usage(format!("--from {}: no such file or folder", from.display()))),
    }
}

/// Every way to the model where the hub does not give it.
fn ways_forward(model: &Pinned) -> String {
    format!(
        "where the hub cannot be reached: set HF_ENDPOINT to a mirror of it; behind a proxy, set HTTPS_PROXY (and \
         SSL_CERT_FILE to its CA certificate where it inspects HTTPS); or download {} from {}/{}/blob/{} on another \
         machine and install it with `{}`",
        gguf_file(model).path,
        "https://huggingface.co",
        model.repo,
        model.revision,
        text::command("engine install decider --from FILE")
    )
}

/// The venv with llama.cpp's server in it, and the launchers. A venv this run made is removed when
/// pip fails, so that a later `engine status` does not call it installed.
fn install_server(spec: &Spec, options: &Options) -> Result<Vec<String>> {
    let made_here = !spec.is_installed();
    let source = pip_source(options.from.as_deref());
    let result = super::install_with(spec, options.package.as_deref(), &source);
    if result.is_err() && made_here {
        let _ = std::fs::remove_dir_all(spec.venv());
    }
    result.map_err(|e| {
        let hint = "where PyPI cannot be reached: set SYSTEM1_PYPI_ENDPOINT to a mirror of it (or PIP_INDEX_URL), or \
                    put the xllamacpp wheel (`pip download --no-deps xllamacpp==2026.10.11549`) beside the GGUF and \
                    install with --from that folder; the verified model is kept for the next try";
        Error::failure(format!("{}; the decision server was not installed", e.message)).with_hint(hint)
    })
}

/// Where pip takes the package from: the wheel in a `--from` folder (no index at all), else the
/// index `SYSTEM1_PYPI_ENDPOINT` names, else pip's own.
fn pip_source(from: Option<&Path>) -> super::PipSource {
    let folder =
        from.map(|f| if f.is_dir() { f.to_path_buf() } else { f.parent().map(Path::to_path_buf).unwrap_or_default() });
    let has_wheel = |dir: &Path| {
        std::fs::read_dir(dir).into_iter().flatten().flatten().any(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.starts_with(WHEEL_PREFIX) && n.ends_with(".whl")
        })
    };
    match folder.filter(|d| has_wheel(d)) {
        Some(dir) => super::PipSource::Folder(dir),
        None => super::PipSource::from_env(),
    }
}

/// The settings of a System One server at `endpoint` serving `model`, as the chain will read them.
fn server_settings(section: &str, endpoint: &str, model: &str) -> Settings {
    let mut table = toml::Table::new();
    table.insert("kind".into(), "systemone".into());
    table.insert("endpoint".into(), endpoint.into());
    table.insert("model".into(), model.into());
    Settings::new(section, table, Default::default())
}

/// A question the size of the routing hook's: its four questions about a median-length prompt
/// (141 characters, the routing seed set's median).
fn routing_sized() -> EngineRequest {
    crate::routing::features::request(
        "Add a --json flag to the export command that prints the rows as one JSON array, and a test for it; \
         keep the text output as it is.",
    )
}

/// How many decisions the latency is measured over, after one to warm the server up.
const MEASURED: usize = 7;

/// Starts the server, waits for it, and measures a routing-sized decision's latency (the median
/// of [`MEASURED`]): what it did, and the server with that latency.
fn start_and_measure(spec: &Spec, model: &Pinned) -> Result<(Vec<String>, ToChain)> {
    let port = spec.port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let mut done = vec![super::start(spec)?];
    let server =
        providers::systemone::SystemOne::new(&server_settings(&format!("providers.{NAME}"), &endpoint, model.name));
    super::wait_healthy(spec.name, &server, Duration::from_secs(180), &spec.log_file())?;
    let latency = measure(&server).map_err(|why| {
        Error::failure(format!(
            "the decision server started but did not answer a decision: {why}; the chain was not changed"
        ))
        .with_hint(format!("see its log, {}", spec.log_file().display()))
    })?;
    let ms = (latency.as_secs_f64() * 1e3).round().max(1.0) as u64;
    done.push(format!("answered a routing-sized decision (4 questions) in {ms} ms (median of {MEASURED})"));
    let server = ToChain { provider: NAME, endpoint, model: model.name.to_string(), latency_ms: Some(ms) };
    Ok((done, server))
}

/// The median time of [`MEASURED`] routing-sized decisions, after one unmeasured.
fn measure(server: &dyn Provider) -> std::result::Result<Duration, String> {
    let request = routing_sized();
    let timeout = Duration::from_secs(60);
    server.decide(&request, timeout).map_err(|f| f.detail().to_string())?;
    let mut times = Vec::with_capacity(MEASURED);
    for _ in 0..MEASURED {
        let started = Instant::now();
        server.decide(&request, timeout).map_err(|f| f.detail().to_string())?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(times[MEASURED / 2])
}

/// Whether the routing hook can use a server of this latency, in words.
fn budget_line(latency_ms: u64) -> String {
    let budget = crate::config::load().config.routing.budget_ms;
    if latency_ms <= budget {
        format!(
            "the routing hook uses it too: {latency_ms} ms fits its engine budget of {budget} ms ([routing] budget_ms)"
        )
    } else {
        format!(
            "the routing hook passes it over: {latency_ms} ms is more than its engine budget of {budget} ms ([routing] \
             budget_ms); system1_decide and `system1 decide` use it"
        )
    }
}

/// A decision server already answering on this machine.
pub struct Found {
    pub endpoint: String,
    pub model: String,
    /// Who serves it, for people.
    pub server: String,
}

/// A decision server already on this machine: one answering a decision at [providers.systemone]'s
/// endpoint (llama-server's address unless the config says otherwise), or Ollama (at [providers.ollama]'s
/// endpoint, its own default port unless the config says otherwise) with a model whose
/// capabilities include `decision`. Only loopback addresses are asked: a canned question, but no
/// question leaves the machine unasked.
pub fn answering_server() -> Result<Option<Found>> {
    let loaded = crate::config::load();
    let configured = loaded.provider_settings("systemone");
    let endpoint = configured.string("endpoint", providers::systemone::DEFAULT_ENDPOINT);
    let model = configured.string("model", providers::systemone::DEFAULT_MODEL);
    let _ = configured.take_errors();
    let ollama_settings = loaded.provider_settings("ollama");
    let ollama = ollama_settings.string("endpoint", providers::ollama::DEFAULT_ENDPOINT);
    let _ = ollama_settings.take_errors();
    if providers::http::Endpoint::new(&endpoint, false).is_ok()
        && answers(&server_settings("providers.systemone", &endpoint, &model))
    {
        let server = format!("a System One server at {}", text::without_userinfo(&endpoint));
        return Ok(Some(Found { endpoint: text::without_userinfo(&endpoint), model, server }));
    }
    for model in ollama_decision_models(&ollama) {
        if answers(&server_settings("providers.systemone", &ollama, &model)) {
            return Ok(Some(Found {
                endpoint: text::without_userinfo(&ollama),
                model: model.clone(),
                server: format!("Ollama, with {model}"),
            }));
        }
    }
    Ok(None)
}

/// Whether the server these settings name answers one decision (a yes/no question) within 3 s.
fn answers(settings: &Settings) -> bool {
    let server = providers::systemone::SystemOne::new(settings);
    if !settings.take_errors().is_empty() {
        return false;
    }
    let request = EngineRequest {
        context: Some(json!("system1 checks that a decision server answers.")),
        questions: vec![Question {
            key: "check".into(),
            text: "Is this a check?".into(),
            options: vec!["yes".into(), "no".into()],
        }],
    };
    server.decide(&request, Duration::from_secs(3)).is_ok()
}

/// The models the Ollama at `url` has whose `/api/show` capabilities include `decision`; none
/// where `url` is not a loopback address.
fn ollama_decision_models(url: &str) -> Vec<String> {
    let Ok(endpoint) = providers::http::Endpoint::new(url, false) else { return Vec::new() };
    let quick = Duration::from_millis(800);
    let Ok(tags) = endpoint.get("/api/tags", quick, None) else { return Vec::new() };
    let names: Vec<String> = tags.json["models"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["name"].as_str().map(str::to_string))
        .take(50)
        .collect();
    names
        .into_iter()
        .filter(|name| {
            endpoint.post("/api/show", &json!({"model": name}), quick, None).is_ok_and(|r| {
                r.json["capabilities"].as_array().is_some_and(|c| c.iter().any(|v| v.as_str() == Some("decision")))
            })
        })
        .collect()
}

/// Points the `systemone` provider at a server found answering, behind the local engine.
fn use_found(found: Found) -> Outcome {
    let lines = vec![format!(
        "{} already answers decisions on this machine: nothing was installed ({} installs llama.cpp's server anyway)",
        found.server,
        text::command("engine install decider --force")
    )];
    let server = ToChain { provider: "systemone", endpoint: found.endpoint, model: found.model, latency_ms: None };
    Outcome { lines, server, closing: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_models_name_one_gguf_each_at_a_commit() {
        for m in MODELS {
            assert_eq!(m.files.len(), 1, "{}", m.name);
            assert!(m.files[0].path.ends_with(".gguf") && m.revision.len() == 40, "{}", m.name);
            assert_eq!(m.files[0].sha256.len(), 64, "{}", m.name);
        }
        assert_eq!(resolve(&Options::default()).unwrap().name, DEFAULT_MODEL);
        assert_eq!(resolve(&Options { model: Some("laya".into()), ..Options::default() }).unwrap().name, "laya");
        assert!(resolve(&Options { model: Some("gpt".into()), ..Options::default() }).is_err());
    }

    #[test]
    fn a_users_own_pin_needs_a_commit_a_checksum_and_a_size() {
        let rev = "a".repeat(40);
        let sha = "B".repeat(64);
        let own = |gguf: &str, sha256: Option<&str>, size: Option<u64>| {
            resolve(&Options {
                gguf: Some(gguf.into()),
                sha256: sha256.map(str::to_string),
                size,
                ..Options::default()
            })
        };
        let pin = own(&format!("org/Tiny-GGUF/Tiny-Q8_0.gguf@{rev}"), Some(&sha), Some(7)).unwrap();
        assert_eq!((pin.name, pin.repo, pin.files[0].path), ("tiny-q8_0", "org/Tiny-GGUF", "Tiny-Q8_0.gguf"));
        assert_eq!((pin.files[0].size, pin.files[0].sha256), (7, "b".repeat(64).as_str()));
        for bad in [
            "org/Tiny-GGUF/Tiny.gguf@main".to_string(),
            format!("org/Tiny-GGUF@{rev}"),
            format!("org/Tiny-GGUF/../x.gguf@{rev}"),
            format!("org/Tiny-GGUF/tiny.bin@{rev}"),
        ] {
            assert!(own(&bad, Some(&sha), Some(7)).is_err(), "{bad}");
        }
        assert!(own(&format!("org/T/t.gguf@{rev}"), None, Some(7)).is_err(), "no checksum");
        assert!(own(&format!("org/T/t.gguf@{rev}"), Some("abc"), Some(7)).is_err(), "a short checksum");
        assert!(own(&format!("org/T/t.gguf@{rev}"), Some(&sha), None).is_err(), "no size");
        assert!(resolve(&Options { sha256: Some(sha.clone()), ..Options::default() }).is_err(), "a pin without --gguf");
    }

    #[test]
    fn the_routing_sized_decision_asks_the_four_feature_questions() {
        let r = routing_sized();
        assert_eq!(r.questions.len(), crate::routing::features::QUESTIONS.len());
        assert!(r.questions.iter().all(|q| q.options == ["yes", "no"]));
    }
}
