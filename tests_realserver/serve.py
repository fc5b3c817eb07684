"""Serve one GGUF model with llama.cpp's server on 127.0.0.1:PORT until terminated.

``python serve.py MODEL PORT N_CTX N_THREADS`` — the real ``llama-server`` HTTP server that
xllamacpp embeds (the same code as llama.cpp's binary), for the real-server test tier.
"""

from __future__ import annotations

import signal
import sys

import xllamacpp


def main(model: str, port: str, n_ctx: str, n_threads: str) -> None:
    params = xllamacpp.CommonParams()
    params.model.path = model
    params.hostnames = ["127.0.0.1"]
    params.port = int(port)
    params.n_ctx = int(n_ctx)
    params.n_parallel = 1
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = int(n_threads)
    params.warmup = False
    server = xllamacpp.Server(params)
    print(f"serving on {server.listening_address}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        signal.pause()


if __name__ == "__main__":
    main(*sys.argv[1:5])
