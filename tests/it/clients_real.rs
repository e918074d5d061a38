//! The MCP clients other than Claude Code, for real and offline: Gemini CLI 0.61.0 headless against
//! a fake Gemini API, Codex CLI 0.171.0 through `codex app-server` (no model turn), and the
//! TypeScript SDK 1.32.2 client (`support/ts_sdk_client.mjs`). `scripts/test` installs each into
//! `.test-deps/`; without them the tests fail under CI and are skipped loudly elsewhere.
//!
//! Gemini and Codex are configured with exactly what `system1 mcp-config CLIENT` prints, in the
//! scratch HOME, from a "shell" holding what these clients drop: the config at a non-default path
//! (`SYSTEM1_CONFIG`) and an engine key in the environment (`SYSTEM1_LAYA_API_KEY`) for a Laya
//! that refuses calls without it. A config at the default path selects the mock instead, so a
//! setting that did not arrive shows as an answer from the wrong engine, not as a lucky pass.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::fake_gemini::{self, FakeGemini};
use crate::support::fake_http::{FakeServer, Reply, Request};
use crate::support::fake_laya::healthy;
use crate::support::{self, McpClient, TestEnv, stderr, stdout};

const KEY: &str = "sk-laya-from-the-shell";

/// A client `scripts/test` installed, named by `var`; required under CI, else a loud skip.
fn find(test: &str, var: &str, default: &str) -> Option<PathBuf> {
    support::test_dep(test, var, default)
}

/// The user's shell: system1 installed in the scratch install dir, its config elsewhere, a Laya key
/// in the environment, and a Laya that answers only with that key.
struct Shell {
    env: TestEnv,
    laya: FakeServer,
    vars: Vec<(String, String)>,
}

fn shell() -> Shell {
    let laya = FakeServer::start(|r: &Request| {
        if r.path == "/v1/systemone" && r.header("authorization") != Some(&format!("Bearer {KEY}")) {
            return Reply::json(401, &json!({"detail": "Invalid or missing API key"}));
        }
        healthy(r)
    });
    let env = TestEnv::new();
    // The default location: what the server reads when SYSTEM1_CONFIG does not reach it.
    env.write_config("[gateway]\nprovider = \"mock\"\n");
    let elsewhere = env.root.join("elsewhere/system1.toml");
    support::write(
        &elsewhere,
        &format!("[gateway]\nprovider = \"laya\"\n[providers.laya]\nendpoint = \"{}\"\n", laya.url()),
    );
    support::copy_executable(Path::new(support::BIN), &env.install_dir.join("bin/system1"));
    let vars = vec![
        ("SYSTEM1_CONFIG".to_string(), elsewhere.display().to_string()),
        ("SYSTEM1_INSTALL_DIR".to_string(), env.install_dir.display().to_string()),
        ("SYSTEM1_LAYA_API_KEY".to_string(), KEY.to_string()),
    ];
    Shell { env, laya, vars }
}

impl Shell {
    /// `system1 mcp-config <client>` run in this shell: the entry on stdout.
    fn mcp_config(&self, client: &str) -> String {
        let mut cmd = self.env.command(&["mcp-config", client]);
        cmd.envs(self.vars.iter().cloned());
        let out = cmd.output().expect("run mcp-config");
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    }

    /// `program` started from this shell: only its variables, the scratch HOME and PATH.
    fn client(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.env.home)
            .env("LANG", "C.UTF-8")
            .envs(self.vars.iter().cloned())
            .current_dir(&self.env.root);
        cmd
    }

    fn keyed_calls(&self) -> Vec<Option<String>> {
        self.laya.requests_to("/v1/systemone").iter().map(|r| r.header("authorization").map(String::from)).collect()
    }
}

/// Waits for `child` at most `limit`, then kills it; the output either way.
fn output_within(mut cmd: Command, limit: Duration) -> std::process::Output {
    let mut child =
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn client");
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("client output")
}

#[test]
fn gemini_cli_calls_decide_with_wait_for_previous_and_gets_a_decision() {
    let Some(gemini) =
        find("the Gemini CLI test", "SYSTEM1_TEST_GEMINI", ".test-deps/gemini-cli-0.61.0/node_modules/.bin/gemini")
    else {
        return;
    };
    let sh = shell();
    let mut settings: Value = serde_json::from_str(&sh.mcp_config("gemini")).expect("the entry is JSON");
    assert_eq!(settings["mcpServers"]["system1"]["trust"], true, "{settings}");
    // The user's own settings beside the pasted entry: an API key sign-in and no usage statistics.
    settings["security"]["auth"] = json!({"selectedType": "gemini-api-key"});
    settings["privacy"] = json!({"usageStatisticsEnabled": false});
    settings["general"] = json!({"enableAutoUpdate": false, "enableAutoUpdateNotification": false});
    support::write(&sh.env.home.join(".gemini/settings.json"), &settings.to_string());

    let api = FakeGemini::start();
    api.script(|request| {
        if let Some(answer) = fake_gemini::function_responses(request).first() {
            return vec![fake_gemini::text(&format!("tool said: {answer}"))];
        }
        let decide = fake_gemini::declarations(request)
            .into_iter()
            .filter_map(|d| d["name"].as_str().map(String::from))
            .find(|n| n.ends_with("system1_decide"));
        match decide {
            // As Gemini's models do when its system prompt asks them to order their calls.
            Some(name) => vec![fake_gemini::function_call(
                &name,
                json!({"question": "Ship the release?", "options": ["ship", "hold"], "wait_for_previous": true}),
            )],
            None => vec![fake_gemini::text("no system1 tool was offered")],
        }
    });
    let mut cmd = sh.client(&gemini);
    cmd.env("GEMINI_API_KEY", "fake-gemini-key").env("GOOGLE_GEMINI_BASE_URL", api.base_url()).args([
        "-p",
        "Should we ship the release?",
        "-m",
        "gemini-2.5-flash",
        "-o",
        "json",
        "--skip-trust",
    ]);
    let out = output_within(cmd, Duration::from_secs(180));
    assert!(out.status.success(), "gemini failed:\n{}\n{}", stdout(&out), stderr(&out));
    let result: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));

    let requests = api.requests();
    let offered = requests
        .iter()
        .flat_map(|(_, body)| fake_gemini::declarations(body))
        .find(|d| d["name"].as_str().is_some_and(|n| n.ends_with("system1_decide")))
        .unwrap_or_else(|| panic!("system1_decide was never offered: {requests:?}"));
    let parameters = offered.get("parametersJsonSchema").or_else(|| offered.get("parameters")).expect("parameters");
    assert_eq!(parameters["properties"]["wait_for_previous"]["type"], "boolean", "Gemini adds it: {parameters}");

    let answered: Vec<Value> = requests.iter().flat_map(|(_, body)| fake_gemini::function_responses(body)).collect();
    assert_eq!(answered.len(), 1, "one tool call: {answered:?}");
    assert!(!answered[0].to_string().contains("invalid_request"), "refused: {}", answered[0]);
    let decided = decide_response(&answered[0]).unwrap_or_else(|| panic!("no decide response in {}", answered[0]));
    assert_eq!(
        (&decided["status"], &decided["decision"], &decided["provider"]),
        (&json!("decided"), &json!("hold"), &json!("laya")),
        "{decided}"
    );
    assert!(result["response"].as_str().is_some_and(|r| r.starts_with("tool said: ")), "{result}");
    assert_eq!(result["stats"]["tools"]["totalSuccess"], 1, "{result}");
    assert_eq!(sh.keyed_calls(), [Some(format!("Bearer {KEY}"))], "the key got through the redaction allowlist");
}

/// The decide response inside what a client made of a tool result: an object with a `status` and a
/// `request_id`, as it is or as JSON text in a string (Gemini CLI hands its model the text item,
/// wrapped in `<untrusted_context>` tags).
fn decide_response(v: &Value) -> Option<Value> {
    match v {
        Value::Object(m) if m.contains_key("status") && m.contains_key("request_id") => Some(v.clone()),
        Value::Object(m) => m.values().find_map(decide_response),
        Value::Array(items) => items.iter().find_map(decide_response),
        Value::String(s) => {
            let json = s.get(s.find('{')?..=s.rfind('}')?)?;
            serde_json::from_str::<Value>(json).ok().as_ref().and_then(decide_response)
        }
        _ => None,
    }
}

/// One `codex app-server` session: lists the MCP servers, starts a thread and calls decide on it.
fn codex_decide(codex: &Path, sh: &Shell) -> (Value, Value) {
    let mut cmd = sh.client(codex);
    cmd.arg("app-server");
    let mut c = McpClient::spawn(cmd);
    let init = c.request("initialize", json!({"clientInfo": {"name": "system1-tests", "version": "0"}}));
    assert!(init.get("result").is_some(), "{init}");
    c.send(&json!({"method": "initialized"}));
    let status = c.request("mcpServerStatus/list", json!({}));
    let thread = c.request("thread/start", json!({"ephemeral": true, "cwd": sh.env.root}));
    let thread_id =
        thread["result"]["thread"]["id"].as_str().unwrap_or_else(|| panic!("no thread: {thread}")).to_string();
    let call = c.request(
        "mcpServer/tool/call",
        json!({"server": "system1", "threadId": thread_id, "tool": "system1_decide",
               "arguments": {"question": "Ship the release?", "options": ["ship", "hold"]}}),
    );
    (status, call)
}

#[test]
fn codex_app_server_lists_the_tools_and_the_documented_entry_carries_the_settings() {
    let Some(codex) =
        find("the Codex CLI test", "SYSTEM1_TEST_CODEX", ".test-deps/codex-0.171.0/node_modules/.bin/codex")
    else {
        return;
    };
    let sh = shell();
    let codex_toml = sh.env.home.join(".codex/config.toml");
    let entry = sh.mcp_config("codex");
    support::write(&codex_toml, &entry);

    let (status, call) = codex_decide(&codex, &sh);
    let servers = status["result"]["data"].as_array().unwrap_or_else(|| panic!("{status}"));
    let system1 = servers.iter().find(|s| s["name"] == "system1").unwrap_or_else(|| panic!("{status}"));
    assert_eq!(system1["serverInfo"]["name"], "system1", "{system1}");
    let mut tools: Vec<&str> = system1["tools"].as_object().expect("tools").keys().map(String::as_str).collect();
    tools.sort_unstable();
    assert_eq!(tools, ["system1_capabilities", "system1_decide", "system1_health"]);
    let decided = &call["result"]["structuredContent"];
    assert_eq!(
        (&decided["status"], &decided["decision"], &decided["provider"]),
        (&json!("decided"), &json!("hold"), &json!("laya")),
        "{call}"
    );
    assert_eq!(call["result"]["isError"], false);
    assert_eq!(sh.keyed_calls(), [Some(format!("Bearer {KEY}"))]);

    // Each half of the entry is needed: without its env, Codex drops SYSTEM1_CONFIG and the server
    // reads the default config (the mock); without env_vars, it drops the key and Laya refuses.
    let bare: String = entry.lines().filter(|l| !l.starts_with("env")).map(|l| format!("{l}\n")).collect();
    support::write(&codex_toml, &bare);
    let (_, call) = codex_decide(&codex, &sh);
    assert_eq!(call["result"]["structuredContent"]["provider"], "mock", "{call}");
    let no_forward: String = entry.lines().filter(|l| !l.starts_with("env_vars")).map(|l| format!("{l}\n")).collect();
    support::write(&codex_toml, &no_forward);
    let (_, call) = codex_decide(&codex, &sh);
    let refused = &call["result"]["structuredContent"];
    assert_eq!(refused["error"]["code"], "provider_error", "{call}");
    assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("API key")), "{call}");
    assert_eq!(sh.keyed_calls().last(), Some(&None), "Laya was asked without a key");
}

#[test]
fn the_typescript_sdk_client_validates_every_result_against_its_output_schema() {
    let Some(modules) =
        find("the TypeScript SDK test", "SYSTEM1_TEST_TS_SDK", ".test-deps/mcp-sdk-1.32.2/node_modules")
    else {
        return;
    };
    let env = TestEnv::with_mock("");
    let script = format!("{}/tests/it/support/ts_sdk_client.mjs", env!("CARGO_MANIFEST_DIR"));
    let mut cmd = Command::new("node");
    cmd.arg(&script).arg(&modules).arg(support::BIN);
    for (k, v) in env.command(&[]).get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = output_within(cmd, Duration::from_secs(60));
    assert!(out.status.success(), "the TypeScript SDK client failed:\n{}\n{}", stdout(&out), stderr(&out));
    let summary: Value = serde_json::from_str(stdout(&out).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    assert_eq!(summary["protocol"], "2025-11-25");
    assert_eq!(summary["server"], format!("system1 {}", env!("CARGO_PKG_VERSION")));
    assert_eq!(summary["tools"], json!(["system1_decide", "system1_health", "system1_capabilities"]));
    let got: Vec<(String, bool, Value, Value)> = summary["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            (
                r["tool"].as_str().unwrap_or("").to_string(),
                r["isError"] == true,
                r["status"].clone(),
                r["decision"].clone(),
            )
        })
        .collect();
    let want = [
        ("system1_decide", false, json!("decided"), json!("ship")),
        ("system1_decide", false, json!("decided"), json!("yes")),
        ("system1_decide", false, json!("abstained"), Value::Null),
        ("system1_decide", true, json!("error"), Value::Null),
        ("system1_health", false, json!("ok"), Value::Null),
        ("system1_capabilities", false, Value::Null, Value::Null),
        ("system1_health", true, Value::Null, Value::Null),
    ];
    let want: Vec<(String, bool, Value, Value)> =
        want.into_iter().map(|(t, e, s, d)| (t.to_string(), e, s, d)).collect();
    assert_eq!(got, want);
    assert_eq!(
        summary["results"][6]["text"],
        "invalid_request: system1_health takes no arguments; unknown argument(s): verbose"
    );
}
