"""Where sessions live: a folder of JSONL files, or one SQLite file. Same records, same rules.

Both stores share everything but the bytes on disk (``SessionStore``): loading replays the
records and recovers the valid prefix of a damaged session; opening for writing takes the
session's lock and, if the session was damaged, keeps the damaged original aside
(``<id>.jsonl.damaged-<time>`` / the ``damaged_records`` table) before rewriting the valid
prefix, so nothing is ever thrown away and later appends never follow garbage.
"""

from __future__ import annotations

import abc
import os
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import bandoneon

from .lock import SessionLock
from .records import (
    CLEAR,
    CLEAR_TEXT,
    FORMAT_VERSION,
    LoadedSession,
    SessionError,
    check_session_id,
    encode,
    frame,
    frame_batch,
    header_record,
    is_session_id,
    message_record,
    message_text,
    replay,
    result_line,
    tool_result_text,
    usage_record,
    usage_text,
    valid_cut,
)

__all__ = ["JsonlStore", "SessionStore", "SessionWriter", "SqliteSessionStore", "default_sessions_path", "open_store"]

Records = list[tuple[str, bytes | str]]


def default_sessions_path() -> Path:
    """``$BANDONEON_SESSIONS_PATH``, else ``~/.bandoneon/sessions`` (a JSONL folder)."""
    return Path(os.environ.get("BANDONEON_SESSIONS_PATH") or Path.home() / ".bandoneon" / "sessions")


class SessionStore(abc.ABC):
    """The shared logic. Subclasses say how records are read, appended, replaced and removed."""

    @abc.abstractmethod
    def _read(self, session_id: str) -> tuple[Records, str | None]:
        """All records in order as ``(where, text)``, and a note if the last one is torn."""

    @abc.abstractmethod
    def _append(self, session_id: str, records: list[dict[str, Any]], *, sync: bool = True) -> None:
        """Add records after the last one, all or nothing as far as the medium allows; on disk
        when it returns if ``sync``, else when the operating system writes it back."""

    @abc.abstractmethod
    def _replace(self, session_id: str, records: list[dict[str, Any]], *, keep_damaged: bool) -> str | None:
        """Replace the whole session atomically; keep the old one aside if asked (returns where)."""

    @abc.abstractmethod
    def _remove(self, session_id: str) -> None:
        """Delete the session's records."""

    @abc.abstractmethod
    def _ids(self) -> list[str]:
        """Every stored session id."""

    @abc.abstractmethod
    def _lock_path(self, session_id: str) -> Path:
        """The lock file of a session."""

    # ------------------------------------------------------------ public

    def lock(self, session_id: str) -> SessionLock:
        """Take the session's writer lock; ``SessionLocked`` if someone else has it."""
        return SessionLock(self._lock_path(check_session_id(session_id)), session_id).acquire()

    def load(self, session_id: str) -> LoadedSession:
        """The session as stored (empty if it does not exist); damage is described, not raised."""
        records, torn = self._read(check_session_id(session_id))
        return replay(session_id, records, torn=torn)

    def exists(self, session_id: str) -> bool:
        return self.load(session_id).exists

    def open_for_writing(self, session_id: str) -> LoadedSession:
        """Create the session, or repair a damaged one (the original is kept aside). Call with the lock held."""
        loaded = self.load(session_id)
        if loaded.version is not None and loaded.version > FORMAT_VERSION:
            # Records of a format this version does not know read as damage: "repairing" them
            # would cut the session at the first one and write it back in the older format.
            raise SessionError(
                f"session {session_id!r} was written by a newer bandoneon-sessions (format {loaded.version}; this one "
                f"writes format {FORMAT_VERSION}): upgrade bandoneon-sessions to go on with it"
            )
        if not loaded.exists and loaded.damage is None:
            created = time.time()
            self._replace(session_id, [header_record(session_id, created)], keep_damaged=False)
            return LoadedSession(session_id, created_at=created)
        if loaded.damage is None:
            if loaded.interrupted:  # answer the calls that were running when the process stopped, once
                self._append(session_id, [message_record(m) for m in loaded.messages[-loaded.interrupted :]], sync=True)
            return loaded
        created = loaded.created_at or time.time()
        records = [header_record(session_id, created, loaded.forked_from)]
        records += [message_record(m) for m in loaded.messages]
        if loaded.usage != bandoneon.Usage():
            records.append(usage_record(loaded.usage))
        kept = self._replace(session_id, records, keep_damaged=True)
        damage = f"{loaded.damage}; the valid prefix ({len(loaded.messages)} messages) was kept and the damaged original saved as {kept}"
        return LoadedSession(session_id, loaded.messages, loaded.usage, created, loaded.forked_from, damage, loaded.valid_records)

    def append(
        self, session_id: str, messages: Iterable[bandoneon.Message] = (), *, usage: bandoneon.Usage | None = None, clear: bool = False, sync: bool = True
    ) -> None:
        """Append in one write (JSONL) or one transaction (SQLite). Call with the lock held.

        ``sync=False``: do not wait for the disk (see ``Sessions.durability``). A writer that
        appends often takes a ``writer()`` instead."""
        records = batch(messages, usage=usage, clear=clear)
        if records:
            self._append(check_session_id(session_id), records, sync=sync)

    def writer(self, session_id: str) -> SessionWriter:
        """Appends to ``session_id`` until closed. Call with the lock held, after
        ``open_for_writing``. Stores keep their file or connection open in it; this default
        appends through ``_append``."""
        return _AppendingWriter(self, check_session_id(session_id))

    def list(self) -> list[LoadedSession]:
        """Every stored session, most recently created first."""
        sessions = [self.load(session_id) for session_id in self._ids()]
        return sorted(sessions, key=lambda s: -(s.created_at or 0))

    def delete(self, session_id: str) -> None:
        """Delete a session; ``SessionLocked`` while someone has it open."""
        if not self.exists(session_id) and not self.load(session_id).damage:
            raise SessionError(f"there is no session {session_id!r}")
        lock = self.lock(session_id)
        try:
            self._remove(session_id)
        finally:
            lock.release()

    def fork(self, source_id: str, new_id: str, *, at: int | None = None) -> LoadedSession:
        """A new session holding the first ``at`` messages of ``source_id`` (all by default).

        The branch cannot cut between a tool call and its result. Usage starts at zero: the
        branch has not spent anything yet.
        """
        source = self.load(source_id)
        if not source.exists:
            raise SessionError(f"cannot fork {source_id!r}: there is no such session")
        self._refuse_existing(new_id)
        at = len(source.messages) if at is None else at
        valid_cut(source.messages, at)
        lock = self.lock(new_id)
        try:
            self._refuse_existing(new_id)  # again under the lock: another fork may have made it since
            created = time.time()
            records = [header_record(new_id, created, source_id)] + [message_record(m) for m in source.messages[:at]]
            self._replace(new_id, records, keep_damaged=False)
        finally:
            lock.release()
        return self.load(new_id)

    def _refuse_existing(self, new_id: str) -> None:
        """A fork never writes over a session, nor over a damaged one (whose header may be the
        damaged record, so it does not "exist"): its records would be gone with no copy kept."""
        target = self.load(check_session_id(new_id))
        if target.exists:
            raise SessionError(f"cannot fork into {new_id!r}: that session already exists")
        if target.damage:
            raise SessionError(f"cannot fork into {new_id!r}: a damaged session is stored under that id ({target.damage})")


def batch(messages: Iterable[bandoneon.Message] = (), *, usage: bandoneon.Usage | None = None, clear: bool = False) -> list[dict[str, Any]]:
    """The records of one append: a ``clear`` first if asked, the messages, then the usage."""
    records: list[dict[str, Any]] = [CLEAR] if clear else []
    records += [message_record(m) for m in messages]
    if usage is not None:
        records.append(usage_record(usage))
    return records


def batch_texts(messages: Iterable[bandoneon.Message] = (), *, usage: bandoneon.Usage | None = None, clear: bool = False) -> list[str]:
    """``batch`` as JSON texts (``encode`` of each record), written straight from the values."""
    texts = [CLEAR_TEXT] if clear else []
    texts += [message_text(m) for m in messages]
    if usage is not None:
        texts.append(usage_text(usage))
    return texts


class SessionWriter(abc.ABC):
    """Appends to one session while its writer lock is held (``SessionStore.writer``).

    A batch whose write failed stays here and goes first into the next ``append``, under the
    same keys: the caller does not send its messages again, and a failure that was only
    reported (a COMMIT interrupted after it took effect) is not written twice.
    """

    #: Seconds the last three synced appends took, oldest first; ``Sessions`` reads their median
    #: to decide whether a flush may wait on the event loop itself (one slow flush, a busy
    #: moment of the disk, does not send the next ones to a thread, nor one fast flush the next
    #: ones of a slow disk to the loop).
    recent_syncs: tuple[float, ...] = ()

    def append(self, messages: Iterable[bandoneon.Message] = (), *, usage: bandoneon.Usage | None = None, clear: bool = False, sync: bool = True) -> None:
        """One write (JSONL) or one transaction (SQLite); on disk when it returns if ``sync``."""
        records = self._records(messages, usage, clear)
        if not records and not self.has_pending:
            return
        if not sync:
            self._write(records, sync=False)
            return
        started = time.perf_counter()
        self._write(records, sync=True)
        self.recent_syncs = (*self.recent_syncs[-2:], time.perf_counter() - started)

    def append_result(self, result: bandoneon.ToolResult) -> None:
        """A tool result as its message's record, buffered (no flush). Our own stores write it
        from the result itself: the loop builds the message from it anyway, once is enough."""
        self._write(self._result_records(result), sync=False)

    def _records(self, messages: Iterable[bandoneon.Message], usage: bandoneon.Usage | None, clear: bool) -> Any:
        """The batch in the form ``_write`` takes: the records (dicts) here; a writer of our own
        stores takes them as JSON text, written straight from the values (empty: nothing to write)."""
        return batch(messages, usage=usage, clear=clear)

    def _result_records(self, result: bandoneon.ToolResult) -> Any:
        """``append_result``'s batch in the form ``_write`` takes (here through the message)."""
        return self._records([result.to_message()], None, False)

    @property
    @abc.abstractmethod
    def has_pending(self) -> bool:
        """Is a failed batch waiting to be written again?"""

    @abc.abstractmethod
    def _write(self, records: Any, *, sync: bool) -> None:
        """Write what failed before, then ``records`` (as ``_records`` made them), all or
        nothing; keep them if it fails."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the open file or connection (a pending failed batch is dropped)."""


class _AppendingWriter(SessionWriter):
    """Any store: each batch through ``store._append`` (opened and closed every time)."""

    def __init__(self, store: SessionStore, session_id: str):
        self._store = store
        self._session_id = session_id
        self._pending: list[dict[str, Any]] = []
        self._pending_sync = False

    @property
    def has_pending(self) -> bool:
        return bool(self._pending)

    def _write(self, records: list[dict[str, Any]], *, sync: bool) -> None:
        records = self._pending + records
        sync = sync or self._pending_sync
        try:
            self._store._append(self._session_id, records, sync=sync)
        except BaseException:
            self._pending, self._pending_sync = records, sync
            raise
        self._pending, self._pending_sync = [], False

    def close(self) -> None:
        self._pending = []


class _JsonlWriter(SessionWriter):
    """The session's file held open (``bandoneon.AppendFile``): a write, and an fdatasync when synced."""

    def __init__(self, path: Path):
        self._file = bandoneon.AppendFile(path)
        self._pending = b""
        self._pending_sync = False

    @property
    def has_pending(self) -> bool:
        return bool(self._pending)

    def append(self, messages: Iterable[bandoneon.Message] = (), *, usage: bandoneon.Usage | None = None, clear: bool = False, sync: bool = True) -> None:
        # SessionWriter.append in one call: a session appends several times a turn.
        data = frame_batch(messages, usage, clear)
        if self._pending:
            data = self._pending + data
            sync = sync or self._pending_sync
        elif not data:
            return
        started = time.perf_counter() if sync else 0.0
        try:
            self._file.append(data, sync=sync)
        except BaseException:  # cut back off the file (AppendFile's promise); written again next time
            self._pending, self._pending_sync = data, sync
            raise
        self._pending, self._pending_sync = b"", False
        if sync:
            self.recent_syncs = (*self.recent_syncs[-2:], time.perf_counter() - started)

    def append_result(self, result: bandoneon.ToolResult) -> None:
        self._write(result_line(result), sync=False)

    def _records(self, messages: Iterable[bandoneon.Message], usage: bandoneon.Usage | None, clear: bool) -> bytes:
        return frame_batch(messages, usage, clear)

    def _result_records(self, result: bandoneon.ToolResult) -> bytes:
        return result_line(result)

    def _write(self, records: bytes, *, sync: bool) -> None:
        pending = self._pending
        if pending:
            records = pending + records
            sync = sync or self._pending_sync
        try:
            self._file.append(records, sync=sync)
        except BaseException:  # cut back off the file (AppendFile's promise); written again next time
            self._pending, self._pending_sync = records, sync
            raise
        if pending:
            self._pending, self._pending_sync = b"", False

    def close(self) -> None:
        self._file.close()


class JsonlStore(SessionStore):
    """One ``<id>.jsonl`` file per session in a folder, with ``<id>.lock`` beside it."""

    def __init__(self, folder: str | os.PathLike[str] | None = None):
        self.folder = Path(folder) if folder is not None else default_sessions_path()

    def __repr__(self) -> str:
        return f"JsonlStore({str(self.folder)!r})"

    def file(self, session_id: str) -> Path:
        return self.folder / f"{session_id}.jsonl"

    def _lock_path(self, session_id: str) -> Path:
        return self.folder / f"{session_id}.lock"

    def _read(self, session_id: str) -> tuple[Records, str | None]:
        try:
            content = self.file(session_id).read_bytes()
        except FileNotFoundError:
            return [], None
        except OSError as exc:
            raise SessionError(f"session {session_id!r} cannot be read: {exc}") from None
        lines = content.split(b"\n")
        last = lines.pop()  # b"" when the file ends with a newline, as every complete write does
        torn = f"line {len(lines) + 1} is incomplete (a write was cut short)" if last else None
        return [(f"line {number}", line) for number, line in enumerate(lines, 1)], torn

    def _append(self, session_id: str, records: list[dict[str, Any]], *, sync: bool = True) -> None:
        # One durable append: on disk when it returns (if sync), cut back off when it fails, so a
        # failed save never leaves bytes that the next save would follow.
        bandoneon.append_durably(self.file(session_id), b"".join(frame(r) for r in records), sync=sync)

    def _replace(self, session_id: str, records: list[dict[str, Any]], *, keep_damaged: bool) -> str | None:
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.file(session_id)
        kept = None
        if keep_damaged and target.exists():
            kept_path = target.with_name(f"{target.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
            os.link(target, kept_path)
            kept = str(kept_path)
        bandoneon.write_atomically(target, b"".join(frame(r) for r in records))
        return kept

    def _remove(self, session_id: str) -> None:
        self.file(session_id).unlink(missing_ok=True)

    def writer(self, session_id: str) -> SessionWriter:
        return _JsonlWriter(self.file(check_session_id(session_id)))

    def _ids(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        return sorted(p.stem for p in self.folder.glob("*.jsonl") if is_session_id(p.stem))  # not a session's name: not ours


_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (session_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (session_id, seq));
CREATE TABLE IF NOT EXISTS damaged_records (session_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT, moved_at REAL NOT NULL);
"""


class SqliteSessionStore(SessionStore):
    """Every session in one SQLite file; each append is one transaction. Locks in ``<file>.locks/``."""

    #: The class of every connection (a test puts one that fails its COMMIT here).
    connection_class: type[sqlite3.Connection] = sqlite3.Connection

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"SqliteSessionStore({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Any thread: a writer's connection stays open between flushes, some made on a worker
        # thread; its owner never uses it from two threads at once.
        connection = sqlite3.connect(self.path, timeout=10, check_same_thread=False, factory=self.connection_class)
        connection.executescript(_SCHEMA)
        return connection

    def _run(self, work: Any) -> Any:
        try:
            connection = self._connect()
            try:
                with connection:
                    return work(connection)
            finally:
                connection.close()
        except sqlite3.DatabaseError as exc:
            raise SessionError(bandoneon.unusable_sqlite("session store", self.path, exc)) from None

    def _lock_path(self, session_id: str) -> Path:
        return self.path.with_name(self.path.name + ".locks") / f"{session_id}.lock"

    def _read(self, session_id: str) -> tuple[Records, str | None]:
        rows = self._run(lambda c: c.execute("SELECT seq, data FROM records WHERE session_id = ? ORDER BY seq", (session_id,)).fetchall())
        return [(f"row {seq}", data) for seq, data in rows], None

    def _append(self, session_id: str, records: list[dict[str, Any]], *, sync: bool = True) -> None:
        def work(connection: sqlite3.Connection) -> None:
            if not sync:  # this transaction's commit is handed to the OS, not waited for
                connection.execute("PRAGMA synchronous = OFF")
            (last,) = connection.execute("SELECT coalesce(max(seq), -1) FROM records WHERE session_id = ?", (session_id,)).fetchone()
            connection.executemany(
                "INSERT INTO records (session_id, seq, data) VALUES (?, ?, ?)",
                [(session_id, last + 1 + n, encode(r)) for n, r in enumerate(records)],
            )

        self._run(work)

    def _replace(self, session_id: str, records: list[dict[str, Any]], *, keep_damaged: bool) -> str | None:
        def work(connection: sqlite3.Connection) -> None:
            if keep_damaged:
                connection.execute(
                    "INSERT INTO damaged_records SELECT session_id, seq, data, ? FROM records WHERE session_id = ?", (time.time(), session_id)
                )
            connection.execute("DELETE FROM records WHERE session_id = ?", (session_id,))
            connection.executemany(
                "INSERT INTO records (session_id, seq, data) VALUES (?, ?, ?)", [(session_id, n, encode(r)) for n, r in enumerate(records)]
            )

        self._run(work)
        return f"table damaged_records of {self.path}" if keep_damaged else None

    def _remove(self, session_id: str) -> None:
        self._run(lambda c: c.execute("DELETE FROM records WHERE session_id = ?", (session_id,)))

    def writer(self, session_id: str) -> SessionWriter:
        return _SqliteWriter(self, check_session_id(session_id))

    def _ids(self) -> list[str]:
        if not self.path.exists():
            return []
        rows = self._run(lambda c: c.execute("SELECT DISTINCT session_id FROM records ORDER BY session_id").fetchall())
        return [row[0] for row in rows if is_session_id(row[0])]  # rows no session id names are not ours


class _SqliteWriter(SessionWriter):
    """A connection held open; each record under the key ``(session_id, seq)``, its ``seq``
    given once: a batch written again after a failure reuses its keys, and ``INSERT OR
    IGNORE`` keeps a row that a failed-looking COMMIT had in fact stored."""

    def __init__(self, store: SqliteSessionStore, session_id: str):
        self._store = store
        self._session_id = session_id
        self._connection: sqlite3.Connection | None = None
        self._synchronous: bool | None = None
        self._pending: list[tuple[str, int, str]] = []
        self._pending_sync = False
        (last,) = store._run(lambda c: c.execute("SELECT coalesce(max(seq), -1) FROM records WHERE session_id = ?", (session_id,)).fetchone())
        self._next_seq: int = last + 1

    @property
    def has_pending(self) -> bool:
        return bool(self._pending)

    def _records(self, messages: Iterable[bandoneon.Message], usage: bandoneon.Usage | None, clear: bool) -> list[str]:
        return batch_texts(messages, usage=usage, clear=clear)

    def _result_records(self, result: bandoneon.ToolResult) -> list[str]:
        return [tool_result_text(result)]

    def _write(self, records: list[str], *, sync: bool) -> None:
        rows = self._pending + [(self._session_id, self._next_seq + n, text) for n, text in enumerate(records)]
        self._next_seq += len(records)
        sync = sync or self._pending_sync
        self._pending, self._pending_sync = rows, sync  # until the COMMIT returns
        try:
            connection = self._connect()
            if self._synchronous is not sync:  # OFF: this commit is handed to the OS, not waited for
                connection.execute(f"PRAGMA synchronous = {'FULL' if sync else 'OFF'}")
                self._synchronous = sync
            try:
                connection.executemany("INSERT OR IGNORE INTO records (session_id, seq, data) VALUES (?, ?, ?)", rows)
                connection.commit()
            except BaseException:
                self._drop_connection()
                raise
        except sqlite3.DatabaseError as exc:
            raise SessionError(bandoneon.unusable_sqlite("session store", self._store.path, exc)) from None
        self._pending, self._pending_sync = [], False

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = self._store._connect()
            self._synchronous = None
        return self._connection

    def _drop_connection(self) -> None:
        """After a failure the connection's state is unknown: roll back, and open a new one next time."""
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.rollback()
            except sqlite3.Error:
                pass
            connection.close()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def open_store(path: str | os.PathLike[str] | None = None) -> SessionStore:
    """A ``.sqlite3`` / ``.sqlite`` / ``.db`` file is a SQLite store; anything else is a JSONL folder."""
    location = Path(path) if path is not None else default_sessions_path()
    if location.suffix in (".sqlite3", ".sqlite", ".db"):
        return SqliteSessionStore(location)
    return JsonlStore(location)
