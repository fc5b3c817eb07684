"""The compaction algorithm, without the model: truncate, then drop, oldest first.

Pure and linear in the number of messages: every message is sized once, each step walks the
history once and keeps a running total, and the loop stops as soon as the request fits.
The model-written summary (``_summary``) is layered on top by the plugin.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import attrs
import bandoneon

from ._cut import preview
from ._shape import analyse
from ._tokens import MESSAGE_OVERHEAD, TokenCount, estimate_tokens, message_tokens

__all__ = ["Shrunk", "is_note", "shrink_history"]

_TRUNCATED = "[Truncated to save context: "
_CUT = "[Cut to fit the context window: "


def is_note(content: str) -> bool:
    """Whether a tool result is already one of our notes (so it is never shortened twice)."""
    return content.startswith(_TRUNCATED) or content.startswith(_CUT)


@attrs.frozen
class Shrunk:
    """What ``shrink_history`` did.

    ``messages`` is the new history (the input itself when nothing changed). ``tokens_*``
    include the fixed part (system prompt, tool schemas). ``dropped`` are the messages taken
    out, as they were (not truncated), oldest first, and ``summary_at`` where a summary of them belongs (right after the
    first request); a summary is the plugin's business. ``fits`` tells whether it is now
    under the limit; ``orphan_results`` counts tool results with no call (a broken history).
    """

    messages: tuple[bandoneon.Message, ...]
    tokens_before: int
    tokens_after: int
    removed: tuple[str, ...] = ()
    dropped: tuple[bandoneon.Message, ...] = ()
    summary_at: int = 0
    fits: bool = True
    orphan_results: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.removed)


def shrink_history(
    messages: Sequence[bandoneon.Message],
    *,
    limit: int,
    fixed_tokens: int = 0,
    keep_recent_turns: int = 2,
    keeps_result: Callable[[str | None], bool] = lambda name: False,
    count_tokens: TokenCount = estimate_tokens,
    preview_chars: int = 150,
    summary_room: int = 0,
) -> Shrunk:
    """Shrink ``messages`` until ``fixed_tokens`` + their size is at most ``limit`` tokens.

    Order, oldest first, stopping as soon as it fits: (1) old tool results become a one-line
    note with a preview; (2) old exchanges are dropped whole (leaving ``summary_room`` tokens
    for a summary); (3) only if the request still cannot fit, tool results of the protected
    tail are cut to a note too (any result bigger than the whole budget first, then oldest
    first): sending them would fail at the provider anyway.

    Never touched: the first user request; groups holding a result of a tool for which
    ``keeps_result(name)`` is true (not re-runnable: neither cut nor dropped); and, unless
    step 3 is the only way left, the last ``keep_recent_turns`` requests and all after them.
    A tool call and its results stay together or go together.
    """
    items = list(messages)
    sizes = [message_tokens(m, count_tokens) for m in items]
    total = fixed_tokens + sum(sizes)
    before = total
    if total <= limit:
        return Shrunk(tuple(messages), before, before)
    shape = analyse(items, keep_recent_turns)
    removed: list[str] = []

    notes: dict[int, str] = {}  # index -> the note replacing that result (built at the end)

    def shortenable(index: int) -> bool:
        message = items[index]
        return message.role == "tool" and index not in notes and not keeps_result(message.name) and not is_note(message.content)

    def shorten(index: int, prefix: str, advice: str) -> int:
        """Note down a replacement for result ``index`` when that saves tokens; return the tokens saved."""
        content = items[index].content
        name = items[index].name or "the tool"
        note = f"{prefix}the result of {name} was {len(content):,} characters. Preview: {preview(content, preview_chars)}] {advice.format(name=name)}"
        size = MESSAGE_OVERHEAD + count_tokens(note)  # a tool message is its text and the overhead
        if size >= sizes[index]:
            return 0
        saved = sizes[index] - size
        notes[index], sizes[index] = note, size
        return saved

    def shorten_until_fits(indices: list[int], prefix: str, advice: str) -> tuple[Counter[str], int]:
        """Shorten the results at ``indices`` in that order until the request fits."""
        nonlocal total
        cut_names: Counter[str] = Counter()
        saved_total = 0
        for index in indices:
            if total <= limit:
                break
            saved = shorten(index, prefix, advice)
            if saved:
                total -= saved
                saved_total += saved
                cut_names[items[index].name or "?"] += 1
        return cut_names, saved_total

    # (1) Old tool results, oldest first: the heaviest part, and the tool can run again.
    old = [i for i in range(shape.keep_from) if shortenable(i)]
    cut_names, saved_total = shorten_until_fits(old, _TRUNCATED, "Call {name} again if you need the details.")
    if cut_names:
        removed.append(f"truncated {cut_names.total()} old tool result(s) ({_names(cut_names)}), {saved_total:,} tokens saved")

    # (2) Old exchanges, oldest first, whole. The first request and pinned groups stay.
    pinned = {shape.first_request} if shape.first_request is not None else set()
    for index, message in enumerate(items[: shape.keep_from]):
        if message.role == "tool" and keeps_result(message.name):
            pinned.add(shape.group[index])
    dropped = [False] * len(items)
    exchanges = messages_dropped = saved_total = 0
    target = limit - summary_room
    for start, end in shape.exchanges:
        if total <= target:
            break
        saved = 0
        for index in range(start, end):
            if shape.group[index] not in pinned:
                dropped[index] = True
                saved += sizes[index]
                messages_dropped += 1
        if saved:
            total -= saved
            saved_total += saved
            exchanges += 1
    if exchanges:
        removed.append(f"dropped {exchanges} old exchange(s): {messages_dropped} message(s), {saved_total:,} tokens")

    # (3) Last resort: a tail that cannot fit would be rejected by the provider on every turn.
    # Cut its re-runnable results, and say so: first those that could never fit even alone
    # (one result bigger than the window), then the others oldest first, as everywhere.
    if total > limit:
        candidates = [i for i in range(shape.keep_from, len(items)) if shortenable(i)]
        hopeless = limit - fixed_tokens
        tail = [i for i in candidates if sizes[i] > hopeless] + [i for i in candidates if sizes[i] <= hopeless]
        advice = "It was more than the model can read at once: ask {name} for less if you need the details."
        cut_names, saved_total = shorten_until_fits(tail, _CUT, advice)
        if cut_names:
            removed.append(f"cut {cut_names.total()} recent tool result(s) too big for the window ({_names(cut_names)}), {saved_total:,} tokens saved")

    if not removed:
        return Shrunk(tuple(messages), before, before, fits=False, orphan_results=shape.orphan_results)
    kept = tuple(
        (attrs.evolve(m, content=notes[i]) if i in notes else m) for i, (m, gone) in enumerate(zip(items, dropped, strict=True)) if not gone
    )
    summary_at = 0 if shape.first_request is None else sum(1 for gone in dropped[: shape.first_request] if not gone) + 1
    return Shrunk(
        messages=kept,
        tokens_before=before,
        tokens_after=total,
        removed=tuple(removed),
        dropped=tuple(m for m, gone in zip(items, dropped, strict=True) if gone),
        summary_at=summary_at,
        fits=total <= limit,
        orphan_results=shape.orphan_results,
    )


def _names(counts: Counter[str]) -> str:
    return ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in counts.most_common())
