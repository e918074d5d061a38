//! The resolved configuration: defaults, then the config file, then `SYSTEM1_*` environment
//! variables, each layer overriding the one before (for users: docs/configuration.md).
//!
//! Loading never fails: a broken file or value becomes a message in `Loaded::errors`, and the
//! affected keys keep their defaults. The MCP server then still starts, answering health with
//! `down` and decisions with `config_error`; hooks stay silent.

pub mod secret;
pub mod settings;

use std::collections::BTreeMap;
use std::path::PathBuf;

use toml::{Table, Value};

pub use settings::{Resolved, Settings, Source};

use crate::feature::Feature;
use crate::paths;
use crate::tier::Tier;

/// Writes [`ProviderKind`] from one table: each variant beside its name, once.
macro_rules! provider_kinds {
    ($($kind:ident = $name:literal),+ $(,)?) => {
        /// An engine this build has: what a config may name in `provider`, `fallback` and
        /// `[providers.<name>]`. The config is checked against these without building any provider
        /// (it sits below `providers`); `providers::build` matches every variant, so a provider
        /// named here without an adapter there does not compile.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ProviderKind {
            $($kind),+
        }

        impl ProviderKind {
            /// Every provider, in the order they are documented.
            pub const ALL: &'static [ProviderKind] = &[$(ProviderKind::$kind),+];
            /// Their names, in the same order.
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            pub const fn name(self) -> &'static str {
                match self {
                    $(ProviderKind::$kind => $name),+
                }
            }
        }
    };
}

// The one table of provider names. Adding an engine: one line here, its adapter in providers/.
provider_kinds! {
    Laya = "laya",
    Von = "von",
    SystemOne = "systemone",
    Decisions = "decisions",
    Gemini = "gemini",
    OpenRouter = "openrouter",
    Ollama = "ollama",
    Local = "local",
    Mock = "mock",
}

impl ProviderKind {
    pub fn named(name: &str) -> Option<ProviderKind> {
        ProviderKind::ALL.iter().copied().find(|k| k.name() == name)
    }
}

/// The kinds a named instance may be (`[providers.<name>] kind = "systemone"`): engines of one
/// wire protocol, several of which may sit in one chain (a server on this machine and a hosted one).
pub const INSTANCE_KINDS: &[ProviderKind] = &[ProviderKind::SystemOne, ProviderKind::Decisions];

/// Names an instance may not take: they are config sections of their own, or start the
/// environment variables of one (`SYSTEM1_ROUTING_*`).
const RESERVED_NAMES: &[&str] = &["gateway", "routing", "skills", "serve", "providers"];

/// Whether `name` may name an instance: lower-case ASCII letters, digits and `_`, starting with a
/// letter, so that `SYSTEM1_<NAME>_<KEY>` reaches it.
fn valid_instance_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !RESERVED_NAMES.contains(&name)
}

/// The primary engine when the config names none.
pub const DEFAULT_PROVIDER: &str = "laya";

#[derive(Debug, Clone)]
pub struct GatewayConfig {
    pub provider: String,
    pub fallback: Vec<String>,
    pub timeout_s: f64,
    pub min_confidence: f64,
    pub log_level: String,
    pub log_file: String,
    /// Narrow a choice with more options than a provider takes in elimination rounds (false: refuse it).
    pub tournament: bool,
    /// Ask the question again with the options in other orders.
    pub stability: StabilityMode,
    /// Abstain when fewer of the reordered answers agree (read only when `stability` is on).
    pub min_stability: f64,
}

/// `[gateway] stability`: which reorderings of the options are asked beside the original.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StabilityMode {
    Off,
    /// The options reversed.
    Fast,
    /// Reversed, and shuffled with a seed taken from the question.
    Full,
}

impl StabilityMode {
    pub fn name(self) -> &'static str {
        match self {
            StabilityMode::Off => "off",
            StabilityMode::Fast => "fast",
            StabilityMode::Full => "full",
        }
    }
}

/// One routing rule: when every named feature has the given answer, use `tier`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub when: BTreeMap<Feature, bool>,
    pub tier: Tier,
}

#[derive(Debug, Clone)]
pub struct RoutingConfig {
    pub enabled: bool,
    pub hint: bool,
    pub log_dirs: Vec<String>,
    pub min_confidence: f64,
    pub default_tier: Tier,
    pub rules: Vec<Rule>,
    /// Engine time per prompt, shared by routing and the skill picker.
    pub budget_ms: u64,
    /// What the agent hook does with the spawn's `model`.
    pub enforce: Enforce,
    /// Whether the local engine's direct tier head goes first, deciding the tier where it is at
    /// least `tier_head_min_confidence` sure, before the rules (docs/routing.md#the-tier-head).
    pub tier_head: bool,
    pub tier_head_min_confidence: f64,
}

/// `[routing] enforce`: whether the agent hook sets the subagent's `model` to the rule's tier for
/// its brief, and which calls it may change. Each mode does what the one before it does, and more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Enforce {
    /// Record only: the call passes as Claude made it.
    #[default]
    Off,
    /// A call that names no model gets the rule's tier.
    Fill,
    /// As fill, and a model below the rule's tier is raised to it.
    Raise,
    /// As raise, and a model above the rule's tier is lowered to it: the savings case, and the risky one.
    Set,
}

impl Enforce {
    pub const ALL: [Enforce; 4] = [Enforce::Off, Enforce::Fill, Enforce::Raise, Enforce::Set];

    pub fn name(self) -> &'static str {
        match self {
            Enforce::Off => "off",
            Enforce::Fill => "fill",
            Enforce::Raise => "raise",
            Enforce::Set => "set",
        }
    }

    /// What the mode does, in a few words, for `toggle status`, `doctor` and `route`.
    pub fn describe(self) -> &'static str {
        match self {
            Enforce::Off => "record only: spawns run on the model Claude gives them",
            Enforce::Fill => "a spawn that names no model gets the rule's tier",
            Enforce::Raise => "a spawn that names no model, or one below the rule's tier, gets the rule's tier",
            Enforce::Set => "every spawn gets the rule's tier, lowered as well as raised",
        }
    }
}

impl std::fmt::Display for Enforce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Enforce {
    type Err = String;

    fn from_str(s: &str) -> Result<Enforce, String> {
        let names: Vec<&str> = Enforce::ALL.iter().map(|m| m.name()).collect();
        Enforce::ALL
            .into_iter()
            .find(|m| m.name() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| format!("must be one of {}, got {s:?}", names.join(", ")))
    }
}

impl serde::Serialize for Enforce {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Enforce {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Enforce, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Clone)]
pub struct SkillsConfig {
    pub enabled: bool,
    pub hint: bool,
    pub min_confidence: f64,
}

/// A `[providers.<name>]` table with the sources of its keys; the adapter reads it.
#[derive(Debug, Clone, Default)]
pub struct ProviderSection {
    pub table: Table,
    pub sources: BTreeMap<String, Source>,
}

impl ProviderSection {
    pub fn settings(&self, name: &str) -> Settings {
        Settings::new(&format!("providers.{name}"), self.table.clone(), self.sources.clone())
    }
}

/// `[serve]`: what `system1 serve` binds to and who may call it.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub host: String,
    pub port: u16,
    /// A file holding the key clients must send; empty: no key.
    pub api_key_file: String,
    pub workers: usize,
    pub queue: usize,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub gateway: GatewayConfig,
    pub providers: BTreeMap<String, ProviderSection>,
    /// Named instances (`[providers.<name>]` with a `kind`), by name, with their kind.
    pub instances: BTreeMap<String, ProviderKind>,
    pub routing: RoutingConfig,
    pub skills: SkillsConfig,
    pub serve: ServeConfig,
}

/// The outcome of loading: the config (defaults where broken), what went wrong, where from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    pub errors: Vec<String>,
    /// The config file path consulted.
    pub path: PathBuf,
    /// Whether that file existed and was read.
    pub file_read: bool,
    /// Every key that was resolved, with its value and source, for `config show`.
    pub resolved: Vec<Resolved>,
}

impl Loaded {
    #[cfg(test)]
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// The provider chain: primary first, then the fallbacks.
    pub fn chain(&self) -> Vec<String> {
        let mut chain = vec![self.config.gateway.provider.clone()];
        chain.extend(self.config.gateway.fallback.iter().cloned());
        chain
    }

    /// Every provider the config names that this build has: the chain first, then any other
    /// `[providers.<name>]` table (an unused table's settings are read and checked too).
    /// Each is named once, however often the chain lists it.
    pub fn configured_providers(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for n in self.chain().into_iter().chain(self.config.providers.keys().cloned()) {
            if self.kind_of(&n).is_some() && !names.contains(&n) {
                names.push(n);
            }
        }
        names
    }

    /// The registered provider that `name` is: itself for a built-in name, its `kind` for a named
    /// instance; `None` for a name this build does not know.
    pub fn kind_of(&self, name: &str) -> Option<ProviderKind> {
        ProviderKind::named(name).or_else(|| self.config.instances.get(name).copied())
    }

    /// The settings section of one provider (empty if the config has none).
    pub fn provider_settings(&self, name: &str) -> Settings {
        match self.config.providers.get(name) {
            Some(section) => section.settings(name),
            None => ProviderSection::default().settings(name),
        }
    }
}

/// Loads the config from `paths::config_file()` and the process environment.
pub fn load() -> Loaded {
    load_from(paths::config_file(), &process_env())
}

/// The process environment as `load_from` takes it: the `SYSTEM1_*` variables, the only ones it
/// reads (others, and those that are not Unicode, are left out uncopied: a hook's environment is
/// Claude Code's, with many variables, and it is read on every prompt).
pub fn process_env() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter(|(k, _)| k.as_encoded_bytes().starts_with(b"SYSTEM1_"))
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// A bigger config file is refused unread: it is loaded on every prompt, and the example with every
/// key is under 10 KiB.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Loads from an explicit path and environment (tests call this directly). The file is read only
/// when it is a regular file of at most [`MAX_CONFIG_BYTES`] (links followed): a FIFO or a device
/// in its place is an error, found without waiting on it.
pub fn load_from(path: PathBuf, env: &[(String, String)]) -> Loaded {
    let mut errors = Vec::new();
    let (file_table, file_read) = match crate::fsutil::read_small_file(&path, MAX_CONFIG_BYTES) {
        Ok(text) => match text.parse::<Table>() {
            Ok(t) => (t, true),
            Err(e) => {
                let first = e.to_string().lines().next().unwrap_or("").to_string();
                errors.push(format!("{} is not valid TOML: {} {}", path.display(), first, e.message()));
                (Table::new(), true)
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Table::new(), false),
        Err(e) => {
            errors.push(format!("cannot read {}: {e}", path.display()));
            (Table::new(), false)
        }
    };

    let mut sections: BTreeMap<String, (Table, BTreeMap<String, Source>)> = BTreeMap::new();
    let mut providers: BTreeMap<String, ProviderSection> = BTreeMap::new();
    for (key, value) in file_table {
        match (key.as_str(), value) {
            ("gateway" | "routing" | "skills" | "serve", Value::Table(t)) => {
                sections.insert(key, (t, BTreeMap::new()));
            }
            ("providers", Value::Table(t)) => {
                for (name, v) in t {
                    match v {
                        Value::Table(pt) => {
                            if pt.contains_key("api_key") {
                                errors.push(format!(
                                    "providers.{name}.api_key is set in the config file; a key never goes in it: set SYSTEM1_{}_API_KEY, or name a file only you can read in api_key_file",
                                    name.to_ascii_uppercase()
                                ));
                            }
                            let pt: Table = pt.into_iter().filter(|(k, _)| k != "api_key").collect();
                            providers.insert(name, ProviderSection { table: pt, sources: BTreeMap::new() });
                        }
                        _ => errors.push(format!("providers.{name} must be a table")),
                    }
                }
            }
            ("gateway" | "routing" | "skills" | "serve" | "providers", _) => {
                errors.push(format!("[{key}] must be a table"))
            }
            _ => errors.push(format!("unknown key {key}")),
        }
    }
    let mut instances: BTreeMap<String, ProviderKind> = BTreeMap::new();
    for (name, section) in &providers {
        if ProviderKind::NAMES.contains(&name.as_str()) {
            continue;
        }
        let kind = section.table.get("kind").and_then(Value::as_str).map(str::trim);
        match kind.and_then(|k| INSTANCE_KINDS.iter().find(|i| i.name() == k)) {
            Some(kind) if valid_instance_name(name) => {
                instances.insert(name.clone(), *kind);
            }
            Some(_) => errors.push(format!(
                "[providers.{name}]: an instance's name must be lower-case letters, digits and _, starting with a letter, and not {}",
                RESERVED_NAMES.join(", ")
            )),
            None if kind.is_some() => errors.push(format!(
                "[providers.{name}] kind = {:?}: only these kinds may be named instances: {}",
                kind.unwrap_or_default(),
                INSTANCE_KINDS.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
            )),
            None => errors.push(format!(
                "unknown provider [providers.{name}]; known: {} (or add kind = \"systemone\" to name a System One server)",
                ProviderKind::NAMES.join(", ")
            )),
        }
    }

    apply_env(env, &mut sections, &mut providers, &instances);
    for (name, section) in &mut providers {
        if let Err(e) = read_api_key_file(name, section) {
            errors.push(e);
        }
        if let Err(e) = check_api_key(name, section) {
            errors.push(e);
        }
    }

    let section = |name: &str| -> Settings {
        let (t, s) = sections.get(name).cloned().unwrap_or_default();
        Settings::new(name, t, s)
    };
    let mut resolved = Vec::new();

    let g = section("gateway");
    let gateway = read_gateway(&g, &instances);
    g.finish();
    errors.extend(g.take_errors());
    resolved.extend(g.resolved.borrow().iter().cloned());

    let r = section("routing");
    let routing = read_routing(&r);
    r.finish();
    errors.extend(r.take_errors());
    resolved.extend(r.resolved.borrow().iter().cloned());

    let s = section("skills");
    let skills = read_skills(&s);
    s.finish();
    errors.extend(s.take_errors());
    resolved.extend(s.resolved.borrow().iter().cloned());

    let v = section("serve");
    let serve = read_serve(&v);
    v.finish();
    errors.extend(v.take_errors());
    resolved.extend(v.resolved.borrow().iter().cloned());

    Loaded {
        config: Config { gateway, providers, instances, routing, skills, serve },
        errors,
        path,
        file_read,
        resolved,
    }
}

/// Environment overrides: `SYSTEM1_<KEY>` for `[gateway]`, `SYSTEM1_ROUTING_<KEY>`,
/// `SYSTEM1_SKILLS_<KEY>`, and `SYSTEM1_<PROVIDER>_<KEY>` for `[providers.<provider>]`, where a
/// provider is a built-in name or an instance the file names (the longest name that fits wins, so
/// `SYSTEM1_SYSTEMONE_GPU_ENDPOINT` goes to an instance `systemone_gpu`).
fn apply_env(
    env: &[(String, String)],
    sections: &mut BTreeMap<String, (Table, BTreeMap<String, Source>)>,
    providers: &mut BTreeMap<String, ProviderSection>,
    instances: &BTreeMap<String, ProviderKind>,
) {
    const GATEWAY_KEYS: [&str; 9] = [
        "provider",
        "fallback",
        "timeout_s",
        "min_confidence",
        "log_level",
        "log_file",
        "tournament",
        "stability",
        "min_stability",
    ];
    for (var, value) in env {
        let Some(rest) = var.strip_prefix("SYSTEM1_") else { continue };
        let lower = rest.to_ascii_lowercase();
        let source = Source::Env(var.clone());
        let val = Value::String(value.clone());
        if GATEWAY_KEYS.contains(&lower.as_str()) {
            let (t, s) = sections.entry("gateway".into()).or_default();
            t.insert(lower.clone(), val);
            s.insert(lower, source);
            continue;
        }
        for section in ["routing", "skills", "serve"] {
            if let Some(key) = lower.strip_prefix(section).and_then(|k| k.strip_prefix('_')) {
                let (t, s) = sections.entry(section.into()).or_default();
                t.insert(key.to_string(), val.clone());
                s.insert(key.to_string(), source.clone());
            }
        }
        let names = ProviderKind::NAMES.iter().copied().chain(instances.keys().map(String::as_str));
        let owner = names
            .filter_map(|name| {
                let key = lower.strip_prefix(name)?.strip_prefix('_')?;
                (!key.is_empty()).then_some((name, key))
            })
            .max_by_key(|(name, _)| name.len());
        if let Some((name, key)) = owner {
            let p = providers.entry(name.to_string()).or_default();
            p.table.insert(key.to_string(), val.clone());
            p.sources.insert(key.to_string(), source.clone());
        }
    }
}

/// Refuses an API key that no HTTP header can carry: a control character (a pasted newline, an
/// escape) or a non-ASCII one (a curly quote) would fail every request later with a header error
/// that names neither the key nor where it came from. The key itself is never shown.
fn check_api_key(name: &str, section: &mut ProviderSection) -> Result<(), String> {
    let Some(Value::String(key)) = section.table.get("api_key") else { return Ok(()) };
    let Some(what) = secret::unsendable(key) else { return Ok(()) };
    let origin = match section.sources.get("api_key") {
        Some(Source::KeyFile(p)) => format!(" (from {p})"),
        _ => format!(" (from SYSTEM1_{}_API_KEY)", name.to_ascii_uppercase()),
    };
    section.table.remove("api_key");
    Err(format!(
        "providers.{name}.api_key{origin} has {what}: an API key is printable ASCII, which an HTTP header can carry; \
         copy the key again"
    ))
}

/// `api_key_file` (from the file or `SYSTEM1_<ENGINE>_API_KEY_FILE`) becomes the `api_key` setting
/// the adapter reads, unless the environment already gave a key, which wins as the environment
/// always does. The path is absolute or starts with `~`; the file is checked in [`secret`].
fn read_api_key_file(name: &str, section: &mut ProviderSection) -> Result<(), String> {
    let Some(value) = section.table.remove("api_key_file") else { return Ok(()) };
    let origin = match section.sources.remove("api_key_file") {
        Some(Source::Env(var)) => format!(" (from {var})"),
        _ => String::new(),
    };
    let key = format!("providers.{name}.api_key_file{origin}");
    let Value::String(raw) = value else { return Err(format!("{key} must be a path, got {value}")) };
    if section.table.contains_key("api_key") {
        return Ok(());
    }
    let path = paths::expand_tilde(raw.trim());
    if !path.is_absolute() {
        return Err(format!("{key} must be an absolute path (or start with ~), got {raw:?}"));
    }
    let api_key = secret::read_key_file(&path).map_err(|e| format!("{key}: {e}"))?;
    section.table.insert("api_key".into(), Value::String(api_key));
    section.sources.insert("api_key".into(), Source::KeyFile(path.display().to_string()));
    Ok(())
}

fn read_gateway(s: &Settings, instances: &BTreeMap<String, ProviderKind>) -> GatewayConfig {
    let known = |name: &str| ProviderKind::named(name).is_some() || instances.contains_key(name);
    let provider = s.string("provider", DEFAULT_PROVIDER);
    if !known(&provider) {
        s.error(format!(
            "gateway.provider{}: unknown provider {provider:?}; known: {}",
            s.origin("provider"),
            ProviderKind::NAMES.join(", ")
        ));
        s.mark_invalid("provider", &format!("an unknown provider; known: {}", ProviderKind::NAMES.join(", ")));
    }
    let fallback = s.list("fallback");
    for (i, name) in fallback.iter().enumerate() {
        if !known(name) {
            s.error(format!(
                "gateway.fallback{}: unknown provider {name:?}; known: {}",
                s.origin("fallback"),
                ProviderKind::NAMES.join(", ")
            ));
            s.mark_invalid("fallback", &format!("{name:?} is an unknown provider"));
        } else if *name == provider || fallback[..i].contains(name) {
            s.error(format!("gateway.fallback{}: {name:?} appears twice in the provider chain", s.origin("fallback")));
            s.mark_invalid("fallback", &format!("{name:?} appears twice in the provider chain"));
        }
    }
    let timeout_s = s.f64("timeout_s", 5.0, 0.001, 600.0);
    let min_confidence = s.f64("min_confidence", 0.6, 0.0, 1.0);
    let log_level = s.string("log_level", "INFO").to_ascii_uppercase();
    if !["DEBUG", "INFO", "WARNING", "WARN", "ERROR"].contains(&log_level.as_str()) {
        s.error(format!("gateway.log_level must be DEBUG, INFO, WARNING or ERROR, got {log_level:?}"));
        s.mark_invalid("log_level", "must be DEBUG, INFO, WARNING or ERROR; INFO applies");
    }
    let mut log_file = s.string("log_file", "");
    if !log_file.trim().is_empty()
        && let Err(e) = crate::paths::log_file(&log_file)
    {
        s.error(format!("gateway.log_file{} {e}", s.origin("log_file")));
        log_file.clear();
    }
    let tournament = s.bool("tournament", true);
    let stability = match s.string("stability", "off").trim().to_ascii_lowercase().as_str() {
        "off" => StabilityMode::Off,
        "fast" => StabilityMode::Fast,
        "full" => StabilityMode::Full,
        other => {
            s.error(format!("gateway.stability{} must be off, fast or full, got {other:?}", s.origin("stability")));
            StabilityMode::Off
        }
    };
    let min_stability = s.f64("min_stability", 1.0, 0.0, 1.0);
    GatewayConfig {
        provider,
        fallback,
        timeout_s,
        min_confidence,
        log_level,
        log_file,
        tournament,
        stability,
        min_stability,
    }
}

fn read_serve(s: &Settings) -> ServeConfig {
    ServeConfig {
        host: s.string("host", "127.0.0.1").trim().to_string(),
        port: s.u64("port", 8741, 0, 65535) as u16,
        api_key_file: s.string("api_key_file", "").trim().to_string(),
        workers: s.u64("workers", 8, 1, 256) as usize,
        queue: s.u64("queue", 64, 1, 4096) as usize,
    }
}

/// `[routing] default_tier` when the config does not set it: the tier when no rule matches.
pub const DEFAULT_TIER: Tier = Tier::Sonnet;

/// The default routing rule: design or review needs opus; read-only and fully specified work
/// goes to haiku; everything else to sonnet.
pub fn default_rules() -> Vec<Rule> {
    let rule = |when: &[(Feature, bool)], tier: Tier| Rule { when: when.iter().copied().collect(), tier };
    vec![
        rule(&[(Feature::Design, true)], Tier::Opus),
        rule(&[(Feature::Review, true)], Tier::Opus),
        rule(&[(Feature::ReadOnly, true), (Feature::Specified, true)], Tier::Haiku),
    ]
}

fn read_routing(s: &Settings) -> RoutingConfig {
    let enabled = s.bool("enabled", false);
    let hint = s.bool("hint", false);
    let log_dirs = s.list("log_dirs");
    let min_confidence = s.f64("min_confidence", 0.6, 0.0, 1.0);
    let default_tier = s.string("default_tier", DEFAULT_TIER.name()).parse().unwrap_or_else(|e| {
        s.error(format!("routing.default_tier: {e}"));
        s.mark_invalid("default_tier", &format!("{e}; the default {:?} applies", DEFAULT_TIER.name()));
        DEFAULT_TIER
    });
    let rules = match s.value("rules") {
        None => {
            s.default_shown("rules", &rules_value(&default_rules()));
            default_rules()
        }
        Some(v) => match parse_rules(&v) {
            Ok(rules) => {
                // The config install writes spells the default rules out: `config show` says so.
                if rules == default_rules() {
                    s.mark_default("rules");
                }
                rules
            }
            Err(e) => {
                s.error(format!("routing.rules: {e}"));
                s.mark_invalid("rules", &format!("{e}; the default rules apply"));
                default_rules()
            }
        },
    };
    let budget_ms = s.u64("budget_ms", 1500, 1, 60_000);
    let enforce = s.string("enforce", Enforce::Off.name()).parse().unwrap_or_else(|e| {
        s.error(format!("routing.enforce{} {e}", s.origin("enforce")));
        s.mark_invalid("enforce", &format!("{e}; \"off\" applies"));
        Enforce::Off
    });
    let tier_head = s.bool("tier_head", false);
    let tier_head_min_confidence = s.f64("tier_head_min_confidence", 0.6, 0.0, 1.0);
    RoutingConfig {
        enabled,
        hint,
        log_dirs,
        min_confidence,
        default_tier,
        rules,
        budget_ms,
        enforce,
        tier_head,
        tier_head_min_confidence,
    }
}

/// The TOML form of a rule list, as the config file writes it.
fn rules_value(rules: &[Rule]) -> Value {
    Value::Array(
        rules
            .iter()
            .map(|r| {
                let when: Table = r.when.iter().map(|(k, v)| (k.name().to_string(), Value::Boolean(*v))).collect();
                let mut t = Table::new();
                t.insert("when".into(), Value::Table(when));
                t.insert("tier".into(), Value::String(r.tier.name().to_string()));
                Value::Table(t)
            })
            .collect(),
    )
}

/// Parses `rules = [{ when = { design = true }, tier = "opus" }, ...]`, naming what is wrong.
pub fn parse_rules(v: &Value) -> Result<Vec<Rule>, String> {
    let Value::Array(items) = v else { return Err("must be a list of { when = {...}, tier = \"...\" }".into()) };
    let mut rules = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let n = i + 1;
        let Value::Table(t) = item else { return Err(format!("rule {n} must be a table")) };
        for k in t.keys() {
            if k != "when" && k != "tier" {
                return Err(format!("rule {n}: unknown key {k:?} (use `when` and `tier`)"));
            }
        }
        let tier = match t.get("tier") {
            Some(Value::String(s)) => s.parse::<Tier>().map_err(|e| format!("rule {n}: {e}"))?,
            _ => return Err(format!("rule {n}: `tier` must be one of {}", Tier::names())),
        };
        let mut when = BTreeMap::new();
        match t.get("when") {
            Some(Value::Table(w)) => {
                for (name, answer) in w {
                    let feature = name.parse::<Feature>().map_err(|e| format!("rule {n}: {e}"))?;
                    let Value::Boolean(b) = answer else {
                        return Err(format!("rule {n}: feature {name:?} must be true or false"));
                    };
                    when.insert(feature, *b);
                }
            }
            None => {}
            Some(_) => return Err(format!("rule {n}: `when` must be a table of feature = true|false")),
        }
        rules.push(Rule { when, tier });
    }
    Ok(rules)
}

fn read_skills(s: &Settings) -> SkillsConfig {
    SkillsConfig {
        enabled: s.bool("enabled", false),
        hint: s.bool("hint", false),
        min_confidence: s.f64("min_confidence", 0.8, 0.0, 1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str, env: &[(&str, &str)]) -> Loaded {
        let _tmp = crate::fsutil::scratch_dir();
        let dir = _tmp.path().to_path_buf();
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join(format!("c{}.toml", fastrand_name(text)));
        std::fs::write(&path, text).expect("write config");
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let loaded = load_from(path.clone(), &env);
        let _ = std::fs::remove_file(path);
        loaded
    }

    fn fastrand_name(text: &str) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        std::thread::current().id().hash(&mut h);
        h.finish()
    }

    #[test]
    fn defaults_when_no_file() {
        let l = load_from(PathBuf::from("/nonexistent/system1/config.toml"), &[]);
        assert!(l.is_ok(), "{:?}", l.errors);
        assert!(!l.file_read);
        assert_eq!(l.config.gateway.provider, "laya");
        assert_eq!(l.config.gateway.timeout_s, 5.0);
        assert_eq!(l.config.gateway.min_confidence, 0.6);
        assert!(l.config.gateway.tournament);
        assert_eq!(l.config.gateway.stability, StabilityMode::Off);
        assert_eq!(l.config.gateway.min_stability, 1.0);
        assert_eq!(l.config.routing.rules, default_rules());
        assert_eq!(l.config.skills.min_confidence, 0.8);
    }

    #[test]
    fn env_overrides_file() {
        let l = load_text(
            "[gateway]\nprovider = \"mock\"\ntimeout_s = 2\n[providers.mock]\ndelay_ms = 5\n",
            &[("SYSTEM1_TIMEOUT_S", "0.5"), ("SYSTEM1_FALLBACK", "mock"), ("SYSTEM1_MOCK_DELAY_MS", "7")],
        );
        assert_eq!(l.config.gateway.timeout_s, 0.5);
        // mock is the primary, so listing it as a fallback too is an error that names it
        assert!(l.errors.iter().any(|e| e.contains("appears twice")), "{:?}", l.errors);
        let mock = &l.config.providers["mock"];
        assert_eq!(mock.table["delay_ms"], Value::String("7".into()));
        assert_eq!(mock.sources["delay_ms"], Source::Env("SYSTEM1_MOCK_DELAY_MS".into()));
        let t = l.resolved.iter().find(|r| r.key == "gateway.timeout_s").expect("resolved");
        assert_eq!(t.source, Source::Env("SYSTEM1_TIMEOUT_S".into()));
    }

    #[test]
    fn tournament_and_stability_from_file_and_env_and_bad_values_named() {
        let l = load_text("[gateway]\ntournament = false\nstability = \"full\"\nmin_stability = 0.5\n", &[]);
        assert!(l.is_ok(), "{:?}", l.errors);
        let g = &l.config.gateway;
        assert_eq!((g.tournament, g.stability, g.min_stability), (false, StabilityMode::Full, 0.5));
        let l = load_text("", &[("SYSTEM1_STABILITY", "Fast"), ("SYSTEM1_TOURNAMENT", "false")]);
        assert!(l.is_ok(), "{:?}", l.errors);
        assert_eq!((l.config.gateway.stability, l.config.gateway.tournament), (StabilityMode::Fast, false));
        let l = load_text("", &[("SYSTEM1_STABILITY", "always")]);
        assert_eq!(
            l.errors,
            ["gateway.stability (from SYSTEM1_STABILITY) must be off, fast or full, got \"always\""],
            "named with its source"
        );
        let l = load_text("[gateway]\nmin_stability = 1.5\n", &[]);
        assert!(l.errors.iter().any(|e| e.contains("gateway.min_stability")), "{:?}", l.errors);
    }

    #[test]
    fn named_instances_of_a_kind_sit_in_the_chain_with_their_own_settings() {
        let l = load_text(
            "[gateway]\nprovider = \"local\"\nfallback = [\"gpu\", \"systemone_hosted\"]\n\
             [providers.gpu]\nkind = \"systemone\"\nendpoint = \"http://127.0.0.1:9001\"\n\
             [providers.systemone_hosted]\nkind = \"systemone\"\n",
            &[
                ("SYSTEM1_GPU_MODEL", "kev-4b"),
                ("SYSTEM1_SYSTEMONE_HOSTED_API_KEY", "sk-h"),
                ("SYSTEM1_SYSTEMONE_MODEL", "m"),
            ],
        );
        assert!(l.is_ok(), "{:?}", l.errors);
        assert_eq!(l.chain(), ["local", "gpu", "systemone_hosted"]);
        assert_eq!(
            (l.kind_of("gpu"), l.kind_of("local"), l.kind_of("nope")),
            (Some(ProviderKind::SystemOne), Some(ProviderKind::Local), None)
        );
        assert_eq!(l.config.providers["gpu"].table["model"], Value::String("kev-4b".into()));
        // The longest name that fits takes the variable: the instance, not the built-in systemone.
        assert_eq!(l.config.providers["systemone_hosted"].table["api_key"], Value::String("sk-h".into()));
        assert!(!l.config.providers["systemone"].table.contains_key("hosted_api_key"));
        assert_eq!(l.configured_providers(), ["local", "gpu", "systemone_hosted", "systemone"]);

        let l = load_text("[providers.gpu]\nendpoint = \"x\"\n", &[]);
        assert!(
            l.errors.iter().any(|e| e.contains("unknown provider [providers.gpu]") && e.contains("kind")),
            "{:?}",
            l.errors
        );
        let l = load_text("[providers.gpu]\nkind = \"laya\"\n", &[]);
        assert!(l.errors.iter().any(|e| e.contains("only these kinds")), "{:?}", l.errors);
        let l = load_text("[providers.routing]\nkind = \"systemone\"\n", &[]);
        assert!(l.errors.iter().any(|e| e.contains("an instance's name")), "{:?}", l.errors);
        let l = load_text("[gateway]\nfallback = [\"gpu\"]\n", &[]);
        assert!(l.errors.iter().any(|e| e.contains("unknown provider \"gpu\"")), "{:?}", l.errors);
    }

    #[test]
    fn api_key_in_file_is_an_error() {
        let l = load_text("[providers.laya]\napi_key = \"sekret\"\n", &[]);
        assert!(l.errors.iter().any(|e| e.contains("SYSTEM1_LAYA_API_KEY")), "{:?}", l.errors);
        assert!(!l.config.providers["laya"].table.contains_key("api_key"));
    }

    #[cfg(unix)]
    #[test]
    fn api_key_file_gives_the_key_and_a_broken_one_is_named() {
        use std::os::unix::fs::PermissionsExt;
        let _tmp = crate::fsutil::scratch_dir();
        let dir = _tmp.path().to_path_buf();
        std::fs::create_dir_all(&dir).expect("temp dir");
        let key = dir.join("laya.key");
        std::fs::write(&key, "sk-from-file\n").expect("write key");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let shown = key.display().to_string();

        let l = load_text(&format!("[providers.laya]\napi_key_file = {shown:?}\n"), &[]);
        assert!(l.is_ok(), "{:?}", l.errors);
        let laya = &l.config.providers["laya"];
        assert_eq!(laya.table["api_key"], Value::String("sk-from-file".into()));
        assert_eq!(laya.sources["api_key"], Source::KeyFile(shown.clone()));
        assert!(!laya.table.contains_key("api_key_file"), "the adapter sees only the key");

        // From the environment too; a key in the environment wins over any file.
        let l = load_text("", &[("SYSTEM1_VON_API_KEY_FILE", &shown)]);
        assert_eq!(l.config.providers["von"].table["api_key"], Value::String("sk-from-file".into()));
        let l = load_text(
            &format!("[providers.laya]\napi_key_file = {shown:?}\n"),
            &[("SYSTEM1_LAYA_API_KEY", "sk-from-env")],
        );
        assert_eq!(l.config.providers["laya"].table["api_key"], Value::String("sk-from-env".into()));

        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let l = load_text("", &[("SYSTEM1_LAYA_API_KEY_FILE", &shown)]);
        assert_eq!(
            l.errors,
            [format!(
                "providers.laya.api_key_file (from SYSTEM1_LAYA_API_KEY_FILE): {shown} can be read or changed by other users (mode 0644); make it yours alone: chmod 600 {shown}"
            )]
        );
        assert!(!l.config.providers["laya"].table.contains_key("api_key"), "no key from a refused file");
        let l = load_text("[providers.laya]\napi_key_file = \"laya.key\"\n", &[]);
        assert_eq!(
            l.errors,
            ["providers.laya.api_key_file must be an absolute path (or start with ~), got \"laya.key\""]
        );
        let l = load_text("[providers.laya]\napi_key_file = 3\n", &[]);
        assert_eq!(l.errors, ["providers.laya.api_key_file must be a path, got 3"]);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn broken_toml_and_unknown_keys_are_reported() {
        let l = load_text("[gateway\n", &[]);
        assert!(!l.is_ok());
        assert!(l.errors[0].contains("not valid TOML"), "{:?}", l.errors);
        let l = load_text("[gateway]\nprovidr = \"x\"\n[weird]\n", &[]);
        assert!(l.errors.iter().any(|e| e.contains("unknown key weird")), "{:?}", l.errors);
        assert!(l.errors.iter().any(|e| e.contains("unknown key gateway.providr")), "{:?}", l.errors);
        let l = load_text("[providers.nope]\nx = 1\n", &[]);
        assert!(l.errors.iter().any(|e| e.contains("unknown provider [providers.nope]")), "{:?}", l.errors);
    }

    #[test]
    fn rules_are_data_and_bad_rules_are_named() {
        let l = load_text(
            "[routing]\ndefault_tier = \"haiku\"\nrules = [{ when = { review = true }, tier = \"sonnet\" }]\n",
            &[],
        );
        assert!(l.is_ok(), "{:?}", l.errors);
        assert_eq!(l.config.routing.rules.len(), 1);
        assert_eq!(l.config.routing.rules[0].tier, Tier::Sonnet);
        assert_eq!(l.config.routing.rules[0].when, [(Feature::Review, true)].into());
        assert_eq!(l.config.routing.default_tier, Tier::Haiku);
        // Every tier of the table may be named, Claude Code's fourth included.
        let l = load_text(
            "[routing]\ndefault_tier = \"fable\"\nrules = [{ when = { design = true }, tier = \"fable\" }]\n",
            &[],
        );
        assert!(l.is_ok(), "{:?}", l.errors);
        assert_eq!((l.config.routing.default_tier, l.config.routing.rules[0].tier), (Tier::Fable, Tier::Fable));
        let l = load_text("[routing]\ndefault_tier = \"claude-opus-4-8\"\n", &[]);
        assert!(l.errors.iter().any(|e| e.contains("routing.default_tier: unknown tier")), "{:?}", l.errors);
        assert_eq!(l.config.routing.default_tier, Tier::Sonnet, "a bad default tier keeps the default");
        let l = load_text("[routing]\nrules = [{ when = { vibes = true }, tier = \"opus\" }]\n", &[]);
        assert!(l.errors.iter().any(|e| e.contains("unknown feature \"vibes\"")), "{:?}", l.errors);
        let l = load_text("[routing]\nrules = [{ when = { design = true }, tier = \"gpt\" }]\n", &[]);
        assert!(l.errors.iter().any(|e| e.contains("unknown tier \"gpt\"")), "{:?}", l.errors);
    }

    #[test]
    fn enforce_is_off_by_default_and_named_in_file_or_env() {
        let l = load_from(PathBuf::from("/nonexistent/system1/config.toml"), &[]);
        assert_eq!(l.config.routing.enforce, Enforce::Off);
        let l = load_text("[routing]\nenforce = \"raise\"\n", &[]);
        assert!(l.is_ok(), "{:?}", l.errors);
        assert_eq!(l.config.routing.enforce, Enforce::Raise);
        let l = load_text("[routing]\nenforce = \"raise\"\n", &[("SYSTEM1_ROUTING_ENFORCE", "set")]);
        assert_eq!(l.config.routing.enforce, Enforce::Set, "the environment wins");
        let l = load_text("", &[("SYSTEM1_ROUTING_ENFORCE", "always")]);
        assert_eq!(
            l.errors,
            ["routing.enforce (from SYSTEM1_ROUTING_ENFORCE) must be one of off, fill, raise, set, got \"always\""]
        );
        assert_eq!(l.config.routing.enforce, Enforce::Off, "a bad mode enforces nothing");
        assert!(Enforce::Off < Enforce::Fill && Enforce::Fill < Enforce::Raise && Enforce::Raise < Enforce::Set);
        for m in Enforce::ALL {
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{m}\""));
            assert_eq!(serde_json::from_str::<Enforce>(&format!("\"{m}\"")).unwrap(), m);
        }
    }
}
