"""The Anthropic plugin class: what it hooks and its options (the package docstring says what it is for)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import attrs

import bandoneon

from .provider import anthropic_model


@attrs.define
class Anthropic(bandoneon.Plugin):
    """Registers the ``anthropic:`` model prefix. Providers are process-wide: nothing to activate."""

    name: ClassVar[str] = "anthropic"
    is_default: ClassVar[bool] = False

    @staticmethod
    @bandoneon.hookimpl
    def register_providers(register: Callable[[str, Callable[..., Any]], None]) -> None:
        register("anthropic", anthropic_model)
