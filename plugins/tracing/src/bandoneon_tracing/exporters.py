"""Where finished traces go: memory (for tests and notebooks) and a JSONL file.

An exporter is anything with ``export(spans)``; ``shutdown()`` is optional. Exporters get
one whole trace per call (a ``Trace``: a read-only sequence of spans, built when first read),
when its root run ends (on the event loop: an exporter that does
I/O queues the trace for a thread, as the JSONL and OpenTelemetry ones do). An exporter that
raises is logged and skipped: a broken trace store never breaks the agent. ``flush()``, when
an exporter has it, is called when an agent closes.
"""

from __future__ import annotations

import collections
import fcntl
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import bandoneon

from .recording import Trace
from .spans import Span
from .writer import flush_all, schedule

__all__ = ["Exporter", "InMemoryExporter", "JsonlExporter", "read_jsonl"]


@runtime_checkable
class Exporter(Protocol):
    def export(self, spans: Sequence[Span]) -> None: ...


class InMemoryExporter:
    """Keeps the last ``max_traces`` traces. ``spans`` is every kept span, oldest first.

    A tracing ``Trace`` is kept as it is, so its spans are built (and redacted) only if
    someone reads them; any other sequence is copied."""

    def __init__(self, max_traces: int = 100):
        self._kept: collections.deque[Sequence[Span]] = collections.deque(maxlen=max_traces)

    def export(self, spans: Sequence[Span]) -> None:
        self._kept.append(spans if isinstance(spans, Trace) else list(spans))

    @property
    def traces(self) -> list[list[Span]]:
        """The kept traces, oldest first."""
        return [list(trace) for trace in self._kept]

    @property
    def spans(self) -> list[Span]:
        return [span for trace in self._kept for span in trace]

    @property
    def last(self) -> list[Span]:
        """The spans of the most recent trace (empty when there is none)."""
        return list(self._kept[-1]) if self._kept else []

    def clear(self) -> None:
        self._kept.clear()


class JsonlExporter:
    """Appends one JSON line per span to ``path``, off the event loop.

    ``export`` only queues the trace; the tracing writer thread (``writer``) serializes the
    queued traces and appends them in batches, each batch with one ``write`` on an
    ``O_APPEND`` descriptor under an exclusive ``flock``, so traces from concurrent agents or
    processes never interleave and a crash leaves whole lines behind (at worst, missing
    traces, never half a line of one). ``flush()`` writes what is queued now, in the caller.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._pending: collections.deque[Sequence[Span]] = collections.deque()
        self._lock = threading.Lock()  # one batch at a time, so traces keep their order

    def export(self, spans: Sequence[Span]) -> None:
        self._pending.append(spans)
        schedule(self)

    def flush(self) -> None:
        with self._lock:
            pending = self._pending
            if not pending:
                return
            traces = [pending.popleft() for _ in range(len(pending))]
            encode = _ENCODER.encode
            data = "".join(encode(span.to_json()) + "\n" for spans in traces for span in spans).encode()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            finally:
                os.close(fd)

    def forget_pending(self) -> None:
        """Drop the queue (a forked child: its parent writes these traces)."""
        self._pending.clear()

    def __repr__(self) -> str:
        return f"JsonlExporter({str(self.path)!r})"


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)


class TraceFileError(ValueError):
    """A trace file line is not a span; the message names the file and the line."""


def read_jsonl(path: str | os.PathLike[str]) -> list[Span]:
    """Every span of a JSONL trace file. Raises ``TraceFileError`` naming the bad line.

    Lines are decoded one by one, so bytes that are not UTF-8 (a damaged file) name their line
    too. Traces this process has queued are written first, so a trace is readable once its run ended.
    """
    flush_all()
    spans: list[Span] = []
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                data: Any = bandoneon.loads_bounded(raw.decode("utf-8"))  # a hostile file may nest without end
                spans.append(Span.from_json(data))
            except UnicodeDecodeError as exc:
                raise TraceFileError(f"{path}:{number}: not UTF-8 (byte {exc.start + 1})") from None
            except json.JSONDecodeError as exc:
                raise TraceFileError(f"{path}:{number}: not JSON ({exc.msg} at column {exc.colno})") from None
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise TraceFileError(f"{path}:{number}: not a span ({type(exc).__name__}: {exc})") from None
    return spans
