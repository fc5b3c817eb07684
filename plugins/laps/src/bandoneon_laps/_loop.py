"""The goal loop: a fresh agent every lap, then the caller's check of the work itself.

Nothing important lives in a lap's history: the work is on disk, and so is a short progress
note. Your ``is_done`` looks at the world (the tests, the rows, the bridge), never at what
the model says. ``max_laps`` is the fuse. With ``state_file`` the lap count and every lap's
outcome are kept on disk, so a long job survives a restart and still respects its fuse.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs

import bandoneon

from bandoneon import write_atomically

__all__ = ["GoalResult", "LapRecord", "run_goal_loop", "run_goal_loop_sync"]

#: The fuse: how many laps may run, counted across restarts.
MAX_LAPS = bandoneon.in_range(at_least=1, integer=True)

log = logging.getLogger("bandoneon.laps")

STATE_VERSION = 1
_KEPT_TEXT = 2000  # a lap's last text, as kept on disk: enough to report, not a transcript
_MOST_LAPS = 10**9  # no real goal runs a billion laps: a count past it is damage, not history


@attrs.frozen
class LapRecord:
    """One lap. ``stop`` is the run's exit, or ``crashed`` (it raised) or ``interrupted``
    (the process stopped during the lap). ``done`` is what ``is_done`` said after it
    (None when it was not asked, or raised)."""

    lap: int
    stop: str
    text: str | None = None
    usage: bandoneon.Usage = bandoneon.Usage()
    error: str | None = None
    done: bool | None = None


@attrs.frozen
class GoalResult:
    """How the goal loop ended.

    ``stop`` is ``done`` (``is_done`` said yes), ``max_laps`` (the fuse), or
    ``is_done_error`` (the check itself raised; ``detail`` says how). ``laps`` counts every
    lap run for this goal, across restarts; ``usage`` is summed over all of them.
    """

    done: bool
    laps: int
    stop: str
    last_text: str | None
    usage: bandoneon.Usage
    records: tuple[LapRecord, ...] = ()
    detail: str = ""


@attrs.define
class _State:
    goal: str
    laps: int = 0
    in_progress: bool = False
    records: list[LapRecord] = attrs.field(factory=list)
    version: int = STATE_VERSION


class _StateFile:
    """The loop's state as JSON, written atomically after every change."""

    def __init__(self, path: Path | None):
        self.path = path

    def load(self, goal: str) -> _State:
        if self.path is None or not self.path.exists():
            return _State(goal)
        try:
            data = bandoneon.loads_bounded(self.path.read_text(encoding="utf-8"))
            _check_lap_count(data)
            state = bandoneon.structure(data, _State)
        except (OSError, ValueError) as exc:
            raise bandoneon.ConfigError(f"{self.path}: not a laps state file ({exc}); move it away to start over") from None
        if state.goal != goal:
            raise bandoneon.ConfigError(
                f"{self.path} holds the laps of another goal ({state.goal[:80]!r}); use another state file, or delete it to start over"
            )
        if state.in_progress:
            log.warning("lap %d was interrupted when the process stopped; it counts as a lap", state.laps)
            state.records.append(LapRecord(state.laps, "interrupted", error="the process stopped during this lap"))
            state.in_progress = False
            self.save(state)
        return state

    def save(self, state: _State) -> None:
        if self.path is not None:
            write_atomically(self.path, json.dumps(bandoneon.unstructure(state), indent=2, ensure_ascii=False) + "\n")


def _check_lap_count(data: object) -> None:
    """The fuse trusts ``laps``: a negative count (or one the structuring would coerce, such as
    ``2.0``, or one past any real job) would let more laps run than ``max_laps`` allows, so it
    is damage (a ``ValueError``: the file is refused and left as it is), checked on the raw JSON."""
    laps = data.get("laps", 0) if isinstance(data, dict) else 0
    if type(laps) is not int or not 0 <= laps <= _MOST_LAPS:
        raise ValueError(f"'laps' must be a whole number between 0 and {_MOST_LAPS}, got {json.dumps(laps)[:40]}")


async def _call(function: Callable[..., Any], *args: Any) -> Any:
    value = function(*args)
    if inspect.isawaitable(value):
        value = await value
    return value


def _total(records: list[LapRecord]) -> bandoneon.Usage:
    usage = bandoneon.Usage()
    for record in records:
        usage = usage + record.usage
    return usage


def _last_text(records: list[LapRecord]) -> str | None:
    return next((r.text for r in reversed(records) if r.text), None)


async def _run_lap(lap: int, goal: str, make_agent: Callable[[], Any]) -> LapRecord:
    """One lap on a new agent. A crash is a record, not the end of the loop."""
    spent: list[bandoneon.Usage] = []
    try:
        agent = await _call(make_agent)
    except bandoneon.ConfigError:
        raise  # a configuration error is not a lap: every lap would fail the same way
    except Exception as exc:
        log.warning("lap %d crashed: make_agent raised %s: %s", lap, type(exc).__name__, exc)
        return LapRecord(lap, "crashed", error=f"{type(exc).__name__}: {exc}")
    try:
        agent.on("run_end", lambda event: spent.append(event.usage))
        result = await agent.run(goal)
    except Exception as exc:
        log.warning("lap %d crashed: %s: %s", lap, type(exc).__name__, exc, exc_info=True)
        usage = spent[-1] if spent else bandoneon.Usage()
        return LapRecord(lap, "crashed", usage=usage, error=f"{type(exc).__name__}: {exc}")
    text = result.text[:_KEPT_TEXT] if result.text else None
    return LapRecord(lap, result.stop, text, result.usage, error=None if result.stop != "error" else result.detail)


async def run_goal_loop(
    goal: str,
    make_agent: Callable[[], bandoneon.Agent | Awaitable[bandoneon.Agent]],
    is_done: Callable[[], bool | Awaitable[bool]],
    max_laps: int = 5,
    on_lap: Callable[[LapRecord], Any] | None = None,
    *,
    state_file: str | os.PathLike[str] | None = None,
) -> GoalResult:
    """Run ``goal`` in fresh laps until ``is_done()`` says yes or ``max_laps`` laps have run.

    :param goal: the prompt every lap starts from (tell it to read and update the progress note).
    :param make_agent: returns a NEW agent (sync or async); called once per lap.
    :param is_done: your check of the work itself (sync or async), run before the first lap
        and after every lap. If it raises, the loop stops with ``stop="is_done_error"``.
    :param max_laps: the fuse, counted across restarts when ``state_file`` is given.
    :param on_lap: called with each ``LapRecord`` (sync or async); its errors are logged.
    :param state_file: JSON file keeping the lap count and outcomes; an existing one for the
        same goal is resumed (a lap cut short by a restart counts as ``interrupted``).
    :raises ConfigError: ``max_laps`` < 1, an empty goal, a state file of another goal, or
        ``make_agent`` raising ``ConfigError`` (a model that cannot be resolved is not a lap:
        the loop stops at once and that lap is not counted).
    """
    if not isinstance(goal, str) or not goal.strip():
        raise bandoneon.ConfigError("the goal is empty: write what the laps should achieve")
    MAX_LAPS.check("max_laps", max_laps, owner="laps")
    if not callable(make_agent) or not callable(is_done):
        raise bandoneon.ConfigError("make_agent and is_done must be callables")
    store = _StateFile(Path(state_file) if state_file is not None else None)
    state = store.load(goal)

    def finish(stop: str, done: bool, detail: str = "") -> GoalResult:
        return GoalResult(done, state.laps, stop, _last_text(state.records), _total(state.records), tuple(state.records), detail)

    async def check() -> bool | str:
        """True/False, or the error text when the check itself raised."""
        try:
            return bool(await _call(is_done))
        except Exception as exc:
            log.warning("is_done raised after lap %d: %s: %s", state.laps, type(exc).__name__, exc)
            return f"is_done raised {type(exc).__name__}: {exc}"

    verdict = await check()
    while verdict is False and state.laps < max_laps:
        state.laps += 1
        state.in_progress = True
        store.save(state)
        try:
            record = await _run_lap(state.laps, goal, make_agent)
        except bandoneon.ConfigError:
            state.laps -= 1  # it never ran
            state.in_progress = False
            store.save(state)
            raise
        except asyncio.CancelledError:
            state.records.append(LapRecord(state.laps, "interrupted", error="cancelled"))
            state.in_progress = False
            store.save(state)
            raise
        verdict = await check()
        record = attrs.evolve(record, done=verdict if isinstance(verdict, bool) else None)
        state.records.append(record)
        state.in_progress = False
        store.save(state)
        if on_lap is not None:
            try:
                await _call(on_lap, record)
            except Exception:
                log.exception("on_lap failed after lap %d (ignored)", record.lap)
    if isinstance(verdict, str):
        return finish("is_done_error", False, verdict)
    if verdict:
        return finish("done", True)
    return finish("max_laps", False, f"the goal was not done after {state.laps} laps (max_laps={max_laps})")


def run_goal_loop_sync(*args: Any, **kwargs: Any) -> GoalResult:
    """``run_goal_loop`` for scripts (one event loop for all laps)."""
    return asyncio.run(run_goal_loop(*args, **kwargs))
