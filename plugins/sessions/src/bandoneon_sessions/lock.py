"""One writer per session: an exclusive ``flock`` on a lock file beside the session.

The kernel releases an flock when its file is closed, which happens when its holder calls
``release()``, when the ``SessionLock`` is garbage-collected (the agent that held it is gone),
or when the process dies, so a crashed process never leaves a session locked for ever. The
holder writes its pid into the file so the error can name it. Locks are per open file, so two
agents in one process conflict too, as they should.
"""

from __future__ import annotations

import fcntl
import os
import weakref
from pathlib import Path

import bandoneon

from .records import SessionError, SessionLocked

__all__ = ["SessionLock"]


class SessionLock:
    """Held from ``acquire`` until ``release``, garbage collection, or the end of the process."""

    def __init__(self, path: Path, session_id: str):
        self.path = path
        self.session_id = session_id
        self._closer: weakref.finalize | None = None

    @property
    def is_held(self) -> bool:
        return self._closer is not None

    def acquire(self) -> SessionLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = bandoneon.open_lock_file(self.path)  # truncated and written below: never through a link
        if descriptor is None:
            raise SessionError(
                f"session {self.session_id!r} cannot be locked: its lock file {self.path} is a symbolic link "
                "(a lock file is a plain file this plugin makes); remove it"
            )
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(descriptor)
            raise SessionLocked(self._locked_message(holder)) from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, str(os.getpid()).encode(), 0)
        # Closing the descriptor drops the flock; the finalizer does it if nobody calls release().
        self._closer = weakref.finalize(self, os.close, descriptor)
        return self

    def release(self) -> None:
        if self._closer is not None:
            self._closer()
            self._closer = None

    def _locked_message(self, holder: str) -> str:
        if holder == str(os.getpid()):
            return (
                f"session {self.session_id!r} is already open for writing by another agent in this process "
                "(agent.fork() copies the Sessions plugin, and the copy would write the same session); close() "
                "the other one first, or branch with sessions.fork(NEW_ID) and give the new agent the plugin it returns"
            )
        return (
            f"session {self.session_id!r} is already open for writing (pid {holder}); close it there, "
            f"or fork it to continue separately (bandoneon sessions fork {self.session_id} NEW_ID)"
        )
