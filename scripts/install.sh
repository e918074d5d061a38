#!/bin/sh
# Installs system1 for this user, then runs `system1 install`, which copies the binary into
# ~/.system1-gateway/bin (SYSTEM1_INSTALL_DIR overrides), writes the config when there is none and
# registers the MCP server with Claude Code (or prints the command). Arguments go to `system1 install`.
# Last, `system1 smoke` starts the installed server as an MCP client does and checks it answers: a
# server that does not work fails the install; an engine that is not running is only a warning (an
# upgrade with the engine stopped succeeds).
#
# With cargo on PATH it builds this checkout (`cargo build --release --locked`) into
# <install dir>/build, not into the checkout: Claude Code copies a plugin installed from a local
# folder whole, so a target/ in the clone would land in its plugin cache. CARGO_TARGET_DIR
# overrides where the build goes. `--build-only` (README's "Try it") stops after the build and
# links the binary at <build dir>/system1; a later run builds the same way into the same place, so
# cargo finds it up to date and the first hour has one build, not two. Without cargo, it
# downloads the release binary for this OS and CPU, pinned to the plugin's version, and checks
# its SHA-256 against the release's SHA256SUMS before running anything: a mismatch installs nothing.
#
# On Linux the build is the fastest-starting one this machine can make, each a static-pie (no
# dynamic loader, ASLR kept), so that every hook starts sooner: for musl where Rust's musl target and
# a musl C compiler are installed (`rustup target add x86_64-unknown-linux-musl`, musl-tools: the
# release binaries' kind, with the least start-up work of all); else, on x86_64 with glibc's static
# libc.a (libc6-dev on Debian and Ubuntu, glibc-static on Fedora), a static glibc build; else the
# usual dynamic one. SYSTEM1_STATIC=0 asks for the dynamic one. Local engines (127.0.0.1,
# localhost) are reached without glibc's name service in every build.
#
#   SYSTEM1_INSTALL_METHOD    build | download (default: build when cargo is on PATH)
#   SYSTEM1_STATIC            0 for a dynamic build even where a static-pie one is possible
#   SYSTEM1_RELEASE_BASE_URL  where releases live (default: the GitHub releases of this repository)
set -eu

root=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
die() {
  echo "install.sh: $*" >&2
  exit 1
}

# Installs with the given binary, then checks the installed server the way an MCP client starts it.
install_and_check() {
  bin=$1
  shift
  "$bin" install "$@" || exit $?
  installed=${SYSTEM1_INSTALL_DIR:-$HOME/.system1-gateway}/bin/system1
  echo "checking the installed server (system1 smoke)"
  smoke=0
  "$installed" smoke || smoke=$?
  case $smoke in
    0) ;;
    5) echo "install.sh: warning: system1 is installed and its server works, but no engine answers yet; start it as the fix above says ('$installed doctor' checks everything)" >&2 ;;
    *) die "system1 is installed, but its server check failed: run '$installed doctor' for the cause and the fix" ;;
  esac
}

build_only=
if [ "${1:-}" = --build-only ]; then
  build_only=1
  shift
fi

method=${SYSTEM1_INSTALL_METHOD:-}
if [ -z "$method" ]; then
  if command -v cargo >/dev/null 2>&1; then method=build; else method=download; fi
fi

# The target to build for a static-pie (see above), or nothing for the usual dynamic build. A
# user's own RUSTFLAGS keep the usual build: they would replace the static flag.
static_target() {
  [ "${SYSTEM1_STATIC:-1}" != 0 ] && [ -z "${RUSTFLAGS:-}" ] || return 0
  host=$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')
  case $host in x86_64-unknown-linux-gnu | aarch64-unknown-linux-gnu) ;; *) return 0 ;; esac
  arch=${host%%-*}
  if [ -d "$(rustc --print sysroot 2>/dev/null)/lib/rustlib/$arch-unknown-linux-musl" ] &&
    { command -v musl-gcc >/dev/null 2>&1 || command -v "$arch-linux-musl-gcc" >/dev/null 2>&1; }; then
    echo "$arch-unknown-linux-musl"
  elif [ "$host" = x86_64-unknown-linux-gnu ]; then
    case $(${CC:-cc} -print-file-name=libc.a 2>/dev/null) in /*) echo "$host" ;; esac
  fi
}

if [ "$method" = build ]; then
  : "${CARGO_TARGET_DIR:=${SYSTEM1_INSTALL_DIR:-$HOME/.system1-gateway}/build}"
  export CARGO_TARGET_DIR
  target_dir=${CARGO_TARGET_DIR:-target}
  case $target_dir in /*) ;; *) target_dir=$root/$target_dir ;; esac
  target=$(static_target)
  if [ -n "$target" ]; then
    # With --target, the static flag reaches system1 only, not the build scripts and proc macros
    # (which cannot be linked statically); musl targets are static by default.
    echo "building system1 from $root into $CARGO_TARGET_DIR (cargo build --release --locked --target $target, a static-pie)"
    case $target in
      *-musl) (cd "$root" && cargo build --release --locked --target "$target") ;;
      *) (cd "$root" && CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static" \
        cargo build --release --locked --target "$target") ;;
    esac
    built=$target_dir/$target/release/system1
  else
    echo "building system1 from $root into $CARGO_TARGET_DIR (cargo build --release --locked)"
    (cd "$root" && cargo build --release --locked)
    built=$target_dir/release/system1
  fi
  if [ -n "$build_only" ]; then
    ln -sf "$built" "$target_dir/system1"
    echo "built $target_dir/system1 (-> $built); 'sh scripts/install.sh' installs this build without building again"
    exit 0
  fi
  install_and_check "$built" "$@"
  exit 0
fi
[ "$method" = download ] || die "SYSTEM1_INSTALL_METHOD must be build or download, not '$method'"
[ -z "$build_only" ] || die "--build-only builds with cargo, which is not on PATH (https://rustup.rs); without it, 'sh scripts/install.sh' installs the release binary"

# The plugin's version pins the release; Cargo.toml carries the same number.
version=
if [ -f "$root/.claude-plugin/plugin.json" ]; then
  version=$(sed -n 's/.*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$root/.claude-plugin/plugin.json" | head -n 1)
fi
if [ -z "$version" ]; then
  version=$(sed -n 's/^version[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$root/Cargo.toml" | head -n 1)
fi
[ -n "$version" ] || die "cannot read the version from .claude-plugin/plugin.json or Cargo.toml"

case $(uname -s) in
  Linux) platform=unknown-linux-musl ;;
  Darwin) platform=apple-darwin ;;
  *) die "no prebuilt binary for $(uname -s); install Rust (https://rustup.rs) and re-run to build it" ;;
esac
case $(uname -m) in
  x86_64 | amd64) cpu=x86_64 ;;
  aarch64 | arm64) cpu=aarch64 ;;
  *) die "no prebuilt binary for $(uname -m); install Rust (https://rustup.rs) and re-run to build it" ;;
esac
asset=system1-$version-$cpu-$platform
url=${SYSTEM1_RELEASE_BASE_URL:-https://github.com/system1-gateway/system1/releases/download}/system1--v$version

tmp=$(mktemp -d 2>/dev/null || mktemp -d -t system1)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

fetch() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1"
  else
    die "neither curl nor wget is available to download $1"
  fi
}

echo "downloading $asset from $url"
fetch "$url/SHA256SUMS" "$tmp/SHA256SUMS" || die "cannot download $url/SHA256SUMS"
fetch "$url/$asset" "$tmp/system1" || die "cannot download $url/$asset"

expected=$(awk -v a="$asset" '$2 == a || $2 == "*" a { print tolower($1); exit }' "$tmp/SHA256SUMS")
[ -n "$expected" ] || die "SHA256SUMS of release system1--v$version lists no $asset; nothing was installed"
if command -v sha256sum >/dev/null 2>&1; then
  actual=$(sha256sum "$tmp/system1" | awk '{ print tolower($1) }')
elif command -v shasum >/dev/null 2>&1; then
  actual=$(shasum -a 256 "$tmp/system1" | awk '{ print tolower($1) }')
else
  die "neither sha256sum nor shasum is available to verify the download; nothing was installed"
fi
[ "$actual" = "$expected" ] ||
  die "checksum mismatch for $asset: SHA256SUMS says $expected, the download is $actual; nothing was installed"
echo "verified SHA-256 $actual"

chmod +x "$tmp/system1"
install_and_check "$tmp/system1" "$@"
