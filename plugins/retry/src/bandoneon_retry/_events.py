"""The retry plugin's own event: a server asked for a longer wait than the plugin allows."""

from __future__ import annotations

from typing import ClassVar

import attrs

import bandoneon


@attrs.frozen
class RetryAfterCapped(bandoneon.Event):
    """``Retry-After`` asked for ``requested`` seconds; the plugin waits ``used`` (``max_delay``).

    Reported because the next attempt may well be refused again: the caller should know the
    server wanted a longer pause than the retry policy gives it.
    """

    name: ClassVar[str] = "retry_after_capped"
    requested: float
    used: float
    error: str
