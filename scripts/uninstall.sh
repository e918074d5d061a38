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

# No binary left (a half-removed install): do what can be done without it.
echo "uninstall.sh: no system1 binary at $bin; removing what is left" >&2
if command -v claude >/dev/null 2>&1; then
  claude mcp remove --scope user system1 >/dev/null 2>&1 && echo "claude: removed the system1 registration"
fi
for arg in "$@"; do
  if [ "$arg" = --purge ]; then
    config=${SYSTEM1_CONFIG:-$HOME/.config/system1/config.toml}
    rm -rf "$dir" && echo "removed $dir"
    rm -f "$config" && echo "removed $config"
  fi
done
