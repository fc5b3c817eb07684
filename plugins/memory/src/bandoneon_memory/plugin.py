"""The Memory plugin: what an agent keeps between sessions, where the end of a session can't reach it.

Two modes (level 9):

- ``"notes"``: notes in the prompt. One Markdown file per scope; its notes go into the system
  prompt at the start of every run, and the agent adds to it with ``remember``.
- ``"search"``: search by meaning. ``remember`` saves a note with its embedding, scope and
  date in SQLite; ``recall`` embeds the question and returns the closest notes above a
  minimum score, newest first.

The scope (whose memory this is) comes from ``run.deps`` (``{"memory_scope": "c-2291"}`` or an
object with a ``memory_scope`` attribute), else from the ``scope`` option. Never from the
model: the tools take no scope argument, and every store call filters on it.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, ClassVar, Literal

import attrs

import bandoneon

from . import hookspecs as memory_hooks
from .embedders import Embedder, EmbedderFactory, builtin_embedders, resolve_embedder
from .notes_file import NotesFile
from .render import render_hits, render_notes
from .store import MemoryStore, Note, ScopeError, SqliteStore, check_scope, default_memory_path

__all__ = ["Memory"]

log = logging.getLogger("bandoneon.memory")

#: The kinds ``register(kind, name, factory)`` accepts during ``register_memory``.
KINDS = ("embedder", "store")

#: This run's snapshot of the notes file (notes mode), rendered for the system prompt.
_NOTES = bandoneon.StashKey[str | None]("memory.notes")


def _scope_option(instance: Any, attribute: attrs.Attribute, value: str | None) -> None:
    if value is not None:
        check_scope(value)


@attrs.define
class Memory(bandoneon.Plugin):
    """Long-term memory: ``remember`` and, in search mode, ``recall``, confined to one scope per run.

    Options: ``mode`` ("search" or "notes"), ``scope``, ``path`` (the SQLite file, or the notes
    folder), ``embedder`` (a string like ``"openai-compatible:MODEL@URL"`` or ``"local:"``, or
    an ``Embedder``), ``store`` (a ``MemoryStore``, or ``"PREFIX:REST"`` from a registered
    store factory), ``top_k``, ``min_score``, ``max_note_chars``.
    """

    name: ClassVar[str] = "memory"
    #: ``register_memory``: how other plugins contribute embedders and stores (this plugin calls it).
    hookspecs: ClassVar[ModuleType] = memory_hooks

    mode: Literal["search", "notes"] = "search"
    scope: str | None = attrs.field(default=None, validator=_scope_option)
    path: str | None = None
    embedder: Any = None
    store: Any = None
    top_k: int = attrs.field(default=3, validator=bandoneon.in_range(at_least=1, integer=True))
    #: A cosine similarity.
    min_score: float = attrs.field(default=0.2, validator=bandoneon.in_range(at_least=-1, at_most=1))
    max_note_chars: int = attrs.field(default=500, validator=bandoneon.in_range(at_least=1, integer=True))

    _embedder: Embedder | None = attrs.field(default=None, init=False, repr=False)
    _store: MemoryStore | None = attrs.field(default=None, init=False, repr=False)
    _reported_mismatch: set[str] = attrs.field(factory=set, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.mode not in ("search", "notes"):
            raise bandoneon.ConfigError(f"memory: mode must be 'search' or 'notes', got {self.mode!r}")

    # ---------------------------------------------------------------- setup

    @bandoneon.hookimpl
    def agent_created(self, agent: bandoneon.Agent) -> None:
        """Collect embedders and stores from every plugin, then resolve this agent's."""
        embedders: dict[str, EmbedderFactory] = builtin_embedders()
        stores: dict[str, Callable[..., MemoryStore]] = {"sqlite": lambda rest: SqliteStore(rest or None)}

        def register(kind: str, name: str, factory: Callable[..., Any]) -> None:
            if kind == "session_store":
                raise bandoneon.ConfigError(
                    f"register_memory: session stores are bandoneon-sessions': offer {name!r} with its register_session_stores hook"
                )
            if kind not in KINDS:
                raise bandoneon.ConfigError(f"register_memory: unknown kind {kind!r}; use one of {', '.join(KINDS)}")
            if not callable(factory):
                raise bandoneon.ConfigError(f"register_memory: the factory for {kind} {name!r} is not callable")
            if kind == "embedder":
                embedders[name] = factory
            elif kind == "store":
                stores[name] = factory

        agent.hooks.call_sync(memory_hooks.register_memory, agent=agent, register=register)
        if self.mode == "notes":
            return
        self._store = self._resolve_store(stores)
        self._embedder = resolve_embedder(self._default_embedder(), embedders)

    @bandoneon.hookimpl
    async def agent_closed(self) -> None:
        close = getattr(self._embedder, "aclose", None)
        if close is not None:
            await close()

    def _default_embedder(self) -> str | Embedder:
        if self.embedder is not None:
            return self.embedder
        if importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("tokenizers"):
            return "local:"
        raise bandoneon.ConfigError(
            "memory: mode 'search' needs an embedder: pass embedder='openai-compatible:MODEL@http://host:port/v1' "
            "(or 'ollama:nomic-embed-text'), or install the local one with pip install 'bandoneon-memory[local]'"
        )

    def _resolve_store(self, stores: Mapping[str, Callable[..., MemoryStore]]) -> MemoryStore:
        if self.store is None:
            return SqliteStore(self.path)
        if isinstance(self.store, str):
            prefix, colon, rest = self.store.partition(":")
            if not colon or prefix not in stores:
                raise bandoneon.ConfigError(f"memory: unknown store {self.store!r}; known: {', '.join(f'{n}:...' for n in sorted(stores))}")
            return stores[prefix](rest)
        if not isinstance(self.store, MemoryStore):
            raise bandoneon.ConfigError(f"memory: store {self.store!r} does not have the MemoryStore methods")
        return self.store

    @property
    def notes_folder(self) -> Path:
        return Path(self.path) if self.path else default_memory_path().parent / "notes"

    # ---------------------------------------------------------------- scope

    def scope_for(self, run: bandoneon.RunContext) -> str:
        """Whose memory this run may touch: ``run.deps`` first, then the ``scope`` option."""
        deps = run.deps
        scope = deps.get("memory_scope") if isinstance(deps, Mapping) else getattr(deps, "memory_scope", None)
        scope = scope if scope is not None else self.scope
        if scope is None:
            raise ScopeError(
                "memory: this run has no scope, so no memory can be read or written; pass "
                "agent.run(prompt, deps={'memory_scope': 'customer-id'}) or Memory(scope='customer-id')"
            )
        return check_scope(scope)

    @bandoneon.hookimpl
    def before_run(self, run: bandoneon.RunContext) -> None:
        """Check the scope before the model is called; snapshot the notes file for this run."""
        scope = self.scope_for(run)
        if self.mode == "notes":
            run.stash[_NOTES] = render_notes(NotesFile(self.notes_folder, scope).read(), scope)

    @bandoneon.hookimpl
    def system_prompt_sections(self, run: bandoneon.RunContext) -> str | None:
        return run.stash.get(_NOTES) if self.mode == "notes" else None

    # ---------------------------------------------------------------- tools

    @bandoneon.hookimpl
    def register_tools(self, agent: bandoneon.Agent) -> list[bandoneon.Tool]:
        memory = self

        @bandoneon.tool(capabilities={"changes_world"})
        async def remember(note: Annotated[str, "One fact worth keeping, in your own words."], run: bandoneon.RunContext) -> str:
            """Save a short note about this customer for future conversations: preferences,
            decisions, addresses. Not the whole chat."""
            return await memory._remember(run, note)

        if self.mode == "notes":
            return [remember]

        @bandoneon.tool(capabilities={"reads_private"}, untrusted_output=True)
        async def recall(query: Annotated[str, "What you are looking for, e.g. 'usual order'."], run: bandoneon.RunContext) -> str:
            """Search the saved notes about this customer by meaning; returns the closest
            ones with their dates. Use it when the customer refers to the past."""
            return await memory._recall(run, query)

        return [remember, recall]

    def _clean_note(self, note: str) -> str:
        text = " ".join(note.split())
        if not text:
            raise bandoneon.ToolError("The note is empty. Write one fact worth keeping, e.g. 'Buys 1 kg Colombia, ground for moka'.")
        if len(text) > self.max_note_chars:
            raise bandoneon.ToolError(
                f"The note has {len(text)} characters; the limit is {self.max_note_chars}. Save one short fact per note."
            )
        return text

    async def _remember(self, run: bandoneon.RunContext, note: str) -> str:
        scope = self.scope_for(run)
        # The store keeps the note as the agent's rules (guard, policy packs) mask it.
        text = run.agent.redact(self._clean_note(note))
        if self.mode == "notes":
            count = await NotesFile(self.notes_folder, scope).aappend(text)
            return f"Saved. {count} notes about this customer; they will be in your instructions next session."
        assert self._store is not None and self._embedder is not None
        try:
            [vector] = await self._embedder.embed([text])
        except bandoneon.ProviderError as exc:
            saved = await self._store.add(scope, text, None, None)
            log.warning("memory: note %s saved without its embedding (%s); it is embedded on the next recall", saved.id, exc)
            return (
                f"Saved as note {saved.id}, but the embedding model is unreachable ({exc}), so recall cannot find it "
                "until the model is back; it will be indexed then. Nothing was lost."
            )
        saved = await self._store.add(scope, text, vector, self._embedder.model)
        return f"Saved as note {saved.id}."

    async def _recall(self, run: bandoneon.RunContext, query: str) -> str:
        scope = self.scope_for(run)
        if not query.strip():
            raise bandoneon.ToolError("The query is empty. Say what you are looking for, e.g. 'usual order'.")
        assert self._store is not None and self._embedder is not None
        notes = await self._store.list(scope)
        if not notes:
            return "Nothing is saved about this customer yet. Ask them."
        model = self._embedder.model
        try:
            await self._embed_pending(scope, [n for n in notes if n.model is None])
            [vector] = await self._embedder.embed([query])
        except bandoneon.ProviderError as exc:
            raise bandoneon.ToolError(
                f"recall cannot reach the embedding model right now ({exc}). The saved notes are intact; "
                "answer without them, or ask the customer."
            ) from None
        hits = await self._store.search(scope, vector, model, top_k=self.top_k, min_score=self.min_score)
        answer = render_hits(hits, min_score=self.min_score)
        stale = [n for n in notes if n.model is not None and n.model != model]
        if stale:
            answer += "\n" + self._report_mismatch(scope, stale, model)
        return answer

    async def _embed_pending(self, scope: str, notes: list[Note]) -> int:
        """Embed notes saved while the embedder was down (or made by another model)."""
        if not notes:
            return 0
        assert self._store is not None and self._embedder is not None
        vectors = await self._embedder.embed([n.text for n in notes])
        await self._store.set_vectors(scope, {n.id: v for n, v in zip(notes, vectors, strict=True)}, self._embedder.model)
        return len(notes)

    def _report_mismatch(self, scope: str, stale: list[Note], model: str) -> str:
        others = ", ".join(sorted({n.model for n in stale if n.model}))
        message = (
            f"{len(stale)} saved notes were embedded with {others}, not {model}, and were not searched "
            "(vectors of different models cannot be compared)."
        )
        if scope not in self._reported_mismatch:
            self._reported_mismatch.add(scope)
            log.warning("memory: scope %r: %s Re-embed them with Memory.reembed(scope).", scope, message)
        return message

    async def reembed(self, scope: str) -> int:
        """Re-embed every note of ``scope`` not embedded with the current model; returns how many."""
        check_scope(scope)
        if self._store is None or self._embedder is None:
            raise bandoneon.ConfigError("memory: reembed needs mode 'search' and an agent built with this plugin")
        notes = await self._store.list(scope)
        return await self._embed_pending(scope, [n for n in notes if n.model != self._embedder.model])

    # ---------------------------------------------------------------- CLI

    @staticmethod
    @bandoneon.hookimpl
    def register_commands(subparsers: Any) -> None:
        """``bandoneon memory list|forget``."""
        from .cli import add_commands

        add_commands(subparsers)
