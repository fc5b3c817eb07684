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
"""

from __future__ import annotations

import errno
import os
from typing import Literal

from .. import files

__all__ = ["FaultyDisk"]


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
