"""bandoneon-template: copy this folder to start a plugin (see plugins/README.md)."""

from __future__ import annotations

from typing import ClassVar

import attrs

import bandoneon

__all__ = ["Template"]


@attrs.define
class Template(bandoneon.Plugin):
    """What the plugin does, in one line. Its attrs fields are its options."""

    name: ClassVar[str] = "template"
    greeting: str = "hello"

    @bandoneon.hookimpl
    def system_prompt_sections(self, run: bandoneon.RunContext) -> str | None:
        return self.greeting
