"""Words for counts in messages people read: "1 tool", "2 tools" — never "1 tools" or "tool(s)"."""

from __future__ import annotations

__all__ = ["plural"]


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and ``noun``, the noun in the plural unless the count is one (``many`` for
    irregular plurals): ``plural(1, "turn")`` is ``"1 turn"``, ``plural(3, "turn")`` ``"3 turns"``."""
    return f"{count} {noun if count == 1 else (many or noun + 's')}"
