//! system1's private files on a machine shared with another user: the routing log (prompts), the
//! pause file and the decision tally are never written through a link planted under their name,
//! nor into a file another user owns; folders are created 0700 and files 0600 whatever the umask;
//! and `calibrate fit --apply` edits a config that is a link (a dotfile manager's) in its real
//! file, keeping its mode. A killed log rewrite's hidden copy is removed at the next session
//! start, and a password in an endpoint URL is never shown. Tests that need a second user run as
//! root (as here) and give the planted files to uid 4242; elsewhere those parts are skipped.

#![cfg(unix)]

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{BIN, TestEnv, stderr, stdout, write};
use serde_json::json;

/// The other user of the machine, by number: root can give files to a uid no account has.
const OTHER_UID: u32 = 4242;

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false)
}

/// A file of the other user's, with `text`, mode 0666 (so the test can tell it was not written).
fn victim(env: &TestEnv, text: &str) -> PathBuf {
    let path = env.root.join("other-user/precious.txt");
    write(&path, text);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    if is_root() {
        std::os::unix::fs::chown(path.parent().unwrap(), Some(OTHER_UID), Some(OTHER_UID)).unwrap();
        std::os::unix::fs::chown(&path, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
    }
    path
}

/// Plants a link at `at` to `target`, owned by the other user when the test can say so.
fn plant_link(at: &Path, target: &Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    symlink(target, at).unwrap();
    if is_root() {
        std::os::unix::fs::lchown(at, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

const PROMPT: &str = "Read the payment module and explain how refunds are computed for partial orders";

/// A scratch env that logs prompts from `repo`, with a log file for the hook's reasons.
fn logging_env() -> (TestEnv, PathBuf, PathBuf) {
    let env = TestEnv::new();
    let repo = env.root.join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let log_file = env.root.join("system1.log");
    env.write_config(&format!(
        "[gateway]\nprovider = \"mock\"\nlog_file = {:?}\n[routing]\nenabled = true\nlog_dirs = [{:?}]\n[providers.mock]\nanswers = {{ design = \"no\", review = \"no\" }}\n",
        log_file.display().to_string(),
        repo.display().to_string()
    ));
    (env, repo, log_file)
}

fn prompt_hook(env: &TestEnv, repo: &Path) -> Output {
    let payload = json!({"session_id": "s", "cwd": repo, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT});
    env.run(&["hook", "prompt"], &payload.to_string())
}

#[test]
fn toggle_off_refuses_a_planted_pause_link_and_leaves_its_target_alone() {
    let env = TestEnv::with_mock("");
    let target = victim(&env, "their data\n");
    std::fs::create_dir_all(&env.install_dir).unwrap();
    plant_link(&env.install_dir.join("paused"), &target);
    let out = env.run(&["toggle", "off"], "");
    assert_eq!(read(&target), "their data\n", "toggle off wrote through the link");
    assert!(!out.status.success(), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("paused") && err.contains("symbolic link"), "{err}");
}

#[test]
fn the_routing_log_is_written_neither_through_a_link_nor_into_another_users_file() {
    let (env, repo, log_file) = logging_env();
    let target = victim(&env, "their data\n");
    let log = env.install_dir.join("logs/routing.jsonl");
    plant_link(&log, &target);
    let out = prompt_hook(&env, &repo);
    assert!(out.status.success());
    assert_eq!(stderr(&out), "", "a hook stays quiet");
    assert_eq!(read(&target), "their data\n", "the prompt went through the planted link");
    assert!(read(&log_file).contains("symbolic link"), "the log file says why: {}", read(&log_file));

    // A regular file in its place that another user owns (and can read) gets no prompt either.
    if is_root() {
        std::fs::remove_file(&log).unwrap();
        write(&log, "");
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
        std::os::unix::fs::chown(&log, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
        let out = prompt_hook(&env, &repo);
        assert!(out.status.success());
        assert_eq!(read(&log), "", "the prompt went into another user's file");
        assert!(read(&log_file).contains("belongs to another user"), "{}", read(&log_file));
    }
}

#[test]
fn the_decision_tally_is_not_written_through_a_link() {
    let env = TestEnv::with_mock("");
    let target = victim(&env, "their data\n");
    let day = chrono_free_today();
    plant_link(&env.install_dir.join(format!("logs/decisions-{day}.jsonl")), &target);
    let (v, code) = env.decide_json(&["-q", "Ship it?"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(read(&target), "their data\n", "the tally went through the planted link");
}

/// Today's date in UTC as `date` prints it (the tally's file name).
fn chrono_free_today() -> String {
    let out = Command::new("date").args(["-u", "+%Y-%m-%d"]).output().expect("run date");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Runs the binary with the env's environment under `umask 000`.
fn run_with_umask_000(env: &TestEnv, args: &[&str], stdin: &str) -> Output {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg("umask 000 && exec \"$0\" \"$@\"").arg(BIN).args(args);
    for (k, v) in env.command(&[]).get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn sh");
    use std::io::Write;
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).mode() & 0o777
}

#[test]
fn under_umask_000_folders_are_0700_and_files_0600() {
    let (env, repo, _) = logging_env();
    let out = run_with_umask_000(&env, &["toggle", "off"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run_with_umask_000(&env, &["toggle", "on"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let payload = json!({"session_id": "s", "cwd": repo, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT});
    assert!(run_with_umask_000(&env, &["hook", "prompt"], &payload.to_string()).status.success());
    assert!(run_with_umask_000(&env, &["decide", "-q", "Ship it?"], "").status.success());
    let logs = env.install_dir.join("logs");
    assert_eq!(mode(&env.install_dir), 0o700);
    assert_eq!(mode(&logs), 0o700);
    for f in ["routing.jsonl", "routing.jsonl.lock", &format!("decisions-{}.jsonl", chrono_free_today())] {
        assert_eq!(mode(&logs.join(f)), 0o600, "{f}");
    }
    let out = run_with_umask_000(&env, &["toggle", "off"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mode(&env.install_dir.join("paused")), 0o600);

    // A fresh install under umask 000: the install dir, bin/, the config and its folder.
    let env = TestEnv::new();
    let mut with_path = env;
    with_path.set_env("PATH", "/nonexistent");
    with_path.set_env("SYSTEM1_LAYA_ENDPOINT", "http://127.0.0.1:9");
    let out = run_with_umask_000(&with_path, &["install"], "");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(mode(&with_path.install_dir), 0o700);
    assert_eq!(mode(&with_path.install_dir.join("bin")), 0o700);
    assert_eq!(mode(&with_path.install_dir.join("bin/system1")), 0o755);
    assert_eq!(mode(&with_path.config), 0o600);
    assert_eq!(mode(with_path.config.parent().unwrap()), 0o700);
}

/// A dotfile manager keeps the config in its repository and links it into place.
#[test]
fn calibrate_fit_apply_writes_through_a_symlinked_config_and_keeps_its_mode() {
    let env = TestEnv::new();
    let real = env.home.join("dotfiles/system1.toml");
    write(
        &real,
        "# mine\n[gateway]\nprovider = \"mock\"\n\n[routing]\nenabled = true\nmin_confidence = 0.6\n\n[providers.mock]\nconfidence = 0.7\nanswers = { read_only = \"yes\", design = \"no\", review = \"no\", specified = \"yes\" }\n",
    );
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::fs::create_dir_all(env.config.parent().unwrap()).unwrap();
    symlink(&real, &env.config).unwrap();
    let labels = |r: bool| json!({"read_only": r, "design": !r, "review": !r, "specified": r});
    let entries: String = (0..20)
        .map(|i| {
            format!(
                "{}\n",
                json!({"id": format!("p{i}"), "source": "prompt", "prompt": format!("{PROMPT} number {i}"), "labels": labels(i >= 2)})
            )
        })
        .collect();
    write(&env.install_dir.join("logs/routing.jsonl"), &entries);
    let out = env.run(&["calibrate", "fit", "--no-seeds", "--apply"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Set [routing] min_confidence = 0.50"), "{}", stdout(&out));
    assert!(
        std::fs::symlink_metadata(&env.config).unwrap().file_type().is_symlink(),
        "the link was replaced by a file"
    );
    assert!(read(&real).contains("min_confidence = 0.5\n"), "{}", read(&real));
    assert!(read(&real).starts_with("# mine\n"));
    assert_eq!(mode(&real), 0o640, "the real file's mode");
}

/// A rewrite of the routing log (labelling, `outcomes --apply`) writes a whole hidden copy beside
/// it; a rewrite killed midway used to leave that copy, with the prompts in it, for good (240 MiB
/// after four kills). The next session start removes the copies of processes that are gone, and
/// leaves alone those of a process that runs (it may be writing) and files that are not such copies.
#[test]
fn a_killed_log_rewrite_leaves_no_copy_behind() {
    let env = TestEnv::with_mock("");
    let logs = env.install_dir.join("logs");
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let alive = std::process::id();
    let name = |pid: u32, n: u32| logs.join(format!(".routing.jsonl.{pid}-{n}.tmp"));
    let leftovers = [name(dead, 0), name(dead, 7)];
    let kept = [name(alive, 0), logs.join(".routing.jsonl.notes.tmp"), logs.join(".decisions.jsonl.1-0.tmp")];
    for p in leftovers.iter().chain(&kept) {
        write(p, "{\"prompt\": \"my private prompt\"}\n");
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let out = env
        .run(&["hook", "session-start"], &json!({"hook_event_name": "SessionStart", "source": "startup"}).to_string());
    assert!(out.status.success(), "{}", stderr(&out));
    for p in &leftovers {
        assert!(!p.exists(), "{} is still there", p.display());
    }
    for p in &kept {
        assert!(p.exists(), "{} was removed", p.display());
    }
}

/// A user name and password in an endpoint URL are as secret as an API key: `config show`,
/// `config check`, `doctor` and `system1_health` (whose answer goes into the model's context)
/// show the URL with `***` in their place.
#[test]
fn an_endpoint_password_is_never_shown() {
    let env = TestEnv::new();
    env.write_config(
        "[gateway]\nprovider = \"laya\"\n[providers.laya]\nendpoint = \"http://me:hunter2@127.0.0.1:1\"\n",
    );
    let mut said = Vec::new();
    for args in [&["config", "show"][..], &["doctor"]] {
        let out = env.run(args, "");
        said.push((args.join(" "), format!("{}{}", stdout(&out), stderr(&out))));
    }
    let mut c = env.mcp();
    c.initialize("2025-06-18");
    said.push(("system1_health".into(), c.call("system1_health", json!({})).to_string()));
    drop(c);
    // A remote endpoint without allow_remote: the config error names the URL.
    env.write_config(
        "[gateway]\nprovider = \"von\"\n[providers.von]\nendpoint = \"http://me:hunter2@engine.example:8000\"\n",
    );
    let out = env.run(&["config", "check"], "");
    said.push(("config check".into(), format!("{}{}", stdout(&out), stderr(&out))));
    for (what, text) in &said {
        assert!(!text.contains("hunter2"), "{what} shows the password: {text}");
    }
    assert!(said[0].1.contains("http://***@127.0.0.1:1"), "config show: {}", said[0].1);
    assert!(said[2].1.contains("***@127.0.0.1:1"), "health names the engine: {}", said[2].1);
    assert!(said[3].1.contains("http://***@engine.example:8000"), "config check names the URL: {}", said[3].1);
}

/// Every rewrite of a private file keeps it 0600 under umask 000, not only its first write: the
/// config (`engine install local` switching the placeholder `install` wrote; `calibrate fit --apply`
/// setting the threshold), the routing log (`calibrate label` rewrites it through `log::rewrite`, as
/// `outcomes --apply` does),
/// the log file, and the calibration files (`calibration.json`; `local-heads.json` from
/// `calibrate fit --provider local --apply`). `engine install local` used to rewrite the config
/// through a temp file created 0666 less the umask: 0666 here.
#[test]
fn every_rewrite_of_a_private_file_keeps_it_0600_under_umask_000() {
    let mut env = TestEnv::new();
    env.set_env("PATH", "/nonexistent");
    env.set_env("SYSTEM1_LAYA_ENDPOINT", "http://127.0.0.1:9");
    let run = |args: &[&str]| {
        let out = run_with_umask_000(&env, args, "");
        assert!(out.status.success(), "{args:?}: {}{}", stdout(&out), stderr(&out));
        stdout(&out)
    };
    run(&["install"]);
    assert_eq!(mode(&env.config), 0o600, "install's placeholder");
    let model = crate::local_engine::model_dir();
    if let Some(dir) = &model {
        // An installed model, so that `engine install local` only switches the config to it.
        let to = env.install_dir.join("engines/local/all-MiniLM-L6-v2");
        std::fs::create_dir_all(&to).unwrap();
        for f in ["config.json", "sentence_bert_config.json", "tokenizer.json", "model.safetensors"] {
            std::fs::copy(Path::new(dir).join(f), to.join(f)).unwrap();
        }
        let said = run(&["engine", "install", "local"]);
        assert!(said.contains("now selects it"), "{said}");
        assert!(read(&env.config).contains("provider = \"local\""), "{}", read(&env.config));
        assert_eq!(mode(&env.config), 0o600, "engine install local rewrote the config");
    }

    // A config of the user's (0600, as install makes it) that calibrate fit --apply edits, with a
    // log file, and a routing log of 20 labelled prompts and a spawn to label.
    let log_file = env.root.join("system1.log");
    env.write_config(&format!(
        "[gateway]\nprovider = \"mock\"\nlog_file = {:?}\n[routing]\nenabled = true\nmin_confidence = 0.6\n\n[providers.mock]\nconfidence = 0.7\nanswers = {{ read_only = \"yes\", design = \"no\", review = \"no\", specified = \"yes\" }}\n{}",
        log_file.display().to_string(),
        model.as_ref().map(|d| format!("[providers.local]\nmodel_dir = {d:?}\n")).unwrap_or_default()
    ));
    std::fs::set_permissions(&env.config, std::fs::Permissions::from_mode(0o600)).unwrap();
    let labels = |r: bool| json!({"read_only": r, "design": !r, "review": !r, "specified": r});
    let mut entries: String = (0..20)
        .map(|i| {
            format!(
                "{}\n",
                json!({"id": format!("p{i}"), "source": "prompt", "prompt": format!("{PROMPT} number {i}"), "labels": labels(i >= 2)})
            )
        })
        .collect();
    entries.push_str(&format!("{}\n", json!({"id": "a1", "source": "agent", "prompt": "brief", "tool_use_id": "t1"})));
    let log = env.install_dir.join("logs/routing.jsonl");
    write(&log, &entries);
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o600)).unwrap();

    run(&["calibrate", "label", "--id", "a1", "--outcome", "failed"]);
    assert_eq!(mode(&log), 0o600, "calibrate label rewrote the routing log");
    let said = run(&["calibrate", "fit", "--no-seeds", "--apply"]);
    assert!(said.contains("Set [routing] min_confidence"), "{said}");
    assert_eq!(mode(&env.config), 0o600, "calibrate fit --apply rewrote the config");
    assert_eq!(mode(&env.install_dir.join("calibration.json")), 0o600);
    run(&["calibrate", "fit", "--no-seeds", "--apply"]);
    assert_eq!(mode(&env.install_dir.join("calibration.json")), 0o600, "rewritten");
    // The server logs each decision to the log file.
    let session = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "system1_decide", "arguments": {"question": "Ship it?"}}}),
    ];
    let lines: String = session.iter().map(|m| format!("{m}\n")).collect();
    assert!(run_with_umask_000(&env, &["mcp"], &lines).status.success());
    assert_eq!(mode(&log_file), 0o600, "the log file");
    if model.is_some() {
        run(&["calibrate", "fit", "--provider", "local", "--no-seeds", "--apply"]);
        assert_eq!(mode(&env.install_dir.join("local-heads.json")), 0o600);
        run(&["calibrate", "fit", "--provider", "local", "--no-seeds", "--apply"]);
        assert_eq!(mode(&env.install_dir.join("local-heads.json")), 0o600, "rewritten");
    }
}
