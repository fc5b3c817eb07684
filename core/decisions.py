"""What hooks may answer: stop the run, refuse or answer a tool call, replace the history,
rewrite or send back the final answer."""

from __future__ import annotations

from typing import Any

import attrs

from .messages import Message

__all__ = ["Compacted", "FinalAnswer", "Refuse", "Respond", "Retry", "SendBack", "Stop"]


@attrs.frozen
class Stop:
    """End the run. ``reason`` becomes ``RunResult.stop``; ``answer`` its ``answer``.

    ``is_answer`` tells whether this exit delivers an answer (a terminal tool) or is a limit.
    """

    reason: str
    detail: str = ""
    answer: Any = None
    is_answer: bool = False


@attrs.frozen
class Refuse:
    """Refuse a tool call. The model reads ``reason`` as an error result; the tool never runs."""

    reason: str


@attrs.frozen
class Respond:
    """Answer a tool call without running it: ``content`` is what the model reads."""

    content: str
    is_error: bool = False


@attrs.frozen
class Compacted:
    """A shorter history that still tells the story; ``removed`` describes what went."""

    messages: tuple[Message, ...]
    tokens_before: int
    tokens_after: int
    removed: tuple[str, ...] = ()


@attrs.frozen
class Retry:
    """Call the model again after ``delay`` seconds; ``max_attempts`` is reported in the event."""

    delay: float
    max_attempts: int | None = None


# No __slots__: a frozen attrs class then writes its fields into the instance's __dict__
# rather than through object.__setattr__ each (built once per answer whenever any plugin
# checks answers; as for the events, issue #19).
@attrs.frozen(slots=False)
class FinalAnswer:
    """The run's answer as the caller will get it, before ``RunResult`` is made.

    ``text`` is the final text (for a typed run, the answer's JSON); ``output`` the checked
    value (for a plain-text run, the text again). ``stop`` is the exit that delivers it
    (``end_turn``, ``terminal_tool``, or a limit followed by a wrap-up); ``answer`` is a
    terminal tool's validated input (``RunResult.answer``), else None. ``can_send_back`` is
    false for a wrap-up: the run is over, so a ``SendBack`` withholds the text instead.
    A ``check_answer`` hook rewrites it by returning a changed copy (``attrs.evolve``).
    """

    text: str | None
    output: Any
    stop: str
    answer: Any = None
    can_send_back: bool = True


@attrs.frozen
class SendBack:
    """Do not accept the final answer: the model reads ``reason`` and answers again."""

    reason: str
