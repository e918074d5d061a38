//! `system1 doctor`: diagnoses the config, the binary against the plugin, build output copied into
//! the plugin's cache, the MCP registration,
//! the engines, one test decision, a configured `system1 serve`, the recent decision tallies, the pause state and, with
//! `[routing] enforce` on, whether the latest rewrites of a spawn's model took effect. Every finding
//! is one line (`ok`, `warn` or `FAIL`) with a `fix:` line when there is something to do.
//!
//! Exit code: 1 when any finding is FAIL, else 0 (a warning, such as being paused on purpose, is
//! not a fault). The test decision goes through `Gateway::ask` as a check, not `decide`, so it is not
//! counted in the tallies that the abstention check reads.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::checks::{self, NoEngine};
use crate::claude_code::{self, ClaudeJson, InstalledPlugins, Scope, SubagentModel};
use crate::config::{Enforce, Source, secret};
use serde::Serialize;

use crate::error::{Error, Result, exit};
use crate::gateway::{Answer, Ask, Gateway, Outcome, Purpose, Query, Refusal, VERSION};
use crate::install::claude;
use crate::output::{self, Tone};
use crate::providers::http::Endpoint;
use crate::providers::{Cause, Failure, Question, local};
use crate::routing::{self, spawn_log};
use crate::{engine_servers, logging, paths, state, text};

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 doctor
  system1 doctor --days 30 --json

Exit codes: 0 nothing failed (warnings allowed), 1 a finding is FAIL.")]
pub struct Args {
    /// Days of decision tallies to read for the abstention and error checks.
    #[arg(long, default_value_t = 7)]
    days: u32,
    /// Print the findings as one JSON object (its fields are in docs/troubleshooting.md); the exit
    /// code is the same.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    Ok,
    Warn,
    Fail,
}

#[derive(Serialize)]
struct Finding {
    level: Level,
    what: String,
    fix: Option<String>,
}

/// What `doctor --json` prints.
#[derive(Serialize)]
struct Report<'a> {
    findings: &'a [Finding],
    /// Findings that are not `ok` (warnings and failures).
    problems: usize,
    /// Whether any finding is `fail`: then doctor exits 1.
    failed: bool,
}

#[derive(Default)]
struct Findings(Vec<Finding>);

impl Findings {
    fn ok(&mut self, what: impl Into<String>) {
        self.0.push(Finding { level: Level::Ok, what: what.into(), fix: None });
    }
    fn warn(&mut self, what: impl Into<String>, fix: impl Into<String>) {
        self.0.push(Finding { level: Level::Warn, what: what.into(), fix: Some(fix.into()) });
    }
    fn fail(&mut self, what: impl Into<String>, fix: impl Into<String>) {
        self.0.push(Finding { level: Level::Fail, what: what.into(), fix: Some(fix.into()) });
    }
}

/// A test decision longer than this would eat the routing hook's whole engine budget.
const SLOW_MS: f64 = 1500.0;
/// Constant abstention needs at least this many decisions before it is called a fault.
const MIN_DECISIONS: u64 = 10;

/// The most of one finding (or its fix) printed, in characters: a sentence with a path, a URL
/// and an engine's quoted detail (itself at most `providers::failure::MAX_QUOTED_CHARS`) fits.
const MAX_FINDING_CHARS: usize = 2000;

pub fn run(args: Args) -> Result<i32> {
    let gateway = Gateway::from_env();
    let g = &gateway.loaded.config.gateway;
    logging::init(&g.log_level, &g.log_file, false);
    let mut r = Findings::default();

    check_config(&gateway, &mut r);
    check_versions(&mut r);
    check_plugin_copy(&mut r);
    check_registration(&mut r);
    if gateway.is_ok() {
        check_engines(&gateway, &mut r);
        check_local_model(&gateway, &mut r);
        check_routes(&gateway, &mut r);
        check_hook_budget(&gateway, &mut r);
        check_test_decision(&gateway, &mut r);
    }
    check_serve(&gateway, &mut r);
    check_tallies(&gateway, args.days, &mut r);
    check_pause(&gateway, &mut r);
    check_subagent_model(&gateway, &mut r);
    check_enforce(&gateway, &mut r);
    check_spawn_hook(&gateway, &mut r);
    check_labels(&mut r);

    let failed = r.0.iter().any(|f| f.level == Level::Fail);
    let problems = r.0.iter().filter(|f| f.level != Level::Ok).count();
    let code = if failed { exit::FAILURE } else { exit::OK };
    if args.json {
        let report = Report { findings: &r.0, problems, failed };
        outln!("{}", serde_json::to_string_pretty(&report).map_err(|e| Error::failure(e.to_string()))?)?;
        return Ok(code);
    }
    for f in &r.0 {
        let (tone, tag, pad) = match f.level {
            Level::Ok => (Tone::Good, "ok", "    "),
            Level::Warn => (Tone::Warn, "warn", "  "),
            Level::Fail => (Tone::Bad, "FAIL", "  "),
        };
        // A finding quotes what engines, files, settings and the environment say: each is one
        // line for people, escaped and capped whatever got into it.
        let what = text::printable(&f.what, MAX_FINDING_CHARS);
        output::write_line(&[(Some(tone), tag), (None, pad), (None, &what)])?;
        if let Some(fix) = &f.fix {
            outln!("      fix: {}", text::printable(fix, MAX_FINDING_CHARS))?;
        }
    }
    outln!(
        "{}",
        match problems {
            0 => "doctor: all good".to_string(),
            1 => "doctor: 1 finding needs attention".to_string(),
            n => format!("doctor: {n} findings need attention"),
        }
    )?;
    Ok(code)
}

fn check_config(gateway: &Gateway, r: &mut Findings) {
    let loaded = &gateway.loaded;
    let path = loaded.path.display();
    if gateway.config_errors.is_empty() {
        if loaded.file_read {
            r.ok(format!("config {path} is valid (engines: {})", loaded.chain().join(" → ")));
        } else {
            r.ok(format!("no config file at {path}; the defaults apply (engine: {})", loaded.chain().join(" → ")));
        }
        return;
    }
    for e in &gateway.config_errors {
        r.fail(
            format!("config: {e}"),
            format!("edit {path} (see config.example.toml), then check it with `{}`", text::command("config check")),
        );
    }
}

/// The plugin's version: `$CLAUDE_PLUGIN_ROOT/.claude-plugin/plugin.json`, else Claude Code's
/// record of the installed `system1` plugin. With where it was read.
fn plugin_version() -> Option<(String, String)> {
    if let Some((v, manifest)) = claude_code::running_plugin_version() {
        return Some((v, manifest.display().to_string()));
    }
    let claude = paths::claude_dir();
    let (v, id) = claude_code::installed_plugin_version(&claude, claude_code::PLUGIN)?;
    Some((v, format!("{id} in {}", InstalledPlugins::path(&claude).display())))
}

fn check_versions(r: &mut Findings) {
    let bin = paths::installed_binary();
    // The installed binary is the one the hooks and the MCP server run; this one may be another build.
    let version = if !bin.exists() {
        r.fail(
            format!("the binary is not installed at {}", bin.display()),
            format!("install it with /system1:setup (or `{}`)", text::command("install")),
        );
        VERSION.to_string()
    } else {
        match installed_version(&bin) {
            Ok(v) => v,
            Err(why) => {
                r.fail(
                    format!("the installed binary {} does not run: {why}", bin.display()),
                    format!("reinstall it with /system1:setup (or `{}`)", text::command("install")),
                );
                VERSION.to_string()
            }
        }
    };
    match plugin_version() {
        Some((v, from)) if v == version => r.ok(format!("binary {version} matches the plugin ({from})")),
        Some((v, from)) => r.warn(
            format!("binary {version} differs from the plugin's version {v} ({from})"),
            "reinstall the binary for this plugin with /system1:setup (upgrade)",
        ),
        None => r.ok(format!("binary {version}; no system1 plugin found in Claude Code (fine for other MCP clients)")),
    }
}

/// What a plugin installed from a clone should not bring along: Claude Code copies the whole folder
/// into its plugin cache (docs/install.md), build output and test dependencies included.
const NOT_PLUGIN_FILES: [&str; 2] = ["target", ".test-deps"];
/// Counting stops here: a .test-deps/ with Python venvs holds tens of thousands of files.
const MAX_COUNTED: usize = 50_000;

fn check_plugin_copy(r: &mut Findings) {
    let claude = paths::claude_dir();
    // Only copies: a plugin loaded straight from a clone (`claude --plugin-dir`) may hold a build.
    let cache = claude.join("plugins/cache");
    let cache_real = std::fs::canonicalize(&cache).unwrap_or_else(|_| cache.clone());
    let in_cache = |root: &Path| {
        root.starts_with(&cache) || std::fs::canonicalize(root).is_ok_and(|real| real.starts_with(&cache_real))
    };
    for (id, root) in claude_code::installed_plugin_roots(&claude, claude_code::PLUGIN) {
        if !in_cache(&root) {
            continue;
        }
        let found: Vec<(std::path::PathBuf, u64, bool)> = NOT_PLUGIN_FILES
            .iter()
            .map(|name| root.join(name))
            .filter(|p| std::fs::symlink_metadata(p).is_ok())
            .map(|p| {
                let (bytes, all) = size_of(&p);
                (p, bytes, all)
            })
            .collect();
        if found.is_empty() {
            continue;
        }
        let list: Vec<String> = found
            .iter()
            .map(|(p, bytes, all)| {
                let name = p.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
                format!("{name}/ ({}{:.0} MB)", if *all { "" } else { "over " }, *bytes as f64 / 1e6)
            })
            .collect();
        let paths: Vec<String> = found.iter().map(|(p, _, _)| p.display().to_string()).collect();
        r.warn(
            format!(
                "the system1 plugin in Claude Code's cache ({}) holds {}, copied from the folder it was installed from",
                root.display(),
                list.join(" and ")
            ),
            format!(
                "delete the copy (`rm -rf {}`); so that the next install does not bring it back, remove {} from \
                 that clone (`sh scripts/install.sh` builds outside it, in ~/.system1-gateway/build/), then \
                 reinstall in Claude Code: `/plugin uninstall {id}` and `/plugin install {id}`",
                paths.join(" "),
                found
                    .iter()
                    .filter_map(|(p, _, _)| p.file_name().map(|n| format!("{}/", n.to_string_lossy())))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        );
    }
}

/// Bytes under `path` (links not followed), and whether every file was counted.
fn size_of(path: &Path) -> (u64, bool) {
    let mut bytes = 0u64;
    for (n, e) in walkdir::WalkDir::new(path).into_iter().flatten().enumerate() {
        if n >= MAX_COUNTED {
            return (bytes, false);
        }
        if let Ok(m) = e.metadata()
            && m.is_file()
        {
            bytes += m.len();
        }
    }
    (bytes, true)
}

/// The installed binary's version: this one's when it is the same file, else from `--version`.
fn installed_version(bin: &Path) -> std::result::Result<String, String> {
    if std::env::current_exe().is_ok_and(|me| paths::same_file(&me, bin)) {
        return Ok(VERSION.to_string());
    }
    let out = std::process::Command::new(bin).arg("--version").output().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.trim().strip_prefix("system1 ") {
        Some(v) if out.status.success() && !v.is_empty() => Ok(v.to_string()),
        _ => Err(format!("`--version` printed {:?} ({})", text.trim(), out.status)),
    }
}

fn register_command() -> String {
    claude::add_command_shell(&paths::installed_binary())
}

fn check_registration(r: &mut Findings) {
    let file = paths::claude_json();
    let doc = ClaudeJson::read().ok().flatten();
    let cwd = std::env::current_dir().ok().map(|d| d.display().to_string());
    let Some((server, scope)) = doc.as_ref().and_then(|d| d.find(claude::SERVER, cwd.as_deref())) else {
        if let Some(found) = claude_mcp_get() {
            r.ok(format!("MCP server registered ({found})"));
            return;
        }
        // Without Claude Code there is nothing to register with: not a fault for other clients.
        if claude::find_claude().is_none() && !file.exists() && !paths::claude_dir().exists() {
            r.ok(format!(
                "Claude Code is not installed here (no `claude` on PATH, no {}): no registration to check; \
                 for other MCP clients, `{}` prints the entry to add",
                file.display(),
                text::command("mcp-config")
            ));
            return;
        }
        let fix = if claude::find_claude().is_some() {
            format!("run `{}`, or `{}`", text::command("install"), register_command())
        } else {
            format!("`claude` is not on PATH here: in a shell where it is, run `{}`", register_command())
        };
        r.fail(
            format!(
                "the system1 MCP server is not registered with Claude Code ({} has no mcpServers.system1)",
                file.display()
            ),
            fix,
        );
        return;
    };
    let scope = match scope {
        Scope::User => "user scope",
        Scope::Project => "this project",
    };
    let command = server.command.as_str();
    let args: Vec<&str> = server.args.iter().map(String::as_str).collect();
    let shown = format!("{command} {}", args.join(" "));
    let fix = format!("register it again: `claude mcp remove --scope user system1`, then `{}`", register_command());
    if args != ["mcp"] {
        r.fail(format!("the registered command `{shown}` does not run `system1 mcp`"), fix);
    } else if !Path::new(command).exists() && paths::find_on_path(&[command]).is_none() {
        r.fail(format!("the registered command `{shown}` points to a missing file"), fix);
    } else {
        r.ok(format!("MCP server registered ({scope}): {shown}"));
    }
}

/// `claude mcp get system1`, when `claude` is on PATH: finds registrations in other scopes.
fn claude_mcp_get() -> Option<String> {
    let cli = claude::find_claude()?;
    let out = std::process::Command::new(cli).args(["mcp", "get", claude::SERVER]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !text.contains(claude::SERVER) {
        return None;
    }
    let scope = text.lines().find(|l| l.trim_start().starts_with("Scope:")).map(|l| l.trim().to_string());
    Some(scope.unwrap_or_else(|| "reported by `claude mcp get system1`".to_string()))
}

fn endpoint_of(gateway: &Gateway, name: &str) -> String {
    gateway
        .loaded
        .config
        .providers
        .get(name)
        .and_then(|p| p.table.get("endpoint"))
        .and_then(|v| v.as_str())
        .map(|e| format!(" at {}", crate::text::without_userinfo(e)))
        .unwrap_or_default()
}

fn check_engines(gateway: &Gateway, r: &mut Findings) {
    if let Some(none) = checks::no_real_engine(&gateway.loaded) {
        r.warn(none.what(), checks::engine_setup_hint());
    }
    let health = gateway.health();
    let any_up = health.providers.iter().any(|p| p.ok);
    for (p, provider) in health.providers.iter().zip(gateway.chain()) {
        let detail = p.detail.as_deref().unwrap_or("");
        let endpoint = endpoint_of(gateway, &p.name);
        let fix = || match &p.failure {
            Some(failure) => engine_servers::fix::engine_fix(provider.as_ref(), failure),
            None => String::new(),
        };
        if p.ok {
            r.ok(format!(
                "{} engine ({}){endpoint} answers health in {:.0} ms: {detail}",
                p.name, p.role, p.latency_ms
            ));
        } else if any_up {
            r.warn(
                format!(
                    "{} engine ({}){endpoint} is down: {detail}; another engine of the chain answers",
                    p.name, p.role
                ),
                fix(),
            );
        } else {
            r.fail(format!("{} engine ({}){endpoint} is down: {detail}", p.name, p.role), fix());
        }
    }
}

/// The local engine's model, beyond what its health probe (which loads it) says: a model that
/// `engine install local` installed must still be the pinned download, file by file (a flipped
/// byte in the weights loads, and answers wrong); and a model no trained head fits abstains on
/// every yes/no question. A missing model or one that fails to load is the engine finding's.
fn check_local_model(gateway: &Gateway, r: &mut Findings) {
    if !gateway.loaded.chain().iter().any(|p| p == "local") {
        return;
    }
    let settings = gateway.loaded.provider_settings("local");
    let (name, dir, given) = local::configured(&settings);
    if local::model::missing_file(&dir).is_some() {
        return;
    }
    // Only the install dir's own copy of a pinned model has checksums to hold it to; a
    // model_dir is the user's files.
    if !given && let Ok(pin) = local::download::pinned(&name) {
        let bad = local::download::verify(pin, &dir);
        if !bad.is_empty() {
            r.fail(
                format!(
                    "the local model {name} in {} is not the download `engine install local` checked: {}",
                    dir.display(),
                    bad.join("; ")
                ),
                format!("reinstall it with `{}`", text::command(&local::install_command(&name))),
            );
        }
    }
    if let Some(heads) = local::fitting_heads(&name, &dir)
        && heads.is_empty()
    {
        r.warn(
            format!(
                "no trained head fits the local model {name}: it answers no yes/no question (the four routing \
                 features among them), and passes them on to the next engine of the chain; choice questions are \
                 still answered"
            ),
            format!(
                "fit heads for it from the seed sets and your labels with /system1:calibrate (`{}`)",
                text::command("calibrate fit --apply")
            ),
        );
    }
}

/// Which questions go where in the chain, when that is more than "all to the one engine": a chain
/// of several engines, or one that answers only the yes/no questions it was taught.
/// Each engine hosted elsewhere says so, and which questions it gets.
fn check_routes(gateway: &Gateway, r: &mut Findings) {
    let (described, routes) = gateway.described_routes();
    let hosted = described.iter().any(|p| p.remote.is_some());
    if !hosted && described.len() < 2 && described.iter().all(|p| p.yes_no == crate::providers::Scope::Any) {
        return;
    }
    r.ok(routes.summary(&described));
    for (i, p) in described.iter().enumerate() {
        let Some(remote) = &p.remote else { continue };
        // A provider listed twice in the chain is said once.
        if described[..i].iter().any(|q| q.name == p.name) {
            continue;
        }
        r.ok(format!("{}: {}; it gets {}", p.name, remote.line(), routes.sent_to(&p.name)));
    }
}

/// With routing on, each engine of the chain whose latency was measured at install (the decision
/// server's) against the prompt hook's engine budget: the chain passes an engine by when its
/// latency is more than what is left of that budget, so one slower than the whole budget never
/// answers a prompt's questions, which go on down the chain; `system1_decide` still asks it.
fn check_hook_budget(gateway: &Gateway, r: &mut Findings) {
    let routing = &gateway.loaded.config.routing;
    if !routing.enabled {
        return;
    }
    let budget = Duration::from_millis(routing.budget_ms);
    for provider in gateway.chain() {
        let Some(latency) = provider.measured_latency() else { continue };
        let (name, ms, budget_ms) = (provider.name(), latency.as_millis(), budget.as_millis());
        if latency > budget {
            r.warn(
                format!(
                    "{name} takes about {ms} ms a decision (measured at install), more than [routing] budget_ms \
                     ({budget_ms} ms): the prompt hook passes it by, and its questions go on down the chain \
                     (system1_decide still asks it)"
                ),
                format!(
                    "raise [routing] budget_ms above {ms} (each prompt may then wait that long), or put a faster \
                     engine before {name}"
                ),
            );
        } else {
            r.ok(format!(
                "{name} takes about {ms} ms a decision (measured at install), within [routing] budget_ms \
                 ({budget_ms} ms): the prompt hook asks it when the engines before it leave it that long"
            ));
        }
    }
}

/// An attempt's detail without the provider's name in front, for a line that names it already.
fn unnamed<'a>(provider: &str, detail: &'a str) -> &'a str {
    detail.strip_prefix(provider).and_then(|d| d.strip_prefix(": ")).unwrap_or(detail)
}

fn check_test_decision(gateway: &Gateway, r: &mut Findings) {
    // A question every engine answers, the local one too (it answers only the yes/no questions
    // it has a trained head for, and this is one): an abstention then says something.
    let question = Question {
        key: "decision".into(),
        text: crate::tuning::seeds::DESTRUCTIVE_QUESTION.into(),
        options: vec!["yes".into(), "no".into()],
    };
    let context = Some(serde_json::json!({"command": "rm -rf build/"}));
    // A check, not a use: it runs while paused, and its calibration key matches no fit.
    let ask = Ask::new(context, vec![Query::new(question, "doctor")], Purpose::Check);
    let started = Instant::now();
    let outcome = gateway.ask(&ask, "doctor");
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let attempts = match &outcome {
        Ok(a) => a.attempts.as_slice(),
        Err(refusal) => refusal.attempts(),
    };
    let timeout_s = gateway.loaded.config.gateway.timeout_s;
    for a in attempts {
        let detail = unnamed(&a.provider, a.detail.as_deref().unwrap_or(""));
        let provider = gateway.chain().iter().find(|p| p.name() == a.provider);
        let fix = |cause: Cause| match provider {
            Some(p) => engine_servers::fix::engine_fix(p.as_ref(), &Failure::new(cause, detail)),
            None => String::new(),
        };
        match a.outcome {
            Outcome::Timeout => r.fail(
                format!("test decision: {} timed out after {:.0} ms (timeout_s = {timeout_s})", a.provider, a.latency_ms),
                fix(Cause::Timeout),
            ),
            Outcome::Malformed => r.fail(
                format!("test decision: {} answered malformed: {detail}", a.provider),
                format!(
                    "check that [providers.{}] endpoint and model name the engine and checkpoint you run, and that the engine's version is supported",
                    a.provider
                ),
            ),
            Outcome::Error => {
                r.fail(format!("test decision: {} failed: {detail}", a.provider), fix(a.cause.unwrap_or(Cause::Other)))
            }
            Outcome::Ok | Outcome::Abstained | Outcome::Passed => {}
        }
    }
    let answered = outcome.as_ref().map(|a| (a.answers.as_slice(), a.provider.as_deref()));
    match answered {
        Ok((answers, Some(p))) => {
            let what = match answers.first() {
                Some(Answer::Decided { decision, confidence, .. }) => format!("{decision:?} at {confidence:.2}"),
                _ => "abstained".to_string(),
            };
            if ms > SLOW_MS {
                r.warn(
                    format!("test decision by {p} took {ms:.0} ms ({what}): more than the routing hook's 1.5 s budget"),
                    "use a GPU or a smaller model, keep the engine warm (start at login), or leave routing off",
                );
            } else {
                r.ok(format!("test decision by {p} in {ms:.0} ms ({what})"));
            }
        }
        Ok((answers, None)) => {
            if let Some(Answer::Passed { .. }) = answers.first() {
                let passed: Vec<&str> =
                    attempts.iter().filter(|a| a.outcome == Outcome::Passed).map(|a| a.provider.as_str()).collect();
                r.warn(
                    format!(
                        "test decision: no engine in the chain answers a free yes/no question ({} passed it on)",
                        passed.join(", ")
                    ),
                    crate::gateway::PASSED_FIX,
                );
            }
        }
        Err(refusal @ Refusal::NoEngine) => {
            r.fail(format!("test decision: {refusal}"), "set [gateway] provider in the config");
        }
        Err(_) => {}
    }
}

/// With a `[serve]` table in the config: does `system1 serve` answer where it says, and is what
/// answers this gateway (its health has a `gateway_version`), with the configured key? A table that
/// only spells out the defaults (as the config `system1 install` writes does) asks for no server:
/// one that answers there is checked, and nothing answering is no finding.
fn check_serve(gateway: &Gateway, r: &mut Findings) {
    let serve =
        || gateway.loaded.resolved.iter().filter(|x| x.key.starts_with("serve.") && x.source != Source::Default);
    if serve().next().is_none() {
        return;
    }
    let asked_for = serve().any(|x| !x.is_default);
    let s = &gateway.loaded.config.serve;
    let host: IpAddr = match s.host.trim_start_matches('[').trim_end_matches(']').parse() {
        // A server on every address answers on loopback too.
        Ok(IpAddr::V4(ip)) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        Ok(IpAddr::V6(ip)) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        Ok(ip) => ip,
        Err(_) => {
            r.fail(
                format!("[serve] host {:?} is not an IP address", s.host),
                "set [serve] host to an address such as 127.0.0.1",
            );
            return;
        }
    };
    let url = format!("http://{}", SocketAddr::new(host, s.port));
    let key = if s.api_key_file.is_empty() {
        None
    } else {
        match secret::read_key_file(&paths::expand_tilde(&s.api_key_file)) {
            Ok(k) => Some(k),
            Err(e) => {
                r.fail(
                    format!("[serve] api_key_file: {e}"),
                    "put the key alone in a file only you can read (chmod 600)",
                );
                return;
            }
        }
    };
    let endpoint = match Endpoint::new(&url, true) {
        Ok(e) => e,
        Err(e) => {
            r.fail(format!("[serve]: {e}"), "check [serve] host and port");
            return;
        }
    };
    match endpoint.get("/health", Duration::from_secs(3), key.as_deref()) {
        Ok(reply) if reply.json.get("gateway_version").is_some_and(|v| v.is_string()) => {
            let status = reply.json.get("status").and_then(|v| v.as_str()).unwrap_or("?");
            r.ok(format!("system1 serve answers on {url} (health {status})"));
        }
        _ if !asked_for => {}
        Ok(reply) if reply.status == 401 => r.fail(
            format!("system1 serve on {url} refuses the key in [serve] api_key_file"),
            "restart it so that it reads the current key file",
        ),
        Ok(reply) => r.fail(
            format!("something other than system1 serve answers on {url} (HTTP {})", reply.status),
            "stop it, or give [serve] port another port",
        ),
        Err(_) => r.warn(
            format!("[serve] is configured, but nothing answers on {url}"),
            format!("start it: `{}`", text::command("serve")),
        ),
    }
}

fn check_tallies(gateway: &Gateway, days: u32, r: &mut Findings) {
    let today = chrono::Utc::now().date_naive();
    let mut counts = std::collections::BTreeMap::<String, u64>::new();
    for back in 0..days.max(1) {
        let Some(day) = today.checked_sub_days(chrono::Days::new(u64::from(back))) else { break };
        state::count_decisions(&day.format("%Y-%m-%d").to_string(), &mut counts);
    }
    let total: u64 = counts.values().sum();
    let n = |s: &str| counts.get(s).copied().unwrap_or(0);
    let span = if days <= 1 { "today".to_string() } else { format!("in the last {days} days") };
    if total == 0 {
        r.ok(format!("no decisions {span}"));
        return;
    }
    let (decided, abstained, errors) = (n("decided"), n("abstained"), n("error"));
    let summary = format!(
        "{} {span}: {decided} decided, {abstained} abstained, {}",
        text::count(total, "decision"),
        text::count(errors, "error")
    );
    if total >= MIN_DECISIONS && decided == 0 && abstained > 0 {
        let fix = if state::is_paused() {
            format!("System-1 is paused: `{}` resumes it", text::command("toggle on"))
        } else if checks::no_real_engine(&gateway.loaded) == Some(NoEngine::Placeholder) {
            format!("{}: {}", NoEngine::Placeholder.what(), checks::engine_setup_hint())
        } else {
            "the threshold is above what the engine gives: lower [gateway] min_confidence, or fit a calibration with /system1:calibrate".to_string()
        };
        r.fail(format!("{summary}: it always abstains"), fix);
    } else if total >= MIN_DECISIONS && errors * 2 > total {
        r.warn(format!("{summary}: most of them failed"), "see the engine and test decision findings above");
    } else {
        r.ok(summary);
    }
}

fn check_pause(gateway: &Gateway, r: &mut Findings) {
    if state::is_paused() {
        let since = state::paused_since().map(|t| format!(" since {t}")).unwrap_or_default();
        r.warn(
            format!("System-1 is paused{since}: decisions abstain and the hooks are silent"),
            format!("`{}` (or /system1:toggle on)", text::command("toggle on")),
        );
    } else {
        let routing = &gateway.loaded.config.routing;
        let state = match (routing.enabled, routing.hint) {
            (false, _) => "routing off",
            (true, false) => "routing on, log only",
            (true, true) => "routing on with hints",
        };
        r.ok(format!("not paused ({state}; enforce {})", routing.enforce));
    }
}

/// How many of the latest rewrites the took-effect check reads.
const REWRITES_CHECKED: usize = 20;

/// Claude Code's own `CLAUDE_CODE_SUBAGENT_MODEL`, in this environment or in a settings file's
/// `env`: while it is set, it decides every subagent's model, so neither the hint nor enforcement
/// does (docs/routing.md#claude-codes-own-setting).
fn check_subagent_model(gateway: &Gateway, r: &mut Findings) {
    let routing = &gateway.loaded.config.routing;
    if !routing.enabled {
        return;
    }
    let found = SubagentModel::from_env().map(|v| (v, "in this environment".to_string())).or_else(|| {
        let cwd = std::env::current_dir().ok()?;
        // Later files override earlier ones, as Claude Code layers them.
        claude_code::settings_files(&paths::claude_dir(), &[cwd]).iter().rev().find_map(|f| {
            claude_code::subagent_model_in_settings(f).map(|v| (v, format!("in the env of {}", f.display())))
        })
    });
    let Some((var, whence)) = found else { return };
    let acts = match routing.enforce {
        Enforce::Off => "the routing hint is advice Claude Code overrides".to_string(),
        mode => {
            format!("enforce {mode} rewrites no spawn (the agent hook sees the variable and leaves every call alone)")
        }
    };
    let decides = if var.force {
        "Claude Code's own setting decides every subagent's model over the Agent call's"
    } else {
        "Claude Code 2.1.197 lets it decide every subagent's model over the Agent call's (2.1.332 only with CLAUDE_CODE_SUBAGENT_MODEL_FORCE)"
    };
    r.warn(
        format!("{var} is set {whence}: {decides}, so {acts}"),
        format!("unset {} (or remove it from that file's env) to let routing choose", claude_code::SUBAGENT_MODEL),
    );
}

/// `[routing] enforce`: whether it can act, and whether the latest rewrites took effect.
fn check_enforce(gateway: &Gateway, r: &mut Findings) {
    let routing = &gateway.loaded.config.routing;
    if routing.enforce == Enforce::Off {
        return;
    }
    let mode = routing.enforce;
    if !routing.enabled {
        r.warn(
            format!("[routing] enforce = \"{mode}\" does nothing while routing is off"),
            "set [routing] enabled = true (with hint = false if you want no hint), or enforce = \"off\"",
        );
        return;
    }
    let log = match routing::log::read_all() {
        Ok(log) => log,
        Err(e) => {
            r.warn(
                format!("cannot read the routing log {}: {e}", paths::routing_log().display()),
                "check its permissions",
            );
            return;
        }
    };
    let spawns = spawn_log::join(&log.entries);
    let latest = spawn_log::latest_rewrites(&spawns, REWRITES_CHECKED);
    let n = latest.looked_at;
    if latest.not_taken > 0 {
        let when = latest.last_not_taken.map(|t| format!(", the latest at {t}")).unwrap_or_default();
        r.warn(
            format!(
                "enforce {mode}: {} did not take effect (the spawn ran on another tier than was set{when})",
                if n == 1 { "the last rewrite".to_string() } else { format!("{} of the last {n} rewrites", latest.not_taken) }
            ),
            format!(
                "this Claude Code may ignore a hook's updatedInput: update Claude Code, or set [routing] enforce = \"off\"; `{}` counts them",
                text::command("report")
            ),
        );
    } else if latest.checked > 0 {
        let which = match latest.checked {
            1 => "the one checked rewrite".to_string(),
            n => format!("the last {n} checked rewrites"),
        };
        r.ok(format!("enforce {mode} ({}): {which} took effect", mode.describe()));
    } else if n >= 3 {
        r.warn(
            format!("enforce {mode}: none of the last {n} rewrites has a record of the model it ran on"),
            "the PostToolUse hook records it: update the plugin, then run /system1:setup",
        );
    } else if routing.log_dirs.is_empty() {
        r.ok(format!("enforce {mode} ({}); rewrites are checked only in [routing] log_dirs repos", mode.describe()));
    } else {
        r.ok(format!("enforce {mode} ({}); no rewrite checked yet", mode.describe()));
    }
}

/// Which of Claude Code's hooks routes spawns: the latest agent entry names it (docs/routing.md#two-ways-to-set-the-model).
fn check_spawn_hook(gateway: &Gateway, r: &mut Findings) {
    use routing::entry::Via;
    if !gateway.loaded.config.routing.enabled {
        return;
    }
    // An unreadable log is check_enforce's to report.
    let Ok(log) = routing::log::read_all() else { return };
    let latest = log.entries.iter().rev().find(|e| e.is_agent());
    let when =
        |e: &routing::entry::Entry| e.time.as_deref().map(|t| format!(", the latest at {t}")).unwrap_or_default();
    match latest {
        Some(e) if e.enforcement.via == Some(Via::AgentSpawn) => r.ok(format!(
            "spawns are routed by the plugin's module at agent.spawn{}; the PreToolUse hook steps aside",
            when(e)
        )),
        Some(e) => r.ok(format!(
            "spawns are routed by the PreToolUse hook{}; Claude Code 2.1.287 and later route them through the plugin's module at agent.spawn instead (update Claude Code; an organization that allows only its own mods keeps it off)",
            when(e)
        )),
        None => r.ok(
            "no spawn logged yet: Claude Code 2.1.287 and later route spawns through the plugin's module at agent.spawn, older versions through the PreToolUse hook",
        ),
    }
}

fn check_labels(r: &mut Findings) {
    let pending = checks::pending_labels();
    if pending >= checks::PENDING_LABELS_THRESHOLD {
        r.warn(
            format!("{pending} logged prompts and spawns wait for labels"),
            "label them and refit the calibration with /system1:calibrate",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_command_runs_the_installed_binary() {
        let c = register_command();
        assert!(c.starts_with("claude mcp add --scope user --transport stdio system1 -- "));
        assert!(c.ends_with(" mcp"));
    }
}
