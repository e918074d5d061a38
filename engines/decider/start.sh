#!/bin/sh
# Starts the decision server (llama.cpp's server from the PyPI wheel xllamacpp, on the decision GGUF
# `system1 engine install decider` downloaded) for System-1, from the venv beside this file: bound to
# 127.0.0.1, port 8788 (override with DECIDER_PORT), logging to llama-server.log beside this file,
# and doing nothing when the port is already in use. With --foreground it stays attached (for
# systemd and launchd); otherwise it starts in the background, writes its pid to llama-server.pid
# and returns.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
port="${DECIDER_PORT:-8788}"
log="$here/llama-server.log"

python="$here/venv/bin/python"
if [ ! -x "$python" ]; then
  echo "decider: $python is missing; run \`system1 engine install decider\`" >&2
  exit 1
fi
if "$python" -c 'import socket, sys
s = socket.socket(); s.settimeout(0.5)
sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0 else 1)' "$port"; then
  echo "decider: port $port on 127.0.0.1 is already in use; nothing to do"
  exit 0
fi

export DECIDER_PORT="$port"
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) starting the decision server on 127.0.0.1:$port" >>"$log"
if [ "${1:-}" = "--foreground" ]; then
  exec "$python" "$here/serve.py" >>"$log" 2>&1
fi
nohup "$python" "$here/serve.py" >>"$log" 2>&1 </dev/null &
echo $! >"$here/llama-server.pid"
echo "decider: started the decision server on 127.0.0.1:$port (pid $!); log: $log"
