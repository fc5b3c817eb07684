"""A spinner on stderr for what makes a person wait: the first load and long generations.

Shown only on a terminal (stderr is a TTY) and only once the wait passed ``DELAY`` seconds,
so quick calls, pipes, logs and ``--json`` output never see it. ``$BANDONEON_PROGRESS=0``
turns it off everywhere (``bandoneon run --json`` sets it).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any, TextIO

__all__ = ["DELAY", "Progress", "progress_wanted"]

#: Seconds of waiting before the spinner appears.
DELAY = 1.0
_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_TICK = 0.1


def progress_wanted(stream: TextIO | None = None) -> bool:
    """Whether a spinner may be drawn: stderr is a terminal and ``$BANDONEON_PROGRESS`` is not 0."""
    stream = stream or sys.stderr
    if os.environ.get("BANDONEON_PROGRESS", "").strip() in ("0", "false", "no", "off"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Progress:
    """``async with Progress(label):`` draws ``⠋ label: 42 tokens, 30 tok/s`` after ``DELAY`` s.

    ``count()`` adds a generated token; ``pause()`` clears the line for good (text is about to
    be printed on the same terminal). ``enabled=None`` means ``progress_wanted()``.
    """

    def __init__(self, label: str, *, enabled: bool | None = None, stream: TextIO | None = None):
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = progress_wanted(self.stream) if enabled is None else enabled
        self.tokens = 0
        self._started = 0.0
        self._drawn = False
        self._paused = False
        self._task: asyncio.Task[None] | None = None

    def count(self, tokens: int = 1) -> None:
        self.tokens += tokens

    def pause(self) -> None:
        self._paused = True
        self._clear()

    def line(self, now: float | None = None) -> str:
        """What the spinner shows now (without the carriage return)."""
        elapsed = (now if now is not None else time.monotonic()) - self._started
        frame = _FRAMES[int(elapsed / _TICK) % len(_FRAMES)]
        if not self.tokens:
            return f"{frame} {self.label}... {elapsed:.1f} s"
        return f"{frame} {self.label}: {self.tokens} tokens, {self.tokens / max(elapsed, 1e-6):.0f} tok/s"

    async def __aenter__(self) -> Progress:
        self._started = time.monotonic()
        if self.enabled:
            self._task = asyncio.create_task(self._spin())
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._clear()

    async def _spin(self) -> None:
        await asyncio.sleep(DELAY)
        while not self._paused:
            self._write(f"\r{self.line()}\x1b[K")
            self._drawn = True
            await asyncio.sleep(_TICK)

    def _clear(self) -> None:
        if self._drawn:
            self._write("\r\x1b[K")
            self._drawn = False

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken terminal: stop drawing, never fail the call
            self._paused = True
