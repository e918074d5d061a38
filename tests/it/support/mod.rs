//! Shared test scaffolding: a scratch environment per test (HOME, install dir, config, Claude Code
//! dir, all in a temp folder that is removed afterwards) and a client that drives the real binary.
//! Nothing here ever reaches the real home directory.

#![allow(dead_code)]

pub mod claude_cli;
pub mod fake_anthropic;
pub mod fake_gemini;
pub mod fake_http;
pub mod fake_laya;
pub mod fakes;
pub mod tls;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use serde_json::{Value, json};

pub const BIN: &str = env!("CARGO_BIN_EXE_system1");

/// How soon a call cut off by a timeout or budget of at most a second must return. Generous on
/// purpose (a shared 2-core machine can be slow): the engines these calls wait on hang for 60 s
/// (`Reply::hang`, a mock `delay_ms`, a 30 or 60 s `timeout_s`), so a call that was not cut off
/// takes far longer. How fast the cut-off is, is for the benchmarks (`scripts/bench*`).
pub const CUT_OFF: Duration = Duration::from_secs(10);

static COUNTER: AtomicUsize = AtomicUsize::new(0);

pub struct TestEnv {
    pub root: PathBuf,
    pub home: PathBuf,
    pub install_dir: PathBuf,
    pub config: PathBuf,
    pub claude_dir: PathBuf,
    /// Extra environment for every command.
    pub env: Vec<(String, String)>,
}

impl TestEnv {
    pub fn new() -> Self {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("s1-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let home = root.join("home");
        let install_dir = home.join(".system1-gateway");
        let config = home.join(".config/system1/config.toml");
        let claude_dir = home.join(".claude");
        std::fs::create_dir_all(&home).expect("create scratch home");
        TestEnv { root, home, install_dir, config, claude_dir, env: Vec::new() }
    }

    /// A scratch environment whose config selects the mock engine, plus `extra` TOML.
    pub fn with_mock(extra: &str) -> Self {
        let env = TestEnv::new();
        env.write_config(&format!("[gateway]\nprovider = \"mock\"\n{extra}"));
        env
    }

    pub fn write_config(&self, toml: &str) {
        write(&self.config, toml);
    }

    /// A git repository at `work/repo` inside `log_dirs`, with routing on over the mock engine:
    /// where the hooks write the routing log.
    pub fn logged_repo(&self) -> PathBuf {
        let repo = self.root.join("work/repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        self.write_config(&format!(
            "[gateway]\nprovider = \"mock\"\n[routing]\nenabled = true\nlog_dirs = [{:?}]\n",
            repo.display().to_string()
        ));
        repo
    }

    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.push((key.to_string(), value.to_string()));
    }

    /// The binary with this environment: scratch paths set, the caller's SYSTEM1_* removed.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args);
        sandbox(&mut cmd, &self.home);
        cmd.env("SYSTEM1_INSTALL_DIR", &self.install_dir)
            .env("SYSTEM1_CONFIG", &self.config)
            .env("CLAUDE_CONFIG_DIR", &self.claude_dir);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Starts the binary with all three of its streams piped.
    fn spawn_piped(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn system1")
    }

    /// Runs the binary to completion with `stdin`.
    pub fn run(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = self.spawn_piped(args);
        if let Some(mut input) = child.stdin.take() {
            let _ = input.write_all(stdin.as_bytes());
        }
        child.wait_with_output().expect("wait for system1")
    }

    /// Runs the binary with `stdin`, killing it if it has not ended within `limit`: `None` then.
    /// For input that would make a careless reader hang (a FIFO, stdin left open); `keep_open`
    /// leaves stdin open after `stdin` is written, as a client that never closes it would.
    pub fn run_within(&self, args: &[&str], stdin: &str, keep_open: bool, limit: Duration) -> Option<Output> {
        self.run_until(args, stdin, keep_open, |_, waited| waited >= limit)
    }

    /// Runs the binary with `stdin`, killing it once it has used `limit` of CPU time (user plus
    /// system, read from /proc): `None` then. For work whose cost is the point of the test: a busy
    /// machine stretches the wall time but not the CPU time. A wall time of 20 times `limit` still
    /// ends a child that waits without using the CPU.
    pub fn run_within_cpu(&self, args: &[&str], stdin: &str, limit: Duration) -> Option<Output> {
        self.run_until(args, stdin, false, |pid, waited| {
            cpu_time(pid).is_some_and(|used| used >= limit) || waited >= limit * 20
        })
    }

    fn run_until(
        &self,
        args: &[&str],
        stdin: &str,
        keep_open: bool,
        over: impl Fn(u32, Duration) -> bool,
    ) -> Option<Output> {
        let mut child = self.spawn_piped(args);
        let mut input = child.stdin.take();
        if let Some(pipe) = input.as_mut() {
            let _ = pipe.write_all(stdin.as_bytes());
            let _ = pipe.flush();
        }
        if !keep_open {
            drop(input.take());
        }
        // Read the pipes as the child writes, so that a chatty child never blocks on them.
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for system1") {
                break Some(status);
            }
            if over(child.id(), started.elapsed()) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        drop(input);
        let (stdout, stderr) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
        status.map(|status| Output { status, stdout, stderr })
    }

    /// `system1 decide --json <args>`: the parsed response and the exit code.
    pub fn decide_json(&self, args: &[&str]) -> (Value, i32) {
        let mut full = vec!["decide", "--json"];
        full.extend_from_slice(args);
        let out = self.run(&full, "");
        let v: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
        (v, out.status.code().unwrap_or(-1))
    }

    /// Starts `system1 mcp` in this environment.
    pub fn mcp(&self) -> McpClient {
        McpClient::spawn(self.command(&["mcp"]))
    }
}

/// Reads `pipe` to its end on a thread of its own (the bytes, when joined), so that a child
/// writing more than a pipe holds never blocks on it.
/// The CPU time (user plus system) a running process has used so far, from `/proc/<pid>/stat`;
/// `None` where that cannot be read (not Linux, or the process is gone).
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name in parentheses may hold spaces: the fields counted here come after its ")".
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, the 12th and 13th after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // USER_HZ is 100 on every Linux this runs on (sysconf(_SC_CLK_TCK)).
    Some(Duration::from_millis(ticks * 10))
}

/// Every variable that moves a path some program of a test may write to: the home folder, the XDG
/// base directories (where systemd looks for user units, and the default config home), Windows'
/// profile folders, and Claude Code's own folder.
pub const PATH_VARIABLES: [&str; 10] = [
    "HOME",
    "USERPROFILE",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "APPDATA",
    "LOCALAPPDATA",
    "CLAUDE_CONFIG_DIR",
];

/// Puts `cmd` in a test's sandbox under `home`: every variable of [`PATH_VARIABLES`] points into
/// `home` or is removed, and the caller's `SYSTEM1_*`, `CLAUDE*`, proxy and colour (`NO_COLOR`,
/// `CLICOLOR*`) settings are removed. Every program a test starts (system1, the Claude Code CLI, a
/// script) goes through here, so none of them writes outside the test's temp folder whatever the
/// environment `scripts/test` ran in (the `sandbox` test runs the suite with all of them at
/// sentinel folders).
pub fn sandbox(cmd: &mut Command, home: &Path) {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().to_string();
        if k.starts_with("SYSTEM1_")
            || k.starts_with("CLAUDE")
            || k.ends_with("_PROXY")
            || k.ends_with("_proxy")
            || k.starts_with("SSL_CERT_")
            || k == "NO_COLOR"
            || k.starts_with("CLICOLOR")
        {
            cmd.env_remove(&k);
        }
    }
    cmd.env("HOME", home)
        .env("USERPROFILE", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("APPDATA", home.join("AppData/Roaming"))
        .env("LOCALAPPDATA", home.join("AppData/Local"))
        .env_remove("XDG_RUNTIME_DIR")
        // Days and dates are counted in UTC unless a test says otherwise.
        .env("TZ", "UTC")
        // No test downloads a model from the real hub (a test that may reach the package index
        // sets SYSTEM1_PYPI_ENDPOINT itself: mcp-config carries SYSTEM1_* settings along).
        .env("HF_ENDPOINT", "http://127.0.0.1:9");
}

/// A home folder for the programs a test starts outside any one test's scratch environment (the
/// engine servers shared by a run): in the target's temp folder, never the real one.
pub fn shared_home() -> PathBuf {
    let home = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("shared-home-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&home);
    home
}

pub fn drain<R: std::io::Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut bytes);
        }
        bytes
    })
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

pub fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create parent");
    }
    std::fs::write(path, text).expect("write file");
}

/// A dependency that `scripts/test` installs is missing: under CI that fails the test with
/// `ci_message`; elsewhere the test is skipped loudly (see [`skip_loudly`]).
/// A tool `scripts/test` installed, named by the environment variable `var`, else at `default`
/// under the checkout; required under CI, else a loud skip (`None`).
pub fn test_dep(test: &str, var: &str, default: &str) -> Option<PathBuf> {
    let candidates =
        [std::env::var_os(var).map(PathBuf::from), Some(Path::new(env!("CARGO_MANIFEST_DIR")).join(default))];
    if let Some(found) = candidates.into_iter().flatten().find(|p| p.exists()) {
        return Some(found);
    }
    missing_test_dep(
        &format!("{test}: {var} is missing: run scripts/test"),
        &format!("{test}: {var} is not installed; run scripts/test"),
    );
    None
}

pub fn missing_test_dep(ci_message: &str, skipped: &str) {
    assert!(std::env::var_os("CI").is_none(), "{ci_message}");
    skip_loudly(skipped);
}

/// Says `*** SKIPPED {what} ***` straight to the process's stderr: the harness would hide an
/// `eprintln!` of a passing test.
pub fn skip_loudly(what: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("\n*** SKIPPED {what} ***\n\n").as_bytes());
}

/// A local fit with a high temperature for the mock's `design` answer: its calibrated confidence
/// falls from 0.9 to about 0.555, under the default `[routing] min_confidence` of 0.6.
pub fn lower_design_confidence(env: &TestEnv) {
    write(
        &env.install_dir.join("calibration.json"),
        r#"{"format": "system1-calibration", "version": 1,
            "fits": [{"provider": "mock", "model": "mock", "question": "design", "temperature": 10.0}]}"#,
    );
}

/// Writes a program (a script) that a test runs next.
///
/// The bytes reach the file through `cp` in a child process, never through a descriptor of this
/// one: the tests run on threads of one process, and a child another test spawns at that moment
/// would inherit an open descriptor, making the file fail to run ("Text file busy") until that
/// child has started its own program.
#[cfg(unix)]
pub fn write_executable(path: &Path, text: &str) {
    let name = path.file_name().expect("a file name").to_string_lossy();
    let staged = path.with_file_name(format!(".{name}.staged"));
    write(&staged, text);
    copy_executable(&staged, path);
    let _ = std::fs::remove_file(&staged);
}

/// Copies a program (the test build of `system1`, a script) to `to`, runnable, the way
/// [`write_executable`] writes one. An existing `to` is replaced, not written over: a process may
/// still be running it.
#[cfg(unix)]
pub fn copy_executable(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).expect("create parent");
    }
    let _ = std::fs::remove_file(to);
    let status = Command::new("cp").arg(from).arg(to).status().expect("run cp");
    assert!(status.success(), "cp {} {}", from.display(), to.display());
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Snapshot settings (insta) for output a person reads: the scratch root, the test build's path,
/// the checkout, the crate version, loopback ports and measured times become placeholders, so that a snapshot
/// is the same on every run and machine. Snapshots live in `tests/it/snapshots/`.
pub fn snapshots(env: &TestEnv) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.add_filter(&regex::escape(&env.root.display().to_string()), "[ROOT]");
    s.add_filter(&regex::escape(BIN), "[BIN]");
    s.add_filter(&regex::escape(env!("CARGO_MANIFEST_DIR")), "[REPO]");
    s.add_filter(&format!(r"\b{}\b", regex::escape(env!("CARGO_PKG_VERSION"))), "[VERSION]");
    s.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]");
    s.add_filter(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?", "[DATETIME]");
    s.add_filter(r"\b\d+(\.\d+)? ?(ms|s)\b", "[TIME] $2");
    s
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// A line-oriented client of the real server over real stdio.
pub struct McpClient {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: i64,
}

impl McpClient {
    pub fn spawn(mut cmd: Command) -> Self {
        let mut child =
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawn system1 mcp");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        McpClient { child, stdin, lines: rx, next_id: 1000 }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to server");
        stdin.flush().expect("flush");
    }

    pub fn send(&mut self, msg: &Value) {
        let mut line = serde_json::to_vec(msg).expect("encode");
        line.push(b'\n');
        self.send_raw(&line);
    }

    /// The next line the server writes, parsed; panics if it is not JSON (stdout must be protocol).
    pub fn recv(&mut self, timeout: Duration) -> Option<Value> {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => {
                Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("non-JSON on stdout: {line:?}: {e}")))
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Sends a request and waits for the reply with the same id (other lines are kept in order).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait_for(&json!(id), Duration::from_secs(20))
    }

    pub fn wait_for(&mut self, id: &Value, timeout: Duration) -> Value {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let msg = self.recv(left).unwrap_or_else(|| panic!("no reply to id {id} within {timeout:?}"));
            if msg.get("id") == Some(id) {
                return msg;
            }
        }
    }

    pub fn initialize(&mut self, version: &str) -> Value {
        let reply = self.request(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "tests", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        reply
    }

    /// Calls a tool and returns its structured result.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let result = reply.get("result").unwrap_or_else(|| panic!("tools/call failed: {reply}"));
        result["structuredContent"].clone()
    }

    /// Closes the server's stdin (end of input) without waiting.
    pub fn close_input(&mut self) {
        drop(self.stdin.take());
    }

    /// Closes stdin and waits for the process to end.
    pub fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().expect("wait for server")
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
