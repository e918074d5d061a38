#!/bin/sh
# Starts `von serve` (von-sdk 1.3.7) for System-1, from the venv beside this file: bound to
# 127.0.0.1 (von's own default is 0.0.0.0), port 8777 (override with VON_PORT), logging to
# von-serve.log beside this file, and doing nothing when the port is already in use.
# von picks its device itself. With --foreground it stays attached (for systemd and launchd).
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
port="${VON_PORT:-8777}"
log="$here/von-serve.log"

python="$here/venv/bin/python"
[ -x "$python" ] || python="$(command -v python3 || true)"
if [ -n "$python" ] && "$python" -c 'import socket, sys
s = socket.socket(); s.settimeout(0.5)
sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0 else 1)' "$port"; then
  echo "von: port $port on 127.0.0.1 is already in use; nothing to do"
  exit 0
fi

von="$here/venv/bin/von"
[ -x "$von" ] || von="von"
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) starting von serve on 127.0.0.1:$port" >>"$log"
if [ "${1:-}" = "--foreground" ]; then
  exec "$von" serve --host 127.0.0.1 --port "$port" >>"$log" 2>&1
fi
nohup "$von" serve --host 127.0.0.1 --port "$port" >>"$log" 2>&1 </dev/null &
echo $! >"$here/von-serve.pid"
echo "von: started von serve on 127.0.0.1:$port (pid $!); log: $log"
