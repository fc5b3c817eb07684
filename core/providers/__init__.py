"""Model providers: the protocol every provider follows, the model-string registry, and the
OpenAI-compatible provider (registered for ``openai``, ``openai-compatible``, ``ollama``,
``lmstudio``, ``vllm`` and ``llamacpp``)."""

from .base import DeltaCallback, Provider, register_provider, resolve_model
from .http import HttpClient, classify_status, iter_sse, parse_retry_after, read_json
from .openai import OpenAICompatible

__all__ = [
    "DeltaCallback",
    "HttpClient",
    "OpenAICompatible",
    "Provider",
    "classify_status",
    "iter_sse",
    "parse_retry_after",
    "read_json",
    "register_provider",
    "resolve_model",
]
