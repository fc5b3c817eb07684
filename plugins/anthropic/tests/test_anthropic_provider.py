"""bandoneon-anthropic against the testing kit's server speaking the Messages API."""

from __future__ import annotations

import json
from typing import Annotated, ClassVar

import attrs
import bandoneon
import pytest
from bandoneon.testing import Fault, MockLLMServer, Reply
from bandoneon_anthropic import AnthropicProvider


@bandoneon.tool
def get_forecast(city: Annotated[str, "the city"]) -> str:
    """The weather forecast for a city."""
    return f"Rain in {city}"


@attrs.define
class RetryAtOnce(bandoneon.Plugin):
    """What the retry plugin does, minus the waiting: retry every retryable error."""

    name: ClassVar[str] = "retry-at-once"

    @bandoneon.hookimpl
    def retry_delay(self, error: Exception, attempt: int) -> bandoneon.Retry | None:
        return bandoneon.Retry(0.0, 3) if getattr(error, "retryable", False) and attempt < 3 else None


def real_retry() -> bandoneon.Plugin:
    """The bandoneon-retry plugin as installed, with its waits drawn as zero (skipped when it is absent)."""
    backoff = pytest.importorskip("bandoneon_retry").Backoff(max_attempts=3)
    backoff.random = lambda: 0.0
    return backoff


def sse(*events: dict) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def make_agent(server: MockLLMServer, **kwargs) -> bandoneon.Agent:
    provider = AnthropicProvider("claude-test", api_key="test-key", base_url=server.base_url)
    kwargs.setdefault("plugins", [])
    return bandoneon.Agent(provider, context_files=False, **kwargs)


def test_a_model_string_finds_the_provider(mock_llm, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    agent = bandoneon.Agent("anthropic:claude-test", context_files=False, plugins=[])
    assert isinstance(agent.provider, AnthropicProvider)
    assert agent.provider.model == "claude-test"


def test_the_key_and_version_headers_are_sent(mock_llm):
    mock_llm.add(Reply("hi"))
    make_agent(mock_llm).run_sync("hello")
    headers = mock_llm.requests[0].headers
    assert headers["x-api-key"] == "test-key"
    assert headers["anthropic-version"] == "2023-06-01"
    assert mock_llm.requests[0].path == "/v1/messages"


def test_tool_use_round_trip_sends_tool_result_blocks(mock_llm):
    mock_llm.add(Reply(tool_calls=[("get_forecast", {"city": "Paris"})]), Reply("It will rain."))
    result = make_agent(mock_llm, tools=[get_forecast]).run_sync("Will it rain in Paris?")
    assert result.stop == "end_turn" and result.text == "It will rain."
    second = mock_llm.requests[1].json["messages"]
    assert second[1]["role"] == "assistant"
    tool_use = second[1]["content"][0]
    assert tool_use["type"] == "tool_use" and tool_use["input"] == {"city": "Paris"}
    assert second[2] == {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use["id"], "content": "Rain in Paris"}]}


def test_a_failed_tool_result_is_marked_is_error(mock_llm):
    mock_llm.add(Reply(tool_calls=[("get_forecast", {"town": "Paris"})]), Reply("Sorry."))
    make_agent(mock_llm, tools=[get_forecast]).run_sync("Rain?")
    block = mock_llm.requests[1].json["messages"][2]["content"][0]
    assert block["type"] == "tool_result" and block["is_error"] is True


def test_tools_are_sent_with_input_schema_and_a_cache_breakpoint_on_the_last(mock_llm):
    @bandoneon.tool
    def get_time(city: str) -> str:
        """The local time in a city."""
        return "noon"

    mock_llm.add(Reply("ok"))
    make_agent(mock_llm, tools=[get_forecast, get_time], system_prompt="You are a weather bot.").run_sync("hi")
    body = mock_llm.requests[0].json
    assert [t["name"] for t in body["tools"]] == ["get_forecast", "get_time"]
    assert body["tools"][0]["input_schema"]["required"] == ["city"]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "You are a weather bot.", "cache_control": {"type": "ephemeral"}}]
    assert body["max_tokens"] == 4096


def test_cache_breakpoints_can_be_turned_off(mock_llm):
    mock_llm.add(Reply("ok"))
    provider = AnthropicProvider("claude-test", api_key="k", base_url=mock_llm.base_url, cache_prompt=False)
    bandoneon.Agent(provider, tools=[get_forecast], system_prompt="S", context_files=False, plugins=[]).run_sync("hi")
    body = mock_llm.requests[0].json
    assert "cache_control" not in json.dumps(body)


def test_usage_counts_cache_reads_and_writes_as_parts_of_input(mock_llm):
    message = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 40},
    }
    mock_llm.add(Fault(status=200, body=json.dumps(message)))
    result = make_agent(mock_llm).run_sync("hello")
    assert result.usage.input_tokens == 150
    assert result.usage.cached_input_tokens == 100
    assert result.usage.cache_write_tokens == 40
    assert result.usage.output_tokens == 5


async def test_streamed_usage_counts_cache_reads_and_writes(mock_llm):
    events = sse(
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
         "usage": {"input_tokens": 7, "output_tokens": 1, "cache_read_input_tokens": 300, "cache_creation_input_tokens": 20}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    )
    mock_llm.add(Fault(status=200, body=events, headers={"content-type": "text/event-stream"}))
    agent = make_agent(mock_llm)
    agent.on("text_delta", lambda e: None)
    result = await agent.run("hello")
    assert result.text == "hi"
    assert (result.usage.input_tokens, result.usage.cached_input_tokens, result.usage.cache_write_tokens, result.usage.output_tokens) == (327, 300, 20, 9)


def test_thinking_blocks_are_kept_and_sent_back_with_their_signatures(mock_llm):
    mock_llm.add(Reply(thinking=[("Paris is in France.", "sig-abc")], tool_calls=[("get_forecast", {"city": "Paris"})]), Reply("Rain."))
    agent = make_agent(mock_llm, tools=[get_forecast])
    agent.run_sync("Rain in Paris?")
    assert agent.messages[1].thinking == (bandoneon.Thinking("Paris is in France.", "sig-abc"),)
    sent = mock_llm.requests[1].json["messages"][1]["content"]
    assert sent[0] == {"type": "thinking", "thinking": "Paris is in France.", "signature": "sig-abc"}
    assert sent[1]["type"] == "tool_use"


def test_reasoning_from_another_server_is_not_sent_as_an_unsigned_thinking_block(mock_llm):
    with MockLLMServer() as vllm:
        vllm.add(Reply(text="<think>Look Paris up first.</think>", tool_calls=[("get_forecast", {"city": "Paris"})]), Fault(status=503))
        mock_llm.add(Reply("Rain."))
        claude = AnthropicProvider("claude-test", api_key="k", base_url=mock_llm.base_url)
        agent = bandoneon.Agent([f"vllm:qwq@{vllm.base_url}", claude], tools=[get_forecast], plugins=[], context_files=False)
        result = agent.run_sync("Rain in Paris?")
    assert result.text == "Rain." and agent.messages[1].thinking == (bandoneon.Thinking("Look Paris up first."),)
    sent = mock_llm.requests[0].json["messages"][1]["content"]
    assert [block["type"] for block in sent] == ["tool_use"]


def test_redacted_thinking_is_sent_back_as_it_came(mock_llm):
    message = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "stop_reason": "tool_use",
        "content": [
            {"type": "redacted_thinking", "data": "EncryptedBlob=="},
            {"type": "tool_use", "id": "toolu_1", "name": "get_forecast", "input": {"city": "Oslo"}},
        ],
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    mock_llm.add(Fault(status=200, body=json.dumps(message)), Reply("Rain."))
    agent = make_agent(mock_llm, tools=[get_forecast])
    agent.run_sync("Rain in Oslo?")
    assert agent.messages[1].thinking[0].is_redacted
    sent = mock_llm.requests[1].json["messages"][1]["content"]
    assert sent[0] == {"type": "redacted_thinking", "data": "EncryptedBlob=="}
    assert sent[1] == {"type": "tool_use", "id": "toolu_1", "name": "get_forecast", "input": {"city": "Oslo"}}


def test_a_thinking_budget_turns_extended_thinking_on(mock_llm):
    mock_llm.add(Reply("ok"))
    provider = AnthropicProvider("claude-test", api_key="k", base_url=mock_llm.base_url, thinking_budget=2048, max_tokens=8000)
    bandoneon.Agent(provider, context_files=False, plugins=[]).run_sync("hi")
    body = mock_llm.requests[0].json
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and body["max_tokens"] == 8000


@pytest.mark.parametrize("budget", [512, 4096])
def test_a_thinking_budget_outside_the_api_limits_is_a_config_error(budget):
    with pytest.raises(bandoneon.ConfigError, match="thinking_budget"):
        AnthropicProvider("claude-test", api_key="k", thinking_budget=budget, max_tokens=4096)


async def test_streamed_thinking_text_and_tool_use_are_assembled(mock_llm):
    mock_llm.add(Reply("Let me check.", thinking=[("I should look it up.", "sig-1")], tool_calls=[("get_forecast", {"city": "Lima"})]), Reply("Sunny."))
    agent = make_agent(mock_llm, tools=[get_forecast])
    texts, calls = [], []
    agent.on("text_delta", lambda e: texts.append(e.text))
    agent.on("tool_call_delta", lambda e: calls.append(e))
    result = await agent.run("Weather in Lima?")
    assert mock_llm.requests[0].json["stream"] is True
    assert "".join(texts) == "Let me check.Sunny."
    first = agent.messages[1]
    assert first.content == "Let me check."
    assert first.thinking == (bandoneon.Thinking("I should look it up.", "sig-1"),)
    assert json.loads(first.tool_calls[0].arguments) == {"city": "Lima"}
    assert calls[0].tool_name == "get_forecast"
    assert json.loads("".join(c.arguments_delta for c in calls)) == {"city": "Lima"}
    assert result.stop == "end_turn" and result.usage.output_tokens > 0


def test_tool_choice_is_translated(mock_llm):
    mock_llm.add(Reply("a"), Reply("b"))
    make_agent(mock_llm, tools=[get_forecast], tool_choice="required").run_sync("x")
    make_agent(mock_llm, tools=[get_forecast], tool_choice={"type": "function", "function": {"name": "get_forecast"}}).run_sync("x")
    assert mock_llm.requests[0].json["tool_choice"] == {"type": "any"}
    assert mock_llm.requests[1].json["tool_choice"] == {"type": "tool", "name": "get_forecast"}


def test_overloaded_529_is_a_retryable_server_error_and_is_retried(mock_llm):
    mock_llm.add(Fault(status=529), Reply("done"))
    result = make_agent(mock_llm, plugins=[RetryAtOnce()]).run_sync("hi")
    assert result.text == "done"
    assert len(mock_llm.requests) == 2


def test_overloaded_529_is_retried_by_the_real_retry_plugin_unchanged(mock_llm):
    mock_llm.add(Fault(status=529), Fault(status=529), Reply("done"))
    agent = make_agent(mock_llm, plugins=[real_retry()])
    retries = []
    agent.on("provider_retry", retries.append)
    result = agent.run_sync("hi")
    assert result.stop == "end_turn" and result.text == "done"
    assert len(mock_llm.requests) == 3 and [r.attempt for r in retries] == [1, 2]


async def test_a_stream_error_event_is_retried_by_the_real_retry_plugin_unchanged(mock_llm):
    mock_llm.add(Fault(stream_error="overloaded_error"), Reply("recovered"))
    agent = make_agent(mock_llm, plugins=[real_retry()])
    agent.on("text_delta", lambda e: None)
    result = await agent.run("hi")
    assert result.text == "recovered" and len(mock_llm.requests) == 2


async def test_an_error_event_after_text_was_shown_is_stream_interrupted_and_never_replayed(mock_llm):
    events = sse(
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": [], "usage": {"input_tokens": 5, "output_tokens": 0}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Partly "}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    mock_llm.add(Fault(status=200, body=events, headers={"content-type": "text/event-stream"}), Reply("never sent"))
    agent = make_agent(mock_llm, plugins=[real_retry()])
    shown: list[str] = []
    agent.on("text_delta", lambda e: shown.append(e.text))
    with pytest.raises(bandoneon.StreamInterrupted, match="overloaded_error") as caught:
        await agent.run("hi")
    assert caught.value.partial_text == "Partly " and shown == ["Partly "]
    assert len(mock_llm.requests) == 1
    assert [m.role for m in agent.messages] == ["user"]


def test_overloaded_529_without_retries_raises_server_error_and_keeps_history(mock_llm):
    mock_llm.add(Fault(status=529))
    agent = make_agent(mock_llm)
    with pytest.raises(bandoneon.ServerError, match="529") as caught:
        agent.run_sync("hi")
    assert caught.value.retryable and caught.value.status == 529
    assert [m.role for m in agent.messages] == ["user"]


async def test_a_stream_error_event_is_a_clear_retryable_error(mock_llm):
    mock_llm.add(Fault(stream_error="overloaded_error"))
    agent = make_agent(mock_llm)
    agent.on("text_delta", lambda e: None)
    with pytest.raises(bandoneon.ServerError, match="overloaded_error") as caught:
        await agent.run("hi")
    assert caught.value.retryable


async def test_a_stream_error_event_is_retried_by_the_retry_hook(mock_llm):
    mock_llm.add(Fault(stream_error="overloaded_error"), Reply("recovered"))
    agent = make_agent(mock_llm, plugins=[RetryAtOnce()])
    agent.on("text_delta", lambda e: None)
    result = await agent.run("hi")
    assert result.text == "recovered"


async def test_a_stream_cut_mid_reply_is_stream_interrupted_with_the_partial_text(mock_llm):
    mock_llm.add(Reply("one two three four five", cut_stream_after=4))
    agent = make_agent(mock_llm)
    agent.on("text_delta", lambda e: None)
    with pytest.raises(bandoneon.StreamInterrupted) as caught:
        await agent.run("count")
    assert caught.value.partial_text.startswith("one")


@pytest.mark.parametrize(("status", "error"), [(401, bandoneon.AuthError), (400, bandoneon.BadRequest), (429, bandoneon.RateLimited)])
def test_http_errors_are_classified_like_every_provider(mock_llm, status, error):
    mock_llm.add(Fault(status=status))
    with pytest.raises(error, match=str(status)):
        make_agent(mock_llm).run_sync("hi")


def test_a_missing_key_is_a_config_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(bandoneon.ConfigError, match="ANTHROPIC_API_KEY"):
        bandoneon.Agent("anthropic:claude-test", context_files=False, plugins=[])


def test_an_unknown_option_is_a_config_error():
    with pytest.raises(bandoneon.ConfigError, match="max_tokenz"):
        bandoneon.resolve_model("anthropic:claude-test", api_key="k", max_tokenz=5)


def test_a_reply_that_is_not_a_message_is_bad_response(mock_llm):
    mock_llm.add(Fault(status=200, body='{"hello": "world"}'))
    with pytest.raises(bandoneon.BadResponse, match="not a message"):
        make_agent(mock_llm).run_sync("hi")


# ---------------------------------------------------------------- typed answers by tool-forcing


@attrs.frozen
class Forecast:
    city: str
    rain: bool


def test_a_typed_answer_is_asked_for_by_forcing_the_answer_tool(mock_llm):
    mock_llm.add(Reply(tool_calls=[("final_answer", {"city": "Oslo", "rain": True})]))
    result = make_agent(mock_llm, output_type=Forecast).run_sync("Rain in Oslo?")
    assert (result.stop, result.output) == ("end_turn", Forecast("Oslo", True))
    body = mock_llm.requests[0].json
    assert body["tool_choice"] == {"type": "tool", "name": "final_answer"}
    assert body["tools"][0]["input_schema"]["required"] == ["city", "rain"]
    assert result.messages[-1].tool_calls == ()  # the forced call came back as the reply's text


async def test_with_other_tools_some_tool_is_forced_and_a_streamed_answer_arrives_as_text(mock_llm):
    mock_llm.add(
        Reply(tool_calls=[("get_forecast", {"city": "Oslo"})]),
        Reply(tool_calls=[("final_answer", {"city": "Oslo", "rain": True})]),
    )
    agent = make_agent(mock_llm, tools=[get_forecast], output_type=Forecast)
    pieces = []
    async for event in agent.stream("Rain in Oslo?"):
        if event.name == "output_delta" and event.output is not None:
            pieces.append(event.output)
    assert pieces[-1] == Forecast("Oslo", True)
    first = mock_llm.requests[0].json
    assert first["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in first["tools"]] == ["get_forecast", "final_answer"]


# ---------------------------------------------------------------- images and documents


def test_images_and_documents_become_content_blocks(mock_llm):
    mock_llm.add(Reply(text="A receipt and its terms."))
    png = b"\x89PNG\r\n\x1a\n tiny"
    prompt = [
        "What are these?",
        bandoneon.ImagePart.from_bytes(png),
        bandoneon.ImagePart.from_url("https://images.example/cat.jpg"),
        bandoneon.FilePart.from_bytes(b"%PDF-1.4", "application/pdf", "terms.pdf"),
    ]
    assert make_agent(mock_llm).run_sync(prompt).text == "A receipt and its terms."
    blocks = mock_llm.requests[0].json["messages"][0]["content"]
    assert blocks[0] == {"type": "text", "text": "What are these?"}
    assert blocks[1]["source"]["type"] == "base64" and blocks[1]["source"]["media_type"] == "image/png"
    assert blocks[2] == {"type": "image", "source": {"type": "url", "url": "https://images.example/cat.jpg"}}
    assert blocks[3]["type"] == "document" and blocks[3]["title"] == "terms.pdf"


def test_a_file_the_api_cannot_read_is_refused_before_the_request(mock_llm):
    agent = make_agent(mock_llm)
    with pytest.raises(bandoneon.ConfigError, match="a file must be one of application/pdf, text/plain"):
        agent.run_sync(["Read", bandoneon.FilePart.from_bytes(b"PK..", "application/zip", "a.zip")])
    assert mock_llm.requests == []


def test_with_extended_thinking_the_answer_tool_is_offered_but_not_forced():
    provider = AnthropicProvider("claude-test", api_key="k", base_url="http://127.0.0.1:9", thinking_budget=2048, max_tokens=4096)
    schema = bandoneon.OutputSchema("Forecast", {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False})
    body = provider.request_body(bandoneon.ModelRequest(messages=(bandoneon.Message.user("?"),), output_schema=schema))
    assert [t["name"] for t in body["tools"]] == ["final_answer"]
    assert "tool_choice" not in body or body["tool_choice"] == {"type": "auto"}
