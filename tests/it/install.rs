//! `system1 install` / `uninstall` and the install scripts, in a scratch HOME. The binary really
//! copies itself, writes the config and runs `claude`; `claude`, `cargo` and `systemctl` are fakes
//! on PATH that record their argv (the real Claude Code CLI is exercised in e2e_claude.rs), and
//! the release download is served from 127.0.0.1.

#![cfg(unix)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support;
use crate::support::fake_http::FakeServer;
use crate::support::fakes::{
    FAKE_CARGO, FAKE_CLAUDE, FAKE_RUSTC_X86_64_GNU, FAKE_SYSTEMCTL, file_server, log_lines, script, sha256, tool_farm,
};
use crate::support::{BIN, TestEnv, stderr, stdout};

const REPO: &str = env!("CARGO_MANIFEST_DIR");
const VERSION: &str = env!("CARGO_PKG_VERSION");

struct Scratch {
    env: TestEnv,
    fakes: PathBuf,
    logs: PathBuf,
}

impl Scratch {
    /// A scratch HOME with a fake `systemctl`, and a fake `claude` unless `claude` is false.
    fn new(claude: bool) -> Self {
        let mut env = TestEnv::new();
        let fakes = env.root.join("fakebin");
        let logs = env.root.join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        script(&fakes, "systemctl", FAKE_SYSTEMCTL);
        if claude {
            script(&fakes, "claude", FAKE_CLAUDE);
        }
        let home = env.home.clone();
        env.set_env("FAKE_LOG_DIR", logs.to_str().unwrap());
        // Start-at-login folders resolve inside the scratch HOME whatever the caller's environment says.
        env.set_env("XDG_CONFIG_HOME", home.join(".config").to_str().unwrap());
        env.set_env("APPDATA", home.join("AppData/Roaming").to_str().unwrap());
        // With the fake claude, the rest of PATH follows it; without, PATH holds the fakes only so no
        // real `claude` can be found.
        let path = if claude {
            format!("{}:{}", fakes.display(), std::env::var("PATH").unwrap())
        } else {
            fakes.display().to_string()
        };
        env.set_env("PATH", &path);
        // No engine at the default endpoint, whatever runs on this machine: a port nobody serves.
        env.set_env("SYSTEM1_LAYA_ENDPOINT", "http://127.0.0.1:9");
        Scratch { env, fakes, logs }
    }

    fn bin(&self) -> PathBuf {
        self.env.install_dir.join("bin/system1")
    }

    fn claude_json(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(self.env.claude_dir.join(".claude.json")).expect(".claude.json written");
        serde_json::from_str(&text).unwrap()
    }

    fn claude_log(&self) -> Vec<String> {
        log_lines(&self.logs, "claude")
    }

    /// Runs `program args` with the scratch environment (as `TestEnv::command` sets it up).
    fn run(&self, program: &Path, args: &[&str]) -> Output {
        let mut cmd = Command::new(program);
        cmd.args(args);
        for (k, v) in self.env.command(&[]).get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd.output().expect("run program")
    }
}

fn ok(o: &Output) {
    assert!(o.status.success(), "failed ({}):\nstdout: {}\nstderr: {}", o.status, stdout(o), stderr(o));
}

fn same_bytes(a: &Path, b: &Path) -> bool {
    std::fs::read(a).unwrap() == std::fs::read(b).unwrap()
}

fn registered_line(s: &Scratch) -> Vec<String> {
    let server = &s.claude_json()["mcpServers"]["system1"];
    let mut line = vec![server["command"].as_str().unwrap().to_string()];
    line.extend(server["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()));
    line
}

#[test]
fn install_copies_the_binary_writes_an_abstaining_mock_config_and_registers() {
    let s = Scratch::new(true);
    let out = s.env.run(&["install"], "");
    ok(&out);
    let bin = s.bin();
    assert!(same_bytes(&bin, Path::new(BIN)), "installed binary differs from the running one");
    assert!(
        !std::fs::read_dir(s.env.install_dir.join("bin"))
            .unwrap()
            .any(|e| { e.unwrap().file_name().to_string_lossy().ends_with(".tmp") })
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&bin).unwrap().permissions().mode() & 0o111, 0o111);
    }

    // No engine answers in the scratch HOME: the config selects the mock, which abstains.
    let config = std::fs::read_to_string(&s.env.config).unwrap();
    let doc: toml::Table = config.parse().unwrap();
    assert_eq!(doc["gateway"]["provider"].as_str(), Some("mock"));
    assert_eq!(doc["providers"]["mock"]["fail"].as_str(), Some("abstain"));
    assert!(stdout(&out).contains("with the mock engine"), "{}", stdout(&out));
    let decided = s.run(&bin, &["decide", "--question", "Ship it?", "--json"]);
    assert_eq!(decided.status.code(), Some(4), "{}", stderr(&decided));
    let answer: serde_json::Value = serde_json::from_slice(&decided.stdout).unwrap();
    assert_eq!(answer["status"], "abstained");

    let expected = format!("mcp add --scope user --transport stdio system1 -- {} mcp", bin.display());
    assert_eq!(s.claude_log(), vec![expected]);
    assert_eq!(registered_line(&s), vec![bin.display().to_string(), "mcp".to_string()]);
    assert!(stdout(&out).contains("claude: registered system1"), "{}", stdout(&out));
    let hint = format!("other MCP clients (Codex, Gemini CLI, Cursor, ...): {} mcp-config CLIENT", bin.display());
    assert!(stdout(&out).contains(&hint), "{}", stdout(&out));
}

#[test]
fn install_twice_registers_once_and_replaces_a_registration_with_another_command() {
    let s = Scratch::new(true);
    ok(&s.env.run(&["install"], ""));
    // The installed binary re-installing itself changes nothing.
    let again = s.run(&s.bin(), &["install"]);
    ok(&again);
    assert!(stdout(&again).contains("binary: already running from"), "{}", stdout(&again));
    assert!(stdout(&again).contains("already registered"), "{}", stdout(&again));
    assert!(stdout(&again).contains("config: kept"), "{}", stdout(&again));
    assert_eq!(s.claude_log().len(), 1, "{:?}", s.claude_log());

    // Registered with another command line (an old Python gateway, say): removed, then re-added.
    let old = r#"{"mcpServers":{"system1":{"type":"stdio","command":"/opt/venv/bin/python","args":["-I","-m","system1_gateway"],"env":{}}}}"#;
    std::fs::write(s.env.claude_dir.join(".claude.json"), old).unwrap();
    let third = s.env.run(&["install"], "");
    ok(&third);
    assert!(stdout(&third).contains("was: /opt/venv/bin/python -I -m system1_gateway"), "{}", stdout(&third));
    let log = s.claude_log();
    assert_eq!(log.len(), 3, "{log:?}");
    assert_eq!(log[1], "mcp remove --scope user system1");
    assert!(log[2].starts_with("mcp add --scope user --transport stdio system1 -- "), "{log:?}");
    assert_eq!(registered_line(&s), vec![s.bin().display().to_string(), "mcp".to_string()]);
}

#[test]
fn install_reports_what_it_did_when_registration_fails() {
    let mut s = Scratch::new(true);
    s.env.set_env("FAKE_CLAUDE_FAIL", "mcp add");
    let out = s.env.run(&["install"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("installed ") && stdout(&out).contains("config: wrote"), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("failed on purpose") && err.contains("register by hand: claude mcp add"), "{err}");
    assert!(s.bin().exists());
}

#[test]
fn uninstall_goes_on_when_unregistering_fails_and_says_so() {
    let mut s = Scratch::new(true);
    ok(&s.env.run(&["install"], ""));
    s.env.set_env("FAKE_CLAUDE_FAIL", "mcp remove");
    let out = s.env.run(&["uninstall"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(!s.bin().exists(), "the binary stayed: {}", stdout(&out));
    assert!(stdout(&out).contains("removed "), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("uninstall incomplete") && err.contains("claude mcp remove --scope user system1"), "{err}");
}

#[test]
fn install_keeps_laya_in_the_config_when_laya_answers() {
    let mut s = Scratch::new(true);
    let health = s.env.root.join("health.json");
    support::write(&health, r#"{"status": "ok", "loaded": ["typed-decisions"], "device": "cpu"}"#);
    let laya = file_server(BTreeMap::from([("/health".to_string(), health)]));
    s.env.set_env("SYSTEM1_LAYA_ENDPOINT", &laya.url());
    let out = s.env.run(&["install"], "");
    ok(&out);
    assert_eq!(laya.paths(), vec!["/health".to_string()]);
    assert!(stdout(&out).contains("(engine: laya)"), "{}", stdout(&out));
    let config = std::fs::read_to_string(&s.env.config).unwrap();
    assert_eq!(config, std::fs::read_to_string(Path::new(REPO).join("config.example.toml")).unwrap());
}

#[test]
fn install_writes_the_local_engine_when_no_laya_answers_and_its_model_is_installed() {
    let Some(model) = crate::local_engine::model_dir() else { return };
    let s = Scratch::new(true);
    // Where `engine install local` puts the model (links to the real files: nothing is copied).
    let installed = s.env.install_dir.join("engines/local/all-MiniLM-L6-v2");
    std::fs::create_dir_all(&installed).unwrap();
    for f in ["config.json", "sentence_bert_config.json", "tokenizer.json", "model.safetensors"] {
        std::os::unix::fs::symlink(Path::new(&model).join(f), installed.join(f)).unwrap();
    }
    let out = s.env.run(&["install"], "");
    ok(&out);
    assert!(
        stdout(&out).contains("(engine: local, the installed all-MiniLM-L6-v2; laya did not answer: "),
        "{}",
        stdout(&out)
    );
    let config = std::fs::read_to_string(&s.env.config).unwrap();
    let doc: toml::Table = config.parse().unwrap();
    assert_eq!(doc["gateway"]["provider"].as_str(), Some("local"), "{config}");
    assert!(doc["providers"]["mock"].get("fail").and_then(|f| f.as_str()) != Some("abstain"), "{config}");
    // Only the provider line changed, with a comment saying why.
    let example = std::fs::read_to_string(Path::new(REPO).join("config.example.toml")).unwrap();
    let changed: Vec<&str> = config.lines().filter(|l| !example.lines().any(|e| e == *l)).collect();
    let settings: Vec<&&str> = changed.iter().filter(|l| !l.starts_with('#')).collect();
    assert!(settings.len() == 1 && settings[0].starts_with("provider = \"local\" "), "{changed:?}");

    // The installed binary decides with it.
    let decided = s.run(
        &s.bin(),
        &[
            "decide",
            "--json",
            "--question",
            "Which area?",
            "--option",
            "database schema",
            "--option",
            "user interface",
            "--context",
            r#"{"ticket": "add a shipped_at column to the orders table"}"#,
        ],
    );
    assert!(decided.status.success(), "{}", stderr(&decided));
    let answer: serde_json::Value = serde_json::from_slice(&decided.stdout).unwrap();
    assert_eq!(answer["status"], "decided", "{answer}");
    assert_eq!(answer["decision"], "database schema", "{answer}");
    assert_eq!(answer["provider"], "local", "{answer}");
}

#[test]
fn install_keeps_an_existing_config() {
    let s = Scratch::new(true);
    let mine = "[gateway]\nprovider = \"mock\"\ntimeout_s = 2.0\n";
    s.env.write_config(mine);
    let out = s.env.run(&["install"], "");
    ok(&out);
    assert_eq!(std::fs::read_to_string(&s.env.config).unwrap(), mine);
    assert!(stdout(&out).contains("config: kept"));
}

#[test]
fn install_without_claude_prints_the_command_for_sh_and_powershell() {
    let s = Scratch::new(false);
    let out = s.env.run(&["install"], "");
    ok(&out);
    let text = stdout(&out);
    let bin = s.bin().display().to_string();
    assert!(text.contains("`claude` is not on PATH"), "{text}");
    assert!(text.contains(&format!("claude mcp add --scope user --transport stdio system1 -- {bin} mcp")), "{text}");
    let powershell = format!("claude mcp add --scope user --transport stdio system1 '--' {bin} mcp");
    assert_eq!(text.contains(&powershell), cfg!(windows), "the PowerShell line only where there is PowerShell: {text}");
    assert!(!s.env.claude_dir.join(".claude.json").exists());
    assert!(s.bin().exists());
}

#[test]
fn install_with_no_register_prints_instead_of_registering() {
    let s = Scratch::new(true);
    let out = s.env.run(&["install", "--no-register"], "");
    ok(&out);
    assert!(stdout(&out).contains("--no-register"), "{}", stdout(&out));
    assert!(s.claude_log().is_empty());
}

/// Start-at-login entries as `system1 engine autostart` writes them on Linux, plus a neighbour
/// that is not ours.
fn plant_autostart(s: &Scratch) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let units = s.env.home.join(".config/systemd/user");
    let ours = vec![units.join("system1-laya.service"), units.join("system1-von.service")];
    let theirs = vec![units.join("other.service")];
    for p in ours.iter().chain(&theirs) {
        support::write(p, "[Unit]\n");
    }
    (ours, theirs)
}

#[test]
fn uninstall_unregisters_removes_the_binary_and_start_at_login_entries_and_keeps_the_data() {
    let s = Scratch::new(true);
    ok(&s.env.run(&["install"], ""));
    support::write(&s.env.install_dir.join("logs/routing.jsonl"), "{}\n");
    support::write(&s.env.install_dir.join("engines/laya/start.sh"), "#!/bin/sh\n");
    let (ours, theirs) = plant_autostart(&s);

    let out = s.run(&s.bin(), &["uninstall"]);
    ok(&out);
    assert_eq!(s.claude_log().last().map(String::as_str), Some("mcp remove --scope user system1"));
    assert!(s.claude_json()["mcpServers"].get("system1").is_none());
    assert!(!s.bin().exists());
    assert!(!s.env.install_dir.join("bin").exists());
    for p in &ours {
        assert!(!p.exists(), "{} left behind", p.display());
    }
    for p in &theirs {
        assert!(p.exists(), "{} removed but is not ours", p.display());
    }
    let systemctl = log_lines(&s.logs, "systemctl");
    assert!(systemctl.contains(&"--user disable system1-laya.service".to_string()), "{systemctl:?}");
    assert!(systemctl.contains(&"--user disable system1-von.service".to_string()), "{systemctl:?}");
    assert!(systemctl.contains(&"--user daemon-reload".to_string()), "{systemctl:?}");
    // Kept without --purge.
    assert!(s.env.config.exists());
    assert!(s.env.install_dir.join("logs/routing.jsonl").exists());
    assert!(s.env.install_dir.join("engines/laya/start.sh").exists());

    // No plugin recorded: nothing said about one.
    assert!(!stdout(&out).contains("is still installed"), "{}", stdout(&out));

    // A second uninstall finds nothing to do and says so; a plugin Claude Code still records is named.
    support::write(
        &s.env.claude_dir.join("plugins/installed_plugins.json"),
        r#"{"version": 2, "plugins": {"system1@system1-gateway": [{"scope": "user", "installPath": "/x", "version": "0.1.0"}]}}"#,
    );
    let again = s.env.run(&["uninstall"], "");
    assert!(
        stdout(&again).contains(
            "claude: the plugin system1@system1-gateway is still installed (its hooks now do nothing); remove it in Claude Code with `/plugin uninstall system1@system1-gateway`"
        ),
        "{}",
        stdout(&again)
    );
    ok(&again);
    assert!(stdout(&again).contains("system1 was not registered"), "{}", stdout(&again));
    assert_eq!(s.claude_log().iter().filter(|l| l.contains("remove")).count(), 1);
}

#[test]
fn uninstall_purge_removes_the_config_engines_and_logs() {
    let s = Scratch::new(true);
    ok(&s.env.run(&["install"], ""));
    support::write(&s.env.install_dir.join("logs/routing.jsonl"), "{}\n");
    support::write(&s.env.install_dir.join("engines/laya/start.sh"), "#!/bin/sh\n");
    support::write(&s.env.install_dir.join("calibration.json"), "{}");
    // The session-start hook's note that it said "no real engine" once.
    support::write(&s.env.install_dir.join("told-no-engine"), "");
    let out = s.run(&s.bin(), &["uninstall", "--purge"]);
    ok(&out);
    assert!(!s.env.install_dir.exists(), "install dir left: {}", stdout(&out));
    assert!(!s.env.config.exists());
    assert!(!s.env.config.parent().unwrap().exists(), "empty config folder left");
    assert!(s.claude_json()["mcpServers"].get("system1").is_none());
}

/// An install dir other programs share (`SYSTEM1_INSTALL_DIR=~/.local`, or the home itself): purge
/// removes system1's own entries there and nothing else, and keeps the folder, saying why.
#[test]
fn uninstall_purge_in_a_shared_folder_removes_only_what_system1_created() {
    for shared in [".local", ""] {
        let mut s = Scratch::new(true);
        let dir = if shared.is_empty() { s.env.home.clone() } else { s.env.home.join(shared) };
        s.env.install_dir = dir.clone();
        s.env.set_env("SYSTEM1_INSTALL_DIR", dir.to_str().unwrap());
        let others =
            ["bin/other-tool", "share/app/data.db", "state/x", "logs/app.log", "engines/mine/keep", "notes.txt"];
        for other in others {
            support::write(&dir.join(other), "someone else's\n");
        }
        ok(&s.env.run(&["install"], ""));
        assert!(s.bin().exists());
        for own in [
            "logs/routing.jsonl",
            "logs/decisions-2026-11-30.jsonl",
            "engines/laya/start.sh",
            "engines/local/m/model.safetensors",
        ] {
            support::write(&dir.join(own), "{}\n");
        }
        support::write(&dir.join("calibration.json"), "{}");
        support::write(&dir.join("paused"), "paused at 2026-11-30T00:00:00Z\n");
        let out = s.run(&s.bin(), &["uninstall", "--purge"]);
        ok(&out);
        for other in others {
            assert_eq!(
                std::fs::read_to_string(dir.join(other)).ok().as_deref(),
                Some("someone else's\n"),
                "{other} deleted from {shared:?}: {}",
                stdout(&out)
            );
        }
        for own in [
            "bin/system1",
            "logs/routing.jsonl",
            "logs/decisions-2026-11-30.jsonl",
            "engines/laya",
            "engines/local",
            "calibration.json",
            "paused",
        ] {
            assert!(!dir.join(own).exists(), "{own} left in {shared:?}: {}", stdout(&out));
        }
        assert!(
            stdout(&out).contains(&format!("kept {}: it holds files system1 did not create", dir.display())),
            "{}",
            stdout(&out)
        );
        assert!(!s.env.config.exists());
    }
}

// ---- the scripts ----

fn install_sh() -> PathBuf {
    Path::new(REPO).join("scripts/install.sh")
}

#[test]
fn install_sh_builds_with_cargo_when_present_and_installs_the_build() {
    let mut s = Scratch::new(true);
    script(&s.fakes, "cargo", FAKE_CARGO);
    let target = s.env.root.join("target");
    s.env.set_env("CARGO_TARGET_DIR", target.to_str().unwrap());
    s.env.set_env("FAKE_SYSTEM1", BIN);
    // The dynamic build, asked for: the same on every host. (scripts/test sets the static flag for
    // its own build: the fake records what install.sh passes, not that.)
    s.env.set_env("SYSTEM1_STATIC", "0");
    s.env.set_env("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS", "");
    let out = s.run(Path::new("sh"), &[install_sh().to_str().unwrap()]);
    ok(&out);
    assert_eq!(log_lines(&s.logs, "cargo"), vec![format!("{REPO}|build --release --locked|")]);
    assert!(same_bytes(&s.bin(), &target.join("release/system1")));
    assert_eq!(registered_line(&s), vec![s.bin().display().to_string(), "mcp".to_string()]);
    assert!(s.env.config.exists());
    assert!(stdout(&out).contains("smoke: ok"), "the installed server is checked: {}", stdout(&out));
}

#[test]
fn install_sh_builds_the_fastest_starting_static_pie_this_machine_can_make() {
    // `rustc` and `cc` answer as on an x86_64 glibc host: with Rust's musl target and a musl C
    // compiler, then with glibc's static libc.a only, then with neither.
    let musl = "x86_64-unknown-linux-musl";
    let gnu = "x86_64-unknown-linux-gnu";
    for (has_musl, libc_a, expect) in [
        (true, "/usr/lib/x86_64-linux-gnu/libc.a", Some(musl)),
        (false, "/usr/lib/x86_64-linux-gnu/libc.a", Some(gnu)),
        (false, "libc.a", None),
    ] {
        let mut s = Scratch::new(true);
        script(&s.fakes, "cargo", FAKE_CARGO);
        script(&s.fakes, "rustc", FAKE_RUSTC_X86_64_GNU);
        script(&s.fakes, "cc", &format!("#!/bin/sh\n[ \"$1\" = -print-file-name=libc.a ] && echo {libc_a}\n"));
        let sysroot = s.env.root.join("sysroot");
        std::fs::create_dir_all(sysroot.join(format!("lib/rustlib/{gnu}"))).unwrap();
        if has_musl {
            std::fs::create_dir_all(sysroot.join(format!("lib/rustlib/{musl}"))).unwrap();
            script(&s.fakes, "musl-gcc", "#!/bin/sh\nexit 0\n");
        }
        s.env.set_env("FAKE_SYSROOT", sysroot.to_str().unwrap());
        let target = s.env.root.join("target");
        s.env.set_env("CARGO_TARGET_DIR", target.to_str().unwrap());
        s.env.set_env("FAKE_SYSTEM1", BIN);
        for var in ["RUSTFLAGS", "CC", "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS"] {
            s.env.set_env(var, "");
        }
        let out = s.run(Path::new("sh"), &[install_sh().to_str().unwrap()]);
        ok(&out);
        let (args, built) = match expect {
            Some(t) if t == musl => (format!("--target {t}|"), target.join(format!("{t}/release/system1"))),
            Some(t) => {
                (format!("--target {t}|-C target-feature=+crt-static"), target.join(format!("{t}/release/system1")))
            }
            None => ("|".to_string(), target.join("release/system1")),
        };
        let args = format!("{REPO}|build --release --locked {args}").replace("--locked |", "--locked|");
        assert_eq!(log_lines(&s.logs, "cargo"), vec![args], "musl {has_musl}, libc.a at {libc_a}");
        assert!(same_bytes(&s.bin(), &built), "the build installed");
    }
}

#[test]
fn install_sh_fails_when_the_installed_server_does_not_check_out() {
    let mut s = Scratch::new(true);
    script(&s.fakes, "cargo", FAKE_CARGO);
    let target = s.env.root.join("target");
    s.env.set_env("CARGO_TARGET_DIR", target.to_str().unwrap());
    s.env.set_env("FAKE_SYSTEM1", BIN);
    // A config the user already has is kept, so the server it runs reports `down`.
    s.env.write_config("[gateway]\nprovider = \"nope\"\n");
    let out = s.run(Path::new("sh"), &[install_sh().to_str().unwrap()]);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(s.bin().exists(), "the binary is installed all the same");
    assert!(stderr(&out).contains("server check failed") && stderr(&out).contains("doctor"), "{}", stderr(&out));
}

/// The release layout install.sh expects, served from 127.0.0.1; `sums` is the SHA256SUMS text.
fn release_server(sums: &str, dir: &Path) -> (FakeServer, String) {
    let asset = format!("system1-{VERSION}-{}-unknown-linux-musl", std::env::consts::ARCH);
    let sums_file = dir.join("SHA256SUMS");
    support::write(&sums_file, &sums.replace("{asset}", &asset));
    let tag = format!("/system1--v{VERSION}");
    let files =
        BTreeMap::from([(format!("{tag}/SHA256SUMS"), sums_file), (format!("{tag}/{asset}"), PathBuf::from(BIN))]);
    (file_server(files), asset)
}

/// A scratch HOME whose PATH has the tools install.sh needs and the fake claude, but no cargo.
fn without_cargo(base_url: &str) -> Scratch {
    let mut s = Scratch::new(true);
    let farm = tool_farm(
        &s.env.root.join("tools"),
        &[
            "sh",
            "uname",
            "sed",
            "head",
            "mktemp",
            "curl",
            "wget",
            "sha256sum",
            "shasum",
            "awk",
            "chmod",
            "rm",
            "dirname",
            "grep",
            "printf",
            "mkdir",
        ],
    );
    s.env.set_env("PATH", &format!("{}:{}", s.fakes.display(), farm.display()));
    s.env.set_env("SYSTEM1_RELEASE_BASE_URL", base_url);
    s
}

#[test]
#[cfg(target_os = "linux")]
fn install_sh_downloads_verifies_and_installs_without_cargo() {
    let dir = TestEnv::new();
    let (server, asset) =
        release_server(&format!("{}  {{asset}}\n0000  other-file\n", sha256(Path::new(BIN))), &dir.root);
    let s = without_cargo(&server.url());
    let out = s.run(Path::new("/bin/sh"), &[install_sh().to_str().unwrap()]);
    ok(&out);
    assert!(stdout(&out).contains("verified SHA-256"), "{}", stdout(&out));
    let tag = format!("/system1--v{VERSION}");
    assert_eq!(server.paths(), vec![format!("{tag}/SHA256SUMS"), format!("{tag}/{asset}")]);
    assert!(same_bytes(&s.bin(), Path::new(BIN)));
    assert_eq!(registered_line(&s), vec![s.bin().display().to_string(), "mcp".to_string()]);
    assert!(s.env.config.exists());
    assert!(stdout(&out).contains("smoke: ok"), "the installed server is checked: {}", stdout(&out));
}

#[test]
#[cfg(target_os = "linux")]
fn install_sh_installs_nothing_when_the_checksum_does_not_match() {
    let dir = TestEnv::new();
    let wrong = "ab".repeat(32);
    let (server, asset) = release_server(&format!("{wrong}  {{asset}}\n"), &dir.root);
    let s = without_cargo(&server.url());
    let out = s.run(Path::new("/bin/sh"), &[install_sh().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains(&format!("checksum mismatch for {asset}")) && err.contains("nothing was installed"), "{err}");
    assert_eq!(server.paths().len(), 2);
    assert!(!s.env.install_dir.exists());
    assert!(!s.env.config.exists());
    assert!(s.claude_log().is_empty());
}

#[test]
fn uninstall_sh_runs_the_installed_binary_and_passes_purge() {
    let s = Scratch::new(true);
    ok(&s.env.run(&["install"], ""));
    let script = Path::new(REPO).join("scripts/uninstall.sh");
    let out = s.run(Path::new("sh"), &[script.to_str().unwrap(), "--purge"]);
    ok(&out);
    assert!(!s.env.install_dir.exists());
    assert!(!s.env.config.exists());
    assert_eq!(s.claude_log().last().map(String::as_str), Some("mcp remove --scope user system1"));
}

/// uninstall.sh when the binary is gone already: `--purge` removes what system1 keeps in the
/// install dir (the same entries `system1 uninstall --purge` removes) and the config with its
/// emptied folder, and leaves another program's files and the install dir that holds them.
#[test]
fn uninstall_sh_without_the_binary_purges_only_system1s_own_files() {
    let s = Scratch::new(true);
    ok(&s.env.run(&["install"], ""));
    std::fs::remove_file(s.bin()).unwrap();
    let dir = s.env.install_dir.clone();
    for (own, text) in [
        ("logs/routing.jsonl", "{}\n"),
        ("logs/decisions-2026-12-07.jsonl", "{}\n"),
        ("engines/local/model.safetensors", "weights"),
        ("calibration.json", "{}"),
        ("paused", ""),
    ] {
        support::write(&dir.join(own), text);
    }
    support::write(&dir.join("logs/other-tool.log"), "not system1's");
    support::write(&dir.join("tools/keep.txt"), "not system1's");
    let script = Path::new(REPO).join("scripts/uninstall.sh");
    let out = s.run(Path::new("sh"), &[script.to_str().unwrap(), "--purge"]);
    ok(&out);
    let text = stdout(&out);
    assert!(dir.join("tools/keep.txt").exists() && dir.join("logs/other-tool.log").exists(), "{text}");
    for gone in
        ["logs/routing.jsonl", "logs/decisions-2026-12-07.jsonl", "engines", "calibration.json", "paused", "bin"]
    {
        assert!(!dir.join(gone).exists(), "{gone}: {text}");
    }
    assert!(text.contains(&format!("left {}: it holds files that are not system1's", dir.display())), "{text}");
    assert!(!s.env.config.exists() && !s.env.config.parent().unwrap().exists(), "config and its folder: {text}");
    assert_eq!(s.claude_log().last().map(String::as_str), Some("mcp remove --scope user system1"));
}

/// `system1 uninstall` takes out the status line it set; a settings file that held nothing else
/// goes with it instead of staying behind as `{}`.
#[test]
fn uninstall_leaves_no_empty_settings_file() {
    let s = Scratch::new(true);
    ok(&s.env.run(&["install"], ""));
    let settings = s.env.claude_dir.join("settings.json");
    ok(&s.run(&s.bin(), &["statusline", "--install"]));
    assert!(settings.exists());
    ok(&s.env.run(&["uninstall", "--purge"], ""));
    assert!(!settings.exists(), "{:?}", std::fs::read_to_string(&settings));
}

#[test]
fn release_workflow_builds_every_asset_the_install_scripts_download() {
    let read = |rel: &str| std::fs::read_to_string(Path::new(REPO).join(rel)).unwrap();
    let workflow = read(".github/workflows/release.yml");
    let (sh, ps1) = (read("scripts/install.sh"), read("scripts/install.ps1"));
    assert!(workflow.contains(r#"tags: ["system1--v*"]"#), "release tag pattern");
    assert!(sh.contains("/system1--v$version") && ps1.contains("/system1--v$version"), "scripts use the release tag");
    // Asset names: system1-<version>-<target><ext>, and SHA256SUMS beside them.
    assert!(workflow.contains(r#"dist/system1-${VERSION}-${{ matrix.target }}${{ matrix.ext }}"#));
    assert!(workflow.contains("sha256sum system1-* > SHA256SUMS"));
    assert!(sh.contains("asset=system1-$version-$cpu-$platform") && sh.contains("$url/SHA256SUMS"));
    assert!(
        ps1.contains(r#"$asset = "system1-$version-x86_64-pc-windows-msvc.exe""#) && ps1.contains("$url/SHA256SUMS")
    );
    for (cpu, platform) in [
        ("x86_64", "unknown-linux-musl"),
        ("aarch64", "unknown-linux-musl"),
        ("x86_64", "apple-darwin"),
        ("aarch64", "apple-darwin"),
    ] {
        assert!(
            sh.contains(&format!("cpu={cpu}")) && sh.contains(&format!("platform={platform}")),
            "install.sh: {cpu} {platform}"
        );
        assert!(
            workflow.contains(&format!("target: {cpu}-{platform}, ext: \"\"")),
            "release.yml builds {cpu}-{platform}"
        );
    }
    assert!(workflow.contains(r#"target: x86_64-pc-windows-msvc, ext: ".exe""#));
}

// ---- the first hour (issue 16) ----

#[test]
fn install_says_how_to_run_the_binary_it_left_off_path() {
    let s = Scratch::new(true);
    let out = s.env.run(&["install"], "");
    ok(&out);
    let text = stdout(&out);
    assert!(
        text.contains(
            "PATH: system1 is not on PATH (install leaves PATH alone): run it as ~/.system1-gateway/bin/system1"
        ),
        "{text}"
    );
    assert!(text.contains("export PATH=\"$HOME/.system1-gateway/bin:$PATH\""), "how to put it on PATH: {text}");
    assert!(text.contains("removing the line undoes it"), "{text}");
    // Every command printed runs as printed: the binary by its path, not a bare `system1`.
    assert!(text.contains("`~/.system1-gateway/bin/system1 engine install local`"), "{text}");
    // Once that folder is on PATH, `system1` is enough and nothing is said about PATH.
    let mut s = s;
    let path = format!("{}:{}", s.env.install_dir.join("bin").display(), std::env::var("PATH").unwrap());
    s.env.set_env("PATH", &path);
    let text = stdout(&s.run(&s.bin(), &["install"]));
    assert!(!text.contains("PATH: system1 is not on PATH"), "{text}");
    let text = stdout(&s.run(&s.bin(), &["toggle", "status"]));
    assert!(!text.contains(".system1-gateway/bin/system1"), "bare `system1` once it is on PATH: {text}");
}

/// cargo as far as install.sh can tell: it builds where the target dir and --target say, and
/// finds a binary already there up to date (real cargo also checks the sources; the checkout here
/// does not change between the runs).
const FAKE_CARGO_FRESH: &str = r#"#!/bin/sh
target=${CARGO_TARGET_DIR:-target}
out="$target/release"
for a in "$@"; do case $prev in --target) out="$target/$a/release" ;; esac; prev=$a; done
if [ -f "$out/system1" ]; then state=fresh; else state=built; mkdir -p "$out" && cp "$FAKE_SYSTEM1" "$out/system1"; fi
printf '%s|%s|%s\n' "$state" "$*" "$CARGO_TARGET_DIR" >> "$FAKE_LOG_DIR/cargo.log"
"#;

/// README's "Try it" builds with `install.sh --build-only`; the install after it finds that build
/// up to date where it looks, so the first hour has one build.
#[test]
fn install_sh_build_only_builds_where_the_install_then_finds_it_up_to_date() {
    let readme = std::fs::read_to_string(Path::new(REPO).join("README.md")).unwrap();
    let try_it = readme.split("## Try it").nth(1).and_then(|t| t.split("\n## ").next()).unwrap_or_default();
    assert!(
        try_it.contains("sh scripts/install.sh --build-only") && try_it.contains("~/.system1-gateway/build/system1"),
        "README's Try it builds where install.sh looks: {try_it}"
    );
    let mut s = Scratch::new(true);
    script(&s.fakes, "cargo", FAKE_CARGO_FRESH);
    s.env.set_env("FAKE_SYSTEM1", BIN);
    s.env.set_env("SYSTEM1_STATIC", "0");
    let build = s.env.install_dir.join("build");
    let out = s.run(Path::new("sh"), &[install_sh().to_str().unwrap(), "--build-only"]);
    ok(&out);
    let link = build.join("system1");
    assert!(same_bytes(&link, &build.join("release/system1")), "{} is the build", link.display());
    assert!(stdout(&out).contains(&format!("built {}", link.display())), "{}", stdout(&out));
    assert!(!s.bin().exists() && !s.env.config.exists(), "--build-only installs nothing");
    // The binary it links runs, as README's next lines run it.
    let version = s.run(&link, &["--version"]);
    assert!(stdout(&version).starts_with("system1 "), "{}", stdout(&version));

    let out = s.run(Path::new("sh"), &[install_sh().to_str().unwrap()]);
    ok(&out);
    let dir = build.display();
    assert_eq!(
        log_lines(&s.logs, "cargo"),
        vec![format!("built|build --release --locked|{dir}"), format!("fresh|build --release --locked|{dir}")]
    );
    assert!(same_bytes(&s.bin(), &build.join("release/system1")), "the one build installed");
}

/// PowerShell is not on this machine, so install.ps1 cannot run here; what can be checked is that it
/// takes the same switches as install.sh, spelled the PowerShell way, and gives `-BuildOnly` the
/// same meaning as `--build-only`: stop after the build with the binary at <build dir>/system1,
/// refuse without cargo; and that README's "Try it" and docs/install.md say it for Windows.
#[test]
fn install_ps1_takes_install_shs_switches_with_the_same_meaning() {
    let read = |rel: &str| std::fs::read_to_string(Path::new(REPO).join(rel)).unwrap();
    let (sh, ps1) = (read("scripts/install.sh"), read("scripts/install.ps1"));
    let params = ps1.lines().find(|l| l.starts_with("param(")).expect("install.ps1 has a param line");
    let switches: Vec<&str> = params.split("[switch]$").skip(1).map(|p| p.trim_end_matches([',', ' ', ')'])).collect();
    assert_eq!(switches, ["BuildOnly", "NoRegister"], "{params}");
    // Each switch is an install.sh option in kebab case: its own (--build-only) or `system1 install`'s.
    let kebab = |name: &str| {
        name.chars().fold(String::from("-"), |mut k, c| {
            if c.is_uppercase() {
                k.push('-');
            }
            k.push(c.to_ascii_lowercase());
            k
        })
    };
    assert!(sh.contains(&format!("\"${{1:-}}\" = {}", kebab("BuildOnly"))), "install.sh takes --build-only");
    let help = stdout(&TestEnv::new().run(&["install", "--help"], ""));
    assert!(help.contains(&kebab("NoRegister")), "system1 install takes --no-register: {help}");

    // Stops after the build, before installing, with the binary beside the build.
    let build = ps1.split("if ($method -eq 'build') {").nth(1).expect("the build branch");
    let stop = build.find("if ($BuildOnly) {").expect("-BuildOnly in the build branch");
    let install = build.find("Install-AndCheck $built").expect("the install of the build");
    assert!(stop < install, "-BuildOnly stops before the install");
    let branch = &build[stop..install];
    assert!(branch.contains("Join-Path $targetDir 'system1.exe'") && branch.contains("exit 0"), "{branch}");
    assert!(sh.contains("ln -sf \"$built\" \"$target_dir/system1\""), "install.sh links it there");
    // Both build into <install dir>/build unless CARGO_TARGET_DIR says otherwise.
    assert!(sh.contains("CARGO_TARGET_DIR:=${SYSTEM1_INSTALL_DIR:-$HOME/.system1-gateway}/build"));
    assert!(ps1.contains("$env:CARGO_TARGET_DIR = Join-Path $installDir 'build'"));
    // Without cargo, both refuse it with the same reason.
    let refusal = "builds with cargo, which is not on PATH (https://rustup.rs)";
    let download = ps1.split("if ($method -ne 'download')").nth(1).expect("the download branch");
    assert!(download.contains(&format!("if ($BuildOnly) {{ Fail \"-BuildOnly {refusal}")), "install.ps1 refuses");
    assert!(sh.contains(&format!("die \"--build-only {refusal}")), "install.sh refuses");

    let readme = read("README.md");
    let try_it = readme.split("## Try it").nth(1).and_then(|t| t.split("\n## ").next()).unwrap_or_default();
    assert!(
        try_it.contains(r"scripts\install.ps1 -BuildOnly") && try_it.contains(r"~\.system1-gateway\build\system1.exe"),
        "README's Try it says it for Windows: {try_it}"
    );
    assert!(read("docs/install.md").contains("`install.ps1 -BuildOnly`"), "docs/install.md says it");
}

#[test]
fn install_sh_builds_outside_the_clone_and_succeeds_with_the_engine_stopped() {
    // A clone with no target/: where install.sh has cargo put the build is what Claude Code copies
    // into its plugin cache when the plugin is installed from this folder.
    let mut s = Scratch::new(true);
    let clone = s.env.root.join("clone");
    std::fs::create_dir_all(clone.join("scripts")).unwrap();
    std::fs::copy(install_sh(), clone.join("scripts/install.sh")).unwrap();
    script(&s.fakes, "cargo", FAKE_CARGO);
    s.env.set_env("FAKE_SYSTEM1", BIN);
    s.env.set_env("SYSTEM1_STATIC", "0");
    // An upgrade with the engine stopped: the user's config selects a mock that is down.
    s.env.write_config("[gateway]\nprovider = \"mock\"\n[providers.mock]\ndown = true\n");
    let out = s.run(Path::new("sh"), &[clone.join("scripts/install.sh").to_str().unwrap()]);
    ok(&out);
    assert!(!clone.join("target").exists(), "the build went into the clone");
    let build = s.env.install_dir.join("build/release/system1");
    assert!(same_bytes(&s.bin(), &build), "the build, from {}, installed", build.display());
    assert!(stdout(&out).contains(&format!("into {}", s.env.install_dir.join("build").display())), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("warning: system1 is installed and its server works, but no engine answers"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("fix:       mock: "), "the engine's fix is printed: {}", stdout(&out));
}

#[test]
fn uninstall_tells_what_it_kept_and_how_to_delete_it_without_the_binary() {
    let s = Scratch::new(true);
    ok(&s.env.run(&["install"], ""));
    support::write(&s.env.install_dir.join("logs/routing.jsonl"), "{}\n");
    support::write(&s.env.install_dir.join("engines/laya/start.sh"), "#!/bin/sh\n");
    support::write(&s.env.install_dir.join("notes.txt"), "someone else's\n");
    let out = s.run(&s.bin(), &["uninstall"]);
    ok(&out);
    let text = stdout(&out);
    assert!(!text.contains("uninstall --purge"), "suggests the binary it just removed: {text}");
    let dir = s.env.install_dir.display();
    let expected = format!("to delete them too: rm -rf {} {dir}/engines/laya {dir}/logs", s.env.config.display());
    assert!(text.contains(&expected), "{text}");
    assert!(
        !text.contains(&format!("rm -rf {dir} ")) && !text.contains("notes.txt"),
        "only system1's own files: {text}"
    );
}

#[test]
fn autostart_off_says_what_holds_when_the_service_manager_fails() {
    let s = Scratch::new(true);
    script(&s.fakes, "systemctl", "#!/bin/sh\nexit 1\n");
    support::write(&s.env.install_dir.join("engines/laya/start.sh"), "#!/bin/sh\n");
    std::fs::set_permissions(
        s.env.install_dir.join("engines/laya/start.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let on = s.env.run(&["engine", "autostart", "on", "laya", "--platform", "linux"], "");
    assert!(stdout(&on).contains("the file still takes effect at the next login"), "{}", stdout(&on));
    let off = s.env.run(&["engine", "autostart", "off", "laya", "--platform", "linux"], "");
    let text = stdout(&off);
    assert!(!text.contains("takes effect at the next login"), "the file is gone: {text}");
    assert!(text.contains("so it no longer starts at login"), "{text}");
}

#[test]
fn uninstall_takes_out_system1s_status_line_and_no_other() {
    let s = Scratch::new(true);
    ok(&s.env.run(&["install"], ""));
    let settings = s.env.claude_dir.join("settings.json");
    support::write(&settings, r#"{"theme": "dark"}"#);
    ok(&s.run(&s.bin(), &["statusline", "--install"]));
    let set: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(set["statusLine"]["command"], format!("{} statusline", s.bin().display()));
    // The status line the installed binary was set to runs it.
    let line = s.run(&s.bin(), &["statusline"]);
    assert!(line.status.success() && line.stdout.is_empty(), "no input, no line");
    let out = s.env.run(&["uninstall"], "");
    ok(&out);
    assert!(stdout(&out).contains("statusLine: removed system1's from"), "{}", stdout(&out));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "{\n  \"theme\": \"dark\"\n}\n");

    // Another tool's status line stays through an uninstall.
    let s = Scratch::new(true);
    ok(&s.env.run(&["install"], ""));
    let theirs = r#"{"statusLine": {"type": "command", "command": "~/.claude/statusline.sh"}}"#;
    support::write(&s.env.claude_dir.join("settings.json"), theirs);
    let out = s.env.run(&["uninstall"], "");
    ok(&out);
    assert!(!stdout(&out).contains("statusLine"), "{}", stdout(&out));
    assert_eq!(std::fs::read_to_string(s.env.claude_dir.join("settings.json")).unwrap(), theirs);
}
