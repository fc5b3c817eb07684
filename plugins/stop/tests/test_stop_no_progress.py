"""The no-progress watchdog: the same successful call again and again is noted, then stopped."""

from __future__ import annotations

import bandoneon
import pytest
from bandoneon.testing import Reply, ScriptedModel, call
from bandoneon_stop import StopRules


@bandoneon.tool
def look(room: str) -> str:
    """Look around a room and describe what is there."""
    return f"The {room} is empty."


def agent_with(model, **options) -> bandoneon.Agent:
    return bandoneon.Agent(model, tools=[look], plugins=[StopRules(**options)], context_files=False)


def test_the_same_call_three_times_gets_a_note_then_a_fourth_ends_the_run():
    model = ScriptedModel(*(call("look", room="hall") for _ in range(8)))
    agent = agent_with(model)
    result = agent.run_sync("Find the key.")
    assert (result.stop, result.ok, result.turns) == ("no_progress", False, 4)
    assert "look was called 4 times in a row" in result.detail and '"room": "hall"' in result.detail
    results = [m.content for m in agent.messages if m.role == "tool"]
    assert ["Note:" in text for text in results] == [False, False, True, False]
    assert "One more identical call ends the run" in results[2]
    assert agent.run_sync("Again?").stop == "no_progress"  # per run: the next run counts afresh, and the history is valid


def test_a_model_that_changes_course_after_the_note_goes_on():
    model = ScriptedModel(*(call("look", room="hall") for _ in range(3)), call("look", room="attic"), call("look", room="hall"), "Found it.")
    result = agent_with(model).run_sync("Find the key.")
    assert result.stop == "end_turn" and result.text == "Found it."


def test_different_arguments_never_trip_it():
    model = ScriptedModel(*(call("look", room=f"room {n}") for n in range(6)), "Nothing.")
    assert agent_with(model).run_sync("Search.").stop == "end_turn"


def test_the_limit_is_configurable_and_zero_switches_it_off():
    model = ScriptedModel(*(call("look", room="hall") for _ in range(2)), "x")
    assert agent_with(model, no_progress_after=1).run_sync("go").stop == "no_progress"
    model = ScriptedModel(*(call("look", room="hall") for _ in range(8)), "gave up")
    result = agent_with(model, no_progress_after=0).run_sync("go")
    assert result.stop == "end_turn" and result.text == "gave up"


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_a_wrong_limit_is_a_config_error(bad):
    with pytest.raises(bandoneon.ConfigError, match="no_progress_after"):
        StopRules(no_progress_after=bad)


def test_from_bandoneon_toml_through_the_wire(mock_llm, tmp_path):
    (tmp_path / "bandoneon.toml").write_text("[plugins.stop]\nno_progress_after = 2\n")
    for _ in range(5):
        mock_llm.add(Reply(tool_calls=[("look", {"room": "hall"})]))
    agent = bandoneon.Agent(f"openai-compatible:m@{mock_llm.base_url}", tools=[look], config=tmp_path / "bandoneon.toml", context_files=False)
    result = agent.run_sync("go")
    assert result.stop == "no_progress" and result.turns == 3
    sent = [r for r in mock_llm.requests if r.path.endswith("/chat/completions")][2].json["messages"]
    assert "Note: you have called look" in sent[-1]["content"]
