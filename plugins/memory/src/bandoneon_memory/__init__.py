"""bandoneon-memory: long-term memory for agents (level 9 of the Agent Harness Patterns track).

``Memory`` is the plugin. Embedders (``OpenAICompatibleEmbedder``, ``LocalEmbedder``) and the
store (``SqliteStore``) are usable on their own.
"""

from __future__ import annotations

from .embedders import Embedder, OpenAICompatibleEmbedder, resolve_embedder
from .plugin import KINDS, Memory
from .store import Hit, MemoryStore, MemoryStoreError, Note, ScopeError, SqliteStore, check_scope
from .notes_file import NotesFile


def __getattr__(name: str) -> object:
    # The local embedder module is cheap, but keep the name lazy like its heavy imports.
    if name == "LocalEmbedder":
        from .local import LocalEmbedder

        return LocalEmbedder
    raise AttributeError(name)


__all__ = [
    "KINDS",
    "Embedder",
    "Hit",
    "LocalEmbedder",
    "Memory",
    "MemoryStore",
    "Note",
    "NotesFile",
    "OpenAICompatibleEmbedder",
    "MemoryStoreError",
    "ScopeError",
    "SqliteStore",
    "check_scope",
    "resolve_embedder",
]
