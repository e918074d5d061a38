//! Claude Code's own files, read in one place and into types: `.claude.json` (the MCP servers it
//! launches, at user scope and per project), `plugins/installed_plugins.json` (where each
//! installed plugin lives), the `enabledPlugins` of its settings files, and a plugin's manifest
//! `.claude-plugin/plugin.json`.
//!
//! The files are Claude Code's, and their formats its to change, so every reader is lenient: a
//! field of another shape reads as absent, and one record of an unexpected shape does not hide
//! the others. Nothing here writes them (registration goes through the `claude` CLI).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fsutil::{self, ReadError};
use crate::paths;

/// This plugin's name in Claude Code: its id is `system1@<marketplace>`.
pub const PLUGIN: &str = "system1";

/// The hook events system1 answers, as Claude Code names them (`hookEventName`, the keys of
/// hooks/hooks.json; a test holds the two equal).
pub mod event {
    pub const SESSION_START: &str = "SessionStart";
    pub const USER_PROMPT_SUBMIT: &str = "UserPromptSubmit";
    pub const PRE_TOOL_USE: &str = "PreToolUse";
    pub const POST_TOOL_USE: &str = "PostToolUse";
    /// A function-hook module's event for a subagent spawn (Claude Code 2.1.287 and later).
    pub const AGENT_SPAWN: &str = "agent.spawn";
}

/// The variable the plugin's function-hook module (`hooks/spawn.mjs`) sets in Claude Code's own
/// environment, which every hook it starts inherits, to the id of the session it acts in: the
/// PreToolUse hook of that session steps aside. Session state, not a setting.
pub const SPAWN_MODULE_VAR: &str = "SYSTEM1_SPAWN_MODULE";

/// The tools that spawn a subagent (`Agent`, and `Task` before Claude Code 2.1) and a request's
/// reasoning effort level: the transcript reader tells them apart in the lines it reads, and owns
/// them (crates/transcripts/src/claude_code.rs); the product names the same.
pub use system1_transcripts::{Effort, SPAWN_TOOLS, is_spawn_tool};

/// An MCP server as Claude Code launches it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct McpServer {
    pub command: String,
    /// A non-string argument is kept as its JSON text, so that it never passes for a string.
    pub args: Vec<String>,
}

impl McpServer {
    fn from_value(v: &Value) -> McpServer {
        let command = v.get("command").and_then(Value::as_str).unwrap_or_default().to_string();
        let args = v
            .get("args")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|arg| arg.as_str().map(String::from).unwrap_or_else(|| arg.to_string())).collect())
            .unwrap_or_default();
        McpServer { command, args }
    }

    /// The command and its arguments, as one list.
    pub fn command_line(&self) -> Vec<String> {
        std::iter::once(self.command.clone()).chain(self.args.iter().cloned()).collect()
    }
}

/// Where a server is registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    User,
    /// For the project directory asked about.
    Project,
}

/// What system1 reads of `.claude.json`: the registered MCP servers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClaudeJson {
    /// User-scoped servers, by name.
    pub mcp_servers: Vec<(String, McpServer)>,
    /// Project-scoped servers, by project directory, then by name.
    pub projects: Vec<(String, Vec<(String, McpServer)>)>,
}

fn servers(v: Option<&Value>) -> Vec<(String, McpServer)> {
    let Some(Value::Object(m)) = v else { return Vec::new() };
    m.iter().map(|(name, s)| (name.clone(), McpServer::from_value(s))).collect()
}

fn named<'a, T>(list: &'a [(String, T)], name: &str) -> Option<&'a T> {
    list.iter().find(|(n, _)| n == name).map(|(_, t)| t)
}

impl ClaudeJson {
    /// `paths::claude_json()`; `Ok(None)` when there is no such file.
    pub fn read() -> Result<Option<ClaudeJson>, ReadError> {
        Ok(fsutil::read_json(&paths::claude_json())?.map(|v| ClaudeJson::from_value(&v)))
    }

    pub fn from_value(v: &Value) -> ClaudeJson {
        let projects = match v.get("projects") {
            Some(Value::Object(m)) => m.iter().map(|(dir, p)| (dir.clone(), servers(p.get("mcpServers")))).collect(),
            _ => Vec::new(),
        };
        ClaudeJson { mcp_servers: servers(v.get("mcpServers")), projects }
    }

    /// The server `name` at user scope.
    pub fn user_server(&self, name: &str) -> Option<&McpServer> {
        named(&self.mcp_servers, name)
    }

    /// The server `name` at user scope, else registered for the project `cwd`.
    pub fn find(&self, name: &str, cwd: Option<&str>) -> Option<(&McpServer, Scope)> {
        let user = self.user_server(name).map(|s| (s, Scope::User));
        user.or_else(|| {
            let project = named(&self.projects, cwd?)?;
            named(project, name).map(|s| (s, Scope::Project))
        })
    }
}

/// One install of a plugin, as `installed_plugins.json` records it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PluginInstall {
    /// `user`, `project` or `local`.
    pub scope: Option<String>,
    /// The project a non-user install belongs to.
    pub project_path: Option<String>,
    pub install_path: Option<PathBuf>,
    pub version: Option<String>,
}

impl PluginInstall {
    fn from_value(v: &Value) -> PluginInstall {
        let text = |key: &str| v.get(key).and_then(Value::as_str).map(String::from);
        PluginInstall {
            scope: text("scope"),
            project_path: text("projectPath"),
            install_path: text("installPath").map(PathBuf::from),
            version: text("version"),
        }
    }

    /// Whether the install counts for a session in `projects`: a project-scoped install only
    /// inside its project.
    pub fn applies_to(&self, projects: &[PathBuf]) -> bool {
        match &self.project_path {
            Some(pp) if self.scope.as_deref().is_some_and(|s| s != "user") => {
                projects.iter().any(|p| p.starts_with(pp))
            }
            _ => true,
        }
    }
}

/// A plugin's installs, under its id `name@marketplace`.
#[derive(Debug, Clone, PartialEq)]
pub struct InstalledPlugin {
    pub id: String,
    pub installs: Vec<PluginInstall>,
}

impl InstalledPlugin {
    /// The plugin's name: its id without the marketplace.
    pub fn name(&self) -> &str {
        self.id.split('@').next().unwrap_or(&self.id)
    }
}

/// `plugins/installed_plugins.json`, in its order. Version 2 of the file lists the installs of
/// each id; version 1 had one object per id: both read as a list of installs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InstalledPlugins {
    pub plugins: Vec<InstalledPlugin>,
}

impl InstalledPlugins {
    pub fn path(claude_dir: &Path) -> PathBuf {
        claude_dir.join("plugins").join("installed_plugins.json")
    }

    /// The records under `claude_dir`; `Ok(None)` when there are none.
    pub fn read(claude_dir: &Path) -> Result<Option<InstalledPlugins>, ReadError> {
        Ok(fsutil::read_json(&Self::path(claude_dir))?.map(|v| InstalledPlugins::from_value(&v)))
    }

    pub fn from_value(v: &Value) -> InstalledPlugins {
        let Some(Value::Object(records)) = v.get("plugins") else { return InstalledPlugins::default() };
        let plugins = records
            .iter()
            .filter_map(|(id, installs)| {
                let installs = match installs {
                    Value::Array(a) => a.iter().map(PluginInstall::from_value).collect(),
                    o @ Value::Object(_) => vec![PluginInstall::from_value(o)],
                    _ => return None,
                };
                Some(InstalledPlugin { id: id.clone(), installs })
            })
            .collect();
        InstalledPlugins { plugins }
    }

    pub fn get(&self, id: &str) -> Option<&InstalledPlugin> {
        self.plugins.iter().find(|p| p.id == id)
    }
}

/// The settings files that may enable plugins for a session in `projects` (the session's
/// directory, then its repo root), in the order Claude Code layers them, later ones overriding:
/// the user's `settings.json`, then each project's `settings.json` and `settings.local.json`,
/// the repo root's before the directory's own.
pub fn settings_files(claude_dir: &Path, projects: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = vec![claude_dir.join("settings.json")];
    for p in projects.iter().rev() {
        files.push(p.join(".claude").join("settings.json"));
        files.push(p.join(".claude").join("settings.local.json"));
    }
    files
}

/// The `enabledPlugins` of one settings file: plugin id and whether it is on (a value that is not
/// `true` is off). `Ok(None)` when there is no such file.
pub fn enabled_plugins(settings_file: &Path) -> Result<Option<Vec<(String, bool)>>, ReadError> {
    let Some(v) = fsutil::read_json(settings_file)? else { return Ok(None) };
    let enabled = match v.get("enabledPlugins") {
        Some(Value::Object(m)) => m.iter().map(|(id, on)| (id.clone(), on.as_bool().unwrap_or(false))).collect(),
        _ => Vec::new(),
    };
    Ok(Some(enabled))
}

/// The variable by which Claude Code itself sets every subagent's model (its model-mix recipes set
/// it, with [`SUBAGENT_MODEL_FORCE`], for the session).
pub const SUBAGENT_MODEL: &str = "CLAUDE_CODE_SUBAGENT_MODEL";
/// With [`SUBAGENT_MODEL`], makes it win over the Agent call's own `model`.
pub const SUBAGENT_MODEL_FORCE: &str = "CLAUDE_CODE_SUBAGENT_MODEL_FORCE";

/// Set (Claude Code 2.1.333 and later), the session offers no Sonnet or Haiku to subagents: the
/// Agent tool's `model` loses them, and a spawn that would run on one runs larger or is refused.
/// Claude Code also checks how the session is hosted before it applies this; the routing hooks treat
/// the variable alone as deciding (docs/routing.md#claude-codes-own-setting).
pub const SUBAGENT_NO_SMALL_MODELS: &str = "CLAUDE_CODE_SUBAGENT_NO_SMALL_MODELS";

/// The tiers a session under [`SUBAGENT_NO_SMALL_MODELS`] refuses a subagent: those below this one.
pub const SMALLEST_WITHOUT_SMALL_MODELS: crate::tier::Tier = crate::tier::Tier::Opus;

/// Whether [`SUBAGENT_NO_SMALL_MODELS`] is on in a lookup of variables by name (the usual spellings
/// of a flag: set and not empty, `0`, `false`, `no` or `off`).
pub fn no_small_models(get: impl Fn(&str) -> Option<String>) -> bool {
    get(SUBAGENT_NO_SMALL_MODELS)
        .is_some_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false" | "no" | "off"))
}

/// [`no_small_models`] in this process's environment: a hook's is the one Claude Code gave it.
pub fn no_small_models_from_env() -> bool {
    no_small_models(|k| std::env::var(k).ok())
}

/// `CLAUDE_CODE_SUBAGENT_MODEL` (and whether `CLAUDE_CODE_SUBAGENT_MODEL_FORCE` is on) as a
/// process's environment or a settings file's `env` sets it. Under it a hook's rewrite of the
/// Agent call's `model` does not decide which model the subagent runs on (docs/routing.md#claude-codes-own-setting).
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentModel {
    pub model: String,
    pub force: bool,
}

impl SubagentModel {
    /// From this process's environment: a hook's is the one Claude Code gave it.
    pub fn from_env() -> Option<SubagentModel> {
        Self::read(|k| std::env::var(k).ok())
    }

    /// From a lookup of variables by name; `None` unless the model is set and not blank.
    pub fn read(get: impl Fn(&str) -> Option<String>) -> Option<SubagentModel> {
        let model = get(SUBAGENT_MODEL)?.trim().to_string();
        if model.is_empty() {
            return None;
        }
        // The usual spellings of "on" for a flag in the environment.
        let force = get(SUBAGENT_MODEL_FORCE)
            .is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"));
        Some(SubagentModel { model, force })
    }
}

impl std::fmt::Display for SubagentModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{SUBAGENT_MODEL}={}", self.model)?;
        if self.force {
            write!(f, " with {SUBAGENT_MODEL_FORCE}")?;
        }
        Ok(())
    }
}

/// `CLAUDE_CODE_SUBAGENT_MODEL` as the `env` of a settings file sets it (Claude Code puts that
/// `env` in its own environment, which its hooks inherit). `None` when the file is absent, does
/// not parse or sets no such model.
pub fn subagent_model_in_settings(settings_file: &Path) -> Option<SubagentModel> {
    let v = fsutil::read_json(settings_file).ok()??;
    let env = v.get("env")?.as_object()?;
    SubagentModel::read(|k| match env.get(k)? {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// Where a session's requests went: Anthropic's own API, or a provider that maps the model aliases
/// to models of its own (Claude Code's model catalog, `aliases.<alias>.per_provider`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    FirstParty,
    Bedrock,
    Vertex,
    Foundry,
    AnthropicAws,
    AnthropicGoogleCloud,
    Mantle,
    Gateway,
}

impl Provider {
    /// Each provider and the variable that selects it in Claude Code's environment (a settings
    /// file's `env` included), in the order Claude Code's own list gives them.
    pub const SWITCHES: [(Provider, &'static str); 7] = [
        (Provider::Bedrock, "CLAUDE_CODE_USE_BEDROCK"),
        (Provider::Vertex, "CLAUDE_CODE_USE_VERTEX"),
        (Provider::Foundry, "CLAUDE_CODE_USE_FOUNDRY"),
        (Provider::AnthropicAws, "CLAUDE_CODE_USE_ANTHROPIC_AWS"),
        (Provider::AnthropicGoogleCloud, "CLAUDE_CODE_USE_ANTHROPIC_GOOGLE_CLOUD"),
        (Provider::Mantle, "CLAUDE_CODE_USE_MANTLE"),
        (Provider::Gateway, "CLAUDE_CODE_USE_GATEWAY"),
    ];

    /// The catalog's key for it (`first_party`, `bedrock`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Provider::FirstParty => "first_party",
            Provider::Bedrock => "bedrock",
            Provider::Vertex => "vertex",
            Provider::Foundry => "foundry",
            Provider::AnthropicAws => "anthropic_aws",
            Provider::AnthropicGoogleCloud => "anthropic_google_cloud",
            Provider::Mantle => "mantle",
            Provider::Gateway => "gateway",
        }
    }

    pub fn named(name: &str) -> Option<Provider> {
        [Provider::FirstParty].into_iter().chain(Provider::SWITCHES.map(|(p, _)| p)).find(|p| p.name() == name)
    }

    /// The provider a model id can only have come from: a Bedrock id (`us.anthropic.claude-…`,
    /// `anthropic.claude-…-v1:0`), a Vertex one (`claude-…@20250929`) or a Mantle one
    /// (`anthropic.claude-…` without a version suffix), as the catalog's `provider_ids` spell them.
    /// `None` for an id every provider shares (`claude-sonnet-5-5`): it says nothing.
    pub fn of_model_id(id: &str) -> Option<Provider> {
        let id = id.trim();
        if id.contains('@') && id.starts_with("claude-") {
            return Some(Provider::Vertex);
        }
        let at = id.find("anthropic.claude-")?;
        let prefix = &id[..at];
        // A Bedrock inference profile's region (`us.`, `eu.`, `apac.`, `global.`), or an ARN.
        let regional = !prefix.is_empty() && (prefix.ends_with('.') || prefix.ends_with('/'));
        let versioned = id
            .rsplit_once("-v")
            .is_some_and(|(_, v)| v.split(':').all(|p| p.bytes().all(|b| b.is_ascii_digit()) && !p.is_empty()));
        if regional || versioned {
            Some(Provider::Bedrock)
        } else if prefix.is_empty() {
            Some(Provider::Mantle)
        } else {
            None
        }
    }

    /// The provider a lookup of environment variables selects (the first switch on); `None` when
    /// none is.
    pub fn of_env(get: impl Fn(&str) -> Option<String>) -> Option<(Provider, &'static str)> {
        Provider::SWITCHES.into_iter().find(|(_, var)| {
            get(var)
                .is_some_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false" | "no" | "off"))
        })
    }
}

/// The provider a settings file's `env` selects, and the variable that does; `None` when the file
/// is absent, does not parse, or selects none.
pub fn provider_in_settings(settings_file: &Path) -> Option<(Provider, &'static str)> {
    let v = fsutil::read_json(settings_file).ok()??;
    let env = v.get("env")?.as_object()?;
    Provider::of_env(|k| match env.get(k)? {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// What system1 reads of a plugin's manifest, `<root>/.claude-plugin/plugin.json`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PluginManifest {
    pub version: Option<String>,
    /// Skill folders besides `skills/`, relative to the root (the `skills` field: one or a list).
    pub skills: Vec<String>,
}

impl PluginManifest {
    pub fn path(root: &Path) -> PathBuf {
        root.join(".claude-plugin").join("plugin.json")
    }

    /// The manifest of the plugin at `root`; `Ok(None)` when it has none.
    pub fn read(root: &Path) -> Result<Option<PluginManifest>, ReadError> {
        Ok(fsutil::read_json(&Self::path(root))?.as_ref().map(PluginManifest::from_value))
    }

    pub fn from_value(v: &Value) -> PluginManifest {
        let skills = match v.get("skills") {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(String::from).collect(),
            _ => Vec::new(),
        };
        PluginManifest { version: v.get("version").and_then(Value::as_str).map(String::from), skills }
    }
}

fn manifest_version(root: &Path) -> Option<String> {
    PluginManifest::read(root).ok().flatten()?.version
}

/// The version of the plugin whose hook or command is running, from the manifest under
/// `CLAUDE_PLUGIN_ROOT` (Claude Code sets it for them), with the manifest's path.
pub fn running_plugin_version() -> Option<(String, PathBuf)> {
    let root = PathBuf::from(std::env::var_os("CLAUDE_PLUGIN_ROOT").filter(|v| !v.is_empty())?);
    manifest_version(&root).map(|v| (v, PluginManifest::path(&root)))
}

/// The version of the installed plugin `name` (any marketplace) by Claude Code's records: the
/// first install whose manifest, else whose record, has one. With the plugin's id.
pub fn installed_plugin_version(claude_dir: &Path, name: &str) -> Option<(String, String)> {
    let records = InstalledPlugins::read(claude_dir).ok().flatten()?;
    records.plugins.iter().filter(|p| p.name() == name && p.id.contains('@')).find_map(|p| {
        p.installs.iter().find_map(|install| {
            let from_manifest = install.install_path.as_deref().and_then(manifest_version);
            from_manifest.or_else(|| install.version.clone()).map(|v| (v, p.id.clone()))
        })
    })
}

/// The folders the installed plugin `name` (any marketplace) was copied into, by Claude Code's
/// records, each with the plugin's id; plus `CLAUDE_PLUGIN_ROOT` when a hook or command of it runs.
pub fn installed_plugin_roots(claude_dir: &Path, name: &str) -> Vec<(String, PathBuf)> {
    let mut roots: Vec<(String, PathBuf)> = Vec::new();
    if let Ok(Some(records)) = InstalledPlugins::read(claude_dir) {
        for p in records.plugins.iter().filter(|p| p.name() == name && p.id.contains('@')) {
            for path in p.installs.iter().filter_map(|i| i.install_path.clone()) {
                if !roots.iter().any(|(_, r)| *r == path) {
                    roots.push((p.id.clone(), path));
                }
            }
        }
    }
    if let Some(running) = std::env::var_os("CLAUDE_PLUGIN_ROOT").filter(|v| !v.is_empty()).map(PathBuf::from)
        && !roots.iter().any(|(_, r)| *r == running)
    {
        let id = roots.first().map(|(id, _)| id.clone()).unwrap_or_else(|| format!("{name}@system1-gateway"));
        roots.push((id, running));
    }
    roots
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_provider_is_told_by_its_own_model_ids_and_by_its_switch() {
        // As the catalog's provider_ids spell them (Claude Code 2.1.332 and 2.1.337).
        for (id, provider) in [
            ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", Some(Provider::Bedrock)),
            ("us.anthropic.claude-haiku-5-5", Some(Provider::Bedrock)),
            ("eu.anthropic.claude-opus-4-6-v1", Some(Provider::Bedrock)),
            ("anthropic.claude-3-5-sonnet-20241022-v2:0", Some(Provider::Bedrock)),
            ("arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-opus-5-5", Some(Provider::Bedrock)),
            ("claude-sonnet-4-5@20250929", Some(Provider::Vertex)),
            ("anthropic.claude-haiku-4-5", Some(Provider::Mantle)),
            ("claude-sonnet-5-5", None),
            ("claude-haiku-4-5-20251001", None),
            ("<synthetic>", None),
        ] {
            assert_eq!(Provider::of_model_id(id), provider, "{id}");
        }
        let env = |pairs: &'static [(&str, &str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(
            Provider::of_env(env(&[("CLAUDE_CODE_USE_BEDROCK", "1")])),
            Some((Provider::Bedrock, "CLAUDE_CODE_USE_BEDROCK"))
        );
        assert_eq!(
            Provider::of_env(env(&[("CLAUDE_CODE_USE_BEDROCK", "0"), ("CLAUDE_CODE_USE_GATEWAY", "true")]))
                .map(|p| p.0),
            Some(Provider::Gateway)
        );
        assert_eq!(Provider::of_env(env(&[("CLAUDE_CODE_USE_VERTEX", "")])), None);
        for p in [Provider::FirstParty].into_iter().chain(Provider::SWITCHES.map(|(p, _)| p)) {
            assert_eq!(Provider::named(p.name()), Some(p));
            assert_eq!(serde_json::to_value(p).unwrap(), json!(p.name()));
        }
        assert_eq!(Effort::named("xhigh"), Some(Effort::Xhigh));
        assert_eq!(Effort::named("lower"), None, "the Agent call's relative effort names no level");
    }

    #[test]
    fn the_plugin_hooks_name_the_events_and_spawn_tools_the_code_answers() {
        let hooks: Value = serde_json::from_str(include_str!("../hooks/hooks.json")).expect("hooks.json is JSON");
        let hooks = hooks["hooks"].as_object().expect("a hooks object");
        let mut events: Vec<&str> = hooks.keys().map(String::as_str).collect();
        let mut expected =
            vec![event::SESSION_START, event::USER_PROMPT_SUBMIT, event::PRE_TOOL_USE, event::POST_TOOL_USE];
        events.sort();
        expected.sort();
        assert_eq!(events, expected);
        for e in [event::PRE_TOOL_USE, event::POST_TOOL_USE] {
            assert_eq!(hooks[e][0]["matcher"], SPAWN_TOOLS.join("|"), "{e}");
        }
        assert!(is_spawn_tool("Task") && !is_spawn_tool("Bash"));
    }

    #[test]
    fn installed_plugins_read_both_formats() {
        let v = json!({"version": 2, "plugins": {
            "new@m": [{"scope": "project", "projectPath": "/p", "installPath": "/c/new", "version": "2.0.0"},
                      {"scope": "user", "installPath": "/c/new-user"}],
            "old@m": {"version": "0.1.0", "installPath": "/c/old"},
            "odd@m": "not a record",
        }});
        let p = InstalledPlugins::from_value(&v);
        let ids: Vec<&str> = p.plugins.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["new@m", "old@m"], "file order; a record of no known shape is skipped alone");
        let new = p.get("new@m").unwrap();
        assert_eq!(new.name(), "new");
        assert_eq!(new.installs.len(), 2);
        assert_eq!(new.installs[0].project_path.as_deref(), Some("/p"));
        assert!(new.installs[0].applies_to(&[PathBuf::from("/p/sub")]));
        assert!(!new.installs[0].applies_to(&[PathBuf::from("/elsewhere")]));
        assert!(new.installs[1].applies_to(&[]), "a user install applies everywhere");
        let old = &p.get("old@m").unwrap().installs;
        assert_eq!(old.len(), 1, "version 1: one object per id");
        assert_eq!(old[0].install_path.as_deref(), Some(Path::new("/c/old")));
        assert_eq!(old[0].version.as_deref(), Some("0.1.0"));
        assert_eq!(InstalledPlugins::from_value(&json!([])), InstalledPlugins::default());
    }

    #[test]
    fn claude_json_finds_user_then_project_servers() {
        let v = json!({
            "mcpServers": {"system1": {"command": "/bin/system1", "args": ["mcp", 5]}, "other": "junk"},
            "projects": {"/p": {"mcpServers": {"proj": {"command": "x"}}}, "/q": []},
        });
        let c = ClaudeJson::from_value(&v);
        let (s, scope) = c.find("system1", Some("/p")).unwrap();
        assert_eq!(scope, Scope::User);
        assert_eq!(s.command_line(), ["/bin/system1", "mcp", "5"]);
        assert_eq!(c.user_server("other"), Some(&McpServer::default()), "a server of another shape has no command");
        assert_eq!(
            c.find("proj", Some("/p")).map(|(s, scope)| (s.command.as_str(), scope)),
            Some(("x", Scope::Project))
        );
        assert!(c.find("proj", Some("/q")).is_none());
        assert!(c.find("proj", None).is_none());
        assert_eq!(ClaudeJson::from_value(&json!("x")), ClaudeJson::default());
    }

    #[test]
    fn the_subagent_model_variable_and_its_force_flag() {
        fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
            move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        }
        assert!(!no_small_models(vars(&[])));
        for off in ["", " ", "0", "false", "No", "OFF"] {
            assert!(!no_small_models(vars(&[(SUBAGENT_NO_SMALL_MODELS, off)])), "{off:?} is off");
        }
        for on in ["1", "true", "yes"] {
            assert!(no_small_models(vars(&[(SUBAGENT_NO_SMALL_MODELS, on)])), "{on:?} is on");
        }
        assert_eq!(SubagentModel::read(vars(&[])), None);
        assert_eq!(SubagentModel::read(vars(&[(SUBAGENT_MODEL, "  ")])), None, "blank is unset");
        assert_eq!(SubagentModel::read(vars(&[(SUBAGENT_MODEL_FORCE, "1")])), None, "force alone sets nothing");
        let m = SubagentModel::read(vars(&[(SUBAGENT_MODEL, "haiku")])).unwrap();
        assert_eq!((m.model.as_str(), m.force), ("haiku", false));
        assert_eq!(m.to_string(), "CLAUDE_CODE_SUBAGENT_MODEL=haiku");
        for on in ["1", "true", "TRUE", "yes"] {
            assert!(
                SubagentModel::read(vars(&[(SUBAGENT_MODEL, "sonnet"), (SUBAGENT_MODEL_FORCE, on)])).unwrap().force,
                "{on}"
            );
        }
        let m = SubagentModel::read(vars(&[(SUBAGENT_MODEL, "sonnet"), (SUBAGENT_MODEL_FORCE, "0")])).unwrap();
        assert!(!m.force);

        let _tmp = crate::fsutil::scratch_dir();

        let dir = _tmp.path().to_path_buf();
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("settings.json");
        std::fs::write(
            &file,
            r#"{"env": {"CLAUDE_CODE_SUBAGENT_MODEL": "opus", "CLAUDE_CODE_SUBAGENT_MODEL_FORCE": true}}"#,
        )
        .unwrap();
        assert_eq!(subagent_model_in_settings(&file), Some(SubagentModel { model: "opus".into(), force: true }));
        std::fs::write(&file, r#"{"env": {"OTHER": "x"}}"#).unwrap();
        assert_eq!(subagent_model_in_settings(&file), None);
        std::fs::write(&file, "not json").unwrap();
        assert_eq!(subagent_model_in_settings(&file), None);
        assert_eq!(subagent_model_in_settings(&dir.join("absent.json")), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn manifest_skills_are_one_folder_or_a_list() {
        let m = PluginManifest::from_value(&json!({"name": "p", "version": "1.2.3", "skills": "./extra/"}));
        assert_eq!(m, PluginManifest { version: Some("1.2.3".into()), skills: vec!["./extra/".into()] });
        let m = PluginManifest::from_value(&json!({"skills": ["a", 1, "b"]}));
        assert_eq!(m.skills, ["a", "b"]);
        assert_eq!(m.version, None);
    }

    #[test]
    fn the_installed_version_comes_from_the_manifest_then_the_record() {
        let _tmp = crate::fsutil::scratch_dir();
        let dir = _tmp.path().to_path_buf();
        let with_manifest = dir.join("cache/with");
        std::fs::create_dir_all(with_manifest.join(".claude-plugin")).unwrap();
        std::fs::write(PluginManifest::path(&with_manifest), r#"{"version": "0.0.9"}"#).unwrap();
        std::fs::create_dir_all(dir.join("plugins")).unwrap();
        let write = |records: Value| std::fs::write(InstalledPlugins::path(&dir), records.to_string()).unwrap();
        write(json!({"plugins": {"system1@m": {"installPath": with_manifest, "version": "0.0.1"}}}));
        assert_eq!(installed_plugin_version(&dir, "system1"), Some(("0.0.9".into(), "system1@m".into())), "v1");
        write(
            json!({"plugins": {"other@m": [{"version": "9"}], "system1@m": [{"installPath": "/gone", "version": "0.0.2"}]}}),
        );
        assert_eq!(installed_plugin_version(&dir, "system1"), Some(("0.0.2".into(), "system1@m".into())), "v2");
        write(json!({"plugins": {"system1": [{"version": "1"}]}}));
        assert_eq!(installed_plugin_version(&dir, "system1"), None, "an id without a marketplace is not a plugin id");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
