import asyncio
import json
import logging
from typing import ClassVar

import attrs
import bandoneon
import pytest
from bandoneon.testing import FunctionModel, ScriptedModel, call
from bandoneon_heartbeat import Heartbeat

PROMPT = "Check on the pet."


class FakeClock:
    """An injected clock: sleeping advances time at once, then waits until no run is in
    progress (so a tick never overlaps a run unless a test wants it to)."""

    def __init__(self, now=1_000.0):
        self.now = now
        self.heartbeat = None
        self.sleeps = []

    def __call__(self):
        return self.now

    async def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds
        if self.heartbeat is not None:
            await self.heartbeat.settled()
        await asyncio.sleep(0)


def make(agent, clock=None, **options):
    clock = clock or FakeClock()
    options.setdefault("interval", 60)
    heartbeat = Heartbeat(agent, check_prompt=PROMPT, clock=clock, sleep=clock.sleep, **options)
    clock.heartbeat = heartbeat
    return heartbeat


def agent_with(model, **options):
    return bandoneon.Agent(model, plugins=[], context_files=False, **options)


async def test_the_model_is_woken_only_when_the_local_condition_says_so():
    gauges = iter([False, False, True, False, False])
    model = ScriptedModel("Fed the pet.")
    agent = agent_with(model)
    report = await make(agent, local_condition=lambda: next(gauges), max_ticks=5).run()
    assert [o.outcome for o in report.outcomes] == ["quiet", "quiet", "woken", "quiet", "quiet"]
    assert (report.stop, report.ticks, report.woken) == ("max_ticks", 5, 1)
    assert len(model.requests) == 1 and model.requests[0].messages[0].content == PROMPT
    assert report.outcomes[2].stop == "end_turn" and report.outcomes[2].text == "Fed the pet."


async def test_ticks_come_every_interval_on_the_injected_clock():
    clock = FakeClock()
    report = await make(agent_with(ScriptedModel()), clock, local_condition=lambda: False, max_ticks=3, interval=30).run()
    assert [o.at - 1_000 for o in report.outcomes] == [30, 60, 90]


async def test_an_async_local_condition_is_awaited():
    async def low():
        return True

    report = await make(agent_with(ScriptedModel("ok")), local_condition=low, max_ticks=1).run()
    assert report.woken == 1


async def test_heartbeat_tick_is_emitted_only_when_the_model_is_woken():
    gauges = iter([False, True, False])
    agent = agent_with(ScriptedModel("ok"))
    seen = []
    agent.on("heartbeat_tick", seen.append)
    agent.on("run_start", seen.append)
    heartbeat = make(agent, local_condition=lambda: next(gauges), max_ticks=3)
    await heartbeat.run()
    tick, start = seen
    assert (tick.name, tick.tick, tick.prompt, tick.run_id) == ("heartbeat_tick", 2, PROMPT, heartbeat.id)
    assert start.name == "run_start"  # the tick comes first, then the run it starts
    assert start.run_id != heartbeat.id


@attrs.define
class TickWatcher(bandoneon.Plugin):
    name: ClassVar[str] = "tick_watcher"
    seen: list = attrs.field(factory=list)

    @bandoneon.hookimpl
    def on_event(self, run, event):
        if event.name == "heartbeat_tick":
            self.seen.append((run, event.tick))


async def test_plugins_observe_heartbeat_tick_outside_any_run():
    watcher = TickWatcher()
    agent = bandoneon.Agent(ScriptedModel("ok"), plugins=[watcher], context_files=False)
    await make(agent, max_ticks=1).run()
    assert watcher.seen == [(None, 1)]


async def test_a_tick_during_a_run_is_dropped_not_queued():
    release = asyncio.Event()

    async def slow_errand() -> str:
        """Takes a while."""
        await release.wait()
        return "done"

    def on_tick(outcome):
        if outcome.outcome == "dropped" and outcome.tick == 3:
            release.set()

    model = ScriptedModel(call("slow_errand"), "all done")
    agent = agent_with(model, tools=[slow_errand])
    clock = FakeClock()
    heartbeat = Heartbeat(agent, interval=60, check_prompt=PROMPT, max_ticks=3, on_tick=on_tick, clock=clock, sleep=clock.sleep)
    # This clock does not wait for runs: ticks 2 and 3 fire while tick 1's run is going.
    clock.heartbeat = None
    report = await heartbeat.run()
    assert [o.outcome for o in report.outcomes] == ["woken", "dropped", "dropped"]
    assert report.outcomes[0].text == "all done"  # the run of tick 1 was waited for, not cut
    assert len(model.requests) == 2  # one run, two turns: nothing was queued


async def test_a_local_condition_that_raises_skips_the_tick_and_the_heartbeat_goes_on(caplog):
    checks = iter([ValueError("gauge unreadable"), True])

    def condition():
        value = next(checks)
        if isinstance(value, Exception):
            raise value
        return value

    with caplog.at_level(logging.WARNING, logger="bandoneon.heartbeat"):
        report = await make(agent_with(ScriptedModel("ok")), local_condition=condition, max_ticks=2).run()
    assert [o.outcome for o in report.outcomes] == ["condition_error", "woken"]
    assert report.outcomes[0].error == "ValueError: gauge unreadable"
    assert "local_condition raised ValueError: gauge unreadable" in caplog.text


async def test_a_run_that_raises_is_reported_and_the_next_tick_tries_again():
    model = ScriptedModel(bandoneon.AuthError("bad key"), "ok")
    report = await make(agent_with(model), max_ticks=2).run()
    assert [o.outcome for o in report.outcomes] == ["run_error", "woken"]
    assert report.outcomes[0].error == "AuthError: bad key"


async def test_each_woken_tick_starts_a_fresh_session_by_default():
    model = ScriptedModel("one", "two")
    await make(agent_with(model), max_ticks=2).run()
    assert [len(r.messages) for r in model.requests] == [1, 1]


async def test_one_session_can_be_kept():
    model = ScriptedModel("one", "two")
    await make(agent_with(model), max_ticks=2, fresh_session=False).run()
    assert [len(r.messages) for r in model.requests] == [1, 3]


async def test_the_total_timeout_ends_the_heartbeat():
    report = await make(agent_with(ScriptedModel()), local_condition=lambda: False, interval=60, timeout=150).run()
    assert (report.stop, report.ticks) == ("timeout", 2)


async def test_the_per_run_timeout_cancels_a_run_and_keeps_its_work():
    async def hang() -> str:
        """Never returns."""
        await asyncio.Event().wait()
        return ""

    model = ScriptedModel(call("hang"))
    agent = agent_with(model, tools=[hang])
    report = await make(agent, max_ticks=1, run_timeout=0.01).run()
    (outcome,) = report.outcomes
    assert (outcome.outcome, outcome.stop) == ("run_timeout", "cancelled")
    assert agent.messages[-1].role == "tool"  # the history is valid


async def test_stop_ends_the_heartbeat_and_cancels_the_run_in_progress():
    started = asyncio.Event()

    async def hang() -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return ""

    agent = agent_with(ScriptedModel(call("hang")), tools=[hang])
    clock = FakeClock()
    heartbeat = Heartbeat(agent, interval=60, check_prompt=PROMPT, clock=clock, sleep=clock.sleep)
    task = heartbeat.start()
    await started.wait()
    heartbeat.stop()
    report = await task
    assert report.stop == "stopped"
    assert report.outcomes[0].stop == "cancelled"


async def test_stop_while_waiting_for_the_next_tick():
    never = asyncio.Event()

    async def long_sleep(seconds):
        await never.wait()

    heartbeat = Heartbeat(agent_with(ScriptedModel()), interval=3600, check_prompt=PROMPT, sleep=long_sleep)
    task = heartbeat.start()
    await asyncio.sleep(0)
    heartbeat.stop()
    report = await task
    assert (report.stop, report.ticks) == ("stopped", 0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"interval": 0}, "heartbeat: interval must be above 0 seconds, got 0"),
        ({"interval": -5}, "interval must be above 0 seconds, got -5"),
        ({"timeout": 0}, "timeout must be above 0 seconds, got 0"),
        ({"run_timeout": -1}, "run_timeout must be above 0 seconds, got -1"),
        ({"max_ticks": 0}, "max_ticks must be a whole number of at least 1, got 0"),
        ({"check_prompt": " "}, "check_prompt is empty"),
        # An int no float holds: OverflowError from the constructor (interval), from run()
        # (timeout), or in the woken run's task, lost, the tick left "woken" for ever (run_timeout).
        ({"interval": 10**400}, r"interval must be a number of seconds, got an integer too big for a float \(1329 bits\)"),
        ({"timeout": 10**400}, r"timeout must be a number of seconds, got an integer too big for a float \(1329 bits\)"),
        ({"run_timeout": 10**400}, r"run_timeout must be a number of seconds, got an integer too big for a float \(1329 bits\)"),
        ({"timeout": 10**5000}, r"timeout must be a number of seconds, got an integer too big for a float \(16610 bits\)"),
    ],
)
def test_bad_options_are_refused(options, message):
    arguments = {"interval": 60, "check_prompt": PROMPT} | options
    with pytest.raises(bandoneon.ConfigError, match=message):
        Heartbeat(agent_with(ScriptedModel()), **arguments)


async def test_the_fuses_hold_across_a_restart_and_missed_ticks_are_reported(tmp_path):
    state = tmp_path / "pet.state.json"
    clock = FakeClock()
    heartbeat = make(agent_with(ScriptedModel()), clock, local_condition=lambda: False, max_ticks=3, state_file=state)
    report = await heartbeat.run()
    assert report.ticks == 3 and json.loads(state.read_text())["ticks"] == 3
    # Down for five intervals, then restarted with a bigger budget: it continues from tick 3.
    clock.now += 5 * 60
    again = make(agent_with(ScriptedModel()), clock, local_condition=lambda: False, max_ticks=4, state_file=state)
    report = await again.run()
    assert (report.ticks, report.missed_ticks) == (4, 5)
    assert [o.tick for o in report.outcomes] == [4]
    # Restarted with the same budget: the fuse is already blown, nothing ticks.
    report = await make(agent_with(ScriptedModel()), clock, max_ticks=4, state_file=state).run()
    assert (report.stop, report.outcomes) == ("max_ticks", ())


async def test_the_total_timeout_counts_from_the_first_start(tmp_path):
    state = tmp_path / "pet.state.json"
    clock = FakeClock()
    await make(agent_with(ScriptedModel()), clock, local_condition=lambda: False, max_ticks=1, state_file=state).run()
    clock.now += 1_000
    report = await make(agent_with(ScriptedModel()), clock, local_condition=lambda: False, timeout=500, state_file=state).run()
    assert (report.stop, report.outcomes) == ("timeout", ())


def test_a_broken_state_file_is_a_clear_error(tmp_path):
    state = tmp_path / "pet.state.json"
    state.write_text("[1, 2")
    with pytest.raises(bandoneon.ConfigError, match="not a heartbeat state file"):
        Heartbeat(agent_with(ScriptedModel()), interval=60, check_prompt=PROMPT, state_file=state)
    assert state.read_text() == "[1, 2"


async def test_on_tick_errors_are_logged_not_fatal(caplog):
    def on_tick(outcome):
        raise RuntimeError("printer on fire")

    with caplog.at_level(logging.ERROR, logger="bandoneon.heartbeat"):
        report = await make(agent_with(FunctionModel(lambda r: "ok")), max_ticks=2, on_tick=on_tick).run()
    assert [o.outcome for o in report.outcomes] == ["woken", "woken"]
    assert "on_tick failed on tick 1" in caplog.text
