"""The level 4 example runs (with scripted models), so it cannot rot."""

from __future__ import annotations

from pathlib import Path

import pytest
from bandoneon.testing import MockLLMServer, Reply, ScriptedModel, call, load_script

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "level_04_when_to_stop.py"


@pytest.fixture
def level_4():
    module = load_script(EXAMPLE)
    return module


def test_the_star_is_delivered_through_the_warp_pipe(level_4, capsys):
    model = ScriptedModel(call("search_blocks", area="ground"), call("search_blocks", area="sky"), call("mark_star", item="star", block=6))
    result = level_4.main(model)
    assert (result.stop, result.ok, result.answer) == ("terminal_tool", True, {"item": "star", "block": 6})
    assert level_4.MAP_MARKERS == [6]
    assert "Warp pipe: the star is in block 6" in capsys.readouterr().out


def test_marking_the_wrong_block_is_sent_back_and_the_model_fixes_it(level_4):
    model = ScriptedModel(call("mark_star", item="star", block=2), call("search_blocks", area="sky"), call("mark_star", item="star", block=6))
    result = level_4.main(model)
    assert result.answer == {"item": "star", "block": 6}
    assert "does not hide the star" in model.requests[1].messages[-1].content


def test_running_out_of_turns_is_reported_as_a_failure_not_an_answer(level_4, capsys):
    model = ScriptedModel(call("search_blocks", area="ground"), call("search_blocks", area="underground"), "Probably in the sky, not checked.")
    result = level_4.main(model, max_turns=2)
    assert (result.stop, result.ok, result.answer) == ("max_turns", False, None)
    out = capsys.readouterr().out
    assert "No answer: the run stopped on max_turns" in out
    assert "Best effort from what was found, not an answer: Probably in the sky" in out
    assert level_4.MAP_MARKERS == []


def test_the_model_may_give_up_in_text(level_4, capsys):
    model = ScriptedModel("I couldn't find it.")
    result = level_4.main(model)
    assert result.stop == "end_turn"
    assert "may give up" in model.requests[0].system_prompt
    assert "Flag: the model answered in text: I couldn't find it." in capsys.readouterr().out


def test_the_example_over_http(level_4, mock_llm: MockLLMServer):
    mock_llm.add(Reply(tool_calls=[("search_blocks", {"area": "sky"})]), Reply(tool_calls=[("mark_star", {"item": "star", "block": 6})]))
    result = level_4.main("openai-compatible:mock@" + mock_llm.base_url)
    assert result.answer == {"item": "star", "block": 6}
