//! The first config file. `install` writes `config.example.toml` (embedded in the binary) only
//! when the user has no config, and never touches an existing one.
//!
//! A new user often has no engine yet. When the example's engine (Laya at its default endpoint)
//! does not answer, the written config selects the mock engine set to abstain on every question:
//! the server then starts, connects and reports healthy, and Claude gets an honest "abstained"
//! instead of a made-up decision, until the user installs an engine and switches `provider`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config;
use crate::error::{Context, Error, Result};
use crate::fsutil::Staged;
use crate::paths;
use crate::providers;

pub const EXAMPLE: &str = include_str!("../../config.example.toml");

/// The engine the example config selects.
const EXAMPLE_ENGINE: &str = "laya";
/// Enough for an engine on this machine to answer its health route; an absent one refuses at once.
const PROBE_TIMEOUT: Duration = Duration::from_millis(800);

pub enum Outcome {
    /// A config existed and was left alone.
    Kept,
    /// The example was written; its engine answered.
    WrittenWithEngine,
    /// The example was written with the local engine, whose model is installed, because the
    /// example's engine did not answer (the reason).
    WrittenWithLocal(String),
    /// The example was written with the abstaining mock, because no engine answered (the reason).
    WrittenWithMock(String),
}

/// Writes the config when none exists.
pub fn write_if_missing() -> Result<Outcome> {
    let path = paths::config_file();
    if path.exists() {
        return Ok(Outcome::Kept);
    }
    paths::ensure_parent(&path).context(|| format!("cannot create the folder of {}", path.display()))?;
    // Staged beside the config, which appears only once it says what was chosen.
    // Private whatever the umask: another user who could edit it could point the engine elsewhere.
    let mut staged =
        Staged::create(&path, crate::fsutil::PRIVATE_MODE).context(|| format!("cannot write {}", path.display()))?;
    staged.set_mode(crate::fsutil::PRIVATE_MODE).context(|| format!("cannot write {}", staged.path().display()))?;
    staged.set_contents(EXAMPLE.as_bytes()).context(|| format!("cannot write {}", staged.path().display()))?;
    let outcome = match probe_example_engine(staged.path()) {
        Ok(()) => Outcome::WrittenWithEngine,
        Err(reason) if local_engine_answers(staged.path()) => {
            let why = "No engine server answered when system1 was installed, and the local engine's model was\n\
                       # installed, so it is the engine.";
            staged
                .set_contents(engine_config(EXAMPLE, "local", why)?.as_bytes())
                .context(|| format!("cannot write {}", staged.path().display()))?;
            Outcome::WrittenWithLocal(reason)
        }
        Err(reason) => {
            staged
                .set_contents(no_engine_config(EXAMPLE)?.as_bytes())
                .context(|| format!("cannot write {}", staged.path().display()))?;
            Outcome::WrittenWithMock(reason)
        }
    };
    staged.commit().context(|| format!("cannot write {}", path.display()))?;
    Ok(outcome)
}

/// Asks the example's engine for its health, with the settings the example file and the
/// environment give it.
fn probe_example_engine(config_path: &Path) -> Result<(), String> {
    let loaded = config::load_from(config_path.to_path_buf(), &config::process_env());
    let settings = loaded.provider_settings(EXAMPLE_ENGINE);
    let Some(engine) = providers::build(EXAMPLE_ENGINE, &settings) else {
        let why = settings.take_errors().join("; ");
        return Err(if why.is_empty() { format!("{EXAMPLE_ENGINE} is not available") } else { why });
    };
    let probe = engine.health(PROBE_TIMEOUT);
    match probe {
        providers::Probe::Up(_) => Ok(()),
        providers::Probe::Down(f) => Err(f.detail),
    }
}

/// Whether the local engine's model is installed and loads (its health probe maps the model).
fn local_engine_answers(config_path: &Path) -> bool {
    let loaded = config::load_from(config_path.to_path_buf(), &config::process_env());
    let settings = loaded.provider_settings("local");
    providers::build("local", &settings).is_some_and(|p| p.health(PROBE_TIMEOUT).ok())
}

/// The example with `engine` selected instead of the example's, and a comment saying why (`why`,
/// whose lines after the first start with `# `) on the line above it.
pub fn engine_config(example: &str, engine: &str, why: &str) -> Result<String> {
    let mut doc = example_document(example)?;
    select(&mut doc, engine, &format!("# {why}\n"))?;
    Ok(doc.to_string())
}

/// The example with the abstaining mock selected, and a comment saying why and how to switch.
pub fn no_engine_config(example: &str) -> Result<String> {
    let mut doc = example_document(example)?;
    select(
        &mut doc,
        "mock",
        "# No engine answered when system1 was installed, so the built-in mock stands in and\n\
         # abstains on every question ([providers.mock] fail = \"abstain\"): Claude never acts on a\n\
         # made-up answer. Install an engine (/system1:choose-model), set provider to it, and\n\
         # remove that fail line.\n",
    )?;
    let fail = doc
        .get_mut("providers")
        .and_then(|p| p.get_mut("mock"))
        .and_then(|m| m.get_mut("fail"))
        .and_then(toml_edit::Item::as_value_mut)
        .ok_or_else(|| Error::failure("config.example.toml lacks the [providers.mock] `fail` key install edits"))?;
    set_string(fail, "abstain");
    Ok(doc.to_string())
}

fn example_document(example: &str) -> Result<toml_edit::DocumentMut> {
    example.parse().map_err(|e| Error::failure(format!("config.example.toml does not parse: {e}")))
}

/// Sets `[gateway] provider` to `engine`, with `comment` (whole `# ` lines) added above it.
fn select(doc: &mut toml_edit::DocumentMut, engine: &str, comment: &str) -> Result<()> {
    let missing = || Error::failure("config.example.toml lacks the [gateway] `provider` key install edits");
    let gateway = doc.get_mut("gateway").and_then(toml_edit::Item::as_table_mut).ok_or_else(missing)?;
    let mut key = gateway.key_mut("provider").ok_or_else(missing)?;
    let decor = key.leaf_decor_mut();
    let above = decor.prefix().and_then(|p| p.as_str()).unwrap_or("").to_string();
    decor.set_prefix(format!("{above}{comment}"));
    let value = gateway.get_mut("provider").and_then(toml_edit::Item::as_value_mut).ok_or_else(missing)?;
    set_string(value, engine);
    Ok(())
}

/// Replaces a value with a string, keeping the spaces around it and its trailing comment.
fn set_string(value: &mut toml_edit::Value, to: &str) {
    let decor = value.decor().clone();
    *value = toml_edit::Value::from(to);
    *value.decor_mut() = decor;
}

/// What [`use_engine`] did to the config.
pub enum UseEngine {
    /// The config was the abstaining placeholder `install` writes, untouched: it now selects the engine.
    Selected(PathBuf),
    /// The config selects the engine already.
    AlreadyUsed(PathBuf),
    /// The config is the user's own (it selects this provider): left alone.
    Left { path: PathBuf, provider: String },
    /// There is no config yet.
    NoConfig(PathBuf),
}

/// Makes the config select `engine` when it is the abstaining placeholder `install` wrote and the
/// user has not changed it (byte for byte); any other config is left as it is.
pub fn use_engine(engine: &str) -> Result<UseEngine> {
    let path = paths::config_file();
    let text = match crate::fsutil::read_small_file(&path, config::MAX_CONFIG_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(UseEngine::NoConfig(path)),
        Err(e) => return Err(e).context(|| format!("cannot read {}", path.display())),
    };
    if text == no_engine_config(EXAMPLE)? {
        let why = format!(
            "The mock stood in here (no engine answered when system1 was installed) until\n\
             # `system1 engine install {engine}` installed the {engine} engine and selected it."
        );
        // Through the file a link names, keeping its mode: install made it 0600, and a rewrite must
        // not widen it (a staged file takes the umask's mode, 0644 or 0666 under umask 000).
        crate::fsutil::write_through(&path, engine_config(EXAMPLE, engine, &why)?.as_bytes())
            .context(|| format!("cannot write {}", path.display()))?;
        return Ok(UseEngine::Selected(path));
    }
    let provider = config::load_from(path.clone(), &[]).config.gateway.provider;
    Ok(if provider == engine { UseEngine::AlreadyUsed(path) } else { UseEngine::Left { path, provider } })
}

/// What [`chain_decision_server`] did to the config.
#[derive(Debug)]
pub struct Chained {
    pub path: PathBuf,
    /// The provider table it wrote.
    pub provider: String,
    /// Its settings, as written (for people).
    pub settings: String,
    /// The new chain, when it changed.
    pub chain: Option<Vec<String>>,
    /// Whether the local engine was set to pass its untaught choices on (`choices = "taught"`).
    pub taught_only: bool,
}

/// Writes `[providers.<provider>]` for a System One server at `endpoint` serving `model` (with the
/// latency measured at install, when there is one), and puts it in the chain right behind the
/// local engine: the local engine answers what it was taught in-process, and passes the rest (free
/// yes/no questions, untaught choices) on to it. Where the local engine is not in the chain it goes
/// last. The abstaining placeholder `install` writes becomes the local engine's chain where the
/// local model is installed, else the server's alone. Everything else in the file is kept.
pub fn chain_decision_server(provider: &str, endpoint: &str, model: &str, latency_ms: Option<u64>) -> Result<Chained> {
    let path = paths::config_file();
    let text = match crate::fsutil::read_small_file(&path, config::MAX_CONFIG_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            write_if_missing()?;
            crate::fsutil::read_small_file(&path, config::MAX_CONFIG_BYTES)
                .context(|| format!("cannot read {}", path.display()))?
        }
        Err(e) => return Err(e).context(|| format!("cannot read {}", path.display())),
    };
    let placeholder = text == no_engine_config(EXAMPLE)?;
    let mut doc: toml_edit::DocumentMut =
        text.parse().map_err(|e| Error::config(format!("{} does not parse: {e}", path.display())))?;
    if placeholder {
        let first = if local_installed() { "local" } else { provider };
        let why = "The mock stood in here (no engine answered when system1 was installed) until\n\
                   # `system1 engine install decider` set up a decision server.";
        select(&mut doc, first, &format!("# {why}\n"))?;
    }
    let mut table = toml_edit::Table::new();
    let date = chrono::Utc::now().format("%Y-%m-%d");
    let origin = if provider == "systemone" { "found answering" } else { "installed" };
    table.decor_mut().set_prefix(format!(
        "\n# A decision server on this machine, {origin} by `system1 engine install decider` on {date}.\n"
    ));
    if provider != "systemone" {
        table["kind"] = toml_edit::value("systemone");
    }
    table["endpoint"] = toml_edit::value(endpoint);
    table["model"] = toml_edit::value(model);
    let mut shown = format!("endpoint = {endpoint:?}, model = {model:?}");
    if let Some(ms) = latency_ms {
        table["latency_ms"] = toml_edit::value(ms as i64);
        if let Some(mut key) = table.key_mut("latency_ms") {
            key.leaf_decor_mut().set_prefix(
                "# A routing-sized decision's median time, measured at install: a hook with less of its budget\n\
                 # left passes this engine over.\n",
            );
        }
        shown.push_str(&format!(", latency_ms = {ms}"));
    }
    let providers = doc
        .entry("providers")
        .or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        })
        .as_table_mut()
        .ok_or_else(|| Error::config(format!("{}: `providers` is not a table", path.display())))?;
    match providers.get_mut(provider).and_then(toml_edit::Item::as_table_mut) {
        // The user's own table keeps its other keys and comments.
        Some(existing) => {
            for (k, v) in table.iter() {
                existing[k] = v.clone();
            }
        }
        None => {
            providers.insert(provider, toml_edit::Item::Table(table));
        }
    }
    let chain = put_behind_local(&mut doc, provider)?;
    let taught_only =
        chain.as_ref().is_some_and(|c| c.iter().position(|p| p == "local") < c.iter().position(|p| p == provider))
            && pass_untaught_choices(&mut doc);
    crate::fsutil::write_through(&path, doc.to_string().as_bytes())
        .context(|| format!("cannot write {}", path.display()))?;
    Ok(Chained { path, provider: provider.to_string(), settings: shown, chain, taught_only })
}

/// `[providers.local] choices = "taught"`: the local engine keeps the choices it was taught and
/// passes the others on to the decision server behind it, instead of guessing at them by
/// similarity. Whether it changed (a value the user set is kept).
fn pass_untaught_choices(doc: &mut toml_edit::DocumentMut) -> bool {
    let Some(local) = doc.get_mut("providers").and_then(|p| p.get_mut("local")).and_then(toml_edit::Item::as_table_mut)
    else {
        let Some(providers) = doc.get_mut("providers").and_then(toml_edit::Item::as_table_mut) else { return false };
        let mut local = toml_edit::Table::new();
        local["choices"] = toml_edit::value("taught");
        providers.insert("local", toml_edit::Item::Table(local));
        return true;
    };
    match local.get_mut("choices").and_then(toml_edit::Item::as_value_mut) {
        Some(v) if v.as_str() == Some("any") => {
            set_string(v, "taught");
            true
        }
        Some(_) => false,
        None => {
            local["choices"] = toml_edit::value("taught");
            true
        }
    }
}

impl Chained {
    /// For people: what changed in the config.
    pub fn lines(&self) -> Vec<String> {
        let shown = self.path.display();
        let mut lines = vec![format!("{shown}: [providers.{}] {}", self.provider, self.settings)];
        lines.push(match &self.chain {
            Some(chain) => format!("{shown}: the chain is now {}", chain.join(" → ")),
            None => format!("{shown}: the chain has {} already", self.provider),
        });
        if self.taught_only {
            lines.push(format!(
                "{shown}: [providers.local] choices = \"taught\": the local engine answers the choices it was taught \
                 and passes the others on to {}",
                self.provider
            ));
        }
        lines
    }
}

/// Whether the local engine's default model is installed (then it heads a new chain).
fn local_installed() -> bool {
    let dir = providers::local::default_dir(providers::local::DEFAULT_MODEL);
    dir.is_dir()
        && providers::local::download::pinned(providers::local::DEFAULT_MODEL)
            .is_ok_and(|m| providers::local::download::verify(m, &dir).is_empty())
}

/// Puts `provider` in `[gateway] fallback` right after `local` (the first entry when `local` is
/// the primary), or last; the new chain, or `None` when it was in the chain already.
fn put_behind_local(doc: &mut toml_edit::DocumentMut, provider: &str) -> Result<Option<Vec<String>>> {
    let gateway = doc
        .entry("gateway")
        .or_insert_with(toml_edit::table)
        .as_table_mut()
        .ok_or_else(|| Error::config("`gateway` is not a table"))?;
    let primary = gateway.get("provider").and_then(|v| v.as_str()).unwrap_or(config::DEFAULT_PROVIDER).to_string();
    let fallback = gateway
        .entry("fallback")
        .or_insert_with(|| toml_edit::value(toml_edit::Array::new()))
        .as_array_mut()
        .ok_or_else(|| Error::config("[gateway] fallback is not a list"))?;
    let listed: Vec<String> = fallback.iter().filter_map(|v| v.as_str().map(str::to_string)).collect();
    if primary == provider || listed.iter().any(|p| p == provider) {
        return Ok(None);
    }
    let at =
        if primary == "local" { 0 } else { listed.iter().position(|p| p == "local").map_or(listed.len(), |i| i + 1) };
    fallback.insert(at, provider);
    let mut chain = vec![primary];
    chain.extend(fallback.iter().filter_map(|v| v.as_str().map(str::to_string)));
    Ok(Some(chain))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_config_selects_the_local_engine_and_keeps_the_rest() {
        let doc: toml::Table = toml::from_str(&engine_config(EXAMPLE, "local", "why\n# more").unwrap()).unwrap();
        assert_eq!(doc["gateway"]["provider"].as_str(), Some("local"));
        assert_eq!(doc["providers"]["local"]["model"].as_str(), Some("all-MiniLM-L6-v2"));
        assert_eq!(doc["providers"]["mock"]["fail"].as_str(), Some(""));
    }

    #[test]
    fn no_engine_config_selects_an_abstaining_mock_and_keeps_the_rest() {
        let text = no_engine_config(EXAMPLE).unwrap();
        let doc: toml::Table = text.parse().unwrap();
        assert_eq!(doc["gateway"]["provider"].as_str(), Some("mock"));
        assert_eq!(doc["providers"]["mock"]["fail"].as_str(), Some("abstain"));
        let example: toml::Table = EXAMPLE.parse().unwrap();
        assert_eq!(doc["routing"], example["routing"]);
        assert_eq!(example["gateway"]["provider"].as_str(), Some(EXAMPLE_ENGINE));
        assert!(text.contains("/system1:choose-model"));
    }

    #[test]
    fn no_engine_config_refuses_an_example_it_cannot_edit() {
        assert!(no_engine_config("[gateway]\n").is_err());
        assert!(no_engine_config("[gateway]\nprovider = \"laya\"\n").is_err(), "no mock fail key");
        assert!(engine_config("[gateway\n", "local", "why").is_err());
    }

    #[test]
    fn only_the_provider_value_and_the_comment_above_it_change() {
        let text = engine_config(EXAMPLE, "local", "why\n# more").unwrap();
        let old = EXAMPLE.lines().find(|l| l.starts_with("provider = ")).unwrap();
        let new = old.replacen("\"laya\"", "\"local\"", 1);
        // The value keeps its spacing and trailing comment, and the why comes right above it.
        assert_eq!(text, EXAMPLE.replacen(old, &format!("# why\n# more\n{new}"), 1));
        let text = no_engine_config(EXAMPLE).unwrap();
        let fail = EXAMPLE.lines().find(|l| l.starts_with("fail = \"\"")).unwrap();
        assert!(text.contains(&fail.replacen("fail = \"\"", "fail = \"abstain\"", 1)), "{text}");
        assert_eq!(text.lines().count(), EXAMPLE.lines().count() + 4, "four comment lines added, none lost");
    }
}
