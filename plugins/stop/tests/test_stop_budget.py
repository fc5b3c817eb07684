"""Budgets per run (tokens, cost when priced, wall time): a stated limit, checked before spending."""

from __future__ import annotations

import asyncio

import bandoneon
import pytest
from bandoneon.testing import MockLLMServer, Reply, ScriptedModel, call, reply
from bandoneon_stop import BudgetWarning, StopRules


@bandoneon.tool
def search(query: str) -> str:
    """Search the catalog."""
    return f"nothing for {query}"


@bandoneon.tool
async def slow_search(query: str) -> str:
    """Search the catalog, slowly."""
    await asyncio.sleep(0.02)
    return f"nothing for {query}"


def spending(tokens_in: int, tokens_out: int = 0, cost: float | None = None) -> bandoneon.ModelReply:
    return reply("", call("search", query="x"), usage=bandoneon.Usage(tokens_in, tokens_out, requests=1, cost=cost))


def budget_agent(model, tools=(search,), **options) -> bandoneon.Agent:
    return bandoneon.Agent(model, tools=list(tools), plugins=[StopRules(**options)], context_files=False)


def test_a_token_budget_ends_the_run_before_the_next_model_call():
    model = ScriptedModel(spending(600), spending(600), "never asked")
    result = budget_agent(model, max_tokens=1000).run_sync("Find it.")
    assert (result.stop, result.ok) == ("budget", False)
    assert "1200 tokens" in result.detail and "max_tokens=1000" in result.detail
    assert len(model.requests) == 2
    assert result.usage.total_tokens == 1200


def test_the_budget_is_checked_before_a_turn_even_when_max_turns_would_also_end_it():
    model = ScriptedModel(spending(2000))
    agent = bandoneon.Agent(model, tools=[search], plugins=[StopRules(max_tokens=1000)], context_files=False, max_turns=5)
    assert agent.run_sync("Find it.").stop == "budget"


def test_a_budget_set_on_the_instance_before_the_agent_is_built_is_kept():
    rules = StopRules()
    rules.max_tokens = 1000  # the hooks a budget needs are chosen when the agent is built
    model = ScriptedModel(spending(600), spending(600), "never asked")
    result = bandoneon.Agent(model, tools=[search], plugins=[rules], context_files=False).run_sync("Find it.")
    assert (result.stop, len(model.requests)) == ("budget", 2)


def test_a_cost_budget_uses_the_providers_price():
    model = ScriptedModel(spending(10, cost=0.02), spending(10, cost=0.02), "never asked")
    result = budget_agent(model, max_cost=0.03).run_sync("Find it.")
    assert result.stop == "budget" and "max_cost=0.03" in result.detail
    assert len(model.requests) == 2


def test_a_cost_budget_can_price_the_tokens_itself():
    model = ScriptedModel(spending(100_000, 10_000), spending(100_000, 10_000), "never asked")
    # 100k in at $1/M + 10k out at $10/M = $0.20 per call
    result = budget_agent(model, max_cost=0.3, price_per_million_tokens=(1.0, 10.0)).run_sync("Find it.")
    assert result.stop == "budget" and "0.4" in result.detail


def test_an_unpriced_cost_budget_warns_that_it_cannot_be_enforced():
    model = ScriptedModel(spending(10), spending(10), "Not found.")
    with pytest.warns(BudgetWarning, match="price_per_million_tokens"):
        result = budget_agent(model, max_cost=0.01).run_sync("Find it.")
    assert result.stop == "end_turn"


def test_a_wall_time_budget_stops_between_turns():
    model = ScriptedModel(call("slow_search", query="x"), "never asked")
    result = budget_agent(model, tools=[slow_search], max_seconds=0.01).run_sync("Find it.")
    assert result.stop == "budget" and "max_seconds=0.01" in result.detail
    assert len(model.requests) == 1
    assert result.messages[-1].role == "tool"  # the work done is kept


def test_a_run_within_budget_ends_normally():
    model = ScriptedModel(spending(10), "Found nothing.")
    result = budget_agent(model, max_tokens=1000, max_seconds=60).run_sync("Find it.")
    assert (result.stop, result.text) == ("end_turn", "Found nothing.")


def test_a_budget_is_per_run():
    model = ScriptedModel(spending(600), "First.", spending(600), "Second.")
    agent = budget_agent(model, max_tokens=1000)
    assert agent.run_sync("One.").stop == "end_turn"
    assert agent.run_sync("Two.").stop == "end_turn"


@pytest.mark.parametrize("option", ["max_tokens", "max_cost", "max_seconds", "max_errors_in_a_row"])
@pytest.mark.parametrize("value", [0, -1])
def test_a_budget_of_zero_or_less_is_a_config_error(option, value):
    with pytest.raises(bandoneon.ConfigError, match=option):
        StopRules(**{option: value})


@pytest.mark.parametrize("option", ["max_tokens", "max_cost", "max_seconds", "max_errors_in_a_row"])
@pytest.mark.parametrize("value", [0, -5])
def test_a_budget_of_zero_or_less_by_name_is_a_config_error_with_the_plugins_message(option, value):
    with pytest.raises(bandoneon.ConfigError, match=rf"options of plugin 'stop': {option} must be (a whole number of at least 1|above 0).*, got -?\d"):
        bandoneon.Agent(ScriptedModel(), plugins={"stop": {option: value}}, context_files=False)


def test_a_budget_of_zero_in_bandoneon_toml_is_a_config_error_naming_the_file(tmp_path):
    (tmp_path / "bandoneon.toml").write_text("[plugins.stop]\nmax_tokens = 0\n")
    with pytest.raises(bandoneon.ConfigError, match=r"bandoneon\.toml: options of plugin 'stop': max_tokens must be a whole number of at least 1, got 0"):
        bandoneon.Agent(ScriptedModel(), config=tmp_path / "bandoneon.toml", context_files=False)


def test_a_budget_of_the_wrong_type_is_a_config_error():
    with pytest.raises(bandoneon.ConfigError, match="max_tokens"):
        bandoneon.Agent(ScriptedModel(), plugins={"stop": {"max_tokens": "1000"}}, context_files=False)


def test_an_unknown_option_is_a_config_error():
    with pytest.raises(bandoneon.ConfigError, match="max_token"):
        bandoneon.Agent(ScriptedModel(), plugins={"stop": {"max_token": 1000}}, context_files=False)


def test_a_negative_price_is_a_config_error():
    with pytest.raises(bandoneon.ConfigError, match="price_per_million_tokens"):
        StopRules(max_cost=1.0, price_per_million_tokens=(-1.0, 2.0))


def test_a_token_budget_over_http(mock_llm: MockLLMServer):
    mock_llm.add(Reply(tool_calls=[("search", {"query": "bell"})], usage=(700, 20)), Reply(tool_calls=[("search", {"query": "horn"})], usage=(700, 20)))
    agent = budget_agent("openai-compatible:mock@" + mock_llm.base_url, max_tokens=1000)
    result = agent.run_sync("Find a bell.")
    assert result.stop == "budget" and "1440 tokens" in result.detail
    assert len(mock_llm.requests) == 2


@pytest.mark.pack_free  # a policy pack implements these hooks too
@pytest.mark.parametrize(
    "options, called",
    [
        ({}, {"should_stop", "after_tool_execution"}),
        ({"max_tokens": 100}, {"should_stop", "after_tool_execution", "before_turn"}),
        ({"no_progress_after": 0, "permission_to_give_up": True}, {"should_stop", "system_prompt_sections"}),
        ({"wrap_up_on": ("max_turns",), "stop_on": ("search",)}, {"should_stop", "after_tool_execution", "wrap_up", "agent_created"}),
    ],
)
def test_a_run_calls_only_the_hooks_its_options_need(options, called):
    agent = bandoneon.Agent(ScriptedModel("done"), tools=[search], plugins=[StopRules(**options)], context_files=False)
    hooks = ("before_turn", "system_prompt_sections", "wrap_up", "agent_created", "after_tool_execution", "should_stop")
    assert {hook for hook in hooks if agent.hooks.implements(getattr(bandoneon.hookspecs, hook))} == called
