"""The heartbeat: a timer that hands an agent a fixed prompt, behind a cheap check and fuses.

- ``local_condition`` (plain code, sync or async) runs on every tick before the model; while
  it says no, a tick costs nothing. If it raises, the tick is skipped and logged.
- One run at a time: a tick that fires while a run is going is *dropped*, never queued.
- Fuses: ``max_ticks``, a total ``timeout``, a per-run ``run_timeout``; and ``stop()``.
- By default every woken tick starts a fresh session (astorlm keeps one growing history).
- ``heartbeat_tick`` is emitted only when the model is woken.
- With a ``state_file``, the tick count, the first start, the last tick and its outcome are
  kept on disk, so a restarted heartbeat still respects its fuses and reports missed ticks.

Two clocks. The waits between ticks and the total ``timeout`` are measured on a monotonic clock,
so the wall clock set back or ahead (NTP, a user) neither stalls the heartbeat nor fires a burst,
nor stretches or trips the timeout. The wall clock stamps what is kept or shown: a tick's ``at``,
the state file's ``started_at`` and ``last_tick_at``; across a restart, the time the process was
down can only be read off it. The clocks and the sleep are injectable, so tests run ticks
without waiting.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import math
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar

import attrs

import bandoneon

from bandoneon import write_atomically

__all__ = ["Heartbeat", "HeartbeatReport", "HeartbeatTick", "TickOutcome"]

log = logging.getLogger("bandoneon.heartbeat")

_MOST_TICKS = 10**9  # a tick a minute for 1900 years: a count past it is damage, not history
_LONGEST_SLEEP = 86_400.0  # no single sleep asks for more than a day (asyncio's longest select)
_CLOCK_STEP = 1.0  # seconds the wall clock may move against the monotonic one before it is a jump
_CLOCK_SLEW = 1e-3  # ...or this much of the time between two readings (NTP slews at most 5e-4)


def _monotonic_clock() -> Callable[[], float]:
    """The default clock of the waits and the timeout: CLOCK_BOOTTIME where there is one (Linux:
    it goes on counting while the machine is suspended, as the wall clock did and a user expects
    of a timeout; ``time.monotonic`` stops), else ``time.monotonic``. Neither is ever set."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    if boottime is not None:
        try:
            time.clock_gettime(boottime)
        except OSError:
            pass
        else:
            return functools.partial(time.clock_gettime, boottime)
    return time.monotonic


def _intervals_in(span: float, interval: float) -> int:
    """How many intervals fit whole in ``span`` (0 if it is not positive). Exact: the float
    quotient of 10 s by an interval of 5e-324 s is infinity, and ``math.floor`` raised on it."""
    if not span > 0 or math.isinf(interval):
        return 0
    return math.floor(Fraction(min(span, sys.float_info.max)) / Fraction(interval))


def _seconds(option: str, value: float) -> float:
    """An option in seconds as a float (already in range): an int no float holds (``10**400``)
    raised OverflowError later, in ``run()`` or lost in a woken run's task."""
    try:
        return float(value)
    except OverflowError:
        bits = int(value).bit_length()  # not str(): past 4300 digits it raises too
        raise bandoneon.ConfigError(f"heartbeat: {option} must be a number of seconds, got an integer too big for a float ({bits} bits)") from None


def _finite(number: int | float) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # a JSON integer of 400 digits: no float holds it
        return False


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

    ``at``: the wall clock when the tick fired (set back, it goes back too).
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
        if moment is not None and (type(moment) not in (int, float) or not _finite(moment)):
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
        monotonic: Callable[[], float] | None = None,
    ):
        """``clock`` is the wall clock (stamps, the state file); ``monotonic`` the clock the waits
        and the timeout are measured on, the one ``sleep`` sleeps on. Left out, it is
        CLOCK_BOOTTIME or ``time.monotonic``; but ``clock`` itself when ``clock`` is injected (a
        test's fake clock, moved by its fake sleep, then drives both)."""
        for option, value in (("interval", interval), ("timeout", timeout), ("run_timeout", run_timeout), ("max_ticks", max_ticks)):
            RANGES[option].check(option, value, owner="heartbeat")
        if not isinstance(check_prompt, str) or not check_prompt.strip():
            raise bandoneon.ConfigError("heartbeat check_prompt is empty: write what the agent should do when it wakes")
        self.agent = agent
        self.interval = _seconds("interval", interval)
        self.check_prompt = check_prompt
        self.local_condition = local_condition
        self.max_ticks = max_ticks
        self.timeout = None if timeout is None else _seconds("timeout", timeout)
        self.run_timeout = None if run_timeout is None else _seconds("run_timeout", run_timeout)
        self.fresh_session = fresh_session
        self.on_tick = on_tick
        self.state_file = Path(state_file) if state_file is not None else None
        self.clock = clock
        self.sleep = sleep
        self.monotonic = monotonic if monotonic is not None else (_monotonic_clock() if clock is time.time else clock)
        self.id = f"heartbeat-{uuid.uuid4().hex[:12]}"
        self._state = self._load()
        self._outcomes: list[TickOutcome] = []
        self._run_task: asyncio.Task[TickOutcome] | None = None
        self._stopped = asyncio.Event()
        self.missed_ticks = 0
        self._anchor: tuple[float, float] | None = None  # (wall, monotonic) at the last reading

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

    def _begin(self) -> tuple[float, float]:
        """Start (or resume): read both clocks, count the ticks missed while the process was down.

        The state file's times are the wall clock's. A start or a last tick in the future was
        written by a clock that was ahead: it is read as now, so the timeout does not wait for
        the clock to catch up and nothing counts as missed (the next tick is a whole interval away).
        """
        now, mono = self.clock(), self.monotonic()
        self._anchor = (now, mono)
        state = self._state
        if state.started_at is not None and state.started_at > now:
            log.warning("heartbeat state: the first start is %g s in the future (the clock that wrote it was ahead); counting from now", state.started_at - now)
            state.started_at = now
        if state.started_at is None:
            state.started_at = now
        self.missed_ticks = 0
        last = state.last_tick_at
        if last is not None and last > now:
            log.warning("heartbeat state: the last tick is %g s in the future (the clock that wrote it was ahead); the next is one interval away", last - now)
        elif last is not None:
            self.missed_ticks = _intervals_in(now - last, self.interval)
            if self.missed_ticks:
                log.info("%d heartbeat tick(s) were missed while the process was down", self.missed_ticks)
        return now, mono

    def _read_clocks(self) -> tuple[float, float]:
        """Both clocks now. If the wall clock moved against the monotonic one since the last
        reading (set back or ahead, stepped by NTP), the first start moves with it: the next
        process, which has only the wall clock, then still counts the time that really passed."""
        now, mono = self.clock(), self.monotonic()
        if self._anchor is not None and self._state.started_at is not None:
            then, then_mono = self._anchor
            step = (now - then) - (mono - then_mono)
            if abs(step) > max(_CLOCK_STEP, (mono - then_mono) * _CLOCK_SLEW):
                log.warning("the wall clock jumped %+g s: the heartbeat's waits and timeout are on the monotonic clock, unaffected", step)
                self._state.started_at += step
        self._anchor = (now, mono)
        return now, mono

    def _deadline(self, now: float, mono: float) -> float:
        """The total timeout as a moment of the monotonic clock (``now`` and ``mono`` read together)."""
        started = self._state.started_at
        if self.timeout is None or started is None:
            return math.inf
        return mono + (started + self.timeout - now)

    def _first_wait(self, now: float) -> float:
        """Seconds from ``now`` to the first tick: on the beat of the last tick kept on disk (a
        restart does not shift the schedule), or a whole interval when there is none (or it is in
        the future). The remainder, not a count: a count overflows for a tiny interval."""
        last = self._state.last_tick_at
        if last is None or last > now:
            return self.interval
        return self.interval - (now - last) % self.interval

    def _fuse(self, mono: float, deadline: float) -> str | None:
        if self.max_ticks is not None and self._state.ticks >= self.max_ticks:
            return "max_ticks"
        if mono >= deadline:
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
        now, _ = self._read_clocks()
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
        now, mono = self._begin()
        if self.missed_ticks:
            self.missed_ticks -= 1  # this call is itself one of the ticks that were due
        fuse = self._fuse(mono, self._deadline(now, mono))
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

    async def _wait_until(self, moment: float, task: asyncio.Future[Any] | None = None) -> bool:
        """Sleep until ``moment`` of the monotonic clock, or until ``task`` is done; False if
        ``stop()`` came first. A long wait is slept a day at a time, the clock read between the
        pieces: a sleep that cannot take a long delay (uvloop before 0.14 raised OverflowError,
        a browser's timer holds 2**31 ms) is never asked for one. A sleep that raises raises
        here: its error once passed for "time is up", and the ticks fired back to back."""
        while not self._stopped.is_set():
            left = moment - self.monotonic()
            sleeper = asyncio.ensure_future(self.sleep(min(max(0.0, left), _LONGEST_SLEEP)))
            stopper = asyncio.ensure_future(self._stopped.wait())
            try:
                done, _ = await asyncio.wait({sleeper, stopper} | ({task} if task is not None else set()), return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in (sleeper, stopper):
                    waiter.cancel()
                await asyncio.gather(sleeper, stopper, return_exceptions=True)
            if self._stopped.is_set():
                break
            if task is not None and task.done():
                return True
            if sleeper in done and not sleeper.cancelled() and (error := sleeper.exception()) is not None:
                raise error
            if left <= _LONGEST_SLEEP:
                return True
        return False

    def _next_after(self, due: float, now: float) -> float:
        """The first beat of the schedule after ``due`` that is later than ``now``: a slow tick
        never makes the timer fire in a burst. Counted, not stepped to: an interval below the
        clock's resolution (1e-8 s against a clock at 1.7e9) would leave ``due + interval ==
        due`` and a stepping loop would spin for ever; past ``now`` it always is. A count too
        big for a float (1 s late on an interval of 5e-324 s) gives the next moment the clock has."""
        due += self.interval
        if due <= now and math.isfinite(behind := (now - due) / self.interval):
            due += (math.floor(behind) + 1) * self.interval
        return due if due > now else math.nextafter(now, math.inf)

    async def run(self) -> HeartbeatReport:
        """Tick until a fuse blows or ``stop()`` is called; then wait for the last run.

        The schedule and the timeout are kept on the monotonic clock: the wall clock set back or
        ahead moves neither. If a sleep (or a save) raises, the run in progress is cancelled
        and the error propagates."""
        now, mono = self._begin()
        self._save()
        next_at = mono + self._first_wait(now)
        deadline = self._deadline(now, mono)
        reason = self._fuse(mono, deadline)
        try:
            while reason is None:
                if not await self._wait_until(min(next_at, deadline)):
                    reason = "stopped"
                    break
                if (reason := self._fuse(self.monotonic(), deadline)) is not None:
                    break
                await self._tick()
                next_at = self._next_after(next_at, self.monotonic())
                if self.max_ticks is not None and self._state.ticks >= self.max_ticks:
                    reason = "max_ticks"
            await self._finish_run(reason, deadline)
        except Exception:
            if self.is_running:
                assert self._run_task is not None
                self.agent.cancel()
                await asyncio.wait({self._run_task})
            raise
        self._read_clocks()  # a jump since the last tick moves the start too
        self._save()
        return HeartbeatReport(reason, self._state.ticks, tuple(self._outcomes), self.missed_ticks)

    async def _finish_run(self, reason: str, deadline: float) -> None:
        """After the last tick: let the run finish (max_ticks), or cut it (timeout, stop())."""
        if not self.is_running:
            return
        assert self._run_task is not None
        if reason != "max_ticks":
            self.agent.cancel()
            await asyncio.wait({self._run_task})
            return
        finished = asyncio.ensure_future(self._run_task)
        if self.timeout is not None:
            await self._wait_until(deadline, finished)
            if not finished.done():
                self.agent.cancel()
        await asyncio.wait({self._run_task})

    def run_sync(self) -> HeartbeatReport:
        """``run()`` for scripts, on a new event loop."""
        return asyncio.run(self.run())

    def start(self) -> asyncio.Task[HeartbeatReport]:
        """``run()`` in a background task of the running event loop."""
        return asyncio.create_task(self.run(), name=self.id)
