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
import functools
import logging
import os
import uuid
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any, ClassVar, Literal

import attrs

import bandoneon

from . import hookspecs as session_hooks
from .lock import SessionLock
from .records import LoadedSession, SessionError, check_session_id
from .stores import JsonlStore, SessionStore, SqliteSessionStore, default_sessions_path, open_store

__all__ = ["SessionDamaged", "Sessions", "open_session_plugin"]

log = logging.getLogger("bandoneon.sessions")

Durability = Literal["turn", "run", "os"]
DURABILITY = ("turn", "run", "os")


class SessionDamaged(UserWarning):
    """A session was damaged on disk; its valid prefix was loaded and the original kept aside."""


def _session_id(instance: Any, attribute: attrs.Attribute, value: str) -> None:
    check_session_id(value)


@attrs.define
class Sessions(bandoneon.Plugin):
    """Save the agent's whole history under ``session_id`` and load it back next time.

    Options: ``session_id`` (default: a new random id), ``store`` (``"jsonl"``, ``"sqlite"``, a
    ``SessionStore``, or a name another plugin offers through the ``register_session_stores``
    hook this plugin publishes), ``path`` (the JSONL folder or the SQLite file; default
    ``$BANDONEON_SESSIONS_PATH`` or ``~/.bandoneon/sessions``), ``durability``:

    - ``"turn"`` (default): each turn's messages are on disk (one write, one fsync) before the
      next turn starts; a power loss loses at most the turn under way. The run's usage record
      rides along without a sync of its own.
    - ``"run"``: one write and one fsync per run; a crash loses the run under way.
    - ``"os"``: each turn is written, the flush left to the OS: survives the process dying,
      not the machine losing power.
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
    _saved: int = attrs.field(default=0, init=False, repr=False)
    _last_saved: bandoneon.Message | None = attrs.field(default=None, init=False, repr=False)

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
        self._mark_saved(agent.transcript)
        self.damage = loaded.damage
        if loaded.damage:
            log.warning("session %r was damaged: %s", self.session_id, loaded.damage)
            warnings.warn(f"session {self.session_id!r} was damaged: {loaded.damage}", SessionDamaged, stacklevel=2)

    def _mark_saved(self, transcript: list[bandoneon.Message]) -> None:
        self._saved = len(transcript)
        self._last_saved = transcript[-1] if transcript else None

    # ---------------------------------------------------------------- saving

    async def _flush(self, run: bandoneon.RunContext, usage: bandoneon.Usage | None = None) -> None:
        if self._store is None or self._lock is None:
            raise SessionError(f"session {self.session_id!r} was closed; build a new agent to go on")
        transcript = run.transcript
        replaced = self._saved > len(transcript) or (self._saved and transcript[self._saved - 1] is not self._last_saved)
        new = list(transcript) if replaced else transcript[self._saved :]
        if not new and usage is None and not replaced:
            return
        # Messages wait for the disk unless durability is "os"; a usage record alone never does
        # (the next synced write carries it down, and losing it loses no message).
        sync = self.durability != "os" and bool(new or replaced)
        # What the file keeps is masked by the agent's rules (guard, policy packs): a prompt or a
        # tool argument holding a key is stored without it, while the run goes on with the original.
        append = functools.partial(self._store.append, self.session_id, run.agent.redact(new), usage=usage, clear=bool(replaced), sync=sync)
        if sync:
            await asyncio.to_thread(append)  # an fsync would hold every other run on the loop
        else:
            append()  # a buffered write costs less than the hop to a thread
        self._mark_saved(transcript)

    @bandoneon.hookimpl
    async def after_turn(self, run: bandoneon.RunContext) -> None:
        if self.durability != "run":
            await self._flush(run)

    @bandoneon.hookimpl
    async def after_run(self, run: bandoneon.RunContext, result: bandoneon.RunResult) -> None:
        await self._flush(run, usage=result.usage)

    # ---------------------------------------------------------------- the rest

    @bandoneon.hookimpl
    def agent_closed(self) -> None:
        self.close()

    def close(self) -> None:
        """Release the session's writer lock (another agent or process may open it after this).

        Later turns of this plugin's agent raise ``SessionError``: build a new agent to go on."""
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


def open_session_plugin(session_id: str, path: str | os.PathLike[str] | None = None) -> Sessions:
    """The plugin ``bandoneon chat --session ID`` adds: resume ``session_id`` from ``path``
    (a JSONL folder, or a ``.sqlite3`` file; default ``$BANDONEON_SESSIONS_PATH``)."""
    return Sessions(session_id=session_id, store=open_store(path))
