"""Tool errors in a row: the counter of level 5 that notices a model stuck on one wall."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import attrs

import bandoneon

#: How much of each error the stop detail keeps: enough to see the wall, not the whole log.
_PREVIEW = 200


@attrs.define
class ErrorStreak:
    """Counts error results in call order; any success resets the count.

    Refusals count too: a model that keeps asking for a refused tool is just as stuck.
    """

    limit: int
    count: int = 0
    recent: deque[str] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.recent = deque(maxlen=self.limit)

    def record(self, results: Iterable[bandoneon.ToolResult]) -> None:
        for result in results:
            if result.is_error:
                self.count += 1
                self.recent.append(f"{result.call.name}: {_preview(result.content)}")
            else:
                self.count = 0
                self.recent.clear()

    @property
    def is_over(self) -> bool:
        return self.count >= self.limit

    def stop(self) -> bandoneon.Stop:
        errors = " | ".join(self.recent)
        return bandoneon.Stop("error_streak", f"{self.count} tool errors in a row (max_errors_in_a_row={self.limit}); last errors: {errors}")


def _preview(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"
