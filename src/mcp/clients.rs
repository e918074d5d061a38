//! The MCP clients other than Claude Code, and the server entry each needs for this install (what
//! `system1 mcp-config CLIENT` prints; for users: docs/install.md#other-mcp-clients).
//!
//! Clients start `system1 mcp` with less than the user's environment: Codex CLI passes only a few
//! variables (HOME, PATH, LANG, ...) unless its `env_vars` lists more, the TypeScript SDK's default
//! is as narrow, and Gemini CLI drops names that look like secrets (`*_KEY`, `*_TOKEN`, ...) unless
//! `security.environmentVariableRedaction.allowed` lists them. None expands `~` in `command`. So an
//! entry names the binary by its absolute path, writes the two path overrides (`SYSTEM1_CONFIG`,
//! `SYSTEM1_INSTALL_DIR`) as values when they are set, and carries every other `SYSTEM1_*` setting
//! of the environment it was made in the way the client allows: by name where the client passes
//! named variables on (Codex, Gemini), by value elsewhere, except secrets, which are never written
//! (an API key belongs in `api_key_file`).

use std::path::PathBuf;

use serde_json::{Value, json};

/// The variables an entry writes as values: paths, the same in every client.
const PATH_VARIABLES: [&str; 2] = ["SYSTEM1_CONFIG", "SYSTEM1_INSTALL_DIR"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    ClaudeDesktop,
    Cursor,
    Windsurf,
    VsCode,
    Gemini,
    Codex,
}

impl Client {
    pub const ALL: [Client; 6] =
        [Client::ClaudeDesktop, Client::Cursor, Client::Windsurf, Client::VsCode, Client::Gemini, Client::Codex];

    /// The name on the command line.
    pub fn id(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::Cursor => "cursor",
            Client::Windsurf => "windsurf",
            Client::VsCode => "vscode",
            Client::Gemini => "gemini",
            Client::Codex => "codex",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "Claude Desktop",
            Client::Cursor => "Cursor",
            Client::Windsurf => "Windsurf",
            Client::VsCode => "VS Code (Copilot)",
            Client::Gemini => "Gemini CLI",
            Client::Codex => "Codex CLI",
        }
    }

    /// Where the entry goes.
    pub fn config_file(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude_desktop_config.json (Settings > Developer > Edit Config)",
            Client::Cursor => "~/.cursor/mcp.json",
            Client::Windsurf => "~/.codeium/windsurf/mcp_config.json",
            Client::VsCode => "the user mcp.json (MCP: Open User Configuration)",
            Client::Gemini => "~/.gemini/settings.json",
            Client::Codex => "~/.codex/config.toml",
        }
    }

    /// Whether the client passes variables on by name, so that a secret need not be written down.
    fn forwards_by_name(self) -> bool {
        matches!(self, Client::Gemini | Client::Codex)
    }
}

/// How this install is launched: the binary, and the settings of the environment the entry is
/// made in.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub command: PathBuf,
    /// `SYSTEM1_CONFIG` and `SYSTEM1_INSTALL_DIR` when set, as absolute paths.
    pub paths: Vec<(String, String)>,
    /// Every other `SYSTEM1_*` variable that is set, by name, sorted.
    pub settings: Vec<(String, String)>,
}

impl Launch {
    /// The launch of `command` (absolute) with the `SYSTEM1_*` variables of `env`.
    pub fn new(command: PathBuf, env: &[(String, String)]) -> Launch {
        let mut paths = Vec::new();
        let mut settings = Vec::new();
        for (k, v) in env {
            // The spawn module's mark belongs to the Claude Code session it was set in.
            if !k.starts_with("SYSTEM1_") || v.is_empty() || k == crate::claude_code::SPAWN_MODULE_VAR {
                continue;
            }
            if PATH_VARIABLES.contains(&k.as_str()) {
                let p = std::path::absolute(crate::paths::expand_tilde(v)).unwrap_or_else(|_| PathBuf::from(v));
                paths.push((k.clone(), p.display().to_string()));
            } else {
                settings.push((k.clone(), v.clone()));
            }
        }
        paths.sort();
        settings.sort();
        Launch { command, paths, settings }
    }

    /// The settings an entry for `client` cannot carry: secrets, for a client that takes only values.
    pub fn withheld(&self, client: Client) -> Vec<&str> {
        if client.forwards_by_name() {
            return Vec::new();
        }
        self.settings.iter().filter(|(k, _)| is_secret(k)).map(|(k, _)| k.as_str()).collect()
    }

    fn env_values(&self, client: Client) -> serde_json::Map<String, Value> {
        let mut env: serde_json::Map<String, Value> =
            self.paths.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
        if !client.forwards_by_name() {
            for (k, v) in self.settings.iter().filter(|(k, _)| !is_secret(k)) {
                env.insert(k.clone(), Value::String(v.clone()));
            }
        }
        env
    }

    fn forwarded(&self) -> Vec<&str> {
        self.settings.iter().map(|(k, _)| k.as_str()).collect()
    }
}

/// A variable whose value is a secret (`SYSTEM1_LAYA_API_KEY`), as the config treats its key.
fn is_secret(var: &str) -> bool {
    crate::config::settings::is_secret(&var.to_ascii_lowercase())
}

/// The text to paste into `client`'s config file: JSON for every client but Codex (TOML).
pub fn entry(client: Client, launch: &Launch) -> String {
    let command = Value::String(launch.command.display().to_string());
    let env = launch.env_values(client);
    let mut server = json!({"command": command, "args": ["mcp"]});
    if !env.is_empty() {
        server["env"] = Value::Object(env);
    }
    match client {
        Client::Codex => return codex_entry(launch, server),
        Client::VsCode => {
            let mut typed = json!({"type": "stdio"});
            if let (Value::Object(t), Value::Object(s)) = (&mut typed, server) {
                t.extend(s);
            }
            return pretty(&json!({"servers": {"system1": typed}}));
        }
        _ => {}
    }
    let mut doc = json!({"mcpServers": {"system1": server}});
    if client == Client::Gemini {
        // Gemini CLI asks before each call of an untrusted server, and in headless `gemini -p` does
        // not offer its tools at all; the three tools only read.
        doc["mcpServers"]["system1"]["trust"] = json!(true);
        let forwarded = launch.forwarded();
        if !forwarded.is_empty() {
            doc["security"] = json!({"environmentVariableRedaction": {"allowed": forwarded}});
        }
    }
    pretty(&doc)
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// Codex's `[mcp_servers.system1]` table: the JSON entry's fields, and `env_vars` naming the
/// settings Codex is to pass on from its own environment. Written line by line to keep Codex's
/// order (command first); each value is quoted by the TOML writer.
fn codex_entry(launch: &Launch, server: Value) -> String {
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let list = |items: &[&str]| format!("[{}]", items.iter().map(|s| quote(s)).collect::<Vec<_>>().join(", "));
    let mut out = String::from("[mcp_servers.system1]\n");
    out.push_str(&format!("command = {}\n", quote(server["command"].as_str().unwrap_or(""))));
    out.push_str("args = [\"mcp\"]\n");
    let forwarded = launch.forwarded();
    if !forwarded.is_empty() {
        out.push_str(&format!("env_vars = {}\n", list(&forwarded)));
    }
    if let Some(env) = server["env"].as_object() {
        let pairs: Vec<String> =
            env.iter().map(|(k, v)| format!("{k} = {}", quote(v.as_str().unwrap_or("")))).collect();
        out.push_str(&format!("env = {{ {} }}\n", pairs.join(", ")));
    }
    out
}

// Unix paths in the expectations.
#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Vec<(String, String)> {
        vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn launch() -> Launch {
        Launch::new(
            PathBuf::from("/home/me/.system1-gateway/bin/system1"),
            &env(&[
                ("HOME", "/home/me"),
                ("SYSTEM1_CONFIG", "/etc/s1.toml"),
                ("SYSTEM1_LAYA_API_KEY", "sk-secret"),
                ("SYSTEM1_PROVIDER", "laya"),
                ("SYSTEM1_TIMEOUT_S", ""),
            ]),
        )
    }

    #[test]
    fn paths_go_by_value_settings_by_name_and_secrets_never_by_value() {
        let l = launch();
        assert_eq!(l.paths, [("SYSTEM1_CONFIG".to_string(), "/etc/s1.toml".to_string())]);
        assert_eq!(l.forwarded(), ["SYSTEM1_LAYA_API_KEY", "SYSTEM1_PROVIDER"], "an empty variable is not a setting");
        for client in Client::ALL {
            let text = entry(client, &l);
            assert!(!text.contains("sk-secret"), "{}: {text}", client.id());
            assert!(text.contains("/home/me/.system1-gateway/bin/system1"), "{text}");
            assert!(!text.contains('~'), "{text}");
        }
        assert_eq!(l.withheld(Client::Cursor), ["SYSTEM1_LAYA_API_KEY"]);
        assert!(l.withheld(Client::Codex).is_empty() && l.withheld(Client::Gemini).is_empty());
    }

    #[test]
    fn each_client_gets_its_own_shape() {
        let l = launch();
        let cursor: Value = serde_json::from_str(&entry(Client::Cursor, &l)).expect("JSON");
        assert_eq!(
            cursor,
            json!({"mcpServers": {"system1": {"command": "/home/me/.system1-gateway/bin/system1", "args": ["mcp"],
                "env": {"SYSTEM1_CONFIG": "/etc/s1.toml", "SYSTEM1_PROVIDER": "laya"}}}})
        );
        let vscode: Value = serde_json::from_str(&entry(Client::VsCode, &l)).expect("JSON");
        assert_eq!(vscode["servers"]["system1"]["type"], "stdio");
        assert_eq!(vscode["servers"]["system1"]["args"], json!(["mcp"]));
        let gemini: Value = serde_json::from_str(&entry(Client::Gemini, &l)).expect("JSON");
        assert_eq!(
            gemini,
            json!({"mcpServers": {"system1": {"command": "/home/me/.system1-gateway/bin/system1", "args": ["mcp"],
                    "env": {"SYSTEM1_CONFIG": "/etc/s1.toml"}, "trust": true}},
                   "security": {"environmentVariableRedaction": {"allowed": ["SYSTEM1_LAYA_API_KEY", "SYSTEM1_PROVIDER"]}}})
        );
        let codex: toml::Table = entry(Client::Codex, &l).parse().expect("TOML");
        let server = &codex["mcp_servers"]["system1"];
        assert_eq!(server["command"].as_str(), Some("/home/me/.system1-gateway/bin/system1"));
        assert_eq!(server["args"], toml::Value::Array(vec!["mcp".into()]));
        assert_eq!(
            server["env_vars"],
            toml::Value::Array(vec!["SYSTEM1_LAYA_API_KEY".into(), "SYSTEM1_PROVIDER".into()])
        );
        assert_eq!(server["env"]["SYSTEM1_CONFIG"].as_str(), Some("/etc/s1.toml"));
    }

    #[test]
    fn a_plain_install_needs_only_the_command() {
        let l = Launch::new(PathBuf::from("/home/me/.system1-gateway/bin/system1"), &env(&[("HOME", "/home/me")]));
        let gemini: Value = serde_json::from_str(&entry(Client::Gemini, &l)).expect("JSON");
        assert_eq!(gemini.get("security"), None);
        assert_eq!(gemini["mcpServers"]["system1"].get("env"), None);
        assert_eq!(
            entry(Client::Codex, &l),
            "[mcp_servers.system1]\ncommand = \"/home/me/.system1-gateway/bin/system1\"\nargs = [\"mcp\"]\n"
        );
    }
}
