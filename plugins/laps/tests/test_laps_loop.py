import asyncio
import json

import bandoneon
import pytest
from bandoneon.testing import FunctionModel, ScriptedModel, call, reply
from bandoneon_laps import run_goal_loop, run_goal_loop_sync

GOAL = "Build the thing."


def counter_world(done_after):
    """is_done that says yes after `done_after` checks answered no (the first check is before lap 1)."""
    checks = []

    def is_done():
        checks.append(True)
        return len(checks) > done_after

    return is_done, checks


def boasting_agents(models):
    """make_agent that builds a new agent on a new model each lap; the model always claims success."""

    def make_agent():
        model = FunctionModel(lambda request: reply("Done! Everything is built.", usage=bandoneon.Usage(input_tokens=10, output_tokens=2, requests=1)))
        models.append(model)
        return bandoneon.Agent(model, plugins=[], context_files=False)

    return make_agent


def test_every_lap_is_a_new_agent_with_an_empty_history():
    models = []
    is_done, _ = counter_world(done_after=3)
    result = run_goal_loop_sync(GOAL, boasting_agents(models), is_done, max_laps=5)
    assert result.laps == 3
    assert [[m.content for m in model.requests[0].messages] for model in models] == [[GOAL]] * 3


def test_the_loop_trusts_is_done_not_the_models_word():
    models = []
    is_done, _ = counter_world(done_after=2)
    result = run_goal_loop_sync(GOAL, boasting_agents(models), is_done, max_laps=5)
    assert (result.done, result.stop, result.laps) == (True, "done", 2)
    assert [r.done for r in result.records] == [False, True]
    assert result.last_text == "Done! Everything is built."


def test_the_fuse_stops_a_goal_that_never_checks_out():
    models = []
    result = run_goal_loop_sync(GOAL, boasting_agents(models), lambda: False, max_laps=3)
    assert (result.done, result.stop, result.laps) == (False, "max_laps", 3)
    assert len(models) == 3
    assert "not done after 3 laps" in result.detail


def test_usage_is_summed_over_laps():
    result = run_goal_loop_sync(GOAL, boasting_agents([]), lambda: False, max_laps=3)
    assert result.usage.input_tokens == 30 and result.usage.requests == 3


def test_a_goal_already_done_runs_no_lap():
    models = []
    result = run_goal_loop_sync(GOAL, boasting_agents(models), lambda: True, max_laps=3)
    assert (result.done, result.laps, models) == (True, 0, [])


def test_is_done_that_raises_stops_the_loop_with_that_reason():
    models = []
    checks = []

    def is_done():
        checks.append(True)
        if len(checks) == 2:
            raise OSError("bridge.json is unreadable")
        return False

    result = run_goal_loop_sync(GOAL, boasting_agents(models), is_done, max_laps=5)
    assert (result.done, result.stop, result.laps) == (False, "is_done_error", 1)
    assert result.detail == "is_done raised OSError: bridge.json is unreadable"
    assert len(models) == 1
    assert result.records[0].stop == "end_turn"  # the lap's work is still reported


def test_a_lap_that_crashes_is_reported_and_the_next_lap_starts():
    models = iter([ScriptedModel(bandoneon.AuthError("bad key")), ScriptedModel("laid bricks")])

    def make_agent():
        return bandoneon.Agent(next(models), plugins=[], context_files=False)

    is_done, _ = counter_world(done_after=2)
    result = run_goal_loop_sync(GOAL, make_agent, is_done, max_laps=5)
    assert [r.stop for r in result.records] == ["crashed", "end_turn"]
    assert result.records[0].error == "AuthError: bad key"
    assert result.done and result.laps == 2


def test_make_agent_that_raises_is_a_crashed_lap():
    attempts = []

    def make_agent():
        attempts.append(True)
        raise RuntimeError("no model configured")

    result = run_goal_loop_sync(GOAL, make_agent, lambda: False, max_laps=2)
    assert [r.stop for r in result.records] == ["crashed", "crashed"]
    assert result.records[0].error == "RuntimeError: no model configured"


def test_on_lap_sees_every_lap_and_its_errors_do_not_stop_the_loop():
    seen = []

    async def on_lap(record):
        seen.append((record.lap, record.done))
        raise ValueError("a broken printer")

    is_done, _ = counter_world(done_after=2)
    result = run_goal_loop_sync(GOAL, boasting_agents([]), is_done, 5, on_lap)
    assert seen == [(1, False), (2, True)]
    assert result.done


@pytest.mark.parametrize("max_laps", [0, -1, 1.5, True])
def test_max_laps_below_one_is_refused(max_laps, tmp_path):
    state = tmp_path / "laps.json"
    with pytest.raises(bandoneon.ConfigError, match="laps: max_laps must be a whole number of at least 1, got "):
        run_goal_loop_sync(GOAL, boasting_agents([]), lambda: False, max_laps, state_file=state)
    assert not state.exists()


def test_an_empty_goal_is_refused():
    with pytest.raises(bandoneon.ConfigError, match="the goal is empty"):
        run_goal_loop_sync("  ", boasting_agents([]), lambda: False)


def test_the_loop_resumes_after_a_restart_and_the_fuse_counts_every_lap(tmp_path):
    state = tmp_path / "laps.json"
    first = run_goal_loop_sync(GOAL, boasting_agents([]), lambda: False, max_laps=2, state_file=state)
    assert first.laps == 2 and json.loads(state.read_text())["laps"] == 2
    again = run_goal_loop_sync(GOAL, boasting_agents(models := []), lambda: False, max_laps=2, state_file=state)
    assert (again.stop, again.laps, models) == ("max_laps", 2, [])  # the fuse survived the restart
    more = run_goal_loop_sync(GOAL, boasting_agents(models), lambda: False, max_laps=3, state_file=state)
    assert [r.lap for r in more.records] == [1, 2, 3] and len(models) == 1
    assert more.usage.input_tokens == 30


def test_a_lap_cut_short_by_the_process_stopping_counts_as_interrupted(tmp_path):
    state = tmp_path / "laps.json"

    def dies():
        raise SystemExit("killed")  # not an Exception: nothing catches it, as with a real kill

    with pytest.raises(SystemExit):
        run_goal_loop_sync(GOAL, dies, lambda: False, max_laps=3, state_file=state)
    assert json.loads(state.read_text())["in_progress"] is True
    result = run_goal_loop_sync(GOAL, boasting_agents([]), counter_world(done_after=1)[0], max_laps=3, state_file=state)
    assert [(r.lap, r.stop) for r in result.records] == [(1, "interrupted"), (2, "end_turn")]
    assert result.done and result.laps == 2


async def test_cancelling_the_loop_records_the_interrupted_lap(tmp_path):
    state = tmp_path / "laps.json"
    started = asyncio.Event()

    async def hang():
        started.set()
        await asyncio.Event().wait()

    def make_agent():
        return bandoneon.Agent(FunctionModel(lambda request: hang()), plugins=[], context_files=False)

    task = asyncio.create_task(run_goal_loop(GOAL, make_agent, lambda: False, 3, state_file=state))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    saved = json.loads(state.read_text())
    assert saved["in_progress"] is False and saved["records"][0]["stop"] == "interrupted"


def test_a_state_file_of_another_goal_is_refused_and_kept(tmp_path):
    state = tmp_path / "laps.json"
    run_goal_loop_sync("Another goal.", boasting_agents([]), lambda: False, max_laps=1, state_file=state)
    before = state.read_text()
    with pytest.raises(bandoneon.ConfigError, match="holds the laps of another goal"):
        run_goal_loop_sync(GOAL, boasting_agents([]), lambda: False, max_laps=1, state_file=state)
    assert state.read_text() == before


def test_a_broken_state_file_is_a_clear_error(tmp_path):
    state = tmp_path / "laps.json"
    state.write_text("{not json")
    with pytest.raises(bandoneon.ConfigError, match="not a laps state file"):
        run_goal_loop_sync(GOAL, boasting_agents([]), lambda: False, max_laps=1, state_file=state)
    assert state.read_text() == "{not json"


def test_async_make_agent_and_is_done_are_awaited():
    async def make_agent():
        return bandoneon.Agent(ScriptedModel(call("nothing"), "ok"), plugins=[], context_files=False)

    checks = []

    async def is_done():
        checks.append(True)
        return len(checks) > 1

    result = run_goal_loop_sync(GOAL, make_agent, is_done)
    assert result.done and result.laps == 1 and result.last_text == "ok"
