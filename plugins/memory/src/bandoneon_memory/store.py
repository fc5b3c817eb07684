"""The diary: notes in SQLite, each with its scope, its date, and its embedding and model.

Embedded (stdlib ``sqlite3``, no server). Every public method takes the scope and every query
filters on it, so no code path can read or delete another scope's notes. The async methods
run the blocking SQLite work in a worker thread (``asyncio.to_thread``) so the event loop,
and the other sessions on it, never wait for the disk.
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import sqlite3
import struct
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import attrs

import bandoneon

__all__ = ["Hit", "MemoryStore", "MemoryStoreError", "Note", "ScopeError", "SqliteStore", "check_scope", "default_memory_path"]

_SCOPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:-]{0,199}\Z")  # \Z: "$" would let a trailing newline through

_SCHEMA = """
CREATE TABLE IF NOT EXISTS notes (
    id         TEXT PRIMARY KEY,
    scope      TEXT NOT NULL,
    text       TEXT NOT NULL,
    created_at REAL NOT NULL,
    model      TEXT,
    vector     BLOB
);
CREATE INDEX IF NOT EXISTS notes_scope ON notes (scope, created_at);
"""


class MemoryStoreError(bandoneon.BandoneonError):
    """The memory store's file cannot be used (damaged, not SQLite, locked); the message names it."""


class ScopeError(bandoneon.ConfigError):
    """A scope is missing or malformed. Raised before any note is read or written."""


def check_scope(scope: object) -> str:
    """The scope, if it is a usable one; ``ScopeError`` otherwise (never a silent default)."""
    if not isinstance(scope, str) or not _SCOPE.match(scope):
        raise ScopeError(
            f"memory scope must be 1-200 characters of letters, digits and . _ @ : - "
            f"(starting with a letter or digit), got {scope!r}"
        )
    return scope


def default_memory_path() -> Path:
    """``$BANDONEON_MEMORY_PATH``, else ``~/.bandoneon/memory.sqlite3``."""
    return Path(os.environ.get("BANDONEON_MEMORY_PATH") or Path.home() / ".bandoneon" / "memory.sqlite3")


@attrs.frozen
class Note:
    """One saved note. ``model`` is the embedding model of its vector; None while it waits to be embedded."""

    id: str
    scope: str
    text: str
    created_at: float
    model: str | None = None

    @property
    def date(self) -> str:
        return time.strftime("%Y-%m-%d", time.localtime(self.created_at))

    @property
    def is_embedded(self) -> bool:
        return self.model is not None


@attrs.frozen
class Hit:
    """A note found by meaning, with its cosine similarity to the query."""

    note: Note
    score: float


@runtime_checkable
class MemoryStore(Protocol):
    """What the memory plugin needs from a store. Other stores plug in through ``register_memory``."""

    async def add(self, scope: str, text: str, vector: Sequence[float] | None, model: str | None) -> Note: ...
    async def set_vectors(self, scope: str, vectors: dict[str, Sequence[float]], model: str) -> None: ...
    async def search(self, scope: str, vector: Sequence[float], model: str, *, top_k: int, min_score: float) -> list[Hit]: ...
    async def list(self, scope: str) -> list[Note]: ...
    async def forget(self, scope: str, note_id: str) -> bool: ...
    async def forget_all(self, scope: str) -> int: ...


def _pack(vector: Sequence[float]) -> bytes:
    """Unit-normalised float32: cosine becomes a dot product, and 384 dims take 1.5 KB."""
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return struct.pack(f"<{len(vector)}f", *(v / norm for v in vector))


def _unpack(blob: bytes) -> tuple[float, ...]:
    return struct.unpack(f"<{len(blob) // 4}f", blob)


class SqliteStore:
    """Notes in one SQLite file. Safe for several processes (SQLite's own locking, WAL)."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else default_memory_path()
        self._ready = False

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        if not self._ready:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=10)
        if not self._ready:
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.executescript(_SCHEMA)
            except BaseException:
                connection.close()
                raise
            self._ready = True
        return connection

    def _run(self, work, *args):  # type: ignore[no-untyped-def]
        try:
            connection = self._connect()
            try:
                with connection:
                    return work(connection, *args)
            finally:
                connection.close()
        except sqlite3.DatabaseError as exc:
            raise MemoryStoreError(bandoneon.unusable_sqlite("memory store", self.path, exc)) from None

    # ------------------------------------------------------------ sync core (one per method)

    def add_sync(self, scope: str, text: str, vector: Sequence[float] | None, model: str | None) -> Note:
        check_scope(scope)
        if not text.strip():
            raise ValueError("a note cannot be empty")
        note = Note(uuid.uuid4().hex[:12], scope, text, time.time(), model if vector is not None else None)
        blob = _pack(vector) if vector is not None else None
        self._run(
            lambda c: c.execute(
                "INSERT INTO notes (id, scope, text, created_at, model, vector) VALUES (?, ?, ?, ?, ?, ?)",
                (note.id, scope, text, note.created_at, note.model, blob),
            )
        )
        return note

    def set_vectors_sync(self, scope: str, vectors: dict[str, Sequence[float]], model: str) -> None:
        check_scope(scope)
        rows = [(model, _pack(vector), note_id, scope) for note_id, vector in vectors.items()]
        self._run(lambda c: c.executemany("UPDATE notes SET model = ?, vector = ? WHERE id = ? AND scope = ?", rows))

    def search_sync(self, scope: str, vector: Sequence[float], model: str, *, top_k: int, min_score: float) -> list[Hit]:
        check_scope(scope)
        rows = self._run(
            lambda c: c.execute(
                "SELECT id, scope, text, created_at, model, vector FROM notes WHERE scope = ? AND model = ?",
                (scope, model),
            ).fetchall()
        )
        query = _unpack(_pack(vector))
        hits = []
        for note_id, note_scope, text, created_at, note_model, blob in rows:
            stored = _unpack(blob)
            if len(stored) != len(query):
                continue  # same model name, other dimensions: never compared (a vector of another space)
            score = sum(a * b for a, b in zip(query, stored, strict=True))
            if score >= min_score:
                hits.append(Hit(Note(note_id, note_scope, text, created_at, note_model), score))
        hits.sort(key=lambda hit: (-hit.score, -hit.note.created_at))
        return hits[:top_k]

    def list_sync(self, scope: str) -> list[Note]:
        check_scope(scope)
        rows = self._run(
            lambda c: c.execute(
                "SELECT id, scope, text, created_at, model FROM notes WHERE scope = ? ORDER BY created_at", (scope,)
            ).fetchall()
        )
        return [Note(*row) for row in rows]

    def forget_sync(self, scope: str, note_id: str) -> bool:
        check_scope(scope)
        cursor = self._run(lambda c: c.execute("DELETE FROM notes WHERE id = ? AND scope = ?", (note_id, scope)))
        return cursor.rowcount > 0

    def forget_all_sync(self, scope: str) -> int:
        check_scope(scope)
        return self._run(lambda c: c.execute("DELETE FROM notes WHERE scope = ?", (scope,))).rowcount

    def scopes_sync(self) -> list[tuple[str, int]]:
        """Every scope and how many notes it holds (for the CLI; not scoped on purpose)."""
        if not self.path.exists():
            return []
        return self._run(lambda c: c.execute("SELECT scope, count(*) FROM notes GROUP BY scope ORDER BY scope").fetchall())

    # ------------------------------------------------------------ async twins

    async def add(self, scope: str, text: str, vector: Sequence[float] | None, model: str | None) -> Note:
        return await asyncio.to_thread(self.add_sync, scope, text, vector, model)

    async def set_vectors(self, scope: str, vectors: dict[str, Sequence[float]], model: str) -> None:
        await asyncio.to_thread(self.set_vectors_sync, scope, vectors, model)

    async def search(self, scope: str, vector: Sequence[float], model: str, *, top_k: int, min_score: float) -> list[Hit]:
        return await asyncio.to_thread(lambda: self.search_sync(scope, vector, model, top_k=top_k, min_score=min_score))

    async def list(self, scope: str) -> list[Note]:
        return await asyncio.to_thread(self.list_sync, scope)

    async def forget(self, scope: str, note_id: str) -> bool:
        return await asyncio.to_thread(self.forget_sync, scope, note_id)

    async def forget_all(self, scope: str) -> int:
        return await asyncio.to_thread(self.forget_all_sync, scope)
