"""The shape of a history: which messages must move together, and which part is protected.

One linear pass. A *group* is what can never be split: an assistant message with tool calls
and the tool results that follow it and answer those calls; every other message is a group
of its own. An *exchange* runs from one user request up to the next. The *tail* is the last
``keep_recent_turns`` requests and everything after them: compaction leaves it alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import bandoneon

__all__ = ["Shape", "analyse"]


@attrs.frozen
class Shape:
    """What ``analyse`` found.

    ``group[i]`` is the index of the first message of message i's group. ``first_request``
    is the index of the first user message (None when there is none). ``keep_from`` is where
    the protected tail starts. ``exchanges`` are the ``(start, end)`` ranges of the old part,
    oldest first, covering ``[0, keep_from)`` exactly. ``orphan_results`` counts tool results
    with no call before them (a broken history: they are kept as groups of their own).
    """

    group: tuple[int, ...]
    first_request: int | None
    keep_from: int
    exchanges: tuple[tuple[int, int], ...]
    orphan_results: int


def analyse(messages: Sequence[bandoneon.Message], keep_recent_turns: int) -> Shape:
    """Find groups, the first request, the protected tail and the old exchanges in O(n)."""
    group: list[int] = []
    requests: list[int] = []
    open_calls: set[str] = set()
    current = -1
    orphans = 0
    for index, message in enumerate(messages):
        if message.role == "tool" and message.tool_call_id in open_calls:
            # A result joins the assistant message right before it (only results in between):
            # ids repeat across runs with some servers ("call_0"), so older calls never match.
            group.append(current)
            continue
        group.append(index)
        open_calls = set()
        if message.role == "tool":
            orphans += 1
        elif message.role == "assistant" and message.tool_calls:
            current = index
            open_calls = {call.id for call in message.tool_calls}
        elif message.role == "user":
            requests.append(index)
    # Fewer requests than keep_recent_turns: all of it is recent, nothing old can go.
    keep_from = requests[-keep_recent_turns] if len(requests) >= keep_recent_turns else 0
    # A user message never sits inside a group, so every request is a clean place to cut.
    starts = [0, *(r for r in requests if 0 < r < keep_from)]
    exchanges = tuple(zip(starts, [*starts[1:], keep_from], strict=True)) if keep_from > 0 else ()
    return Shape(
        group=tuple(group),
        first_request=requests[0] if requests else None,
        keep_from=keep_from,
        exchanges=exchanges,
        orphan_results=orphans,
    )
