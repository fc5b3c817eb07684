"""The plugin's own worker threads: where a flush waits when it may not wait on the event loop.

``asyncio.to_thread`` goes through the loop's default executor: a copy of the context, a
``concurrent.futures`` future chained to an asyncio one, the executor's work item and its
checks, every time. A flush needs none of that: ``run(function, *args)`` puts the job on one
queue, a worker runs it and hands the outcome back to the job's own loop
(``call_soon_threadsafe``) onto a plain asyncio future, which the caller awaits.

- **Several loops** (agents run with ``run_sync`` in threads) share the workers: each job
  carries its loop, and each loop hears only of its own jobs.
- **A closed loop** is never waited for: a worker whose job's loop was closed meanwhile drops
  the outcome (nobody awaits it any more) and goes on with the next job.
- **A failure** (``OSError``, ``SessionError``...) is raised to the awaiting caller, as
  ``to_thread`` did.
- **Lifetime**: workers start on demand, at most ``LIMIT`` (flushes of several sessions go down
  together, as the kernel joins concurrent flushes), and only while some session uses them
  (``acquire``/``release``: the ``Sessions`` plugin holds one use from its first flush on a
  worker until it is closed or garbage-collected). The last ``release`` stops them; at
  interpreter exit they are stopped too (daemon threads, so an idle one never holds the exit).
  A session never has two jobs under way at once (each flush is awaited before the next save),
  so its writes stay in order whichever worker takes them.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["LIMIT", "acquire", "release", "run", "workers"]

#: The most workers at once (the default executor's floor on a small machine).
LIMIT = 4

_Job = tuple[Any, ...]


class _Worker:
    """A thread and its own queue: a job is handed to one idle worker (never to a shared
    queue that a worker being stopped could take it from and leave)."""

    __slots__ = ("jobs", "thread")

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=_work, args=(self,), name="bandoneon-sessions-flush", daemon=True)


#: Re-entrant: a plugin collected while a thread holds it (a garbage collection set off by an
#: allocation under the lock) releases its use from inside, and must not wait for itself.
_lock = threading.RLock()
_live: set[_Worker] = set()  # the workers of now (a stopped one busy with a job is no longer here)
_idle: list[_Worker] = []  # live workers waiting for a job, the last to finish last
_backlog: collections.deque[_Job] = collections.deque()  # jobs waiting for a worker (LIMIT busy)
_users = 0


def acquire() -> None:
    """One more user of the workers (each ``acquire`` is paired with one ``release``)."""
    global _users
    with _lock:
        _users += 1


def release() -> None:
    """One user fewer; the last one stops the workers (each finishes its job and the backlog first)."""
    global _users
    with _lock:
        _users -= 1
        if _users <= 0:
            _users = 0
            _stop_locked()


def workers() -> list[threading.Thread]:
    """The worker threads alive now, stopping ones included (for tests)."""
    return [thread for thread in threading.enumerate() if thread.name == "bandoneon-sessions-flush"]


def run(loop: asyncio.AbstractEventLoop, function: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
    """``function(*args)`` on a worker; a future of ``loop`` (the running one) with its outcome."""
    future = loop.create_future()
    job = (loop, future, function, args)
    with _lock:
        if _idle:
            _idle.pop().jobs.put(job)
            return future
        if len(_live) >= LIMIT:
            _backlog.append(job)
            return future
        worker = _Worker()
        _live.add(worker)
        worker.jobs.put(job)
    try:
        worker.thread.start()
    except BaseException as exc:  # no thread to be had (out of threads, interpreter shutting down): the caller hears it
        with _lock:
            _live.discard(worker)
        if not isinstance(exc, Exception):
            raise
        future.set_exception(exc)
    return future


def _stop_locked() -> None:
    """Idle workers end now; busy ones after their job and the backlog. Call with ``_lock``."""
    for worker in _idle:
        worker.jobs.put(None)
    _idle.clear()
    _live.clear()


def _work(worker: _Worker) -> None:
    jobs, lock, backlog, idle, live = worker.jobs, _lock, _backlog, _idle, _live
    job = jobs.get()
    while job is not None:
        loop, future, function, args = job
        try:
            result, error = function(*args), None
        except BaseException as exc:  # the caller's to judge, as to_thread hands it over
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(_settle, future, result, error)
        except RuntimeError:  # its loop is closed: nobody awaits the outcome any more
            pass
        job = loop = future = function = args = result = error = None
        with lock:
            if backlog:  # drained even by a stopped worker: a job taken is never left
                job = backlog.popleft()
                continue
            if worker not in live:  # stopped while it worked
                return
            idle.append(worker)
        job = jobs.get()


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


@atexit.register
def _at_exit() -> None:
    with _lock:
        _stop_locked()
