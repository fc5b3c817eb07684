"""The background thread that writes JSONL traces, so the event loop never waits for a file.

A finished trace is only queued on the loop (``JsonlExporter.export``: a deque append and, when
the thread sleeps, one wake-up). The thread waits ``BATCH_SECONDS`` after a wake-up so the
traces of that stretch go out together (one open, flock and write per file per batch), then
serializes and writes them. Whatever is still queued is written by ``flush_all()``: the
tracing plugin calls it when an agent closes, ``read_jsonl`` before it reads, and the
interpreter at exit. ``flush_all()`` also waits for a batch the thread is writing, so once it
returns every trace queued before the call is in its file. A process killed outright loses at
most the last ``BATCH_SECONDS``.

One thread per process serves every exporter; after ``fork`` the child starts its own and
drops the parent's queue (the parent writes it).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from typing import Protocol

__all__ = ["BATCH_SECONDS", "flush_all", "schedule"]

log = logging.getLogger("bandoneon.tracing")

#: How long the thread gathers traces after a wake-up before it writes them.
BATCH_SECONDS = 0.05


class Flushable(Protocol):
    def flush(self) -> None: ...

    def forget_pending(self) -> None: ...


class _Writer:
    def __init__(self) -> None:
        # Exporters with queued traces, in the order they asked (a dict as an ordered set).
        self.due: dict[Flushable, None] = {}
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None
        self.start_lock = threading.Lock()
        # Held while traces are written: an exporter taken off ``due`` is not in its file yet.
        # Reentrant: an exporter's flush that flushes (through logging, say) must not deadlock.
        self.writing = threading.RLock()

    def schedule(self, exporter: Flushable) -> None:
        self.due[exporter] = None
        if not self.wake.is_set():
            if self.thread is None:
                self._start()
            self.wake.set()

    def _start(self) -> None:
        with self.start_lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="bandoneon-trace-writer", daemon=True)
                self.thread.start()

    def _run(self) -> None:
        while True:
            self.wake.wait()
            time.sleep(BATCH_SECONDS)
            # Cleared before the queue is taken: a trace queued from now on wakes the next round.
            self.wake.clear()
            self.flush_all()

    def flush_all(self) -> None:
        with self.writing:
            while self.due:  # one taker at a time, so the popped item is there
                exporter, _ = self.due.popitem()
                try:
                    exporter.flush()
                except Exception as exc:  # a broken trace store never breaks the agent, nor this thread
                    log.warning("tracing: writing traces with %r failed, they are dropped: %s: %s", exporter, type(exc).__name__, exc)

    def after_fork_in_child(self) -> None:
        for exporter in self.due:
            exporter.forget_pending()
        self.due = {}
        self.wake = threading.Event()
        self.thread = None
        self.start_lock = threading.Lock()
        self.writing = threading.RLock()  # the parent's thread may have held it at the fork


_WRITER = _Writer()
schedule = _WRITER.schedule


def flush_all() -> None:
    """Write every trace queued in this process now (in the calling thread)."""
    _WRITER.flush_all()


atexit.register(flush_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WRITER.after_fork_in_child)
