"""How a run ended: the value every run returns, so no caller mistakes the clock for an answer."""

from __future__ import annotations

from typing import Any

import attrs

from .errors import NoAnswer
from .messages import Message, Usage

__all__ = ["RunResult"]


@attrs.frozen
class RunResult:
    """How a run ended, so no caller mistakes the clock for an answer.

    ``stop`` is the exit (``end_turn``, ``terminal_tool``, ``max_turns``, ``error_streak``,
    ``budget``, ``timeout``, ``cancelled``, ``error``...). ``ok`` is true only for exits that
    carry an answer. ``text`` is the final text (None on a limit unless a wrap-up wrote one);
    ``answer`` is the validated input of a terminal tool. ``messages`` are this run's new
    messages: the work done before a limit is always kept.
    """

    stop: str
    text: str | None
    turns: int
    usage: Usage
    messages: tuple[Message, ...]
    run_id: str
    answer: Any = None
    ok: bool = False
    detail: str = ""
    error: BaseException | None = attrs.field(default=None, repr=False)

    def unwrap(self) -> Any:
        """The answer (a terminal tool's input, else the text); ``NoAnswer`` if there is none."""
        if not self.ok:
            raise NoAnswer(self.stop, self.detail)
        return self.answer if self.answer is not None else self.text
