"""How long to wait before an attempt: the arithmetic of backoff, kept apart from the hooks."""

from __future__ import annotations

from collections.abc import Callable


def full_jitter(attempt: int, base_delay: float, max_delay: float, random: Callable[[], float]) -> float:
    """A random wait in [0, min(max_delay, base_delay * 2**(attempt-1))).

    Full jitter (AWS's "Exponential Backoff And Jitter"): the ceiling doubles each time and
    the wait is drawn uniformly under it, so many clients that failed together do not all
    come back in the same second.
    """
    ceiling = min(max_delay, base_delay * 2 ** min(attempt - 1, 62))
    return ceiling * random()


def server_delay(error: Exception) -> float | None:
    """The wait the server asked for (``Retry-After`` on a 429 or a 503), if it asked."""
    value = getattr(error, "retry_after", None)
    return float(value) if isinstance(value, int | float) else None
