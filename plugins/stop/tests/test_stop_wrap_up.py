"""Wrap-up: on a limit, one last call with tools off; the result still names the limit."""

from __future__ import annotations

from typing import ClassVar

import attrs
import bandoneon
import pytest
from bandoneon.testing import MockLLMServer, Reply, ScriptedModel, call, reply
from bandoneon_stop import DEFAULT_WRAP_UP_TEXT, LIMITS, StopRules


@bandoneon.tool
def search(query: str) -> str:
    """Search the catalog."""
    return f"order 4417 has {query}"


def wrap_agent(model, *, max_turns=2, system_prompt="You are the shop's assistant.", **options) -> bandoneon.Agent:
    rules = StopRules(**{"wrap_up_on": LIMITS, **options})
    return bandoneon.Agent(model, tools=[search], plugins=[rules], context_files=False, max_turns=max_turns, system_prompt=system_prompt)


def test_max_turns_wraps_up_with_a_text_but_still_reports_the_limit():
    model = ScriptedModel(call("search", query="a bell"), call("search", query="a horn"), "Order 4417 has a bell and a horn.")
    result = wrap_agent(model).run_sync("What is in order 4417?")
    assert (result.stop, result.ok, result.text) == ("max_turns", False, "Order 4417 has a bell and a horn.")
    with pytest.raises(bandoneon.NoAnswer, match="max_turns"):
        result.unwrap()
    assert result.messages[-1] == bandoneon.Message.assistant("Order 4417 has a bell and a horn.")


def test_the_wrap_up_call_offers_no_tools_and_asks_for_the_best_answer():
    model = ScriptedModel(call("search", query="a bell"), call("search", query="a horn"), "Best effort.")
    wrap_agent(model, permission_to_give_up=True).run_sync("What is in order 4417?")
    last, before = model.requests[-1], model.requests[-2]
    assert last.tools == () and before.tools != ()
    assert last.system_prompt == before.system_prompt  # the same prompt, plugin sections included
    assert "used all the turns" in last.messages[-1].content
    assert DEFAULT_WRAP_UP_TEXT in last.messages[-1].content
    assert last.messages[: len(before.messages)] == before.messages  # the whole working history
    assert [m.role for m in last.messages[len(before.messages) :]] == ["assistant", "tool", "user"]


def test_the_instruction_is_sent_but_not_kept_in_the_history():
    model = ScriptedModel(call("search", query="a bell"), call("search", query="a horn"), "Best effort.")
    agent = wrap_agent(model)
    agent.run_sync("What is in order 4417?")
    assert not any(DEFAULT_WRAP_UP_TEXT in m.content for m in agent.messages)


def test_a_budget_wraps_up_too():
    spend = reply("", call("search", query="x"), usage=bandoneon.Usage(900, 200, requests=1))
    model = ScriptedModel(spend, "What I found: order 4417.")
    result = wrap_agent(model, max_turns=10, max_tokens=1000).run_sync("Find it.")
    assert (result.stop, result.text) == ("budget", "What I found: order 4417.")
    assert "used its budget" in model.requests[-1].messages[-1].content


def test_without_wrap_up_a_limit_has_no_text_and_no_extra_call():
    model = ScriptedModel(call("search", query="a bell"), call("search", query="a horn"))
    agent = bandoneon.Agent(model, tools=[search], plugins=[StopRules()], context_files=False, max_turns=2)
    result = agent.run_sync("What is in order 4417?")
    assert (result.stop, result.text) == ("max_turns", None)
    model.assert_all_used()


def test_wrap_up_only_follows_the_limits_it_names():
    model = ScriptedModel(call("search", query="a bell"), call("search", query="a horn"))
    result = wrap_agent(model, wrap_up_on=["budget"]).run_sync("What is in order 4417?")
    assert (result.stop, result.text) == ("max_turns", None)
    model.assert_all_used()


def test_a_failed_wrap_up_call_keeps_the_limit_result():
    model = ScriptedModel(call("search", query="a bell"), call("search", query="a horn"), bandoneon.AuthError("HTTP 401", status=401))
    result = wrap_agent(model).run_sync("What is in order 4417?")
    assert (result.stop, result.text) == ("max_turns", None)
    assert len([m for m in result.messages if m.role == "tool"]) == 2


def test_tool_calls_in_a_wrap_up_reply_are_dropped_so_the_history_stays_valid():
    model = ScriptedModel(call("search", query="a bell"), call("search", query="a horn"), reply("Partial: a bell.", call("search", query="more")))
    agent = wrap_agent(model)
    result = agent.run_sync("What is in order 4417?")
    assert result.text == "Partial: a bell."
    assert agent.messages[-1].tool_calls == ()


def test_an_empty_wrap_up_reply_adds_nothing():
    model = ScriptedModel(call("search", query="a bell"), call("search", query="a horn"), "   ")
    agent = wrap_agent(model)
    result = agent.run_sync("What is in order 4417?")
    assert result.text is None and agent.messages[-1].role == "tool"


def test_an_empty_wrap_up_instruction_is_a_config_error():
    with pytest.raises(bandoneon.ConfigError, match="wrap_up_text"):
        StopRules(wrap_up_on=["max_turns"], wrap_up_text=" ")


def test_wrap_up_over_http_sends_no_tools(mock_llm: MockLLMServer):
    mock_llm.add(Reply(tool_calls=[("search", {"query": "a bell"})]), Reply(tool_calls=[("search", {"query": "a horn"})]), Reply(text="A bell and a horn."))
    result = wrap_agent("openai-compatible:mock@" + mock_llm.base_url).run_sync("What is in order 4417?")
    assert (result.stop, result.text) == ("max_turns", "A bell and a horn.")
    body = mock_llm.requests[-1].json
    assert "tools" not in body
    assert body["messages"][0]["role"] == "system"
    assert DEFAULT_WRAP_UP_TEXT in body["messages"][-1]["content"]


async def test_a_run_timeout_wraps_up_too():
    import asyncio

    @bandoneon.tool
    async def slow(query: str) -> str:
        """Search very slowly."""
        await asyncio.sleep(5)
        return "too late"

    model = ScriptedModel(call("slow", query="x"), "Nothing found in time.")
    agent = bandoneon.Agent(model, tools=[slow], plugins=[StopRules(wrap_up_on=LIMITS)], context_files=False, run_timeout=0.05)
    result = await agent.run("Find it.")
    assert (result.stop, result.text) == ("timeout", "Nothing found in time.")
    assert agent.messages[-2].is_error  # the cut tool call still has its result


@attrs.define
class SideCaller(bandoneon.Plugin):
    """Another plugin making its own model call after each turn (a classifier, a summariser)."""

    name: ClassVar[str] = "side_caller"

    @bandoneon.hookimpl
    async def after_turn(self, run: bandoneon.RunContext) -> None:
        side = bandoneon.ModelRequest(messages=(bandoneon.Message.user("Classify the last turn."),), system_prompt="You are a classifier.", settings={"max_tokens": 5})
        await run.call_model(side)


def test_a_side_call_by_another_plugin_does_not_become_the_wrap_up_request():
    model = ScriptedModel(call("search", query="a bell"), "harmless", "Order 4417 has a bell.")
    agent = bandoneon.Agent(model, tools=[search], plugins=[StopRules(wrap_up_on=LIMITS), SideCaller()], context_files=False, max_turns=1, system_prompt="You are the shop's assistant.")
    result = agent.run_sync("What is in order 4417?")
    assert (result.stop, result.text) == ("max_turns", "Order 4417 has a bell.")
    loop_request, side_request, wrap_up_request = model.requests
    assert side_request.system_prompt == "You are a classifier."
    assert wrap_up_request.system_prompt == loop_request.system_prompt == "You are the shop's assistant."
    assert wrap_up_request.settings == loop_request.settings
