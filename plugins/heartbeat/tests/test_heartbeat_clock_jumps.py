"""The wall clock is not a stopwatch: NTP or a user can set it back or ahead by hours.

A machine has two clocks. The wall clock (``time.time``) stamps what is kept or shown: a
tick's ``at``, the state file's ``started_at`` and ``last_tick_at``. The waits between ticks
and the total ``timeout`` are measured on the monotonic clock (``time.monotonic``, the one
``asyncio.sleep`` sleeps on), so a jump of the wall clock neither stalls the heartbeat nor
fires a burst of ticks, nor stretches or trips the timeout. Every test injects both clocks.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from fractions import Fraction

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_heartbeat import Heartbeat

PROMPT = "Check on the pet."
WALL = 1_700_000_000.0  # the wall clock when the test starts
MONO = 5_000.0  # the monotonic clock then (seconds since boot)
HOUR = 3600.0
DAY = 86_400.0


class Machine:
    """Two clocks and a sleep, as a machine has them. A sleep moves both clocks; a jump set for
    the n-th sleep (``jumps = {n: seconds}``) moves the wall clock alone, during that sleep."""

    def __init__(self, wall: float = WALL, mono: float = MONO):
        self.wall = wall
        self.mono = mono
        self.jumps: dict[int, float] = {}
        self.sleeps: list[float] = []

    def time(self) -> float:
        return self.wall

    def monotonic(self) -> float:
        return self.mono

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.wall += seconds + self.jumps.pop(len(self.sleeps), 0.0)
        self.mono += seconds
        await asyncio.sleep(0)


def heartbeat(machine: Machine, ticked: list[float] | None = None, *, took: float = 0.0, **options) -> Heartbeat:
    """A heartbeat whose condition notes the monotonic time of each tick (since MONO) and says
    no; ``took`` seconds pass on both clocks while it checks (a slow gauge)."""
    ticked = ticked if ticked is not None else []

    def condition() -> bool:
        ticked.append(machine.mono - MONO)
        machine.wall += took
        machine.mono += took
        return False

    options.setdefault("interval", 60)
    options.setdefault("local_condition", condition)
    agent = bandoneon.Agent(ScriptedModel(), plugins=[], context_files=False)
    return Heartbeat(agent, check_prompt=PROMPT, clock=machine.time, monotonic=machine.monotonic, sleep=machine.sleep, **options)


def walls(report) -> list[float]:
    return [outcome.at - WALL for outcome in report.outcomes]


# ------------------------------------------------------------------ jumps while it runs


async def test_a_backward_jump_of_the_wall_clock_does_not_stall_the_heartbeat():
    """The clock is set back an hour during the second wait: the ticks go on every minute (on a
    wall-clock schedule nothing fired for the hour it took the clock to catch up)."""
    machine, ticked = Machine(), []
    machine.jumps = {2: -HOUR}
    report = await heartbeat(machine, ticked, max_ticks=4).run()
    assert (report.stop, report.ticks) == ("max_ticks", 4)
    assert ticked == [60, 120, 180, 240]
    assert machine.sleeps == [60, 60, 60, 60]
    assert walls(report) == [60, 120 - HOUR, 180 - HOUR, 240 - HOUR]  # ``at`` is what the wall clock said


async def test_a_forward_jump_fires_no_burst_and_misses_no_tick():
    """The clock moves five hours ahead: no catch-up burst (the README: missed ticks are never
    replayed), the next tick one interval after the last, and nothing counted as missed."""
    machine, ticked = Machine(), []
    machine.jumps = {2: 5 * HOUR}
    report = await heartbeat(machine, ticked, max_ticks=4).run()
    assert ticked == [60, 120, 180, 240]
    assert machine.sleeps == [60, 60, 60, 60]
    assert report.missed_ticks == 0
    assert walls(report) == [60, 120 + 5 * HOUR, 180 + 5 * HOUR, 240 + 5 * HOUR]


async def test_a_slow_tick_skips_to_the_next_beat_instead_of_firing_a_burst():
    """A check that takes two and a half intervals: the beats it overran are skipped."""
    machine, ticked = Machine(), []
    report = await heartbeat(machine, ticked, took=150, max_ticks=3).run()
    assert ticked == [60, 240, 420]  # 60 + 150 = 210: the next beat is 240, not 120 and 180 at once
    assert report.ticks == 3


@pytest.mark.parametrize("jump", [-HOUR, HOUR])
async def test_the_total_timeout_counts_real_time_whatever_the_wall_clock_does(jump):
    """Set back, the clock would stretch a 150 s timeout by an hour; set ahead, trip it at once."""
    machine, ticked = Machine(), []
    machine.jumps = {2: jump}
    report = await heartbeat(machine, ticked, timeout=150).run()
    assert (report.stop, report.ticks) == ("timeout", 2)
    assert ticked == [60, 120]
    assert machine.mono - MONO == 150


async def test_after_a_jump_the_state_file_start_moves_with_it_so_the_next_process_counts_real_time(tmp_path):
    state = tmp_path / "pet.state.json"
    machine = Machine()
    machine.jumps = {2: -HOUR}
    await heartbeat(machine, max_ticks=3, state_file=state).run()
    saved = json.loads(state.read_text())
    # 180 s of real time went by: the start is moved back with the clock, the last tick is
    # what the wall clock said when it fired.
    assert saved["started_at"] == WALL - HOUR
    assert saved["last_tick_at"] == WALL + 180 - HOUR
    assert machine.wall - saved["started_at"] == 180
    # The next process, with a 200 s budget: 20 s are left, not 3620.
    again = Machine(wall=machine.wall, mono=10.0)
    report = await heartbeat(again, max_ticks=10, timeout=200, state_file=state).run()
    assert (report.stop, report.outcomes) == ("timeout", ())
    assert again.mono == 10.0 + 20


# ------------------------------------------------------------------ a state file from a clock that was ahead


@pytest.mark.parametrize("ahead", [HOUR, 1e300])
async def test_a_state_file_from_a_clock_that_was_ahead_neither_widens_the_timeout_nor_ticks_early(tmp_path, ahead):
    """The clock that wrote the file was ahead (its start and last tick are in the future): the
    start is taken as now (the timeout cannot wait for the clock to catch up) and the last tick
    as now (the next one is a whole interval away, not on a grid the file made up)."""
    state = tmp_path / "pet.state.json"
    state.write_text(json.dumps({"ticks": 1, "started_at": WALL + ahead, "last_tick_at": WALL + ahead - 10, "last_outcome": None}))
    machine, ticked = Machine(), []
    report = await heartbeat(machine, ticked, max_ticks=3, timeout=100, state_file=state).run()
    assert ticked == [60]
    assert (report.stop, report.ticks, report.missed_ticks) == ("timeout", 2, 0)
    assert json.loads(state.read_text())["started_at"] == WALL


async def test_tick_once_counts_the_timeout_from_now_when_the_file_s_start_is_in_the_future(tmp_path):
    state = tmp_path / "pet.state.json"
    state.write_text(json.dumps({"ticks": 0, "started_at": WALL + HOUR, "last_tick_at": None, "last_outcome": None}))
    machine = Machine()
    beat = heartbeat(machine, timeout=100, state_file=state)
    assert (await beat.tick_once()).outcome == "quiet"
    assert json.loads(state.read_text())["started_at"] == WALL
    machine.wall += 150
    assert await beat.tick_once() == "timeout"


# ------------------------------------------------------------------ intervals at the edges of a float


async def test_an_interval_too_small_to_divide_by_neither_crashes_nor_spins(tmp_path):
    """10 s / 5e-324 is infinity as a float: math.floor raised OverflowError on restart (missed
    ticks) and after a slow tick (the next beat). The missed ticks are counted exactly."""
    state = tmp_path / "pet.state.json"
    state.write_text(json.dumps({"ticks": 1, "started_at": WALL - 10, "last_tick_at": WALL - 10, "last_outcome": None}))
    machine, ticked = Machine(), []
    report = await heartbeat(machine, ticked, interval=5e-324, took=1.0, max_ticks=4, state_file=state).run()
    assert (report.stop, report.ticks) == ("max_ticks", 4)
    assert report.missed_ticks == math.floor(Fraction(10) / Fraction(5e-324))
    assert ticked == pytest.approx([0, 1, 2], abs=1e-9)


@pytest.mark.parametrize("interval", [40 * DAY, 1e308, math.inf])
async def test_a_huge_interval_is_slept_a_day_at_a_time_and_the_timeout_still_ends_it(tmp_path, interval):
    """A sleep that cannot take a long delay (uvloop before 0.14 raised OverflowError, a browser's
    setTimeout holds 2**31 ms) made every wait fail at once, and the heartbeat ticked in a burst.
    No wait asks for more than a day; an interval of infinity never ticks, and ends by its fuse."""
    machine, ticked = Machine(), []
    longest = 2**31 / 1000  # 24.8 days

    async def sleep(seconds: float) -> None:
        if seconds > longest:
            raise OverflowError("timeout value is too large")
        await machine.sleep(seconds)

    state = tmp_path / "pet.state.json"
    state.write_text(json.dumps({"ticks": 0, "started_at": WALL - 10, "last_tick_at": WALL - 10, "last_outcome": None}))
    agent = bandoneon.Agent(ScriptedModel(), plugins=[], context_files=False)
    beat = Heartbeat(
        agent, interval=interval, check_prompt=PROMPT, local_condition=lambda: ticked.append(machine.mono - MONO),
        timeout=90 * DAY, max_ticks=2, state_file=state, clock=machine.time, monotonic=machine.monotonic, sleep=sleep,
    )  # fmt: skip
    report = await beat.run()
    if interval == 40 * DAY:
        assert (report.stop, ticked) == ("max_ticks", [40 * DAY - 10, 80 * DAY - 10])
    else:
        assert (report.stop, ticked) == ("timeout", [])
        assert machine.mono - MONO == 90 * DAY - 10
    assert max(machine.sleeps) <= DAY
    assert report.missed_ticks == 0


async def test_a_sleep_that_fails_raises_instead_of_ticking_in_a_burst():
    """Its error was swallowed and taken for "time is up": every tick fired at once."""
    ticked = []

    async def broken_sleep(seconds: float) -> None:
        raise RuntimeError("no timer left")

    agent = bandoneon.Agent(ScriptedModel(), plugins=[], context_files=False)
    beat = Heartbeat(agent, interval=60, check_prompt=PROMPT, local_condition=lambda: ticked.append(1), max_ticks=3, sleep=broken_sleep)
    with pytest.raises(RuntimeError, match="no timer left"):
        await beat.run()
    assert ticked == []


async def test_a_sleep_that_fails_cancels_the_run_in_progress_before_raising():
    started = asyncio.Event()

    async def hang() -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return ""

    async def sleep(seconds: float) -> None:
        if beat.ticks:
            await started.wait()
            raise RuntimeError("no timer left")

    outcomes = []
    agent = bandoneon.Agent(ScriptedModel(call("hang")), tools=[hang], plugins=[], context_files=False)
    beat = Heartbeat(agent, interval=60, check_prompt=PROMPT, max_ticks=3, run_timeout=5, sleep=sleep, on_tick=outcomes.append)
    with pytest.raises(RuntimeError, match="no timer left"):
        await beat.run()
    assert not beat.is_running  # not left running behind the error
    assert [(o.tick, o.outcome, o.stop) for o in outcomes] == [(1, "woken", None), (1, "woken", "cancelled")]


async def test_stop_during_a_day_long_piece_of_a_long_wait():
    never = asyncio.Event()

    async def long_sleep(seconds: float) -> None:
        await never.wait()

    agent = bandoneon.Agent(ScriptedModel(), plugins=[], context_files=False)
    beat = Heartbeat(agent, interval=1e308, check_prompt=PROMPT, sleep=long_sleep)
    task = beat.start()
    await asyncio.sleep(0)
    beat.stop()
    assert ((await task).stop, beat.ticks) == ("stopped", 0)


# ------------------------------------------------------------------ which clock is which


def test_the_default_clocks_are_the_wall_clock_and_one_nobody_sets():
    """CLOCK_BOOTTIME where there is one: monotonic, and it goes on while the machine is
    suspended (a timeout of ten hours still ends ten hours later); else time.monotonic."""
    agent = bandoneon.Agent(ScriptedModel(), plugins=[], context_files=False)
    beat = Heartbeat(agent, interval=60, check_prompt=PROMPT)
    assert beat.clock is time.time
    if hasattr(time, "CLOCK_BOOTTIME"):
        assert (beat.monotonic.func, beat.monotonic.args) == (time.clock_gettime, (time.CLOCK_BOOTTIME,))
    else:
        assert beat.monotonic is time.monotonic


def test_an_injected_clock_without_a_monotonic_one_serves_as_both():
    """A test's fake clock, moved by its fake sleep, keeps driving the schedule."""
    machine = Machine()
    agent = bandoneon.Agent(ScriptedModel(), plugins=[], context_files=False)
    beat = Heartbeat(agent, interval=60, check_prompt=PROMPT, clock=machine.time, sleep=machine.sleep)
    assert beat.monotonic == machine.time
