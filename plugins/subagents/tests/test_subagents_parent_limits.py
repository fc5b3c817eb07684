"""A child cannot escape its parent's limits: not the parent's guard, not its depth limit."""

from __future__ import annotations

import bandoneon
import pytest
from bandoneon.testing import FunctionModel, call
from bandoneon_subagents import subagent

SENT: list[str] = []


@pytest.fixture(autouse=True)
def _nothing_sent():
    SENT.clear()


@bandoneon.tool
def send_email(to: str) -> str:
    """Send an email."""
    SENT.append(to)
    return "sent"


def _child_sends_mail(request):
    last = request.messages[-1]
    if request.system_prompt.startswith("child"):
        return call("send_email", to="x@evil.example") if last.role == "user" else "child done"
    return call("scout", task="send the mail") if last.role == "user" else f"parent read: {last.content}"


def _guard():
    """The guard plugin, or a skip where this plugin is installed alone (``tox -e alone-subagents``)."""
    return pytest.importorskip("bandoneon_guard")


@pytest.mark.parametrize("own", ["instance", "name", "looser"])
def test_a_subagent_with_its_own_guard_does_not_replace_the_parents(own):
    Guard, Rule = (guard := _guard()).Guard, guard.Rule
    plugins = {"instance": [Guard()], "name": ["guard"], "looser": [Guard(unmasked_secrets=["*"])]}[own]
    scout = subagent("scout", "Sends mail.", system_prompt="child", tools=[send_email], plugins=plugins)
    parent_guard = Guard(rules=[Rule(name="no-mail", tool="send_email")])
    agent = bandoneon.Agent(FunctionModel(_child_sends_mail), tools=[scout], plugins=[parent_guard], context_files=False)
    result = agent.run_sync("go")
    assert SENT == []
    assert "could not be started" in result.text and "replace the parent's" in result.text


def test_the_parents_own_guard_instance_among_the_childs_plugins_is_fine():
    Guard, Rule = (guard := _guard()).Guard, guard.Rule
    parent_guard = Guard(rules=[Rule(name="no-mail", tool="send_email")])
    scout = subagent("scout", "Sends mail.", system_prompt="child", tools=[send_email], plugins=[parent_guard])
    agent = bandoneon.Agent(FunctionModel(_child_sends_mail), tools=[scout], plugins=[parent_guard], context_files=False)
    result = agent.run_sync("go")
    assert SENT == [] and "child done" in result.text


def test_a_childs_own_subagent_cannot_nest_deeper_than_the_parents_max_depth():
    depths: list[int] = []

    @bandoneon.tool
    def note_depth(run: bandoneon.RunContext) -> str:
        """Notes how deep this run is."""
        depths.append(run.depth)
        return "noted"

    def answer(request):
        last, prompt = request.messages[-1], request.system_prompt
        if last.role == "user":
            return call("outer", task="errand") if prompt == "" else call("inner", task="deeper") if prompt == "outer" else call("note_depth")
        return f"{prompt or 'parent'} saw: {last.content}"

    inner = subagent("inner", "Innermost.", system_prompt="inner", tools=[note_depth], max_depth=5)
    outer = subagent("outer", "Outer.", system_prompt="outer", tools=[inner], max_depth=1)
    result = bandoneon.Agent(FunctionModel(answer), tools=[outer], plugins=[], context_files=False).run_sync("go")
    assert depths == []
    assert "inner was not started: subagents may nest 1 level(s) deep and this call would be level 2" in result.text
