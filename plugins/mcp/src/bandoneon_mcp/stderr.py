"""A stdio server's stderr: drained as it comes, only its end kept, in memory.

The server writes its stderr into a pipe. A thread empties the pipe whenever there is
something in it (a full pipe would stop the server in its next write) and keeps the last
``KEPT`` bytes, which is all a failure to start quotes; a server that logs for days takes no
more room than that, and nothing goes to disk.
"""

from __future__ import annotations

import os
import select
import threading
from typing import TextIO

__all__ = ["KEPT", "StderrTail"]

#: Bytes of a server's stderr kept (its last ones).
KEPT = 64 * 1024
_CHUNK = 65536


class StderrTail:
    """The end of what one server process writes on stderr. Give ``for_child`` to the process,
    then ``spawned()``; the draining thread ends when every process holding the pipe has exited."""

    def __init__(self) -> None:
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        self.for_child: TextIO = os.fdopen(write_end, "w")
        self._read_end = read_end
        self._kept = bytearray()
        self._lock = threading.Lock()
        self._at_end = False
        threading.Thread(target=self._drain, name="bandoneon-mcp-stderr", daemon=True).start()

    def spawned(self) -> None:
        """The process has its own copy of the pipe's end: ours closed, the pipe ends with it."""
        self.for_child.close()

    def tail(self, limit: int) -> str:
        """The last lines the server wrote, at most ``limit`` characters, on one line."""
        self._take()  # what a server wrote just before it exited is in the pipe already
        with self._lock:
            text = self._kept.decode("utf-8", errors="replace").strip()
        return " | ".join(text[-limit:].splitlines()[-3:]) if text else ""

    def _drain(self) -> None:
        """Wait for something to read, read it; at the end, close the pipe (only this thread
        closes it, so no other thread waits on a descriptor number that was reused)."""
        waiting = select.poll()  # not select(): it fails on a descriptor above 1023, in a busy process
        waiting.register(self._read_end, select.POLLIN)
        while not self._take():
            waiting.poll()
        os.close(self._read_end)

    def _take(self) -> bool:
        """Read all there is now; True once every writer is gone."""
        with self._lock:
            while not self._at_end:
                try:
                    chunk = os.read(self._read_end, _CHUNK)
                except BlockingIOError:
                    break
                self._at_end = not chunk
                self._kept += chunk
                del self._kept[:-KEPT]
            return self._at_end
