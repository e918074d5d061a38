//! The engine launchers and `system1 engine`, with stand-ins on PATH for the engine servers
//! (`laya-serve`, `von`), `nvidia-smi`, `systemctl` and the Python that creates venvs. Every file
//! lands in a scratch HOME; nothing real is installed, started or enabled.

#![cfg(unix)]

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::fake_http::free_port;
use crate::support::{TestEnv, copy_executable, stderr, stdout, write, write_executable};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn script(path: &Path, body: &str) {
    write_executable(path, &format!("#!/bin/sh\n{body}\n"));
}

/// The real python3 (pyenv shims need the real HOME, which the tests replace).
fn real_python() -> PathBuf {
    let out = Command::new("python3").args(["-c", "import sys; print(sys.executable)"]).output().expect("python3");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// A bin folder with stand-ins: `laya-serve` and `von` record their environment and arguments
/// into `record`, print a line (which the launcher logs) and then stay up for `stay` seconds, as
/// a process whose command line names the server, as the real one's does (`engine stop` checks).
fn stand_ins(root: &Path, gpu: bool, stay: u32) -> PathBuf {
    let bin = root.join("bin");
    let record = root.join("record");
    script(
        &bin.join("laya-serve"),
        &format!(
            "echo \"host=$LAYA_HOST port=$LAYA_PORT models=$LAYA_MODELS device=$LAYA_DEVICE args=$*\" > {r}.tmp && mv {r}.tmp {r}\n{}",
            stay_up(stay, "stand-in laya-serve up"),
            r = record.display()
        ),
    );
    script(
        &bin.join("von"),
        &format!(
            "echo \"args=$*\" > {r}.tmp && mv {r}.tmp {r}\n{}",
            stay_up(stay, "stand-in von up"),
            r = record.display()
        ),
    );
    script(&bin.join("nvidia-smi"), if gpu { "echo 'GPU 0: Stand-in'; exit 0" } else { "exit 9" });
    std::os::unix::fs::symlink(real_python(), bin.join("python3")).expect("link python3");
    bin
}

/// Shell lines that print `up` and then wait `stay` seconds in this shell (not `exec sleep`, which
/// would rename the process). The wait ends when the shell is told to stop: the trap is set before
/// `up` is printed, so a test that stops the server once it has said so never leaves a sleep behind.
fn stay_up(stay: u32, up: &str) -> String {
    format!("trap 'kill $! 2>/dev/null; exit 0' TERM\nsleep {stay} &\necho {up}\nwait $!")
}

fn path_with(bin: &Path) -> String {
    format!("{}:/usr/bin:/bin", bin.display())
}

fn wait_for(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(t) = std::fs::read_to_string(path) {
            return t;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{} never appeared", path.display());
}

/// Copies a launcher into `dir` (so its log and pid land there) and returns its path.
fn launcher(dir: &Path, engine: &str) -> PathBuf {
    let to = dir.join("engine").join("start.sh");
    copy_executable(Path::new(&format!("{REPO}/engines/{engine}/start.sh")), &to);
    to
}

fn kill_recorded(pid_file: &Path) {
    if let Ok(pid) = std::fs::read_to_string(pid_file) {
        let _ = Command::new("kill").arg(pid.trim()).status();
    }
}

#[test]
fn the_laya_launcher_binds_loopback_preloads_typed_decisions_and_logs_beside_itself() {
    let env = TestEnv::new();
    let bin = stand_ins(&env.root, false, 30);
    let start = launcher(&env.root, "laya");
    let port = free_port();
    let out = Command::new(&start)
        .env_clear()
        .env("PATH", path_with(&bin))
        .env("HOME", &env.home)
        .env("LAYA_PORT", port.to_string())
        .output()
        .expect("run start.sh");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(&format!("started laya-serve on 127.0.0.1:{port}")), "{}", stdout(&out));
    let record = wait_for(&env.root.join("record"));
    assert_eq!(record.trim(), format!("host=127.0.0.1 port={port} models=typed-decisions device=cpu args="));
    let dir = start.parent().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut log = String::new();
    while Instant::now() < deadline && !log.contains("stand-in laya-serve up") {
        log = std::fs::read_to_string(dir.join("laya-serve.log")).unwrap_or_default();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        log.contains(&format!("starting laya-serve on 127.0.0.1:{port}, models typed-decisions, device cpu")),
        "{log}"
    );
    assert!(log.contains("stand-in laya-serve up"), "{log}");
    kill_recorded(&dir.join("laya-serve.pid"));
}

#[test]
fn the_laya_launcher_uses_cuda_when_a_gpu_answers_and_stays_attached_in_the_foreground() {
    let env = TestEnv::new();
    let bin = stand_ins(&env.root, true, 0);
    let start = launcher(&env.root, "laya");
    let out = Command::new(&start)
        .arg("--foreground")
        .env_clear()
        .env("PATH", path_with(&bin))
        .env("LAYA_PORT", free_port().to_string())
        .env("LAYA_MODELS", "english,typed-decisions")
        .output()
        .expect("run start.sh");
    assert!(out.status.success(), "{}", stderr(&out));
    // In the foreground the launcher returns only when the server does, so the record is there.
    let record = std::fs::read_to_string(env.root.join("record")).expect("recorded");
    assert!(record.contains("models=english,typed-decisions device=cuda"), "{record}");
    assert!(!start.parent().unwrap().join("laya-serve.pid").exists());
}

#[test]
fn the_launchers_do_nothing_when_the_port_is_taken() {
    for engine in ["laya", "von"] {
        let env = TestEnv::new();
        let bin = stand_ins(&env.root, false, 0);
        let start = launcher(&env.root, engine);
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let out = Command::new(&start)
            .env_clear()
            .env("PATH", path_with(&bin))
            .env("LAYA_PORT", port.to_string())
            .env("VON_PORT", port.to_string())
            .output()
            .expect("run start.sh");
        assert!(out.status.success());
        assert!(stdout(&out).contains("already in use; nothing to do"), "{engine}: {}", stdout(&out));
        std::thread::sleep(Duration::from_millis(200));
        assert!(!env.root.join("record").exists(), "{engine}: the server was not started");
    }
}

#[test]
fn the_von_launcher_passes_host_and_port_flags() {
    let env = TestEnv::new();
    let bin = stand_ins(&env.root, false, 0);
    let start = launcher(&env.root, "von");
    let port = free_port();
    let out = Command::new(&start)
        .arg("--foreground")
        .env_clear()
        .env("PATH", path_with(&bin))
        .env("VON_PORT", port.to_string())
        .output()
        .expect("run start.sh");
    assert!(out.status.success(), "{}", stderr(&out));
    let record = std::fs::read_to_string(env.root.join("record")).expect("recorded");
    assert_eq!(record.trim(), format!("args=serve --host 127.0.0.1 --port {port}"));
    let log = std::fs::read_to_string(start.parent().unwrap().join("von-serve.log")).unwrap();
    assert!(log.contains("stand-in von up"), "{log}");
}

/// A stand-in python: `-m venv DIR` makes DIR/bin with a pip that records its arguments.
fn fake_python(root: &Path) -> PathBuf {
    let py = root.join("fake-python");
    script(
        &py,
        &format!(
            "[ \"$1\" = -m ] && [ \"$2\" = venv ] || exit 3\nmkdir -p \"$3/bin\"\nprintf '#!/bin/sh\\necho \"$*\" >> {log}\\n' > \"$3/bin/pip\"\nchmod +x \"$3/bin/pip\"",
            log = root.join("pip.log").display()
        ),
    );
    py
}

#[test]
fn install_start_status_and_stop_through_the_binary() {
    let mut env = TestEnv::new();
    let bin = stand_ins(&env.root, false, 30);
    let port = free_port();
    env.write_config(&format!("[providers.laya]\nendpoint = \"http://127.0.0.1:{port}\"\n"));
    env.set_env("SYSTEM1_ENGINE_PYTHON", fake_python(&env.root).to_str().unwrap());
    env.set_env("PATH", &path_with(&bin));

    let out = env.run(&["engine", "install", "laya"], "");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let dir = env.install_dir.join("engines/laya");
    assert_eq!(
        std::fs::read_to_string(env.root.join("pip.log")).unwrap().trim(),
        "install --upgrade --disable-pip-version-check laya[serve]"
    );
    let sh = dir.join("start.sh");
    assert_eq!(
        std::fs::read_to_string(&sh).unwrap(),
        std::fs::read_to_string(format!("{REPO}/engines/laya/start.sh")).unwrap()
    );
    assert_eq!(std::fs::metadata(&sh).unwrap().permissions().mode() & 0o111, 0o111);
    assert!(dir.join("start.ps1").is_file());

    let out = env.run(&["engine", "start", "laya"], "");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let record = wait_for(&env.root.join("record"));
    assert!(record.contains(&format!("host=127.0.0.1 port={port} ")), "the configured port: {record}");

    let out = env.run(&["engine", "status", "laya", "--json"], "");
    let status: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("status JSON");
    assert_eq!(status[0]["installed"], true);
    assert_eq!(status[0]["port"], port);
    assert_eq!(status[0]["autostart"], false);
    // The same as a person reads it (the stand-in never listens).
    let text = stdout(&env.run(&["engine", "status", "laya"], ""));
    crate::support::snapshots(&env).bind(|| {
        insta::assert_snapshot!(text, @r"
        laya:
          installed:  yes ([ROOT]/home/.system1-gateway/engines/laya)
          listening:  no (127.0.0.1:[PORT])
          health:     laya-serve at http://127.0.0.1:[PORT]: connection refused: is the engine running?
          at login:   off
          log:        [ROOT]/home/.system1-gateway/engines/laya/laya-serve.log
        ")
    });

    let out = env.run(&["engine", "stop", "laya"], "");
    assert!(stdout(&out).contains("stopped laya-serve"), "{}", stdout(&out));
    assert!(!dir.join("laya-serve.pid").exists());
    let out = env.run(&["engine", "stop", "laya"], "");
    assert!(stdout(&out).contains("nothing started by System-1"), "{}", stdout(&out));
}

#[test]
fn unknown_engines_and_uninstalled_starts_are_clear_errors() {
    let env = TestEnv::new();
    // Nothing installed: every engine's lines say so. (Ports no server of this machine holds, not
    // the defaults, which one might.)
    env.write_config(&format!(
        "[providers.laya]\nendpoint = \"http://127.0.0.1:{}\"\n[providers.von]\nendpoint = \"http://127.0.0.1:{}\"\n",
        free_port(),
        free_port()
    ));
    let out = env.run(&["engine", "status"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    crate::support::snapshots(&env).bind(|| insta::assert_snapshot!(stdout(&out), @r"
        laya:
          installed:  no ([ROOT]/home/.system1-gateway/engines/laya)
          listening:  no (127.0.0.1:[PORT])
          health:     laya-serve at http://127.0.0.1:[PORT]: connection refused: is the engine running?
          at login:   off
          log:        [ROOT]/home/.system1-gateway/engines/laya/laya-serve.log
        von:
          installed:  no ([ROOT]/home/.system1-gateway/engines/von)
          listening:  no (127.0.0.1:[PORT])
          health:     von at http://127.0.0.1:[PORT]: connection refused: is the engine running?
          at login:   off
          log:        [ROOT]/home/.system1-gateway/engines/von/von-serve.log
        decider:
          installed:  no ([ROOT]/home/.system1-gateway/engines/decider)
          listening:  no (127.0.0.1:[PORT])
          health:     not set up: `[BIN] engine install decider` installs it
          at login:   off
          log:        [ROOT]/home/.system1-gateway/engines/decider/llama-server.log
        local:
          model:      all-MiniLM-L6-v2
          installed:  no ([ROOT]/home/.system1-gateway/engines/local/all-MiniLM-L6-v2, 0.0 MB)
          health:     the local model is not installed: [ROOT]/home/.system1-gateway/engines/local/all-MiniLM-L6-v2/config.json is missing; run `[BIN] engine install local`
        chain (in order; what each engine answers):
          laya (typed-decisions): yes/no questions and choices of up to 20 options
          free yes/no questions go to laya
          choices go to laya
        "));
    let out = env.run(&["engine", "install", "gpt"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown engine \"gpt\""));
    let out = env.run(&["engine", "start", "von"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("system1 engine install von"), "{}", stderr(&out));
}

#[test]
fn autostart_files_for_each_platform_in_a_scratch_home() {
    let mut env = TestEnv::new();
    let bin = env.root.join("bin");
    let calls = env.root.join("systemctl.log");
    script(&bin.join("systemctl"), &format!("echo \"$*\" >> {}", calls.display()));
    env.set_env("PATH", bin.to_str().unwrap());
    let dir = env.install_dir.join("engines/laya");
    let out = env.run(&["engine", "autostart", "on", "laya"], "");
    assert_eq!(out.status.code(), Some(1), "not installed yet");
    write(&dir.join("start.sh"), "#!/bin/sh\n");
    write(&dir.join("start.ps1"), "");

    let out = env.run(&["engine", "autostart", "on", "laya", "--platform", "linux"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let unit = std::fs::read_to_string(env.home.join(".config/systemd/user/system1-laya.service")).unwrap();
    assert!(unit.contains(&format!("ExecStart={} --foreground", dir.join("start.sh").display())), "{unit}");
    assert!(unit.contains("WantedBy=default.target"));
    assert_eq!(std::fs::read_to_string(&calls).unwrap(), "--user daemon-reload\n--user enable system1-laya.service\n");
    let out = env.run(&["engine", "autostart", "off", "laya", "--platform", "linux"], "");
    assert!(out.status.success());
    assert!(!env.home.join(".config/systemd/user/system1-laya.service").exists());
    assert!(std::fs::read_to_string(&calls).unwrap().contains("--user disable system1-laya.service"));

    let out = env.run(&["engine", "autostart", "on", "laya", "--platform", "macos"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let plist = std::fs::read_to_string(env.home.join("Library/LaunchAgents/com.system1.laya.plist")).unwrap();
    assert!(plist.contains(&format!("<string>{}</string>", dir.join("start.sh").display())), "{plist}");
    assert!(plist.contains("<key>RunAtLoad</key>"));

    let out = env.run(&["engine", "autostart", "on", "laya", "--platform", "windows"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let cmd = std::fs::read_to_string(
        env.home.join("AppData/Roaming/Microsoft/Windows/Start Menu/Programs/Startup/system1-laya.cmd"),
    )
    .unwrap();
    assert!(cmd.contains(&format!("-File \"{}\"", dir.join("start.ps1").display())), "{cmd}");
    assert!(cmd.contains("\r\n"), "a .cmd file uses CRLF");
}

#[test]
fn probe_reports_the_machine() {
    let env = TestEnv::new();
    let out = env.run(&["engine", "probe", "--json"], "");
    assert!(out.status.success());
    let p: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("probe JSON");
    assert!(p["os"].as_str().unwrap().contains(std::env::consts::OS));
    assert!(p["cpu"]["threads"].as_u64().unwrap() >= 1);
    if cfg!(target_os = "linux") {
        assert!(p["ram_gb"].as_f64().unwrap() > 0.0);
    }
    assert!(p["gpus"].is_array());
    let out = env.run(&["engine", "probe"], "");
    assert!(stdout(&out).starts_with("OS:"));
    assert!(stdout(&out).contains("\nRAM:"));
}

#[test]
fn start_can_wait_until_the_engine_is_healthy() {
    let mut env = TestEnv::new();
    let bin = stand_ins(&env.root, false, 30);
    // A laya-serve stand-in that, after half a second, answers /health on LAYA_HOST:LAYA_PORT.
    let serving = format!(
        "#!{}\nimport http.server, json, os, time\ntime.sleep(0.5)\nclass H(http.server.BaseHTTPRequestHandler):\n    def do_GET(self):\n        b = json.dumps({{'status': 'ok', 'loaded': os.environ['LAYA_MODELS'].split(','), 'device': 'cpu'}}).encode()\n        self.send_response(200); self.send_header('content-length', str(len(b))); self.end_headers(); self.wfile.write(b)\nhttp.server.HTTPServer((os.environ['LAYA_HOST'], int(os.environ['LAYA_PORT'])), H).serve_forever()\n",
        real_python().display()
    );
    write_executable(&bin.join("laya-serve"), &serving);
    let port = free_port();
    env.write_config(&format!("[providers.laya]\nendpoint = \"http://127.0.0.1:{port}\"\n"));
    env.set_env("SYSTEM1_ENGINE_PYTHON", fake_python(&env.root).to_str().unwrap());
    env.set_env("PATH", &path_with(&bin));
    assert!(env.run(&["engine", "install", "laya"], "").status.success());

    let out = env.run(&["engine", "start", "laya", "--wait", "20"], "");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("laya: ready:") && stdout(&out).contains("typed-decisions is loaded"),
        "{}",
        stdout(&out)
    );
    // Running again is a no-op: the port is taken by the engine itself.
    let out = env.run(&["engine", "start", "laya"], "");
    assert!(stdout(&out).contains("already in use"), "{}", stdout(&out));
    let out = env.run(&["engine", "stop", "laya"], "");
    assert!(stdout(&out).contains("stopped laya-serve"), "{}", stdout(&out));

    // An engine that never becomes healthy: a clear failure pointing at the log.
    script(&bin.join("laya-serve"), &stay_up(30, "stand-in laya-serve up"));
    let out = env.run(&["engine", "start", "laya", "--wait", "1"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not ready after 1 s") && stderr(&out).contains("laya-serve.log"),
        "{}",
        stderr(&out)
    );
    let _ = env.run(&["engine", "stop", "laya"], "");
}

#[test]
fn stop_refuses_a_pid_file_that_names_no_engine() {
    let env = TestEnv::new();
    let dir = env.install_dir.join("engines/laya");
    std::fs::create_dir_all(&dir).unwrap();
    // pid 1 is init (and `kill 0` would signal this whole process group): never an engine to stop.
    write(&dir.join("laya-serve.pid"), "1\n");
    let out = env.run(&["engine", "stop", "laya"], "");
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(stderr(&out).contains("holds no engine pid"), "{}", stderr(&out));
}

#[test]
fn stop_leaves_alone_a_process_that_took_over_a_stale_pid() {
    let env = TestEnv::new();
    let dir = env.install_dir.join("engines/laya");
    std::fs::create_dir_all(&dir).unwrap();
    // After a reboot the recorded pid can belong to anything: here, a `sleep` of the test's own,
    // once it runs `sleep` (until its exec is done, the child's command line is empty).
    let mut other = Command::new("sleep").arg("30").spawn().expect("spawn sleep");
    wait_for_command_line(other.id(), "sleep 30");
    write(&dir.join("laya-serve.pid"), &format!("{}\n", other.id()));
    let out = env.run(&["engine", "stop", "laya"], "");
    let alive = other.try_wait().expect("try_wait").is_none();
    let _ = other.kill();
    let _ = other.wait();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("is not laya-serve (a stale pid file, removed); nothing stopped"),
        "{}",
        stdout(&out)
    );
    assert!(alive, "engine stop killed a process that was not the engine");
    assert!(!dir.join("laya-serve.pid").exists());
}

/// Waits until `/proc/<pid>/cmdline` reads `want` (arguments joined by spaces).
fn wait_for_command_line(pid: u32, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&raw).replace('\0', " ").trim() == want {
            return;
        }
        assert!(Instant::now() < deadline, "pid {pid} never ran `{want}`");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn stop_leaves_alone_a_pid_whose_process_runs_no_command() {
    // A process with an empty command line (here a zombie: exited, not yet reaped; the same holds
    // between fork and exec) exists but is no engine: `kill` would succeed on it, and stop would
    // claim to have stopped the engine.
    let env = TestEnv::new();
    let dir = env.install_dir.join("engines/laya");
    std::fs::create_dir_all(&dir).unwrap();
    let mut zombie = Command::new("true").spawn().expect("spawn true");
    let pid = zombie.id();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z ") {
        assert!(Instant::now() < deadline, "pid {pid} never became a zombie");
        std::thread::sleep(Duration::from_millis(10));
    }
    write(&dir.join("laya-serve.pid"), &format!("{pid}\n"));
    let out = env.run(&["engine", "stop", "laya"], "");
    let _ = zombie.wait();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("pid {pid} is not laya-serve (a stale pid file, removed); nothing stopped")),
        "{}",
        stdout(&out)
    );
}
