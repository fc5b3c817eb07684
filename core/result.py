"""How a run ended: the value every run returns, so no caller mistakes the clock for an answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic

import attrs

from .errors import NoAnswer
from .messages import Message, Usage

if TYPE_CHECKING:
    # A default (PEP 696) lets ``RunResult`` alone mean ``RunResult[str]`` to type checkers;
    # Python 3.11's TypeVar has no default, so the running code uses a plain one.
    from typing_extensions import TypeVar

    OutputT = TypeVar("OutputT", default=str)
else:
    from typing import TypeVar

    OutputT = TypeVar("OutputT")

__all__ = ["OutputT", "RunResult"]


@attrs.frozen
class RunResult(Generic[OutputT]):
    """How a run ended, so no caller mistakes the clock for an answer.

    ``stop`` is the exit (``end_turn``, ``terminal_tool``, ``max_turns``, ``error_streak``,
    ``budget``, ``timeout``, ``cancelled``, ``invalid_output``, ``error``...). ``ok`` is true
    only for exits that carry an answer. ``text`` is the final text (None on a limit unless a
    wrap-up wrote one); ``answer`` is the validated input of a terminal tool. ``output`` is the
    answer checked against the run's ``output_type`` (for a plain-text run, the text); on a
    limit it is there only when a wrap-up wrote an answer that fits. ``messages`` are this
    run's new messages: the work done before a limit is always kept. ``usage_by_model``
    splits ``usage`` by ``provider:model`` (more than one entry after a fallback).
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
    output: OutputT | None = None
    output_type: Any = None
    usage_by_model: Mapping[str, Usage] = attrs.field(factory=dict)

    def unwrap(self) -> Any:
        """The answer: the typed output when the run had an ``output_type``, else a terminal
        tool's input, else the text. ``NoAnswer`` if there is none."""
        if not self.ok:
            raise NoAnswer(self.stop, self.detail)
        if self.output_type is not None:
            return self.output
        return self.answer if self.answer is not None else self.text
