//! Stand-ins for the programs around `system1 install` in tests: a fake `claude` that records its
//! argv and keeps the user-scoped MCP servers in `.claude.json` the way the real CLI does, a fake
//! `cargo` that "builds" by copying the test binary, a fake `systemctl`, and a tiny static HTTP
//! server on 127.0.0.1 that records what it served. (The real Claude Code CLI is used in e2e_claude.rs.)

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Records `$*` in `$FAKE_LOG_DIR/claude.log`; `mcp add` / `mcp remove` edit `.claude.json` in
/// `$CLAUDE_CONFIG_DIR` (else `$HOME`) and fail on a duplicate or a missing server, like the real one.
/// `FAKE_CLAUDE_FAIL="mcp add"` (or `"mcp remove"`) makes that command fail.
pub const FAKE_CLAUDE: &str = r#"#!/bin/sh
printf '%s\n' "$*" >> "$FAKE_LOG_DIR/claude.log"
if [ "${FAKE_CLAUDE_FAIL:-}" = "$1 $2" ]; then echo "fake claude: $1 $2 failed on purpose" >&2; exit 1; fi
f="${CLAUDE_CONFIG_DIR:-$HOME}/.claude.json"
if [ "$1 $2" = "mcp add" ]; then
  [ "$3 $4 $5 $6 $8" = "--scope user --transport stdio --" ] || { echo "fake claude: unexpected: $*" >&2; exit 64; }
  if [ -f "$f" ] && grep -q "\"$7\"" "$f"; then echo "MCP server $7 already exists in user config" >&2; exit 1; fi
  mkdir -p "$(dirname "$f")"
  printf '{"numStartups":3,"mcpServers":{"%s":{"type":"stdio","command":"%s","args":["%s"],"env":{}}}}\n' "$7" "$9" "${10}" > "$f"
  echo "Added stdio MCP server $7 to user config"
  exit 0
fi
if [ "$1 $2 $3 $4" = "mcp remove --scope user" ]; then
  if [ -f "$f" ] && grep -q "\"$5\"" "$f"; then printf '{"numStartups":3,"mcpServers":{}}\n' > "$f"; echo "Removed MCP server $5"; exit 0; fi
  echo "No user-scoped MCP server found with name: $5" >&2; exit 1
fi
echo "fake claude: unexpected: $*" >&2
exit 64
"#;

/// Records `$PWD|$*` and copies `$FAKE_SYSTEM1` to `$CARGO_TARGET_DIR/release/system1`.
pub const FAKE_CARGO: &str = r#"#!/bin/sh
printf '%s|%s\n' "$PWD" "$*" >> "$FAKE_LOG_DIR/cargo.log"
mkdir -p "$CARGO_TARGET_DIR/release" && cp "$FAKE_SYSTEM1" "$CARGO_TARGET_DIR/release/system1"
"#;

pub const FAKE_SYSTEMCTL: &str = r#"#!/bin/sh
printf '%s\n' "$*" >> "$FAKE_LOG_DIR/systemctl.log"
"#;

/// Writes an executable script.
pub fn script(dir: &Path, name: &str, text: &str) -> PathBuf {
    std::fs::create_dir_all(dir).expect("create fake bin dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write fake");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod fake");
    }
    path
}

/// Lines a fake wrote to `<log dir>/<name>.log` (none if it never ran).
pub fn log_lines(log_dir: &Path, name: &str) -> Vec<String> {
    std::fs::read_to_string(log_dir.join(format!("{name}.log")))
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Where `name` is on the current PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// A directory of symlinks to just these tools (those that exist), for a PATH without cargo.
pub fn tool_farm(dir: &Path, tools: &[&str]) -> PathBuf {
    std::fs::create_dir_all(dir).expect("create tool farm");
    for t in tools {
        if let Some(real) = which(t) {
            #[cfg(unix)]
            std::os::unix::fs::symlink(real, dir.join(t)).expect("link tool");
        }
    }
    dir.to_path_buf()
}

/// The SHA-256 of a file, by the system's tool.
pub fn sha256(path: &Path) -> String {
    let out = std::process::Command::new("sha256sum").arg(path).output().expect("run sha256sum");
    assert!(out.status.success(), "sha256sum failed");
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().expect("a hash").to_string()
}

/// A static file server on 127.0.0.1: URL path → file. Serves until dropped; records each path.
pub struct StaticServer {
    pub port: u16,
    pub requests: Arc<Mutex<Vec<String>>>,
}

impl StaticServer {
    pub fn start(files: BTreeMap<String, PathBuf>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().expect("addr").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                // Drain the headers.
                let mut line = String::new();
                while reader.read_line(&mut line).map(|n| n > 0).unwrap_or(false) && line != "\r\n" {
                    line.clear();
                }
                let path = request_line.split_whitespace().nth(1).unwrap_or("/").to_string();
                if path == "/stop" {
                    break;
                }
                seen.lock().unwrap().push(path.clone());
                match files.get(&path).and_then(|f| std::fs::read(f).ok()) {
                    Some(body) => {
                        let head = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
                            body.len()
                        );
                        let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&body));
                    }
                    None => {
                        let _ = stream
                            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    }
                }
            }
        });
        StaticServer { port, requests }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn served(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        // Wake the accept loop so the thread (and the listening socket) ends with the test.
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port))
            .and_then(|mut s| s.write_all(b"GET /stop HTTP/1.1\r\n\r\n"));
    }
}
