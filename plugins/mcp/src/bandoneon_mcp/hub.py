"""The process's MCP sessions: one per server, shared by every agent that uses it.

Sessions live on one event loop in a daemon thread, whatever loop (or thread) the agents
run on: ``run_sync`` scripts, several ``asyncio.run`` calls and pytest's per-test loops all
share the same live servers. Agents hold a server through a *lease*; the server is closed
when the last lease is returned (``agent.aclose()``, or the agent being garbage collected)
and at interpreter exit, so no server process outlives its users.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import itertools
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from .config import Server
from .connection import Connection

__all__ = ["Hub", "hub"]

T = TypeVar("T")

#: Seconds the exit handler waits for the servers to close (each one's stdio shutdown is
#: itself bounded: stdin closed, then SIGTERM, then SIGKILL, two seconds apart).
EXIT_WAIT = 10.0


class Hub:
    """Shared connections keyed by what starts them (``Server.key``), counted by lease."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._connections: dict[tuple[Any, ...], Connection] = {}
        self._leases: dict[int, set[tuple[Any, ...]]] = {}
        self._lease_ids = itertools.count(1)

    # ------------------------------------------------------------------ the loop

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._guard:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                started = threading.Event()
                thread = threading.Thread(target=self._serve, args=(loop, started), name="bandoneon-mcp", daemon=True)
                thread.start()
                started.wait()
                self._loop, self._thread = loop, thread
                atexit.register(self.shutdown)
            return self._loop

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(started.set)
        loop.run_forever()

    def submit(self, work: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(work, self._running_loop())

    async def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Await ``work`` on the hub's loop from any other loop. Cancelling the caller cancels
        the work there too (an MCP request then sends ``notifications/cancelled``)."""
        return await asyncio.wrap_future(self.submit(work))

    def wait(self, work: Coroutine[Any, Any, T]) -> T:
        """Block this thread until ``work`` is done on the hub's loop (agent construction)."""
        if threading.current_thread() is self._thread:
            work.close()
            raise RuntimeError("Hub.wait() called from the hub's own thread")
        return self.submit(work).result()

    # ------------------------------------------------------------------ leases

    def new_lease(self) -> int:
        # Only a number: the lease table itself is touched on the hub's loop alone.
        return next(self._lease_ids)

    async def acquire(self, lease: int, name: str, server: Server) -> Connection:
        """The running connection to ``server`` (started if needed), held by ``lease``.

        A server that fails to start is not held: the next acquire tries again.
        """
        connection = self._connections.get(server.key)
        if connection is None:
            connection = self._connections[server.key] = Connection(name, server)
        try:
            await connection.start()
        except BaseException:
            if not self._is_leased(server.key):
                self._connections.pop(server.key, None)
            raise
        self._leases.setdefault(lease, set()).add(server.key)
        return connection

    async def release(self, lease: int) -> None:
        """Return a lease; servers nobody holds any more are closed."""
        for key in self._leases.pop(lease, set()):
            if not self._is_leased(key):
                connection = self._connections.pop(key, None)
                if connection is not None:
                    await connection.close()

    def release_soon(self, lease: int) -> None:
        """``release`` from anywhere, without waiting (a garbage-collected agent)."""
        loop = self._loop
        if loop is not None and not loop.is_closed() and lease in self._leases:
            asyncio.run_coroutine_threadsafe(self.release(lease), loop)

    def _is_leased(self, key: tuple[Any, ...]) -> bool:
        return any(key in keys for keys in self._leases.values())

    def connections(self) -> list[Connection]:
        return list(self._connections.values())

    # ------------------------------------------------------------------ exit

    async def close_all(self) -> None:
        self._leases.clear()
        connections, self._connections = list(self._connections.values()), {}
        await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)

    def shutdown(self) -> None:
        """Close every server and stop the loop (at exit; tests call it to check for leaks)."""
        with self._guard:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or loop.is_closed():
            return
        try:
            asyncio.run_coroutine_threadsafe(self.close_all(), loop).result(EXIT_WAIT)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(EXIT_WAIT)
        if not loop.is_running():
            loop.close()


#: The process's one hub.
hub = Hub()
