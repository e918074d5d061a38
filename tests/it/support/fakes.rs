//! Stand-ins for the programs around `system1 install` in tests: a fake `claude` that records its
//! argv and keeps the user-scoped MCP servers in `.claude.json` the way the real CLI does, a fake
//! `cargo` that "builds" by copying the test binary, a fake `systemctl`, and the loopback fake
//! serving release files. (The real Claude Code CLI is used in e2e_claude.rs.)

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::fake_http::{FakeServer, Reply, Request};

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

/// Records `$PWD|$*|<the x86_64 glibc target's rustflags>` and copies `$FAKE_SYSTEM1` to
/// `$CARGO_TARGET_DIR/release/system1`, or `$CARGO_TARGET_DIR/<target>/release/system1` with `--target`.
pub const FAKE_CARGO: &str = r#"#!/bin/sh
printf '%s|%s|%s\n' "$PWD" "$*" "${CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS:-}" >> "$FAKE_LOG_DIR/cargo.log"
# Where cargo puts it: $CARGO_TARGET_DIR, else target/ in the current folder.
target=${CARGO_TARGET_DIR:-target}
out="$target/release"
while [ $# -gt 0 ]; do
  if [ "$1" = --target ]; then out="$target/$2/release"; fi
  shift
done
mkdir -p "$out" && cp "$FAKE_SYSTEM1" "$out/system1"
"#;

/// `rustc -vV` as on an x86_64 glibc Linux host; `rustc --print sysroot` says `$FAKE_SYSROOT`.
pub const FAKE_RUSTC_X86_64_GNU: &str = r#"#!/bin/sh
if [ "$1" = --print ]; then echo "$FAKE_SYSROOT"; else printf 'rustc 1.95.0\nhost: x86_64-unknown-linux-gnu\n'; fi
"#;

pub const FAKE_SYSTEMCTL: &str = r#"#!/bin/sh
printf '%s\n' "$*" >> "$FAKE_LOG_DIR/systemctl.log"
"#;

/// Writes an executable script.
pub fn script(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    super::write_executable(&path, text);
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

/// The loopback fake serving files: URL path to file, 404 for any other path.
pub fn file_server(files: BTreeMap<String, PathBuf>) -> FakeServer {
    FakeServer::start(move |r: &Request| match files.get(&r.path).and_then(|f| std::fs::read(f).ok()) {
        Some(body) => Reply::new(200, "application/octet-stream", body),
        None => Reply::new(404, "text/plain", ""),
    })
}
