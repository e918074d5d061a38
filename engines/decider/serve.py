"""Serves a decision GGUF on 127.0.0.1 with llama.cpp's server from the xllamacpp wheel, for System-1.

`system1 engine install decider` writes this file beside the venv it made; start.sh and start.ps1
run it with that venv's Python. It serves the GGUF that model.txt beside it names (DECIDER_MODEL
overrides), on 127.0.0.1 only, port DECIDER_PORT (default 8788), with DECIDER_THREADS threads (default:
every CPU). Batch and micro-batch are 8192 tokens: llama.cpp reads the whole prompt of a laya-type
decision model (Julia-1, Laya) in one micro-batch, and its default of 512 refuses a longer question.
It serves until it is stopped (SIGTERM, SIGINT or Ctrl-C).
"""

import os
import signal
import sys
import threading
from pathlib import Path

import xllamacpp


def model_path(here: Path) -> Path:
    named = os.environ.get("DECIDER_MODEL", "").strip()
    if not named:
        try:
            named = (here / "model.txt").read_text(encoding="utf-8").strip()
        except OSError as e:
            sys.exit(f"decider: no model: {here / 'model.txt'} cannot be read ({e}); run `system1 engine install decider`")
    path = Path(named)
    return path if path.is_absolute() else here / path


def main() -> None:
    here = Path(__file__).resolve().parent
    model = model_path(here)
    if not model.is_file():
        sys.exit(f"decider: the model {model} is missing; run `system1 engine install decider`")
    port = int(os.environ.get("DECIDER_PORT", "8788"))
    threads = int(os.environ.get("DECIDER_THREADS", "0") or 0) or (os.cpu_count() or 1)
    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    # The name the config asks for: the folder `engine install decider` put it in (models/<name>/).
    alias = model.parent.name if model.parent.parent.name == "models" else model.stem
    params.model_alias = {os.environ.get("DECIDER_ALIAS", "").strip() or alias}
    params.n_ctx = 8192
    params.n_batch = 8192
    params.n_ubatch = 8192
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.hostnames = ["127.0.0.1"]
    params.port = port
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = xllamacpp.Server(params)
    print(f"decider: serving {model.name} at {server.listening_address}", flush=True)
    stop.wait()
    del server


if __name__ == "__main__":
    main()
