"""The Sessions plugin: an agent whose history survives the process (level 9, resume the session).

When the agent is built, the session's history (and the usage spent on it) is loaded into the
agent (``Agent.load_history``); after every turn the new messages are appended, and after every
run its usage. The session stays locked for writing until ``close()`` (or until the plugin is
garbage-collected, or the process ends), so a second opener gets ``SessionLocked`` instead of
interleaving its writes. ``agent.fork()`` copies the plugin (``attrs.evolve``: same options, no
lock), so the fork's copy meets that error too: branch with ``Sessions.fork(new_id)`` instead.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
import warnings
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from types import ModuleType
from typing import Any, ClassVar, Literal

import attrs

import bandoneon

from . import hookspecs as session_hooks
from . import threads
from .lock import SessionLock
from .records import LoadedSession, SessionError, check_session_id
from .stores import JsonlStore, SessionStore, SessionWriter, SqliteSessionStore, default_sessions_path, open_store

__all__ = ["SessionDamaged", "Sessions", "open_session_plugin"]

log = logging.getLogger("bandoneon.sessions")

Durability = Literal["turn", "run", "os"]
DURABILITY = ("turn", "run", "os")


class SessionDamaged(UserWarning):
    """A session was damaged on disk; its valid prefix was loaded and the original kept aside."""


def _session_id(instance: Any, attribute: attrs.Attribute, value: str) -> None:
    check_session_id(value)


#: The hooks only ``"turn"`` and ``"os"`` need, and the one only ``"turn"`` needs (``Sessions.unused_hooks``).
_WRITING_AHEAD = frozenset({"before_tool_execution", "tool_result_ready", "after_turn"})
_AFTER_TURN = frozenset({"after_turn"})
_NONE: frozenset[str] = frozenset()


class _Writing:
    """Runs with a session writing in this process just now (see ``INLINE_SYNC_LIMIT``). A
    counter of its own, not a class attribute of ``Sessions``: changing a class attribute
    changes the class, which empties the attribute caches of every instance's lookups."""

    __slots__ = ("runs",)

    def __init__(self) -> None:
        self.runs = 0


_WRITING = _Writing()

#: A synced write waits on the event loop itself (no hop to a worker thread, which costs about
#: as much as a fast disk's flush) while the disk's flushes take less than this (the median of
#: the last three: a single slow one is a busy moment, not a slow disk), and no other run with a
#: session is writing in this process; otherwise on a worker thread.
INLINE_SYNC_LIMIT = 0.001


@attrs.define
class Sessions(bandoneon.Plugin):
    """Save the agent's whole history under ``session_id`` and load it back next time.

    Options: ``session_id`` (default: a new random id), ``store`` (``"jsonl"``, ``"sqlite"``, a
    ``SessionStore``, or a name another plugin offers through the ``register_session_stores``
    hook this plugin publishes), ``path`` (the JSONL folder or the SQLite file; default
    ``$BANDONEON_SESSIONS_PATH`` or ``~/.bandoneon/sessions``), ``durability``:

    - ``"turn"`` (default): write-ahead. A turn's tool calls are written, with the messages
      before them, and flushed to disk (one fsync) before any of its tools runs; each tool
      result is written (no fsync) as soon as its call finishes, and rides down with the next
      flush; the answer (a turn without tool calls) is written with the run's usage and
      flushed when the run ends. A 2-turn run (one tool turn, one answer) costs two fsyncs.
      A killed process loses no finished call; a power loss loses at most the turn under way
      (an answer is under way until its run ends) and the results written since the last flush.
    - ``"run"``: one write and one fsync per run; a crash loses the run under way, and the
      calls it made may run again when the run is asked again (nothing of them was saved).
    - ``"os"``: the writes of ``"turn"``, the flush left to the OS: survives the process
      dying, not the machine losing power. What ``"turn"`` writes when a turn ends (calls no
      tool answered) goes with the next write.

    No call runs twice across a crash (``"turn"`` and ``"os"``): a call whose result was
    saved is not asked again, and a call that was written but has no result (the process
    stopped while it ran) is answered on load with an error saying whether it took effect is
    unknown, never run again.
    """

    name: ClassVar[str] = "sessions"

    @bandoneon.hookimpl
    def session_plugin(self, session_id: str, path: str | None) -> Sessions:
        """``bandoneon chat --session ID`` (process-wide: called on the class, ``self`` is it)."""
        return open_session_plugin(session_id, path)
    #: ``register_session_stores``: how other plugins offer session stores (this plugin calls it).
    hookspecs: ClassVar[ModuleType] = session_hooks

    session_id: str = attrs.field(factory=lambda: uuid.uuid4().hex[:12], validator=_session_id)
    store: Any = None
    path: str | None = None
    durability: Durability = attrs.field(default="turn", validator=attrs.validators.in_(DURABILITY))

    damage: str | None = attrs.field(default=None, init=False)
    _store: SessionStore | None = attrs.field(default=None, init=False, repr=False)
    _lock: SessionLock | None = attrs.field(default=None, init=False, repr=False)
    _writer: SessionWriter | None = attrs.field(default=None, init=False, repr=False)
    _written: _Written = attrs.field(factory=lambda: _Written(), init=False, repr=False)

    # ---------------------------------------------------------------- opening

    @bandoneon.hookimpl
    def agent_created(self, agent: bandoneon.Agent) -> None:
        if self._lock is not None:
            raise SessionError(
                f"session {self.session_id!r} is already open in another agent; give each agent its own "
                "Sessions(...), or branch the session with sessions.fork(NEW_ID)"
            )
        self._store = self._resolve_store(agent)
        self._lock = self._store.lock(self.session_id)
        try:
            loaded = self._store.open_for_writing(self.session_id)
            self._writer = self._store.writer(self.session_id)
        except BaseException:
            self.close()
            raise
        self._install(agent, loaded)

    def _resolve_store(self, agent: bandoneon.Agent) -> SessionStore:
        factories: dict[str, Callable[..., SessionStore]] = {
            "jsonl": lambda path: JsonlStore(path),
            "sqlite": lambda path: SqliteSessionStore(path or default_sessions_path().with_suffix(".sqlite3")),
        }

        def register(name: str, factory: Callable[..., Any]) -> None:
            if not callable(factory):
                raise bandoneon.ConfigError(f"register_session_stores: the factory for {name!r} is not callable")
            factories[name] = factory

        agent.hooks.call_sync(session_hooks.register_session_stores, agent=agent, register=register)
        if isinstance(self.store, SessionStore):
            return self.store
        if self.store is None:
            return open_store(self.path)
        if isinstance(self.store, str) and self.store in factories:
            return factories[self.store](self.path)
        raise bandoneon.ConfigError(f"sessions: unknown store {self.store!r}; known: {', '.join(sorted(factories))}, or a SessionStore")

    def _install(self, agent: bandoneon.Agent, loaded: LoadedSession) -> None:
        agent.load_history(loaded.messages, usage=loaded.usage)
        self._written.mark(agent.transcript, agent.history_resets)
        self._written.redacts = agent.redacts  # an agent's plugins are fixed when it is built
        self.damage = loaded.damage
        if loaded.damage:
            log.warning("session %r was damaged: %s", self.session_id, loaded.damage)
            warnings.warn(f"session {self.session_id!r} was damaged: {loaded.damage}", SessionDamaged, stacklevel=2)
        elif loaded.interrupted:
            log.warning(
                "session %r: %d tool call(s) were running when the process stopped; they are answered as interrupted, not run again",
                self.session_id,
                loaded.interrupted,
            )

    # ---------------------------------------------------------------- saving

    @property
    def unused_hooks(self) -> frozenset[str]:  # type: ignore[override]  # read-only: it follows durability
        """Under ``"run"`` the whole run is written when it ends (``after_run``): the hooks that
        write ahead, a result, or a turn are left uncalled (four hook calls a 2-turn run).
        Under ``"os"`` nothing waits for the disk, so what ``after_turn`` would write rides
        with the next write instead (two hook calls a 2-turn run): see ``tool_result_ready``."""
        durability = self.durability
        return _WRITING_AHEAD if durability == "run" else _AFTER_TURN if durability == "os" else _NONE

    # The writing hooks are plain functions that answer a coroutine only when a flush has to
    # wait on a worker thread (a slow disk): most runs never wait, and a coroutine per call
    # cost more than the write's bookkeeping.

    @bandoneon.hookimpl(trylast=True)
    def before_tool_execution(self, run: bandoneon.RunContext) -> Coroutine[Any, Any, None] | None:
        """Write-ahead: the turn's calls reach the session before any of them runs. trylast:
        called only for a call no other plugin refused or answered, so one that will run."""
        written = self._written
        transcript = run.transcript
        if written.holds(transcript, run.agent.history_resets):  # an earlier call of this turn wrote them
            return None
        waiting = self._flush(run, sync=self.durability == "turn")
        if waiting is not None:
            return self._written_ahead(waiting)
        written.ahead = True
        return None

    async def _written_ahead(self, waiting: Awaitable[None]) -> None:
        await waiting
        self._written.ahead = True

    @bandoneon.hookimpl
    def tool_result_ready(self, run: bandoneon.RunContext, result: bandoneon.ToolResult) -> None:
        """A call written ahead finished: its result is written at once (buffered, no fsync;
        a plain function: it never waits, and the loop calls it without a coroutine).
        If that write fails, the writer keeps the result and writes it with the next append,
        which reports the failure if it lasts: the other calls of the turn go on.

        A result of a turn none of whose calls was written ahead (refused, unknown, invalid):
        under ``"turn"`` the turn is written, flushed, when it ends (``after_turn``); under
        ``"os"``, which has no ``after_turn``, its calls are written first, then the result."""
        written = self._written
        transcript = run.transcript  # the turn's calls, until its last result is ready
        if not written.holds(transcript, run.agent.history_resets):
            if self.durability != "os":
                return
            self._flush(run, sync=False)  # unsynced: never waits
        writer = self._writer
        if writer is None:
            raise self._closed()
        written.early.add(result.call.id)
        written.unsynced = True
        try:
            if written.redacts:  # masked as a message, like every other record
                writer.append(run.agent.redact([result.to_message()]), sync=False)
            else:
                writer.append_result(result)
        except (OSError, SessionError) as exc:
            log.warning("session %r: the result of %s could not be written yet (%s); it goes with the next write", self.session_id, result.call.name, exc)

    @bandoneon.hookimpl
    def after_turn(self, run: bandoneon.RunContext, turn: bandoneon.Turn) -> Awaitable[None] | None:
        """A turn with tool calls is in the session when it ends. An answer (no tool calls)
        waits for the end of its run, written with the run's usage: one write, not two.
        (Not called under ``"os"``: see ``unused_hooks``.)"""
        if not turn.has_tool_calls:
            return None
        written = self._written
        # A turn whose calls were written ahead leaves only results (flushed with the next
        # write); calls no tool ran for (refused, cut off) are flushed now under "turn".
        waiting = self._flush(run, sync=self.durability == "turn" and not written.ahead)
        written.ahead = False
        return waiting

    @bandoneon.hookimpl
    def after_run(self, run: bandoneon.RunContext, result: bandoneon.RunResult) -> Coroutine[Any, Any, None] | None:
        try:
            # Whatever the run left unflushed goes down now: its answer, or the results of a run
            # that ended right after its tools (a usage record alone never waits for the disk).
            waiting = self._flush(run, usage=result.usage, sync=self.durability != "os", only_if_needed=True)
        except BaseException:
            self._run_ended()
            raise
        if waiting is None:
            self._run_ended()
            return None
        return self._ended_after(waiting)

    async def _ended_after(self, waiting: Awaitable[None]) -> None:
        try:
            await waiting
        finally:
            self._run_ended()

    def _run_ended(self) -> None:
        written = self._written
        written.ahead = False
        written.early.clear()
        if written.writing:
            written.writing = False
            _WRITING.runs -= 1

    def _flush(self, run: bandoneon.RunContext, *, sync: bool, usage: bandoneon.Usage | None = None, only_if_needed: bool = False) -> Awaitable[None] | None:
        """Write what the transcript holds beyond what was written; ``sync``: flush it to disk.
        ``only_if_needed``: sync only if messages are written now or were written unsynced.

        A plain function: it writes at once, unless the flush must wait on a worker thread, whose
        awaitable it returns (None: written). Most flushes wait for nothing (``"os"``, a result,
        a fast disk), and a coroutine per flush cost more than its write's bookkeeping."""
        writer = self._writer
        if writer is None:
            raise self._closed()
        written = self._written
        if written.in_flight is not None:  # left by a cancelled run: this flush goes after it
            if not written.in_flight.done():
                return self._flush_after(written.in_flight, run, sync=sync, usage=usage, only_if_needed=only_if_needed)
            written.in_flight = None
        transcript = run.transcript
        count = written.count
        resets = run.agent.history_resets
        # A history replaced (cleared, loaded) may be as long as the last one written and end with
        # the same message object (a provider that answers with one it keeps): the count says so.
        replaced = resets != written.resets or count > len(transcript) or (count and transcript[count - 1] is not written.last)
        new = list(transcript) if replaced else transcript[count:]
        early = written.early
        if early:  # results written as their calls finished: in the file already (unless it starts over)
            if not replaced:
                new = _without_early(new, early)
            early.clear()  # each is in the transcript by now: a flush during a turn's tools comes before its first early result
        if not new and usage is None and not replaced and not writer.has_pending:
            written.mark(transcript, resets)  # what is left was written already (results of calls written ahead)
            return None
        if only_if_needed:
            sync = sync and bool(new or replaced or written.unsynced)
        # What the file keeps is masked by the agent's rules (guard, policy packs): a prompt or a
        # tool argument holding a key is stored without it, while the run goes on with the original.
        masked = run.agent.redact(new) if written.redacts and new else new
        written.mark(transcript, resets)  # a batch that fails stays with the writer, which writes it again next time
        if not written.writing:
            written.writing = True
            _WRITING.runs += 1
        if sync and not self._sync_on_loop(writer):
            return self._flush_on_thread(writer, masked, usage=usage, clear=bool(replaced))
        # A buffered write, or a fast flush, costs less than the hop to a thread.
        writer.append(masked, usage=usage, clear=bool(replaced), sync=sync)
        written.unsynced = not sync and (written.unsynced or bool(new))
        return None

    async def _flush_on_thread(self, writer: SessionWriter, masked: list[bandoneon.Message], *, usage: bandoneon.Usage | None, clear: bool) -> None:
        written = self._written
        if written.worker is None:  # a use of the workers, held until this plugin is closed or collected
            threads.acquire()
            written.worker = weakref.finalize(self, threads.release)
        on_worker = written.on_worker
        on_worker.acquire()  # free: a flush waits for the one a cancelled run left (_flush_after)
        job = threads.run(asyncio.get_running_loop(), _append_synced, on_worker, writer, masked, usage, clear)
        if job.done():  # no worker could take it (run sets the error at once): it will never run
            on_worker.release()
        try:
            await asyncio.shield(job)  # cancelled, this run leaves the job going: see _flush_after
        except asyncio.CancelledError:
            if not job.done():
                written.in_flight = job
                job.add_done_callback(_outcome_taken)
            raise
        written.unsynced = False  # only once it is on disk: a failed flush is tried again, synced

    async def _flush_after(self, in_flight: asyncio.Future[None], run: bandoneon.RunContext, **flush: Any) -> None:
        """``_flush`` once the write a cancelled run left on a worker has ended, so batches reach
        the file in order. Its failure was that run's: the batch stayed with the writer, and
        goes first into this flush."""
        await asyncio.wait((in_flight,))  # cancelled itself, this leaves in_flight going too
        waiting = self._flush(run, **flush)
        if waiting is not None:
            await waiting

    @staticmethod
    def _sync_on_loop(writer: SessionWriter) -> bool:
        recent = writer.recent_syncs
        return _WRITING.runs <= 1 and bool(recent) and sorted(recent)[len(recent) // 2] < INLINE_SYNC_LIMIT

    def _closed(self) -> SessionError:
        """What a save after ``close()`` raises (the writer and the lock go together)."""
        return SessionError(f"session {self.session_id!r} was closed; build a new agent to go on")

    # ---------------------------------------------------------------- the rest

    @bandoneon.hookimpl
    def agent_closed(self) -> None:
        self.close()

    def close(self) -> None:
        """Release the session's writer lock (another agent or process may open it after this).

        Later turns of this plugin's agent raise ``SessionError``: build a new agent to go on."""
        worker, self._written.worker = self._written.worker, None
        if worker is not None:
            worker()  # the workers stop with their last user
        if self._writer is not None:
            with self._written.on_worker:  # a cancelled run's flush may still be writing
                self._writer.close()
            self._writer = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def fork(self, new_id: str, *, at: int | None = None) -> Sessions:
        """Branch this session into ``new_id`` (its first ``at`` messages); returns a plugin for the branch."""
        if self._store is None:
            raise SessionError("fork needs an agent built with this plugin")
        self._store.fork(self.session_id, new_id, at=at)
        return Sessions(session_id=new_id, store=self._store)

    @staticmethod
    @bandoneon.hookimpl
    def register_commands(subparsers: Any) -> None:
        """``bandoneon sessions list|show|delete|fork``."""
        from .cli import add_commands

        add_commands(subparsers)


class _Written:
    """How much of the agent's transcript is in the session. Plain slots, not attrs fields:
    updated several times a turn, where an attrs ``__setattr__`` would cost more than the write."""

    __slots__ = ("ahead", "count", "early", "in_flight", "last", "on_worker", "redacts", "resets", "unsynced", "worker", "writing")

    def __init__(self) -> None:
        self.count = 0  # the transcript's first messages written
        self.last: bandoneon.Message | None = None  # the last of them (a cleared history no longer ends with it)
        self.resets = 0  # the agent's ``history_resets`` when they were written
        #: This turn's calls were written (and under "turn" flushed) before any of them ran;
        #: the ids of calls whose results are written already (out of the transcript's order).
        self.ahead = False
        self.early: set[str] = set()
        self.unsynced = False  # messages written since the last flush to disk
        self.writing = False  # this run counts in _WRITING.runs
        self.redacts = True  # does the agent mask what stores keep (``Agent.redacts``)?
        #: The plugin's use of the worker threads (``threads.acquire``), once a flush waited on
        #: one: its finalizer releases it when the plugin is closed or garbage-collected.
        self.worker: weakref.finalize | None = None
        #: A run cancelled while its flush waited on a worker leaves that write going
        #: (``in_flight``, until the loop hears it ended), and the session's next write must
        #: come after it, or batches would reach the file out of order (or a closed file). The
        #: next flush awaits it (every other write of a run follows a flush of that run);
        #: ``close``, which cannot await, waits on ``on_worker``, held from a flush's hand-over
        #: to a worker until its write ended.
        self.in_flight: asyncio.Future[None] | None = None
        self.on_worker = threading.Lock()

    def holds(self, transcript: list[bandoneon.Message], resets: int) -> bool:
        """Whether all of ``transcript`` (not empty) is written: as many messages, ending with
        the same one, and no replacement of the history since (``Agent.history_resets``)."""
        return self.count == len(transcript) and self.last is transcript[-1] and self.resets == resets

    def mark(self, transcript: list[bandoneon.Message], resets: int) -> None:
        self.count = len(transcript)
        self.resets = resets
        self.last = transcript[-1] if transcript else None


def _append_synced(on_worker: threading.Lock, writer: SessionWriter, masked: list[bandoneon.Message], usage: bandoneon.Usage | None, clear: bool) -> None:
    """A synced append, as a worker thread runs it (``on_worker`` is released when it ended)."""
    try:
        writer.append(masked, usage=usage, clear=clear, sync=True)
    finally:
        on_worker.release()


def _outcome_taken(job: asyncio.Future[None]) -> None:
    """Take the outcome of a write whose run was cancelled (an error is the next flush's to
    meet again), so asyncio does not log it as never retrieved."""
    if not job.cancelled():
        job.exception()


def _without_early(new: list[bandoneon.Message], early: set[str]) -> list[bandoneon.Message]:
    """``new`` without the results written early. They answer the calls of the last message
    written, so they lead ``new``: only those are looked at (a provider may give a later
    turn's call the same id)."""
    for index, message in enumerate(new):
        if message.role != "tool":
            return [m for m in new[:index] if m.tool_call_id not in early] + new[index:]
    return [m for m in new if m.tool_call_id not in early]


def open_session_plugin(session_id: str, path: str | os.PathLike[str] | None = None) -> Sessions:
    """The plugin ``bandoneon chat --session ID`` adds: resume ``session_id`` from ``path``
    (a JSONL folder, or a ``.sqlite3`` file; default ``$BANDONEON_SESSIONS_PATH``)."""
    return Sessions(session_id=session_id, store=open_store(path))
