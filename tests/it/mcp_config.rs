//! `system1 mcp-config CLIENT` through the real binary: the entry names the installed binary by an
//! absolute path, carries the shell's settings as each client can take them, and says on stderr
//! where it goes. The entries at work in the real clients are in `clients_real.rs`.

use serde_json::{Value, json};

use crate::support::{TestEnv, stderr, stdout};

#[test]
fn the_entry_names_the_installed_binary_by_its_absolute_path() {
    let env = TestEnv::new();
    // The default install dir, under HOME: no `~` in the entry, which no client would expand.
    let mut cmd = env.command(&["mcp-config", "cursor"]);
    cmd.env_remove("SYSTEM1_INSTALL_DIR");
    let out = cmd.output().expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    let entry: Value = serde_json::from_str(&stdout(&out)).expect("stdout is the JSON entry alone");
    let binary = env.home.join(".system1-gateway/bin/system1");
    assert_eq!(
        entry,
        json!({"mcpServers": {"system1": {"command": binary.display().to_string(), "args": ["mcp"],
            "env": {"SYSTEM1_CONFIG": env.config.display().to_string()}}}})
    );
    let notes = stderr(&out);
    assert!(notes.starts_with("# Cursor: merge into ~/.cursor/mcp.json\n"), "{notes}");
    // The command names the binary that runs, as none is installed (and `system1` is not on PATH).
    assert!(
        notes.contains(&format!(
            "note: {} is not installed yet: run `{} install` first",
            binary.display(),
            crate::support::BIN
        )),
        "{notes}"
    );

    // A relative install dir becomes absolute too.
    let mut cmd = env.command(&["mcp-config", "codex"]);
    cmd.env("SYSTEM1_INSTALL_DIR", "inst").current_dir(&env.root);
    let out = cmd.output().expect("run");
    let entry: toml::Table = stdout(&out).parse().expect("stdout is the TOML entry alone");
    let inst = env.root.join("inst");
    assert_eq!(entry["mcp_servers"]["system1"]["command"].as_str(), Some(inst.join("bin/system1").to_str().unwrap()));
    assert_eq!(entry["mcp_servers"]["system1"]["env"]["SYSTEM1_INSTALL_DIR"].as_str(), inst.to_str());
}

#[test]
fn a_secret_is_passed_by_name_or_not_at_all() {
    let mut env = TestEnv::new();
    env.set_env("SYSTEM1_LAYA_API_KEY", "sk-never-printed");
    env.set_env("SYSTEM1_TIMEOUT_S", "2");
    for client in ["claude-desktop", "cursor", "windsurf", "vscode", "gemini", "codex"] {
        let out = env.run(&["mcp-config", client], "");
        assert!(out.status.success(), "{client}: {}", stderr(&out));
        let (entry, notes) = (stdout(&out), stderr(&out));
        assert!(!entry.contains("sk-never-printed") && !notes.contains("sk-never-printed"), "{client}: {entry}");
        let by_name = client == "gemini" || client == "codex";
        assert_eq!(entry.contains("SYSTEM1_LAYA_API_KEY"), by_name, "{client}: {entry}");
        assert_eq!(
            notes.contains("note: SYSTEM1_LAYA_API_KEY is not written: it is a secret"),
            !by_name,
            "{client}: {notes}"
        );
        assert!(entry.contains("SYSTEM1_TIMEOUT_S"), "{client}: a setting goes by value or by name: {entry}");
    }
    let gemini: Value = serde_json::from_str(&stdout(&env.run(&["mcp-config", "gemini"], ""))).expect("JSON");
    assert_eq!(
        gemini["security"]["environmentVariableRedaction"]["allowed"],
        json!(["SYSTEM1_LAYA_API_KEY", "SYSTEM1_TIMEOUT_S"])
    );
}

#[test]
fn without_a_client_it_lists_them_and_an_unknown_one_is_a_usage_error() {
    let env = TestEnv::new();
    let out = env.run(&["mcp-config"], "");
    assert!(out.status.success());
    let list = stdout(&out);
    for id in ["claude-desktop", "cursor", "windsurf", "vscode", "gemini", "codex"] {
        assert!(list.lines().any(|l| l.trim_start().starts_with(&format!("{id} "))), "{id} missing: {list}");
    }
    let out = env.run(&["mcp-config", "emacs"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("invalid value 'emacs'"), "{}", stderr(&out));
}
