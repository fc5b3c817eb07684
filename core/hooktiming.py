"""What each plugin's hooks cost, and a limit for a hook that hangs (level 6: hooks must be fast).

Both are off by default and then cost nothing: the hook facade only swaps in the measured call
when ``Agent(hook_timeout=...)`` or ``agent.profile_hooks()`` asks for it.
"""

from __future__ import annotations

import collections
import time
from typing import Any

import attrs

__all__ = ["HookCall", "HookProfile"]


@attrs.frozen
class HookCall:
    """One call of one plugin's hook: when it started (seconds since the epoch), how long it took
    (seconds), in which run and turn (``run_id`` is None for hooks called outside a run)."""

    plugin: str
    hook: str
    started: float
    duration: float
    run_id: str | None = None
    turn: int = 0
    failed: bool = False


@attrs.define
class HookProfile:
    """Hook time per plugin and per hook, summed over every call since profiling started.

    ``keep_calls`` also keeps each ``HookCall`` until ``take_calls(run_id)`` hands a run's calls
    over (the tracing plugin does at the end of each run, to put them on its spans); without a
    taker, at most ``max_calls`` are kept, the oldest dropped first.
    """

    keep_calls: bool = False
    max_calls: int = 10_000
    totals: dict[str, float] = attrs.field(factory=lambda: collections.defaultdict(float))
    counts: dict[str, int] = attrs.field(factory=lambda: collections.defaultdict(int))
    by_hook: dict[tuple[str, str], float] = attrs.field(factory=lambda: collections.defaultdict(float))
    _calls: collections.deque[HookCall] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._calls = collections.deque(maxlen=self.max_calls)

    def record(self, plugin: str, hook: str, started: float, duration: float, run: Any, failed: bool) -> None:
        self.totals[plugin] += duration
        self.counts[plugin] += 1
        self.by_hook[(plugin, hook)] += duration
        if self.keep_calls:
            self._calls.append(HookCall(plugin, hook, started, duration, getattr(run, "run_id", None), getattr(run, "turn", 0), failed))

    def take_calls(self, run_id: str) -> list[HookCall]:
        """The kept calls of ``run_id``; every kept call is dropped. An agent's runs never
        overlap, so what is left is the tail of an earlier run (the hooks that ran after its
        calls were taken), which nobody will take."""
        taken = [call for call in self._calls if call.run_id == run_id]
        self._calls.clear()
        return taken

    def slowest_hook(self, plugin: str) -> tuple[str, float] | None:
        """The hook of ``plugin`` with the most total time, and that time."""
        mine = [(hook, total) for (name, hook), total in self.by_hook.items() if name == plugin]
        return max(mine, key=lambda item: item[1]) if mine else None

    def table(self) -> str:
        """Plugins by total hook time, slowest first."""
        rows = [("plugin", "calls", "total ms", "slowest hook")]
        for plugin, total in sorted(self.totals.items(), key=lambda item: -item[1]):
            slowest = self.slowest_hook(plugin)
            rows.append((plugin, str(self.counts[plugin]), f"{total * 1000:.3f}", f"{slowest[0]} ({slowest[1] * 1000:.3f} ms)" if slowest else ""))
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        return "\n".join(f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]}".rstrip() for row in rows) + "\n"


def clock() -> tuple[float, float]:
    """(wall time for the record, a monotonic start for the duration)."""
    return time.time(), time.perf_counter()
