"""Streaming: a stream that fails before any text is retried; one cut mid-way is never replayed."""

from __future__ import annotations

import bandoneon
import pytest
from bandoneon.testing import Fault, MockLLMServer, Reply
from bandoneon_retry import Backoff


def streaming_agent(server: MockLLMServer) -> tuple[bandoneon.Agent, list[str]]:
    agent = bandoneon.Agent("openai-compatible:mock@" + server.base_url, plugins=[Backoff(base_delay=0.001, max_delay=0.01)], context_files=False)
    shown: list[str] = []
    agent.on("text_delta", lambda event: shown.append(event.text))
    return agent, shown


def test_a_stream_that_fails_before_any_text_is_retried(mock_llm):
    mock_llm.add(Fault(status=503), Reply(text="the door swings open"))
    agent, shown = streaming_agent(mock_llm)
    assert agent.run_sync("Open the door.").text == "the door swings open"
    assert "".join(shown) == "the door swings open"  # shown once, not twice
    assert all(r.json["stream"] is True for r in mock_llm.requests)


def test_an_error_event_before_any_text_is_retried(mock_llm):
    mock_llm.add(Fault(stream_error="server_error"), Reply(text="ok then"))
    agent, shown = streaming_agent(mock_llm)
    assert agent.run_sync("hi").text == "ok then"
    assert len(mock_llm.requests) == 2


def test_a_stream_cut_mid_way_is_not_replayed_and_the_caller_is_told(mock_llm):
    mock_llm.add(Reply(text="the key turns slowly and then", cut_stream_after=4), Reply(text="second run works"))
    agent, shown = streaming_agent(mock_llm)
    with pytest.raises(bandoneon.StreamInterrupted) as caught:
        agent.run_sync("Open the door.")
    assert shown and caught.value.partial_text == "".join(shown)
    assert len(mock_llm.requests) == 1
    assert agent.run_sync("Try again.").text == "second run works"


async def test_agent_stream_reports_a_mid_way_failure_instead_of_replaying(mock_llm):
    mock_llm.add(Reply(text="the key turns slowly and then", cut_stream_after=4))
    agent = bandoneon.Agent("openai-compatible:mock@" + mock_llm.base_url, plugins=[Backoff(base_delay=0.001)], context_files=False)
    names = []
    with pytest.raises(bandoneon.StreamInterrupted):
        async for event in agent.stream("Open the door."):
            names.append(event.name)
    assert "text_delta" in names and "provider_retry" not in names
    assert names[-1] == "run_end"
    assert len(mock_llm.requests) == 1
