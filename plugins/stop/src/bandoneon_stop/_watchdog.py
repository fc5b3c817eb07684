"""The no-progress watchdog (levels 2 and 4, "the loop that never ends"): a model that calls
the same tool with the same arguments again and again is told so once, then stopped.

Error streaks catch a model stuck on a failing call; this catches one stuck on a call that
succeeds and changes nothing. Calls are compared by tool name and validated arguments (the
raw JSON text when they did not validate), in the order their results arrive.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

import bandoneon

#: How much of the repeated arguments the stop detail quotes.
_PREVIEW = 120


@attrs.define
class RepeatWatch:
    """The current run of identical calls: ``count`` calls in a row under ``key``."""

    limit: int
    key: tuple[str, Any] | None = None
    count: int = 0

    def record(self, result: bandoneon.ToolResult) -> bool:
        """Count one result; True when this is the call that reaches the limit (note it)."""
        key = (result.call.name, result.arguments if result.arguments is not None else result.call.arguments)
        if key == self.key:
            self.count += 1
        else:
            self.key, self.count = key, 1
        return self.count == self.limit

    @property
    def is_over(self) -> bool:
        return self.count > self.limit

    def note(self) -> str:
        assert self.key is not None
        return (
            f"\n\n[Note: you have called {self.key[0]} with these same arguments {self.count} times in a row. "
            "Calling it again will not give a different result: change the arguments, use another tool, "
            "or give your answer now. One more identical call ends the run.]"
        )

    def stop(self) -> bandoneon.Stop:
        assert self.key is not None
        name, arguments = self.key
        shown = arguments if isinstance(arguments, str) else json.dumps(arguments, default=str, sort_keys=True)
        shown = shown if len(shown) <= _PREVIEW else shown[: _PREVIEW - 1] + "…"
        return bandoneon.Stop(
            "no_progress",
            f"{name} was called {self.count} times in a row with the same arguments ({shown}) after a note to stop repeating it "
            f"(no_progress_after={self.limit})",
        )
