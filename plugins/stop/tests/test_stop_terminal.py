"""Terminal tools, the warp pipe of level 4: the run ends right after one runs without error."""

from __future__ import annotations

from typing import Literal

import bandoneon
import pytest
from bandoneon.testing import MockLLMServer, Reply, ScriptedModel, call
from bandoneon_stop import StopRules


@bandoneon.tool
def search_blocks(area: str) -> str:
    """Search the ? blocks in one area of the level."""
    return "block 3 hides a star" if area == "sky" else "nothing here"


@bandoneon.tool(terminal=True)
def mark_star(item: Literal["star"], block: int) -> str:
    """Put a marker on the level map where the star is."""
    if block > 10:
        raise bandoneon.ToolError(f"There is no block {block}: the level has blocks 1 to 10.")
    return f"marker on block {block}"


@bandoneon.tool
def mark_star_plain(item: Literal["star"], block: int) -> str:
    """The same tool without the terminal flag, to be named in stop_on."""
    return f"marker on block {block}"


def agent_with(model, *tools, plugins=None, **kwargs) -> bandoneon.Agent:
    return bandoneon.Agent(model, tools=list(tools), plugins=plugins if plugins is not None else [StopRules()], context_files=False, **kwargs)


def test_terminal_tool_ends_the_run_with_its_validated_input():
    model = ScriptedModel(call("search_blocks", area="sky"), call("mark_star", item="star", block=3))
    result = agent_with(model, search_blocks, mark_star).run_sync("Is there a hidden star?")
    assert (result.stop, result.ok, result.answer) == ("terminal_tool", True, {"item": "star", "block": 3})
    assert result.unwrap() == {"item": "star", "block": 3}
    assert len(model.requests) == 2  # no extra call just to say "done"


def test_terminal_flag_works_in_an_agent_built_with_the_default_plugins():
    model = ScriptedModel(call("mark_star", item="star", block=3))
    agent = bandoneon.Agent(model, tools=[mark_star], context_files=False)
    assert isinstance(agent.plugin("stop"), StopRules)
    assert agent.run_sync("Where is the star?").stop == "terminal_tool"


def test_without_the_plugin_the_terminal_flag_does_not_stop_the_loop():
    model = ScriptedModel(call("mark_star", item="star", block=3), "Marked block 3.")
    result = agent_with(model, mark_star, plugins=[]).run_sync("Where is the star?")
    assert (result.stop, result.text) == ("end_turn", "Marked block 3.")


def test_stop_on_makes_a_tool_terminal_by_name():
    model = ScriptedModel(call("mark_star_plain", item="star", block=5))
    result = agent_with(model, mark_star_plain, plugins=[StopRules(stop_on=["mark_star_plain"])]).run_sync("Where?")
    assert (result.stop, result.answer) == ("terminal_tool", {"item": "star", "block": 5})


def test_stop_on_by_name_with_options():
    model = ScriptedModel(call("mark_star_plain", item="star", block=5))
    agent = agent_with(model, mark_star_plain, plugins={"stop": {"stop_on": ["mark_star_plain"]}})
    assert agent.run_sync("Where?").stop == "terminal_tool"


def test_a_terminal_tool_that_fails_sends_the_error_back_and_the_loop_goes_on():
    model = ScriptedModel(call("mark_star", item="star", block=42), call("mark_star", item="star", block=4))
    result = agent_with(model, mark_star).run_sync("Where is the star?")
    assert (result.stop, result.answer) == ("terminal_tool", {"item": "star", "block": 4})
    error = model.requests[1].messages[-1]
    assert error.is_error and "no block 42" in error.content


def test_a_terminal_tool_with_an_invalid_answer_gets_a_schema_error_and_the_loop_goes_on():
    model = ScriptedModel(call("mark_star", item="coin", block="three"), call("mark_star", item="star", block=3))
    result = agent_with(model, mark_star).run_sync("Where is the star?")
    assert result.answer == {"item": "star", "block": 3}
    error = model.requests[1].messages[-1]
    assert error.is_error and "item" in error.content and "block" in error.content
    assert "Traceback" not in error.content


def test_the_first_successful_terminal_call_of_a_turn_is_the_answer():
    model = ScriptedModel([call("search_blocks", area="sky"), call("mark_star", item="star", block=99), call("mark_star", item="star", block=7)])
    result = agent_with(model, search_blocks, mark_star).run_sync("Where?")
    assert result.answer == {"item": "star", "block": 7}
    assert all(m.tool_call_id for m in result.messages if m.role == "tool")


def test_stop_on_a_name_the_agent_has_no_tool_for_is_a_config_error():
    with pytest.raises(bandoneon.ConfigError, match="mark_starr"):
        agent_with(ScriptedModel(), mark_star_plain, plugins=[StopRules(stop_on=["mark_starr"])])


def test_the_answer_exit_is_reported_by_run_end():
    model = ScriptedModel(call("mark_star", item="star", block=3))
    agent = agent_with(model, mark_star)
    ends = []
    agent.on("run_end", ends.append)
    agent.run_sync("Where?")
    assert [e.reason for e in ends] == ["terminal_tool"]


def test_terminal_tool_over_http(mock_llm: MockLLMServer):
    mock_llm.add(Reply(tool_calls=[("search_blocks", {"area": "sky"})]), Reply(tool_calls=[("mark_star", {"item": "star", "block": 3})]))
    agent = agent_with("openai-compatible:mock@" + mock_llm.base_url, search_blocks, mark_star)
    result = agent.run_sync("Is there a hidden star?")
    assert (result.stop, result.answer) == ("terminal_tool", {"item": "star", "block": 3})
    assert len(mock_llm.requests) == 2
    mock_llm.assert_all_used()


def test_the_plugin_is_discovered_through_its_entry_point():
    assert bandoneon.load_plugin("stop") is StopRules
