"""Compaction over loopback HTTP: the window is learned from the server, never assumed."""

from __future__ import annotations

import json
import warnings

import bandoneon
import pytest
from bandoneon.testing import MockLLMServer, Reply
from bandoneon_compaction import Compaction, WindowUnknownWarning


@bandoneon.tool
def get_order(order: int) -> str:
    """Everything about one order: items, shipping, invoice."""
    return f"Order {order}: front wheel 700c, bent on arrival. " + "invoice line " * 300


def chat_bodies(server: MockLLMServer) -> list[dict]:
    return [r.json for r in server.requests if r.path == "/v1/chat/completions"]


def ask_three(server: MockLLMServer, agent: bandoneon.Agent) -> None:
    for order in (4471, 4472, 4473):
        server.add(Reply(tool_calls=[("get_order", {"order": order})]), Reply(text=f"Order {order} noted."))
        agent.run_sync(f"What is in order #{order}?")


@pytest.mark.parametrize("style", ["vllm", "llamacpp"])
def test_the_window_reported_by_the_server_drives_compaction(mock_llm, style):
    mock_llm.model = "bikes"
    mock_llm.model_info(context_window=2_000, style=style)
    agent = bandoneon.Agent(f"openai-compatible:bikes@{mock_llm.base_url}", tools=[get_order], plugins=[Compaction(keep_recent_turns=1)], context_files=False)
    events = []
    agent.on("compaction", events.append)
    ask_three(mock_llm, agent)
    last = chat_bodies(mock_llm)[-1]["messages"]
    tool_texts = [m["content"] for m in last if m["role"] == "tool"]
    assert [t.startswith("[Truncated to save context") for t in tool_texts] == [True, True, False]
    assert all(len(json.dumps(body)) < 4 * 2_000 for body in chat_bodies(mock_llm))
    assert events and events[-1].tokens_after <= 1_600
    mock_llm.assert_all_used()


def test_a_server_that_does_not_say_its_window_gets_the_whole_history_and_a_warning(mock_llm):
    agent = bandoneon.Agent(f"openai-compatible:bikes@{mock_llm.base_url}", tools=[get_order], plugins=[Compaction(keep_recent_turns=1)], context_files=False)
    with pytest.warns(WindowUnknownWarning, match="'bikes'"):
        ask_three(mock_llm, agent)
    last = chat_bodies(mock_llm)[-1]["messages"]
    assert all(m["content"].startswith("Order ") for m in last if m["role"] == "tool")


def test_the_unknown_window_warning_is_said_once_per_process_not_once_per_agent(mock_llm):
    with pytest.warns(WindowUnknownWarning) as caught:
        for _ in range(3):
            mock_llm.add(Reply(text="ok"))
            agent = bandoneon.Agent(f"openai-compatible:bikes@{mock_llm.base_url}", plugins=[Compaction()], context_files=False)
            assert agent.run_sync("hi").ok
    assert len([w for w in caught if issubclass(w.category, WindowUnknownWarning)]) == 1


def test_no_unknown_window_warning_for_a_hosted_model_the_table_knows(mock_llm, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    mock_llm.add(Reply(text="ok"))
    agent = bandoneon.Agent(f"openai:gpt-4o-mini@{mock_llm.base_url}", plugins=[Compaction()], context_files=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", WindowUnknownWarning)
        assert agent.run_sync("hi").ok
    assert [r.path for r in mock_llm.requests] == ["/v1/chat/completions"]
