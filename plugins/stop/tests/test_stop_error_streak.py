"""Error streaks (level 5's counter): a model stuck on the same wall is stopped, stated as a limit."""

from __future__ import annotations

import bandoneon
from bandoneon.testing import MockLLMServer, Reply, ScriptedModel, call
from bandoneon_stop import StopRules


@bandoneon.tool
def use(item: str, target: str) -> str:
    """Use an inventory item with something in the room."""
    if item == "oil_can":
        return "You oil the lock."
    raise bandoneon.ToolError(f"Nothing happens when you use {item} with {target}.")


def streak_agent(model, limit=3, **kwargs) -> bandoneon.Agent:
    return bandoneon.Agent(model, tools=[use], plugins=[StopRules(max_errors_in_a_row=limit)], context_files=False, **kwargs)


def test_errors_in_a_row_end_the_run_with_the_last_errors():
    model = ScriptedModel(*(call("use", item="key", target=f"wall {n}") for n in range(3)))
    result = streak_agent(model).run_sync("Open the door.")
    assert (result.stop, result.ok, result.text) == ("error_streak", False, None)
    assert "3 tool errors in a row" in result.detail
    assert "wall 1" in result.detail and "wall 2" in result.detail
    assert result.turns == 3


def test_the_work_before_the_streak_is_kept_and_the_history_stays_valid():
    model = ScriptedModel(*(call("use", item="key", target="door") for _ in range(2)), "Done.")
    agent = streak_agent(model, limit=2)
    result = agent.run_sync("Open the door.")
    assert result.stop == "error_streak"
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert agent.run_sync("Try again.").stop == "end_turn"


def test_a_success_resets_the_count():
    model = ScriptedModel(
        call("use", item="key", target="door"),
        call("use", item="key", target="door"),
        call("use", item="oil_can", target="lock"),
        call("use", item="key", target="door"),
        call("use", item="key", target="door"),
        "I give up.",
    )
    result = streak_agent(model).run_sync("Open the door.")
    assert result.stop == "end_turn"


def test_parallel_errors_of_one_turn_each_count():
    model = ScriptedModel([call("use", item="key", target="a"), call("use", item="key", target="b"), call("use", item="key", target="c")])
    result = streak_agent(model).run_sync("Open the door.")
    assert (result.stop, result.turns) == ("error_streak", 1)


def test_unknown_tools_and_broken_arguments_count_as_errors():
    model = ScriptedModel(call("kick", target="door"), call("use", "{not json"))
    assert streak_agent(model, limit=2).run_sync("Open the door.").stop == "error_streak"


def test_the_streak_is_counted_per_run():
    model = ScriptedModel(call("use", item="key", target="door"), "Stuck.", call("use", item="key", target="door"), "Stuck again.")
    agent = streak_agent(model, limit=2)
    assert agent.run_sync("Open the door.").stop == "end_turn"
    assert agent.run_sync("Open the door.").stop == "end_turn"


def test_without_a_limit_errors_go_on_until_max_turns():
    model = ScriptedModel(*(call("use", item="key", target=f"door {n}") for n in range(4)))
    agent = bandoneon.Agent(model, tools=[use], plugins=[StopRules()], context_files=False, max_turns=4)
    assert agent.run_sync("Open the door.").stop == "max_turns"


def test_an_error_streak_over_http(mock_llm: MockLLMServer):
    mock_llm.add(*(Reply(tool_calls=[("use", {"item": "key", "target": "door"})]) for _ in range(2)))
    agent = bandoneon.Agent("openai-compatible:mock@" + mock_llm.base_url, tools=[use], plugins={"stop": {"max_errors_in_a_row": 2}}, context_files=False)
    result = agent.run_sync("Open the door.")
    assert (result.stop, result.ok) == ("error_streak", False)
    assert "Nothing happens when you use key with door" in result.detail
    tool_messages = [m for m in mock_llm.requests[1].json["messages"] if m["role"] == "tool"]
    assert "Nothing happens" in tool_messages[-1]["content"]  # the model read the first error
    mock_llm.assert_all_used()
