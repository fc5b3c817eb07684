"""The Evals plugin class: what it hooks and its options (the package docstring says what it is for)."""

from __future__ import annotations

from typing import Any, ClassVar

import bandoneon


class Evals(bandoneon.Plugin):
    """Adds ``bandoneon eval run|compare|worker|add-case``. Evals run agents; they do not hook into one."""

    name: ClassVar[str] = "evals"

    @staticmethod
    @bandoneon.hookimpl
    def register_commands(subparsers: Any) -> None:
        from .cli import register

        register(subparsers)
