#!/bin/sh
# Uninstalls system1 for this user by running the installed binary's `system1 uninstall`: removes the
# Claude Code registration, the binary and any engine start-at-login entry. `--purge` also deletes
# the config, the engines and the logs. Stop a running engine before purging.
set -eu

dir=${SYSTEM1_INSTALL_DIR:-$HOME/.system1-gateway}
bin=$dir/bin/system1
if [ -x "$bin" ]; then
  exec "$bin" uninstall "$@"
fi

# No binary left (a half-removed install): do what can be done without it, and with --purge remove
# only what system1 itself keeps (the same entries `system1 uninstall --purge` removes): the install
# dir may be a folder other programs use too.
echo "uninstall.sh: no system1 binary at $bin; removing what is left" >&2
if command -v claude >/dev/null 2>&1; then
  claude mcp remove --scope user system1 >/dev/null 2>&1 && echo "claude: removed the system1 registration"
fi
purge=
for arg in "$@"; do
  if [ "$arg" = --purge ]; then purge=1; fi
done
config=${SYSTEM1_CONFIG:-$HOME/.config/system1/config.toml}
if [ -z "$purge" ]; then
  echo "kept the config ($config) and what system1 keeps in $dir; run again with --purge to delete them"
  exit 0
fi
removed=
remove() { # path: removed (a folder whole, a link as a link) when it exists
  if [ -e "$1" ] || [ -L "$1" ]; then
    rm -rf "$1" && removed="$removed ${1#"$dir"/}"
  fi
}
for name in engines/laya engines/von engines/local build statusline bin/system1 \
  calibration.json local-heads.json paused told-no-engine what-if.json \
  logs/routing.jsonl logs/routing.jsonl.lock; do
  remove "$dir/$name"
done
for path in "$dir"/logs/decisions-*.jsonl "$dir"/logs/.routing.jsonl.*.tmp "$dir"/.calibration.json.*.tmp \
  "$dir"/.local-heads.json.*.tmp "$dir"/.paused.*.tmp "$dir"/.told-no-engine.*.tmp "$dir"/.what-if.json.*.tmp; do
  remove "$path"
done
for folder in engines logs bin; do
  if rmdir "$dir/$folder" 2>/dev/null; then removed="$removed $folder"; fi
done
if [ -n "$removed" ]; then echo "removed from $dir:$removed"; fi
if rmdir "$dir" 2>/dev/null; then
  echo "removed $dir"
elif [ -d "$dir" ]; then
  echo "left $dir: it holds files that are not system1's"
fi
if [ -e "$config" ]; then
  rm -f "$config" && echo "removed $config"
fi
rmdir "$(dirname "$config")" 2>/dev/null || true
