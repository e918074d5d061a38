#!/bin/sh
# Starts laya-serve (laya[serve] 0.4.15) for System-1, from the venv beside this file.
#
# - binds 127.0.0.1 only: laya-serve reads LAYA_HOST/LAYA_PORT from the environment and ignores
#   --host/--port, and its own default is 0.0.0.0;
# - preloads typed-decisions (override with LAYA_MODELS), port 8765 (override with LAYA_PORT);
# - uses CUDA when an NVIDIA GPU answers, MPS on Apple Silicon, else the CPU (override LAYA_DEVICE);
# - logs to laya-serve.log beside this file;
# - does nothing when the port is already in use (an engine is probably running).
# With --foreground it stays attached (for systemd and launchd); otherwise it starts laya-serve in
# the background, writes its pid to laya-serve.pid and returns.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
port="${LAYA_PORT:-8765}"
models="${LAYA_MODELS:-typed-decisions}"
log="$here/laya-serve.log"

python="$here/venv/bin/python"
[ -x "$python" ] || python="$(command -v python3 || true)"
if [ -n "$python" ] && "$python" -c 'import socket, sys
s = socket.socket(); s.settimeout(0.5)
sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0 else 1)' "$port"; then
  echo "laya: port $port on 127.0.0.1 is already in use; nothing to do"
  exit 0
fi

device="${LAYA_DEVICE:-}"
if [ -z "$device" ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    device=cuda
  elif [ "$(uname -s)" = Darwin ] && [ "$(uname -m)" = arm64 ]; then
    device=mps
  else
    device=cpu
  fi
fi

serve="$here/venv/bin/laya-serve"
[ -x "$serve" ] || serve="laya-serve"
export LAYA_HOST=127.0.0.1 LAYA_PORT="$port" LAYA_MODELS="$models" LAYA_DEVICE="$device"
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) starting laya-serve on 127.0.0.1:$port, models $models, device $device" >>"$log"
if [ "${1:-}" = "--foreground" ]; then
  exec "$serve" >>"$log" 2>&1
fi
nohup "$serve" >>"$log" 2>&1 </dev/null &
echo $! >"$here/laya-serve.pid"
echo "laya: started laya-serve on 127.0.0.1:$port (pid $!, device $device); log: $log"
