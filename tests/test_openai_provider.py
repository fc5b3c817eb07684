"""The OpenAI-compatible provider and the loop over real loopback HTTP (the testing kit's server)."""

from __future__ import annotations

import json
import socket

import bandoneon
import pytest
from bandoneon import tool
from bandoneon.testing import Fault, MockLLMServer, Reply


@tool
def get_forecast(city: str, date: str) -> str:
    """Daily forecast for one city. date is YYYY-MM-DD."""
    return f"{city} {date}: rain 80%"


def agent_for(server: MockLLMServer, **kwargs) -> bandoneon.Agent:
    kwargs.setdefault("plugins", [])
    kwargs.setdefault("context_files", False)
    return bandoneon.Agent(f"openai-compatible:mock@{server.base_url}", tools=[get_forecast], **kwargs)


def test_a_tool_round_trip_over_http(mock_llm):
    mock_llm.add(Reply(tool_calls=[("get_forecast", {"city": "Paris", "date": "2026-09-26"})]), Reply(text="Rain."))
    result = agent_for(mock_llm).run_sync("Rain in Paris?")
    assert result.text == "Rain." and result.turns == 2
    second = mock_llm.requests[1].json
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "Paris 2026-09-26: rain 80%"}


def test_tool_choice_auto_is_sent_whenever_tools_are_offered(mock_llm):
    """llama.cpp's server ignores tools unless tool_choice is sent."""
    mock_llm.add(Reply(text="hi"))
    agent_for(mock_llm).run_sync("hi")
    body = mock_llm.requests[0].json
    assert body["tool_choice"] == "auto" and body["tools"][0]["function"]["name"] == "get_forecast"


def test_an_assistant_message_with_only_tool_calls_is_sent_with_empty_string_content(mock_llm):
    """llama.cpp answers 422 to content null and 500 to a missing content."""
    mock_llm.add(Reply(tool_calls=[("get_forecast", {"city": "A", "date": "2026-01-01"})]), Reply(text="ok"))
    agent_for(mock_llm).run_sync("go")
    assistant = mock_llm.requests[1].json["messages"][1]
    assert assistant["role"] == "assistant" and assistant["content"] == ""


def test_usage_includes_cached_tokens(mock_llm):
    mock_llm.add(Reply(text="hi", usage=(100, 7), cached_tokens=60))
    result = agent_for(mock_llm).run_sync("hi")
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.cached_input_tokens) == (100, 7, 60)


async def test_streaming_delivers_text_deltas_and_reassembles_tool_calls(mock_llm):
    mock_llm.add(Reply(tool_calls=[("get_forecast", {"city": "Buenos Aires", "date": "2026-09-26"})]), Reply(text="It will rain a lot tomorrow."))
    agent = agent_for(mock_llm)
    deltas, arguments = [], []
    async for event in agent.stream("rain?"):
        if event.name == "text_delta":
            deltas.append(event.text)
        elif event.name == "tool_call_delta":
            arguments.append(event.arguments_delta)
    assert "".join(deltas) == "It will rain a lot tomorrow." and len(deltas) > 2
    assert "".join(arguments) == '{"city": "Buenos Aires", "date": "2026-09-26"}'
    assert mock_llm.requests[0].json["stream"] is True
    assert agent.messages[2].content == "Buenos Aires 2026-09-26: rain 80%"


async def test_an_empty_stream_is_asked_again_without_streaming(mock_llm):
    """llama.cpp streams nothing when tools are offered with tool_choice auto."""
    calls = iter([Fault(status=200, body=b"data: [DONE]\n\n", headers={"content-type": "text/event-stream"}), Reply(text="plain")])
    mock_llm.respond_with(lambda request: next(calls))
    texts = [e.text async for e in agent_for(mock_llm).stream("hi") if e.name == "text_delta"]
    assert [r.json.get("stream", False) for r in mock_llm.requests] == [True, False]
    assert texts == []


async def test_a_stream_cut_in_the_middle_is_reported_not_replayed(mock_llm):
    mock_llm.add(Reply(text="one two three four five six", cut_stream_after=3))
    agent = agent_for(mock_llm)
    with pytest.raises(bandoneon.StreamInterrupted) as caught:
        async for _ in agent.stream("count"):
            pass
    assert caught.value.partial_text
    assert len(mock_llm.requests) == 1
    assert [m.role for m in agent.messages] == ["user"]


def test_401_raises_auth_error_and_the_history_stays_usable(mock_llm):
    mock_llm.add(Fault(status=401, body='{"error": {"message": "bad key"}}'), Reply(text="ok now"))
    agent = agent_for(mock_llm)
    with pytest.raises(bandoneon.AuthError, match="401.*bad key"):
        agent.run_sync("hi")
    assert agent.run_sync("again").text == "ok now"


def test_429_is_rate_limited_with_retry_after(mock_llm):
    mock_llm.add(Fault(status=429, headers={"Retry-After": "7"}))
    with pytest.raises(bandoneon.RateLimited) as caught:
        agent_for(mock_llm).run_sync("hi")
    assert caught.value.retry_after == 7 and caught.value.retryable


@pytest.mark.parametrize("status, error", [(500, bandoneon.ServerError), (503, bandoneon.ServerError), (400, bandoneon.BadRequest), (404, bandoneon.BadRequest), (422, bandoneon.BadRequest), (403, bandoneon.AuthError)])
def test_http_errors_are_classified(mock_llm, status, error):
    mock_llm.add(Fault(status=status))
    with pytest.raises(error) as caught:
        agent_for(mock_llm).run_sync("hi")
    assert caught.value.status == status
    assert caught.value.retryable == (status >= 500)


def test_a_reply_that_is_not_json_is_a_bad_response(mock_llm):
    mock_llm.add(Fault(status=200, body="<html>proxy error</html>"))
    with pytest.raises(bandoneon.BadResponse, match="not JSON.*proxy error"):
        agent_for(mock_llm).run_sync("hi")


def test_an_empty_choices_list_is_a_bad_response(mock_llm):
    mock_llm.add(Fault(status=200, body='{"choices": []}'))
    with pytest.raises(bandoneon.BadResponse, match="no choices"):
        agent_for(mock_llm).run_sync("hi")


def test_a_dropped_connection_is_a_network_error(mock_llm):
    mock_llm.add(Fault(drop=True))
    with pytest.raises(bandoneon.NetworkError):
        agent_for(mock_llm).run_sync("hi")


def test_an_unreachable_server_is_a_network_error_naming_the_address():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    agent = bandoneon.Agent(f"openai-compatible:m@http://127.0.0.1:{port}/v1", plugins=[], context_files=False)
    with pytest.raises(bandoneon.NetworkError, match=f"127.0.0.1:{port}"):
        agent.run_sync("hi")
    assert [m.role for m in agent.messages] == ["user"]


@pytest.mark.parametrize("style", ["vllm", "llamacpp"])
async def test_the_context_window_is_learned_from_the_server(mock_llm, style):
    mock_llm.model_info(context_window=4096, style=style)
    mock_llm.model = "mock"
    assert await agent_for(mock_llm).context_window() == 4096


async def test_the_context_window_is_none_when_nobody_says_it(mock_llm):
    assert await agent_for(mock_llm).context_window() is None


async def test_a_configured_context_window_wins(mock_llm):
    mock_llm.model_info(context_window=4096)
    assert await agent_for(mock_llm, context_window=8000).context_window() == 8000


def test_the_api_key_is_sent_as_a_bearer_token(mock_llm, monkeypatch):
    monkeypatch.setenv("BANDONEON_API_KEY", "sk-test")
    mock_llm.add(Reply(text="hi"))
    agent_for(mock_llm).run_sync("hi")
    assert mock_llm.requests[0].headers["authorization"] == "Bearer sk-test"


def test_settings_are_sent_with_the_request(mock_llm):
    mock_llm.add(Reply(text="hi"))
    agent_for(mock_llm, settings={"temperature": 0.2, "max_tokens": 50}).run_sync("hi")
    body = mock_llm.requests[0].json
    assert (body["temperature"], body["max_tokens"]) == (0.2, 50)


@pytest.mark.parametrize(
    ("usage", "counted"),
    [({"prompt_tokens": 12.0, "completion_tokens": 3.0}, (12, 3)), ({"prompt_tokens": 12, "completion_tokens": 3.5}, None), ({"prompt_tokens": -1}, None), ({"prompt_tokens": "12"}, None)],
)
def test_a_whole_number_written_as_a_float_is_a_token_count_and_anything_else_a_bad_response(mock_llm, usage, counted):
    """Some proxies write counts as 12.0: the answer is not lost over bookkeeping; a count that
    is no whole number at all is still a clear BadResponse."""
    body = {"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}], "usage": usage}
    mock_llm.add(Fault(status=200, body=json.dumps(body)))
    agent = agent_for(mock_llm)
    if counted is None:
        with pytest.raises(bandoneon.BadResponse, match="not a token count"):
            agent.run_sync("hello")
        return
    result = agent.run_sync("hello")
    assert result.text == "hi" and (result.usage.input_tokens, result.usage.output_tokens) == counted
