"""Start llama.cpp's own server (``llama-server``, as embedded in xllamacpp) on 127.0.0.1 and
wait until it serves.

While the server loads it either refuses connections or answers 503; both mean "wait". The
wait has a deadline and ends with an error that says what was last seen and where the log is.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

__all__ = ["LlamaServer", "ServerNotReady", "free_port", "wait_until_ready"]


class ServerNotReady(RuntimeError):
    """The server did not answer 200 before the deadline, or its process died."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_ready(base_url: str, *, deadline: float, process: subprocess.Popen[bytes] | None = None, log: Path | None = None, poll: float = 0.1) -> None:
    """Poll ``GET {base_url}/models`` until 200; ``ServerNotReady`` after ``deadline`` seconds."""
    started = time.monotonic()
    last = "no answer yet"
    while True:
        if process is not None and process.poll() is not None:
            raise ServerNotReady(f"the server process exited with code {process.returncode} before it was ready{_log_tail(log)}")
        try:
            response = httpx.get(f"{base_url}/models", timeout=2.0)
        except httpx.TransportError as exc:
            last = f"connection failed ({type(exc).__name__})"
        else:
            if response.status_code == 200:
                return
            last = f"HTTP {response.status_code}" + (" (still loading)" if response.status_code == 503 else f": {response.text[:120]}")
        if time.monotonic() - started >= deadline:
            raise ServerNotReady(f"the server at {base_url} was not ready after {deadline:g} s; last answer: {last}{_log_tail(log)}")
        time.sleep(poll)


def _log_tail(log: Path | None) -> str:
    if log is None or not log.exists():
        return ""
    lines = log.read_text(errors="replace").splitlines()[-15:]
    return f"\n--- last lines of {log} ---\n" + "\n".join(lines)


class LlamaServer:
    """llama.cpp's server (xllamacpp, run by ``serve.py`` in a child process) with one GGUF model."""

    def __init__(self, model: Path, log: Path, *, n_ctx: int = 4096, n_threads: int = 1):
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        command = [sys.executable, str(Path(__file__).with_name("serve.py")), str(model), str(self.port), str(n_ctx), str(n_threads)]
        self._log_file = log.open("wb")
        self.process = subprocess.Popen(command, stdout=self._log_file, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def wait(self, deadline: float = 90.0) -> LlamaServer:
        try:
            wait_until_ready(self.base_url, deadline=deadline, process=self.process, log=self.log)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log_file.close()
