"""What hooks may answer: stop the run, refuse or answer a tool call, replace the history."""

from __future__ import annotations

from typing import Any

import attrs

from .messages import Message

__all__ = ["Compacted", "Refuse", "Respond", "Retry", "Stop"]


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
