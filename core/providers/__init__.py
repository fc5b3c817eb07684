"""Model providers: the protocol every provider follows, the model-string registry, and the
OpenAI-compatible provider (registered for ``openai``, ``openai-compatible``, ``ollama``,
``lmstudio``, ``vllm``, ``llamacpp`` and ``llama-cpp-python``).

The OpenAI-compatible provider and its wire format are imported on first use, so programs
that never talk to such a server (a scripted model, the embedded one) do not load them.
"""

from typing import TYPE_CHECKING, Any

from .base import DeltaCallback, Provider, model_at, register_provider, resolve_model
from .http import HttpClient, classify_status, context_too_long, iter_sse, parse_retry_after, read_body, read_json

if TYPE_CHECKING:  # loaded on first use at run time (see __getattr__); typed for the checker
    from . import openai_wire
    from .openai import OpenAICompatible
    from .openai_wire import ChunkAssembler, WireOptions

__all__ = [
    "ChunkAssembler",
    "DeltaCallback",
    "HttpClient",
    "OpenAICompatible",
    "Provider",
    "WireOptions",
    "classify_status",
    "context_too_long",
    "iter_sse",
    "model_at",
    "openai_wire",
    "parse_retry_after",
    "read_body",
    "read_json",
    "register_provider",
    "resolve_model",
]

_LAZY = {"OpenAICompatible": "openai", "ChunkAssembler": "openai_wire", "WireOptions": "openai_wire"}


def __getattr__(name: str) -> Any:
    import importlib

    if name == "openai_wire":
        return importlib.import_module(".openai_wire", __name__)
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
