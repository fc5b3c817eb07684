"""Embedders: text in, vectors out, with the name of the model that made them.

The name matters: vectors of two models are not comparable, so every stored vector records
its model and the plugin refuses to mix them. Embedders are chosen by a string, like models:

- ``"openai-compatible:MODEL@http://host:port/v1"`` — any ``/v1/embeddings`` server
  (Ollama, vLLM, llama.cpp, LM Studio, a proxy).
- ``"ollama:MODEL"`` — Ollama on ``http://localhost:11434/v1``.
- ``"openai:MODEL"`` — OpenAI, key from ``$OPENAI_API_KEY``.
- ``"local:"`` — all-MiniLM-L6-v2 on this machine (``pip install bandoneon-memory[local]``).

More prefixes come from other plugins through ``register_memory`` (``kind="embedder"``).
"""

from __future__ import annotations

import base64
import os
import struct
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import bandoneon

__all__ = ["Embedder", "OpenAICompatibleEmbedder", "builtin_embedders", "resolve_embedder"]


@runtime_checkable
class Embedder(Protocol):
    """``model`` names the vectors' model (stored with each one); ``embed`` returns one vector per text."""

    model: str

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class OpenAICompatibleEmbedder:
    """``POST {base_url}/embeddings`` through the core's ``HttpClient``.

    Failures are the core's ``ProviderError`` subclasses (``NetworkError`` when the server is
    down, ``AuthError``, ``ServerError``...), and a reply of the wrong shape is ``BadResponse``.
    """

    def __init__(self, model: str, base_url: str, *, api_key: str | None = None, timeout: float = 30.0, dimensions: int | None = None):
        if not model:
            raise bandoneon.ConfigError("an embedding model name is required, e.g. 'nomic-embed-text'")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.dimensions = dimensions
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = bandoneon.HttpClient(base_url=self.base_url, headers=headers, timeout=timeout, provider=f"embeddings {model}@{self.base_url}")

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbedder({self.model!r}, {self.base_url!r})"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        body: dict[str, Any] = {"model": self.model, "input": list(texts)}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        payload = await self._http.post_json("/embeddings", body)
        return _vectors(payload, len(texts), self._http.provider)

    async def aclose(self) -> None:
        await self._http.aclose()


def _vectors(payload: Any, expected: int, provider: str) -> list[list[float]]:
    """The vectors of an embeddings reply, in input order; ``BadResponse`` for any other shape."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list) or len(data) != expected:
        count = len(data) if isinstance(data, list) else "no"
        raise bandoneon.BadResponse(f"{provider}: expected {expected} embeddings in 'data', got {count}", provider=provider)
    ordered = sorted(data, key=lambda item: item.get("index", 0) if isinstance(item, dict) else 0)
    vectors = []
    for item in ordered:
        raw = item.get("embedding") if isinstance(item, dict) else None
        if isinstance(raw, str):  # encoding_format=base64: little-endian float32
            blob = base64.b64decode(raw)
            raw = list(struct.unpack(f"<{len(blob) // 4}f", blob))
        if not (isinstance(raw, list) and raw and all(isinstance(v, int | float) for v in raw)):
            raise bandoneon.BadResponse(f"{provider}: an embedding is not a list of numbers", provider=provider)
        vectors.append([float(v) for v in raw])
    return vectors


EmbedderFactory = Callable[..., Embedder]


def _openai_compatible(rest: str, **options: Any) -> Embedder:
    model, at, base_url = rest.partition("@")
    if not at or not model or not base_url:
        raise bandoneon.ConfigError(f"write the embedder as 'openai-compatible:MODEL@http://host:port/v1', got {rest!r}")
    return OpenAICompatibleEmbedder(model, base_url, **options)


def _ollama(rest: str, **options: Any) -> Embedder:
    base_url = os.environ.get("OLLAMA_BASE_URL", "http://localhost:11434/v1")
    return OpenAICompatibleEmbedder(rest, base_url, **options)


def _openai(rest: str, **options: Any) -> Embedder:
    options.setdefault("api_key", os.environ.get("OPENAI_API_KEY"))
    base_url = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
    if not options["api_key"] and base_url == "https://api.openai.com/v1":
        # Said now, not as an HTTP 401 on the first note remembered.
        raise bandoneon.ConfigError("memory: the openai embedder has no API key; set OPENAI_API_KEY, or pass api_key=...")
    return OpenAICompatibleEmbedder(rest, base_url, **options)


def _local(rest: str, **options: Any) -> Embedder:
    from .local import LocalEmbedder

    return LocalEmbedder(**options)


def builtin_embedders() -> dict[str, EmbedderFactory]:
    return {"openai-compatible": _openai_compatible, "ollama": _ollama, "openai": _openai, "local": _local}


def resolve_embedder(spec: str | Embedder, factories: dict[str, EmbedderFactory]) -> Embedder:
    """An embedder from a ``"prefix:rest"`` string (or the object itself)."""
    if not isinstance(spec, str):
        if not isinstance(spec, Embedder):
            raise bandoneon.ConfigError(f"an embedder needs a 'model' name and an async 'embed(texts)' method, got {spec!r}")
        return spec
    prefix, colon, rest = spec.partition(":")
    if not colon or prefix not in factories:
        known = ", ".join(f"'{name}:...'" for name in sorted(factories))
        raise bandoneon.ConfigError(f"unknown embedder {spec!r}; known: {known}")
    return factories[prefix](rest)
