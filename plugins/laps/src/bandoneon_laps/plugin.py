"""The ``laps`` plugin: gives a lap agent the progress note and tells it how to use it."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

import bandoneon

from ._progress import progress_tools

__all__ = ["LAP_INSTRUCTIONS", "Laps"]

LAP_INSTRUCTIONS = (
    "You are one lap of a longer job; you remember nothing of earlier laps. Call read_progress "
    "first. Do one small slice of the work, then call write_progress with the whole note: what "
    "is done, what comes next, and what you tried that failed. Then stop."
)


@attrs.define
class Laps(bandoneon.Plugin):
    """Adds ``read_progress`` / ``write_progress`` over ``progress_file`` and the lap instructions."""

    name: ClassVar[str] = "laps"
    progress_file: str = "PROGRESS.md"
    instructions: str = LAP_INSTRUCTIONS

    @bandoneon.hookimpl
    def register_tools(self, agent: bandoneon.Agent) -> list[bandoneon.Tool]:
        return progress_tools(self.progress_file)

    @bandoneon.hookimpl
    def system_prompt_sections(self, run: bandoneon.RunContext) -> str | None:
        return self.instructions or None

    @staticmethod
    @bandoneon.hookimpl
    def register_commands(subparsers: Any) -> None:
        from ._cli import add_command

        add_command(subparsers)
