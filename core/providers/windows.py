"""Context windows of the hosted models the named providers serve.

A hosted provider's API does not say how large a model's window is, so the window of an
``openai:`` or ``anthropic:`` model comes from this table, copied from the providers' public
model pages (platform.openai.com/docs/models, docs.anthropic.com/en/docs/about-claude/models)
as of ``AS_OF``. A model name matches its longest listed prefix, so dated snapshots
(``gpt-4o-2024-08-06``) find their family. ``[context_windows]`` in ``bandoneon.toml``
overrides or extends it (a new model, a long-context beta); ``context_window`` there, or
``Agent(context_window=...)``, overrides everything. Self-hosted servers (``ollama:``,
``vllm:``, ``openai-compatible:``) are not in the table: their window is whatever the server
was started with, which only the server can say.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["AS_OF", "KNOWN_WINDOWS", "known_window"]

AS_OF = "2025-08-15"

KNOWN_WINDOWS: dict[str, dict[str, int]] = {
    "openai": {
        "gpt-5": 400_000,
        "gpt-4.1": 1_047_576,
        "gpt-4o": 128_000,
        "chatgpt-4o": 128_000,
        "gpt-4-turbo": 128_000,
        "gpt-4": 8_192,
        "gpt-4-32k": 32_768,
        "gpt-3.5-turbo": 16_385,
        "o1": 200_000,
        "o1-mini": 128_000,
        "o3": 200_000,
        "o3-mini": 200_000,
        "o4-mini": 200_000,
    },
    "anthropic": {
        "claude-opus-4": 200_000,
        "claude-sonnet-4": 200_000,
        "claude-haiku-4": 200_000,
        "claude-3-7-sonnet": 200_000,
        "claude-3-5-sonnet": 200_000,
        "claude-3-5-haiku": 200_000,
        "claude-3-opus": 200_000,
        "claude-3-haiku": 200_000,
    },
}


def known_window(provider: str, model: str, overrides: Mapping[str, int] | None = None) -> int | None:
    """The window of ``provider``'s ``model``: from ``overrides`` (keys ``"PROVIDER:MODEL"``),
    then the table; None when neither lists it (the caller then asks the server)."""
    if overrides:
        found = overrides.get(f"{provider}:{model}")
        if found is not None:
            return found
    table = KNOWN_WINDOWS.get(provider, {})
    matches = [prefix for prefix in table if model == prefix or model.startswith(prefix + "-")]
    return table[max(matches, key=len)] if matches else None
