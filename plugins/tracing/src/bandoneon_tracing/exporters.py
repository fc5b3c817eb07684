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
import contextlib
import fcntl
import json
import json.encoder
import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import bandoneon

from .recording import Trace
from .spans import Span
from .writer import flush_all, schedule

__all__ = ["Exporter", "InMemoryExporter", "JsonlExporter", "read_jsonl"]

log = logging.getLogger("bandoneon.tracing")


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
        self._kept.append(spans if type(spans) is Trace else list(spans))

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


#: The JSONL file's rotation options (``JsonlExporter``, and the plugin's ``jsonl_*`` options).
MAX_BYTES = bandoneon.in_range(at_least=0, integer=True, unit="bytes")
KEEP = bandoneon.in_range(at_least=1, integer=True)
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_KEEP = 5

_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT


class JsonlExporter:
    """Appends one JSON line per span to ``path``, off the event loop, rotating the file by size.

    ``export`` only queues the trace; the tracing writer thread (``writer``) serializes the
    queued traces and appends them in batches, each batch with one ``write`` on an
    ``O_APPEND`` descriptor under an exclusive ``flock``, so traces from concurrent agents or
    processes never interleave and a crash leaves whole lines behind (at worst, missing
    traces, never half a line of one). ``flush()`` writes what is queued now, in the caller.

    Rotation: when a batch would take a non-empty file past ``max_bytes`` (0: never), the file
    becomes ``path.1`` first (``path.1`` becomes ``path.2``, and so on; past ``keep`` rotated
    files the oldest is deleted) and the batch starts a new file. A batch is never split, so
    every trace is whole in one file.
    """

    def __init__(self, path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES, keep: int = DEFAULT_KEEP):
        MAX_BYTES.check("max_bytes", max_bytes, owner="tracing")
        KEEP.check("keep", keep, owner="tracing")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.keep = keep
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
            encode = _encode
            data = "".join([encode(span.to_json()) for spans in traces for span in spans]).encode()
            fd = self._open_with_room(len(data))
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            finally:
                os.close(fd)

    def _open_with_room(self, size: int) -> int:
        """The file at ``path``, open and locked, rotated first when ``size`` more bytes would
        take it past ``max_bytes`` (a file that is empty takes any batch)."""
        fd, length = _open_locked(self.path)
        while self.max_bytes and 0 < length and length + size > self.max_bytes and self._rotate():
            os.close(fd)
            fd, length = _open_locked(self.path)
        return fd

    def _rotate(self) -> bool:
        """Shift ``path.N`` to ``path.N+1`` (the oldest, ``path.keep``, is replaced) and ``path``
        to ``path.1``. False when it failed: the batch is then appended to the file as it is
        (a file past its size loses nothing; a batch dropped would)."""
        name = str(self.path)
        try:
            for number in range(self.keep - 1, 0, -1):
                with contextlib.suppress(FileNotFoundError):
                    os.replace(f"{name}.{number}", f"{name}.{number + 1}")
            os.replace(name, f"{name}.1")
        except OSError as exc:
            log.warning("tracing: could not rotate %s, appending to it: %s: %s", name, type(exc).__name__, exc)
            return False
        return True

    def forget_pending(self) -> None:
        """Drop the queue (a forked child: its parent writes these traces)."""
        self._pending.clear()

    def __repr__(self) -> str:
        return f"JsonlExporter({str(self.path)!r})"


#: How often ``_open_locked`` tries to lock the file at its path before it writes to the file it holds.
_ROUNDS = 5


def _open_locked(path: Path) -> tuple[int, int]:
    """``path`` opened for appending under an exclusive ``flock``, and its length. Once the lock
    is held, the descriptor must still be the file at ``path``: another process may have rotated
    it away meanwhile (after a few rounds, the file held is kept: its lines are still on disk)."""
    for attempt in range(1, _ROUNDS + 1):
        fd = _open(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        if attempt == _ROUNDS or _is_at(path, held):
            return fd, held.st_size
        os.close(fd)
    raise AssertionError("unreachable")


def _open(path: Path) -> int:
    try:
        return os.open(path, _FLAGS, 0o600)
    except FileNotFoundError:  # the folder is made by the first write (not at each batch: a syscall or two)
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, _FLAGS, 0o600)


def _is_at(path: Path, held: os.stat_result) -> bool:
    try:
        there = os.stat(path)
    except FileNotFoundError:
        return False
    return (there.st_ino, there.st_dev) == (held.st_ino, held.st_dev)


def _line_encoder() -> Callable[[Any], str]:
    """A span's line: its JSON as ``json.dumps(..., ensure_ascii=False, default=str)`` writes it,
    and a newline. ``JSONEncoder.encode`` makes a C encoder (and a dict of the containers seen,
    against cycles) at every call; this one is made once, without that check: a span holds
    plain values, and a cycle would still raise (RecursionError), as it did (ValueError)."""
    make = getattr(json.encoder, "c_make_encoder", None)  # not in the typing stubs
    if make is None:  # an interpreter without the C accelerator
        encode = json.JSONEncoder(ensure_ascii=False, default=str).encode
        return lambda value: encode(value) + "\n"
    chunks = make(None, str, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)
    join = "".join
    return lambda value: join(chunks(value, 0)) + "\n"


_encode = _line_encoder()


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
