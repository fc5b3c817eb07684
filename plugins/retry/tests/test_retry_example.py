"""The level 5 example runs (scripted model and loopback server), so it cannot rot."""

from __future__ import annotations

from pathlib import Path

import bandoneon
import pytest
from bandoneon.testing import (
    Fault,
    MockLLMServer,
    Reply,
    ScriptedModel,
    call,
    load_script,
)

pytest.importorskip("bandoneon_stop", reason="the level 5 example also uses the stop plugin's error counter")

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "level_05_errors.py"

OPEN_THE_DOOR = [
    call("use", item="key", target="door"),
    call("use", item="oil_can", target="lock"),
    call("use", item="key", target="door"),
    "The temple door is open.",
]


@pytest.fixture
def level_5(monkeypatch):
    module = load_script(EXAMPLE)
    monkeypatch.setattr(module, "RETRY_OPTIONS", {**module.RETRY_OPTIONS, "base_delay": 0.001, "max_delay": 0.01})
    return module


def test_the_model_fixes_the_rusted_lock_itself(level_5, capsys):
    model = ScriptedModel(*OPEN_THE_DOOR)
    result = level_5.main(model)
    assert (result.stop, result.text) == ("end_turn", "The temple door is open.")
    assert "Oil it first" in model.requests[1].messages[-1].content
    assert "door open: True" in capsys.readouterr().out


def test_two_server_failures_are_retried_and_never_reach_the_model(level_5, capsys):
    model = ScriptedModel(bandoneon.ServerError("HTTP 503", status=503), bandoneon.ServerError("HTTP 503", status=503), *OPEN_THE_DOOR)
    assert level_5.main(model).stop == "end_turn"
    assert capsys.readouterr().out.count("model call failed") == 2
    assert all("503" not in m.content for r in model.requests for m in r.messages)


def test_the_temple_door_over_http_with_a_server_that_answers_503_twice(level_5, mock_llm: MockLLMServer):
    mock_llm.add(
        Fault(status=503),
        Fault(status=503),
        Reply(tool_calls=[("use", {"item": "key", "target": "door"})]),
        Reply(tool_calls=[("use", {"item": "oil_can", "target": "lock"})]),
        Reply(tool_calls=[("use", {"item": "key", "target": "door"})]),
        Reply(text="The temple door is open."),
    )
    result = level_5.main("openai-compatible:mock@" + mock_llm.base_url)
    assert (result.stop, result.text) == ("end_turn", "The temple door is open.")
    assert len(mock_llm.requests) == 6
    tool_messages = [m for m in mock_llm.requests[3].json["messages"] if m["role"] == "tool"]
    assert "rusted shut" in tool_messages[-1]["content"]


def test_a_model_stuck_on_the_same_wall_is_stopped(level_5, capsys):
    model = ScriptedModel(*(call("use", item="key", target="door") for _ in range(3)))
    result = level_5.main(model)
    assert (result.stop, result.ok) == ("error_streak", False)
    assert "No answer: the run stopped on error_streak" in capsys.readouterr().out


def test_what_nobody_can_fix_raises(level_5, capsys):
    with pytest.raises(bandoneon.AuthError):
        level_5.main(ScriptedModel(bandoneon.AuthError("HTTP 401 (check the API key)", status=401)))
    assert "The run failed" in capsys.readouterr().out
