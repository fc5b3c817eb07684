"""``FaultyDisk``: the disk fails, tears or shortens a write at a chosen byte.

Every byte that ``bandoneon.write_atomically``, ``bandoneon.append_durably`` and
``bandoneon.AppendFile`` write goes
through one seam; inside ``with FaultyDisk(at_byte=n, fault=...)`` the ``n``-th byte written
(counted from 0 across all writes) is where the fault strikes:

- ``"fail"``: that write raises ``OSError`` and writes nothing;
- ``"tear"``: the bytes before ``n`` reach the file, then the write raises ``OSError``;
- ``"short"``: the bytes before ``n`` reach the file and the write returns that count, with
  no error, as a real ``write(2)`` may.

``crash=True``: after the fault every disk operation fails (nothing can be cleaned up, as
when the process dies there), and leaving the block forgets what this process meant to clean
up later, so the next opener meets the file exactly as the crash left it.

A sweep runs the work once under ``WriteLog`` to learn where its writes fall, then once per
fault point (``WriteLog.fault_points()``, or every byte: ``range(log.written)``) under a
``FaultyDisk``, in a ``sweep_folder()`` (the ``sweep_dir`` pytest fixture), and checks that
what the store said was saved is there.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from .. import files

__all__ = ["FaultyDisk", "WriteLog", "sweep_folder"]


class FaultyDisk(files.Disk):
    """A disk that misbehaves once, at byte ``at_byte``. ``fired`` says whether it did."""

    def __init__(self, at_byte: int, fault: Literal["fail", "tear", "short"] = "tear", *, crash: bool = False):
        if fault not in ("fail", "tear", "short"):
            raise ValueError(f"fault must be 'fail', 'tear' or 'short', got {fault!r}")
        self.at_byte = at_byte
        self.fault = fault
        self.crash = crash
        self.written = 0
        self.fired = False
        self._previous: files.Disk | None = None

    def __enter__(self) -> FaultyDisk:
        self._previous = files.DISK.current
        files.DISK.current = self
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._previous is not None
        files.DISK.current = self._previous
        if self.crash and self.fired:
            files._cut_before_next.clear()

    def _dead(self) -> None:
        if self.crash and self.fired:
            raise OSError(errno.EIO, "FaultyDisk: the process is gone (crash after the fault)")

    def write(self, fd: int, data: bytes) -> int:
        self._dead()
        if self.fired or self.written + len(data) <= self.at_byte:
            self.written += len(data)
            return os.write(fd, data)
        self.fired = True
        keep = self.at_byte - self.written
        if self.fault == "fail":
            raise OSError(errno.EIO, f"FaultyDisk: write failed at byte {self.at_byte}")
        written = os.write(fd, data[:keep]) if keep else 0
        self.written += written
        if self.fault == "tear":
            raise OSError(errno.EIO, f"FaultyDisk: write torn at byte {self.at_byte}")
        return written

    def fsync(self, fd: int) -> None:
        """Checked, not done: a simulated disk need not reach the platters (keeps sweeps fast)."""
        self._dead()

    def datasync(self, fd: int) -> None:
        """Checked, not done, like ``fsync``."""
        self._dead()

    def truncate(self, fd: int, size: int) -> None:
        self._dead()
        os.ftruncate(fd, size)


class WriteLog(FaultyDisk):
    """A disk without faults that remembers where each write call starts and ends."""

    def __init__(self) -> None:
        super().__init__(at_byte=10**12)
        self.calls: list[tuple[int, int]] = []

    def write(self, fd: int, data: bytes) -> int:
        start = self.written
        written = super().write(fd, data)
        self.calls.append((start, start + written))
        return written

    def fault_points(self) -> list[int]:
        """Every write call at its first, second, middle and last byte: within one call every
        other byte behaves like one of these (a torn call is cut back, or its temporary file
        dropped), so a sweep over them covers every write call site at a fraction of the bytes."""
        points: set[int] = set()
        for start, end in self.calls:
            points.update(p for p in (start, start + 1, (start + end) // 2, end - 1) if start <= p < end)
        return sorted(points)


@contextlib.contextmanager
def sweep_folder(fallback: Path | None = None) -> Iterator[Path]:
    """A folder in memory (tmpfs) when the machine has one, removed afterwards: a sweep makes
    thousands of small files and tests the store's logic, not the disk's speed. Without tmpfs,
    ``fallback`` (kept) or a temporary folder (removed)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        folder = Path(tempfile.mkdtemp(prefix="bandoneon-sweep-", dir=shm))
    elif fallback is not None:
        yield fallback
        return
    else:
        folder = Path(tempfile.mkdtemp(prefix="bandoneon-sweep-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
