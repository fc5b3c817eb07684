"""``Agent.remove_tool``: the built agent stops offering a tool, and the checks see the new set."""

from __future__ import annotations

import bandoneon
import pytest
from bandoneon import hookimpl
from bandoneon.testing import ScriptedModel, call


@bandoneon.tool
def weigh(grams: int) -> str:
    """Weigh a bag of coffee."""
    return f"{grams} g"


@bandoneon.tool
def grind(grams: int) -> str:
    """Grind coffee."""
    return f"ground {grams} g"


class SeesToolSets:
    def __init__(self):
        self.sets: list[list[str]] = []

    @hookimpl
    def check_tools(self, tools):
        self.sets.append(sorted(tools))


def test_a_removed_tool_is_not_offered_and_a_call_to_it_is_an_unknown_tool():
    watcher = SeesToolSets()
    model = ScriptedModel(call("grind", grams=10), "Done.")
    agent = bandoneon.Agent(model, tools=[weigh, grind], plugins=[watcher], context_files=False)
    assert agent.remove_tool("grind").name == "grind"
    assert watcher.sets[-1] == ["weigh"]
    result = agent.run_sync("Grind 10 g.")
    assert [spec.name for spec in model.requests[0].tools] == ["weigh"]
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert tool_message.is_error and "grind" in tool_message.content
    with pytest.raises(KeyError):
        agent.remove_tool("grind")
