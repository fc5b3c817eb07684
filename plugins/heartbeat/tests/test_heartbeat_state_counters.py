"""A state file holds the fuses' memory: a hand-written one cannot widen them.

``ticks`` must be a JSON integer (not a bool or a float) between 0 and a sane bound, and the
timestamps finite numbers; anything else is a broken state file: ``ConfigError``, file kept.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel
from bandoneon_heartbeat import Heartbeat
from hypothesis import given
from hypothesis import strategies as st

PROMPT = "Check on the pet."
MAX_TICKS = 3


class TooManyTicks(BaseException):
    """Raised by the condition past any fair count, so a widened fuse ends the test."""


class Clock:
    def __init__(self, now=1_000.0):
        self.now = now

    def __call__(self):
        return self.now

    async def sleep(self, seconds):
        self.now += seconds
        await asyncio.sleep(0)


def heartbeat_on(state, ticked, **options):
    clock = Clock()

    def condition():
        ticked.append(clock.now)
        if len(ticked) > MAX_TICKS:
            raise TooManyTicks(f"tick {len(ticked)} fired: max_ticks is {MAX_TICKS}")
        return False

    agent = bandoneon.Agent(ScriptedModel(), plugins=[], context_files=False)
    return Heartbeat(agent, interval=60, check_prompt=PROMPT, local_condition=condition, state_file=state, clock=clock, sleep=clock.sleep, **options)


def write(state, **fields):
    text = json.dumps({"ticks": 0, "started_at": 1_000.0, "last_tick_at": None, "last_outcome": None} | fields)
    state.write_text(text)
    return text


@pytest.mark.parametrize("ticks", [-1000, -1, True, 2.0, 1e300, 10**30, "1"])
def test_a_bad_tick_count_is_a_broken_state_file(tmp_path, ticks):
    state = tmp_path / "pet.state.json"
    text = write(state, ticks=ticks)
    with pytest.raises(bandoneon.ConfigError, match="not a heartbeat state file"):
        heartbeat_on(state, [], max_ticks=MAX_TICKS)
    assert state.read_text() == text


@pytest.mark.parametrize("field", ["started_at", "last_tick_at"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, pytest.param(10**400, id="401-digit-int"), pytest.param(-(10**400), id="minus-401-digit-int")])
def test_a_timestamp_that_is_not_a_finite_number_is_a_broken_state_file(tmp_path, field, value):
    # NaN would switch the total timeout off (nothing is >= NaN); an infinity crashes the count
    # of missed ticks (math.floor) instead of saying the file is broken. A JSON integer too big
    # for a float (401 digits) raised OverflowError from the check itself.
    state = tmp_path / "pet.state.json"
    text = write(state, **{field: value})
    with pytest.raises(bandoneon.ConfigError, match="not a heartbeat state file"):
        heartbeat_on(state, [], timeout=600)
    assert state.read_text() == text


hostile_numbers = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
)


@given(ticks=hostile_numbers, started_at=hostile_numbers, last_tick_at=hostile_numbers)
def test_no_state_file_widens_the_fuses(tmp_path_factory, ticks, started_at, last_tick_at):
    """Whatever the file says, no more than max_ticks ticks fire in all, and none fires after
    the total timeout; or the file is refused as broken."""
    state = tmp_path_factory.mktemp("hb") / "pet.state.json"
    write(state, ticks=ticks, started_at=started_at, last_tick_at=last_tick_at)
    ticked = []
    try:
        heartbeat = heartbeat_on(state, ticked, max_ticks=MAX_TICKS, timeout=600)
    except bandoneon.ConfigError:
        return
    report = asyncio.run(heartbeat.run())
    assert type(ticks) is int and ticks >= 0
    assert len(ticked) <= max(0, MAX_TICKS - ticks)
    first = started_at if started_at is not None else 1_000.0
    assert all(at < first + 600 for at in ticked), (report, ticked)


def test_an_interval_below_the_clocks_resolution_ticks_and_ends_instead_of_spinning():
    """At 1.7e9 s a float steps by 2.4e-7 s: stepping the schedule by 1e-8 never moved it, and
    the catch-up loop spun for ever after the first tick (no await in it, nothing could stop it)."""
    clock = Clock(1.7e9)
    ticked: list[float] = []
    agent = bandoneon.Agent(ScriptedModel(), plugins=[], context_files=False)
    beat = Heartbeat(agent, interval=1e-8, check_prompt=PROMPT, local_condition=lambda: ticked.append(clock.now), clock=clock, sleep=clock.sleep, max_ticks=MAX_TICKS)
    reports = []
    worker = threading.Thread(target=lambda: reports.append(asyncio.run(beat.run())), daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "the heartbeat is still running: its schedule did not advance"
    assert reports[0].stop == "max_ticks" and len(ticked) == MAX_TICKS
