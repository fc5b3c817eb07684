"""The heartbeat: a timer that hands an agent a fixed prompt, behind a cheap check and fuses.

- ``local_condition`` (plain code, sync or async) runs on every tick before the model; while
  it says no, a tick costs nothing. If it raises, the tick is skipped and logged.
- One run at a time: a tick that fires while a run is going is *dropped*, never queued.
- Fuses: ``max_ticks``, a total ``timeout``, a per-run ``run_timeout``; and ``stop()``.
- By default every woken tick starts a fresh session (astorlm keeps one growing history).
- ``heartbeat_tick`` is emitted only when the model is woken.
- With a ``state_file``, the tick count, the first start, the last tick and its outcome are
  kept on disk, so a restarted heartbeat still respects its fuses and reports missed ticks.

The clock and the sleep are injectable, so tests run ticks without waiting.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar

import attrs

import bandoneon

from bandoneon import write_atomically

__all__ = ["Heartbeat", "HeartbeatReport", "HeartbeatTick", "TickOutcome"]

log = logging.getLogger("bandoneon.heartbeat")

_MOST_TICKS = 10**9  # a tick a minute for 1900 years: a count past it is damage, not history


@attrs.frozen
class HeartbeatTick(bandoneon.Event):
    """A tick woke the model; emitted just before its run starts, outside any run.

    ``run_id`` is the heartbeat's id (``Heartbeat.id``): the run the tick starts has its
    own id, which its ``run_start`` (the next event) carries.
    """

    name: ClassVar[str] = "heartbeat_tick"
    tick: int
    prompt: str


@attrs.frozen
class TickOutcome:
    """What one tick did.

    ``outcome``: ``quiet`` (the condition said no), ``dropped`` (a run was still going),
    ``condition_error`` (the condition raised), ``woken`` (the model ran; ``stop`` says how it
    ended), ``run_timeout`` (the run outlived ``run_timeout`` and was cancelled),
    ``run_error`` (the run raised; ``error`` says what).
    """

    tick: int
    at: float
    outcome: str
    stop: str | None = None
    text: str | None = None
    error: str | None = None
    usage: bandoneon.Usage = bandoneon.Usage()


@attrs.frozen
class HeartbeatReport:
    """How the heartbeat ended: ``stop`` is ``max_ticks``, ``timeout`` or ``stopped``.

    ``ticks`` counts every tick ever fired (across restarts with a state file);
    ``outcomes`` are this process's ticks; ``missed_ticks`` were due while it was down.
    """

    stop: str
    ticks: int
    outcomes: tuple[TickOutcome, ...]
    missed_ticks: int = 0

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes if o.outcome == outcome)

    @property
    def woken(self) -> int:
        return sum(1 for o in self.outcomes if o.outcome in ("woken", "run_timeout", "run_error"))


@attrs.define
class _State:
    ticks: int = 0
    started_at: float | None = None
    last_tick_at: float | None = None
    last_outcome: TickOutcome | None = None


def _check_fuse_fields(data: object) -> None:
    """The fuses trust these fields, so they are checked on the raw JSON (a ``ValueError``: the
    file is broken). A negative ``ticks`` (or a float or bool the structuring would coerce)
    would let more ticks fire than ``max_ticks``; a NaN ``started_at`` switches ``timeout``
    off (nothing is >= NaN) and an infinite ``last_tick_at`` crashes the missed-tick count."""
    if not isinstance(data, dict):
        return  # structure() says what is wrong with it
    ticks = data.get("ticks", 0)
    if type(ticks) is not int or not 0 <= ticks <= _MOST_TICKS:
        raise ValueError(f"'ticks' must be a whole number between 0 and {_MOST_TICKS}, got {json.dumps(ticks)[:40]}")
    for field in ("started_at", "last_tick_at"):
        moment = data.get(field)
        if moment is not None and (type(moment) not in (int, float) or not math.isfinite(moment)):
            raise ValueError(f"{field!r} must be a finite number of seconds, got {json.dumps(moment)[:40]}")


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


#: The range of each numeric option (also checked on the TOML file, which names its path).
RANGES = {
    "interval": bandoneon.in_range(above=0, unit="seconds"),
    "timeout": bandoneon.in_range(above=0, unit="seconds", optional=True),
    "run_timeout": bandoneon.in_range(above=0, unit="seconds", optional=True),
    "max_ticks": bandoneon.in_range(at_least=1, integer=True, optional=True),
    "max_turns": bandoneon.in_range(at_least=1, integer=True, optional=True),
}


class Heartbeat:
    """Wake ``agent`` with ``check_prompt`` every ``interval`` seconds, when it is worth it."""

    def __init__(
        self,
        agent: bandoneon.Agent,
        *,
        interval: float,
        check_prompt: str,
        local_condition: Callable[[], bool | Awaitable[bool]] | None = None,
        max_ticks: int | None = None,
        timeout: float | None = None,
        run_timeout: float | None = None,
        fresh_session: bool = True,
        on_tick: Callable[[TickOutcome], Any] | None = None,
        state_file: str | Path | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ):
        for option, value in (("interval", interval), ("timeout", timeout), ("run_timeout", run_timeout), ("max_ticks", max_ticks)):
            RANGES[option].check(option, value, owner="heartbeat")
        if not isinstance(check_prompt, str) or not check_prompt.strip():
            raise bandoneon.ConfigError("heartbeat check_prompt is empty: write what the agent should do when it wakes")
        self.agent = agent
        self.interval = float(interval)
        self.check_prompt = check_prompt
        self.local_condition = local_condition
        self.max_ticks = max_ticks
        self.timeout = timeout
        self.run_timeout = run_timeout
        self.fresh_session = fresh_session
        self.on_tick = on_tick
        self.state_file = Path(state_file) if state_file is not None else None
        self.clock = clock
        self.sleep = sleep
        self.id = f"heartbeat-{uuid.uuid4().hex[:12]}"
        self._state = self._load()
        self._outcomes: list[TickOutcome] = []
        self._run_task: asyncio.Task[TickOutcome] | None = None
        self._stopped = asyncio.Event()
        self.missed_ticks = 0

    # ---------------------------------------------------------------- state on disk

    def _load(self) -> _State:
        if self.state_file is None or not self.state_file.exists():
            return _State()
        try:
            data = bandoneon.loads_bounded(self.state_file.read_text(encoding="utf-8"))
            _check_fuse_fields(data)
            return bandoneon.structure(data, _State)
        except (OSError, ValueError) as exc:
            raise bandoneon.ConfigError(f"{self.state_file}: not a heartbeat state file ({exc}); move it away to start over") from None

    def _save(self) -> None:
        if self.state_file is not None:
            write_atomically(self.state_file, json.dumps(bandoneon.unstructure(self._state), indent=2, ensure_ascii=False) + "\n")

    @property
    def ticks(self) -> int:
        """Every tick fired so far, across restarts when there is a state file."""
        return self._state.ticks

    @property
    def is_running(self) -> bool:
        """A woken tick's run is in progress."""
        return self._run_task is not None and not self._run_task.done()

    async def settled(self) -> None:
        """Wait until no run is in progress."""
        if self._run_task is not None:
            await asyncio.wait({self._run_task})

    def _begin(self) -> float:
        """Start (or resume) the clock: count the ticks missed while the process was down."""
        now = self.clock()
        if self._state.started_at is None:
            self._state.started_at = now
        if self._state.last_tick_at is not None:
            self.missed_ticks = max(0, math.floor((now - self._state.last_tick_at) / self.interval))
            if self.missed_ticks:
                log.info("%d heartbeat tick(s) were missed while the process was down", self.missed_ticks)
        return now

    def _fuse(self, now: float) -> str | None:
        if self.max_ticks is not None and self._state.ticks >= self.max_ticks:
            return "max_ticks"
        if self.timeout is not None and self._state.started_at is not None and now >= self._state.started_at + self.timeout:
            return "timeout"
        return None

    # ---------------------------------------------------------------- one tick

    async def _record(self, outcome: TickOutcome) -> None:
        for index, earlier in enumerate(self._outcomes):
            if earlier.tick == outcome.tick:
                self._outcomes[index] = outcome
                break
        else:
            self._outcomes.append(outcome)
        self._state.last_outcome = outcome
        self._save()
        if self.on_tick is not None:
            try:
                await _maybe_await(self.on_tick(outcome))
            except Exception:
                log.exception("heartbeat on_tick failed on tick %d (ignored)", outcome.tick)

    async def _tick(self) -> TickOutcome:
        """Fire one tick: drop it, let it pass quietly, or start a run (in its own task)."""
        now = self.clock()
        self._state.ticks += 1
        self._state.last_tick_at = now
        tick = self._state.ticks
        if self.is_running:
            log.info("heartbeat tick %d dropped: the last run is still going", tick)
            outcome = TickOutcome(tick, now, "dropped")
        elif (checked := await self._check(tick, now)) is not None:
            outcome = checked
        else:
            outcome = TickOutcome(tick, now, "woken")
            self._run_task = asyncio.create_task(self._wake(tick, now))
        await self._record(outcome)
        return outcome

    async def _check(self, tick: int, now: float) -> TickOutcome | None:
        if self.local_condition is None:
            return None
        try:
            wake = await _maybe_await(self.local_condition())
        except Exception as exc:
            log.warning("heartbeat tick %d skipped: local_condition raised %s: %s", tick, type(exc).__name__, exc)
            return TickOutcome(tick, now, "condition_error", error=f"{type(exc).__name__}: {exc}")
        return None if wake else TickOutcome(tick, now, "quiet")

    async def _wake(self, tick: int, now: float) -> TickOutcome:
        agent = self.agent
        if self.fresh_session:
            agent.clear()
        await agent.emit(HeartbeatTick(self.id, tick, self.check_prompt))
        spent: list[bandoneon.Usage] = []
        listener = lambda event: spent.append(event.usage)  # noqa: E731
        agent.on("run_end", listener)
        timed_out = False

        def cut() -> None:
            nonlocal timed_out
            timed_out = True
            agent.cancel()

        watchdog = asyncio.get_running_loop().call_later(self.run_timeout, cut) if self.run_timeout else None
        try:
            result = await agent.run(self.check_prompt)
        except Exception as exc:
            log.warning("heartbeat run of tick %d failed: %s: %s", tick, type(exc).__name__, exc)
            outcome = TickOutcome(tick, now, "run_error", error=f"{type(exc).__name__}: {exc}", usage=spent[-1] if spent else bandoneon.Usage())
        else:
            kind = "run_timeout" if timed_out else "woken"
            outcome = TickOutcome(tick, now, kind, result.stop, result.text, result.detail or None, result.usage)
        finally:
            if watchdog is not None:
                watchdog.cancel()
            agent.off("run_end", listener)
        await self._record(outcome)
        return outcome

    async def tick_once(self) -> TickOutcome | str:
        """One tick now, respecting the fuses kept on disk (for a scheduler such as cron).

        Returns the tick's outcome once its run (if any) is over, or the fuse that is blown.
        """
        now = self._begin()
        if self.missed_ticks:
            self.missed_ticks -= 1  # this call is itself one of the ticks that were due
        fuse = self._fuse(now)
        if fuse is not None:
            self._save()
            return fuse
        outcome = await self._tick()
        if self._run_task is not None:
            return await self._run_task
        return outcome

    # ---------------------------------------------------------------- the timer

    def stop(self) -> None:
        """End the heartbeat: no more ticks; a run in progress is cancelled (its work is kept)."""
        self._stopped.set()

    async def _sleep_until(self, moment: float) -> bool:
        """Sleep until ``moment``; False if ``stop()`` came first."""
        if self._stopped.is_set():
            return False
        sleeper = asyncio.ensure_future(self.sleep(max(0.0, moment - self.clock())))
        stopper = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait({sleeper, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in (sleeper, stopper):
                waiter.cancel()
            await asyncio.gather(sleeper, stopper, return_exceptions=True)
        return not self._stopped.is_set()

    def _next_after(self, due: float, now: float) -> float:
        """The first beat of the schedule after ``due`` that is later than ``now``: a slow tick
        never makes the timer fire in a burst. Counted, not stepped to: an interval below the
        clock's resolution (1e-8 s against a clock at 1.7e9) would leave ``due + interval ==
        due`` and a stepping loop would spin for ever; past ``now`` it always is."""
        due += self.interval
        if due <= now:
            due += (math.floor((now - due) / self.interval) + 1) * self.interval
        return due if due > now else math.nextafter(now, math.inf)

    async def run(self) -> HeartbeatReport:
        """Tick until a fuse blows or ``stop()`` is called; then wait for the last run."""
        now = self._begin()
        self._save()
        last = self._state.last_tick_at
        next_at = now + self.interval if last is None else last + (math.floor((now - last) / self.interval) + 1) * self.interval
        reason = self._fuse(now)
        while reason is None:
            started = self._state.started_at
            deadline = started + self.timeout if self.timeout is not None and started is not None else math.inf
            if not await self._sleep_until(min(next_at, deadline)):
                reason = "stopped"
                break
            now = self.clock()
            if (reason := self._fuse(now)) is not None:
                break
            await self._tick()
            next_at = self._next_after(next_at, self.clock())
            if self.max_ticks is not None and self._state.ticks >= self.max_ticks:
                reason = "max_ticks"
        await self._finish_run(reason)
        self._save()
        return HeartbeatReport(reason, self._state.ticks, tuple(self._outcomes), self.missed_ticks)

    async def _finish_run(self, reason: str) -> None:
        """After the last tick: let the run finish (max_ticks), or cut it (timeout, stop())."""
        if not self.is_running:
            return
        assert self._run_task is not None
        if reason != "max_ticks":
            self.agent.cancel()
            await asyncio.wait({self._run_task})
            return
        finished = asyncio.ensure_future(self._run_task)
        if self.timeout is not None and self._state.started_at is not None:
            remaining = self._state.started_at + self.timeout - self.clock()
            if not await self._sleep_or(finished, remaining):
                self.agent.cancel()
        await asyncio.wait({self._run_task})

    async def _sleep_or(self, task: asyncio.Future[Any], seconds: float) -> bool:
        """True if ``task`` finished before ``seconds`` (on the heartbeat's clock) or stop()."""
        sleeper = asyncio.ensure_future(self.sleep(max(0.0, seconds)))
        stopper = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait({task, sleeper, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            stopper.cancel()
            await asyncio.gather(sleeper, stopper, return_exceptions=True)
        return task.done()

    def run_sync(self) -> HeartbeatReport:
        """``run()`` for scripts, on a new event loop."""
        return asyncio.run(self.run())

    def start(self) -> asyncio.Task[HeartbeatReport]:
        """``run()`` in a background task of the running event loop."""
        return asyncio.create_task(self.run(), name=self.id)
