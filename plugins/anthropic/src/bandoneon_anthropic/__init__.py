"""bandoneon-anthropic: Claude through the Anthropic Messages API, over httpx (no SDK).

``Agent("anthropic:claude-sonnet-4-5")`` once installed; the key comes from
``$ANTHROPIC_API_KEY``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import attrs

import bandoneon

from .provider import ANTHROPIC_VERSION, AnthropicProvider, anthropic_model

__all__ = ["ANTHROPIC_VERSION", "Anthropic", "AnthropicProvider", "anthropic_model"]


@attrs.define
class Anthropic(bandoneon.Plugin):
    """Registers the ``anthropic:`` model prefix. Providers are process-wide: nothing to activate."""

    name: ClassVar[str] = "anthropic"
    is_default: ClassVar[bool] = False

    @staticmethod
    @bandoneon.hookimpl
    def register_providers(register: Callable[[str, Callable[..., Any]], None]) -> None:
        register("anthropic", anthropic_model)
