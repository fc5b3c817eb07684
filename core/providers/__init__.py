"""Model providers: the protocol every provider follows, the model-string registry, and the
OpenAI-compatible provider (registered for ``openai``, ``openai-compatible``, ``ollama``,
``lmstudio``, ``vllm`` and ``llamacpp``)."""

from . import openai_wire
from .base import DeltaCallback, Provider, register_provider, resolve_model
from .http import HttpClient, classify_status, iter_sse, parse_retry_after, read_json
from .openai import OpenAICompatible
from .openai_wire import ChunkAssembler, WireOptions

__all__ = [
    "ChunkAssembler",
    "DeltaCallback",
    "HttpClient",
    "OpenAICompatible",
    "Provider",
    "classify_status",
    "iter_sse",
    "openai_wire",
    "parse_retry_after",
    "read_json",
    "register_provider",
    "resolve_model",
    "WireOptions",
]
