"""One writer per session: an exclusive ``flock`` on a lock file beside the session.

The kernel releases an flock when its holder dies, so a crashed process never leaves a session
locked for ever. The holder writes its pid into the file so the error can name it. Locks are
per open file, so two agents in one process conflict too, as they should.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from .records import SessionLocked

__all__ = ["SessionLock"]


class SessionLock:
    """Held from ``acquire`` until ``release`` (or the process ends)."""

    def __init__(self, path: Path, session_id: str):
        self.path = path
        self.session_id = session_id
        self._descriptor: int | None = None

    @property
    def is_held(self) -> bool:
        return self._descriptor is not None

    def acquire(self) -> SessionLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(descriptor)
            raise SessionLocked(
                f"session {self.session_id!r} is already open for writing (pid {holder}); close it there, "
                f"or fork it to continue separately (bandoneon sessions fork {self.session_id} NEW_ID)"
            ) from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, str(os.getpid()).encode(), 0)
        self._descriptor = descriptor
        return self

    def release(self) -> None:
        if self._descriptor is not None:
            fcntl.flock(self._descriptor, fcntl.LOCK_UN)
            os.close(self._descriptor)
            self._descriptor = None

    def is_locked_elsewhere(self) -> bool:
        """True if someone else holds the lock right now (used before deleting)."""
        if self.is_held or not self.path.exists():
            return False
        try:
            self.acquire()
        except SessionLocked:
            return True
        self.release()
        return False
