"""The provider protocol and how model strings find their provider.

A model string is ``"prefix:model"``; for an OpenAI-compatible server that is not one of the
named ones, ``"openai-compatible:MODEL@BASE_URL"``. Prefixes come from the core and from
plugins' ``register_providers`` hook.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from ..errors import ConfigError
from ..messages import ModelReply, ModelRequest

__all__ = ["DeltaCallback", "Provider", "model_at", "register_provider", "resolve_model"]

#: Called with ("text", text), ("thinking", text) or ("tool_call", (index, name, arguments_piece))
#: as a reply streams in.
DeltaCallback = Callable[[str, Any], Awaitable[None]]


@runtime_checkable
class Provider(Protocol):
    """What the loop needs from a model.

    ``complete`` sends one request and returns the whole reply. When ``on_delta`` is given,
    the provider streams and reports each piece as it arrives (it may ignore it and not
    stream). Failures are ``ProviderError`` subclasses, so retry policy works for every
    provider. ``context_window`` returns the window in tokens, or None when unknown.

    Optional capability: ``supports_output_schema(*, with_tools: bool) -> bool``. A provider
    that has it and answers True honours ``ModelRequest.output_schema`` (the server keeps the
    reply's text to that JSON schema: ``response_format``, a grammar, tool-forcing), so typed
    answers are asked for natively; without it they are asked for with a ``final_answer`` tool.
    """

    name: str
    model: str

    async def complete(self, request: ModelRequest, *, on_delta: DeltaCallback | None = None) -> ModelReply: ...

    async def context_window(self) -> int | None: ...


_factories: dict[str, Callable[..., Provider]] = {}
_plugins_loaded = False
#: Prefixes the core's OpenAI-compatible provider registers when its module is first imported.
OPENAI_PREFIXES = frozenset({"openai", "openai-compatible", "ollama", "lmstudio", "vllm", "llamacpp", "llama-cpp-python"})


def model_at(model: str | None, base_url: str) -> str:
    """The model string for ``model`` served at ``base_url`` (a command's ``--base-url``):
    ``PREFIX:NAME`` keeps its prefix, a bare name or None is ``openai-compatible:``."""
    prefix, has_prefix, name = (model or "").partition(":")
    if has_prefix:
        return f"{prefix}:{name}@{base_url}"
    return f"openai-compatible:{model or 'default'}@{base_url}"


def register_provider(prefix: str, factory: Callable[..., Provider]) -> None:
    """Make ``"prefix:..."`` model strings resolve to ``factory(rest, **options)``."""
    _factories[prefix] = factory


def resolve_model(model: str | Provider, **options: Any) -> Provider:
    """A provider object for ``model``: returned as is if it already is one."""
    if not isinstance(model, str):
        # Duck-typed like the Protocol, without its slow runtime isinstance (once per agent).
        if not callable(getattr(model, "complete", None)):
            raise ConfigError(f"model must be a model string like 'openai:gpt-4o-mini' or a provider object, got {model!r}")
        return model
    prefix, sep, rest = model.partition(":")
    if not sep:
        raise ConfigError(
            f"model {model!r} has no provider prefix; write it as 'PROVIDER:MODEL', "
            f"e.g. 'openai:gpt-4o-mini', 'ollama:llama3.1', 'local:' or 'openai-compatible:MODEL@http://host:port/v1'"
        )
    factory = _factories.get(prefix)
    if factory is None and prefix in OPENAI_PREFIXES:
        from . import openai  # noqa: F401  (registers its prefixes)

        factory = _factories.get(prefix)
    if factory is None:
        _load_plugin_providers()
        factory = _factories.get(prefix)
    if factory is None:
        known = ", ".join(sorted(set(_factories) | OPENAI_PREFIXES))
        raise ConfigError(f"no provider registered for {prefix!r} (model {model!r}); known prefixes: {known}. A plugin may provide it: see `bandoneon plugins`.")
    return factory(rest, **options)


def forget_plugin_providers() -> None:
    """Look at installed plugins again on the next unknown prefix (after installing one)."""
    global _plugins_loaded
    _plugins_loaded = False


def _load_plugin_providers() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from ..hooks import registration_hooks

    registration_hooks().register_providers(register=register_provider)
