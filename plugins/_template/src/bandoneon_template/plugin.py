"""The Template plugin class: what it hooks and its options (the package docstring says what it is for)."""

from __future__ import annotations

from typing import ClassVar

import attrs

import bandoneon


@attrs.define
class Template(bandoneon.Plugin):
    """What the plugin does, in one line. Its attrs fields are its options."""

    name: ClassVar[str] = "template"
    greeting: str = "hello"

    @bandoneon.hookimpl
    def system_prompt_sections(self, run: bandoneon.RunContext) -> str | None:
        return self.greeting
