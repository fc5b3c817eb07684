"""A reply's token counts read by one rule on both wires (OpenAI-compatible and Anthropic), whole
or streamed: a whole number, written ``12`` or ``12.0``, is the count; anything else (a fraction,
a negative, a count no reply could hold, a boolean, text) is a ``BadResponse`` naming the field,
and the history keeps the prompt for the next run."""

from __future__ import annotations

import json
from typing import Any

import bandoneon
import pytest
from bandoneon.testing import Fault, MockLLMServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

AnthropicProvider = pytest.importorskip("bandoneon_anthropic").AnthropicProvider

FIXTURE_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

#: The largest count a reply may claim: the largest whole number a JSON number holds exactly.
LARGEST = 2**53 - 1

COUNTS = st.one_of(
    st.integers(0, 10**6),
    st.integers(0, 10**6).map(float),
    st.integers(LARGEST - 2, LARGEST + 2),
    st.integers(-(10**6), -1),
    st.integers(10**15, 10**400),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.text(max_size=3),
)


def is_token_count(value: Any) -> bool:
    whole = type(value) is int or (type(value) is float and value.is_integer())
    return whole and 0 <= value <= LARGEST


def anthropic_reply(input_tokens: Any) -> Fault:
    message = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": input_tokens, "output_tokens": 3},
    }  # fmt: skip
    return Fault(status=200, body=json.dumps(message))


def openai_reply(prompt_tokens: Any) -> Fault:
    completion = {
        "id": "c1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 3},
    }  # fmt: skip
    return Fault(status=200, body=json.dumps(completion))


def anthropic_agent(server: MockLLMServer) -> bandoneon.Agent:
    return bandoneon.Agent(AnthropicProvider("claude-test", api_key="k", base_url=server.base_url), plugins=[], context_files=False)


def openai_agent(server: MockLLMServer) -> bandoneon.Agent:
    return bandoneon.Agent(f"openai-compatible:m@{server.base_url}", plugins=[], context_files=False)


def input_tokens_read(server: MockLLMServer, wire: str, count: Any) -> int | str:
    """What a run makes of a reply whose input count is ``count``: the count, or the error."""
    server.reset()
    server.add(anthropic_reply(count) if wire == "anthropic" else openai_reply(count))
    agent = anthropic_agent(server) if wire == "anthropic" else openai_agent(server)
    try:
        return agent.run_sync("hello").usage.input_tokens
    except bandoneon.BadResponse as exc:
        assert [m.content for m in agent.messages] == ["hello"]  # the prompt is kept for the next run
        return str(exc)
    finally:
        agent.close()


@FIXTURE_SETTINGS
@given(count=COUNTS)
def test_both_wires_read_a_token_count_by_the_same_rule(mock_llm, count):
    anthropic = input_tokens_read(mock_llm, "anthropic", count)
    openai = input_tokens_read(mock_llm, "openai", count)
    if is_token_count(count):
        assert anthropic == openai == int(count)
    else:
        assert isinstance(anthropic, str) and "the reply's usage.input_tokens is" in anthropic and "not a token count" in anthropic
        assert isinstance(openai, str) and "the reply's usage.prompt_tokens is" in openai


def test_a_whole_number_written_as_a_float_is_counted_not_lost(mock_llm):
    mock_llm.add(anthropic_reply(12.0))
    result = anthropic_agent(mock_llm).run_sync("hello")
    assert (result.text, result.usage.input_tokens, type(result.usage.input_tokens)) == ("hi", 12, int)


async def test_a_streamed_whole_number_written_as_a_float_is_counted(mock_llm):
    events = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
         "usage": {"input_tokens": 7.0, "cache_read_input_tokens": 300.0}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9.0}},
        {"type": "message_stop"},
    ]  # fmt: skip
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    mock_llm.add(Fault(status=200, body=body, headers={"content-type": "text/event-stream"}))
    agent = anthropic_agent(mock_llm)
    agent.on("text_delta", lambda event: None)
    result = await agent.run("hello")
    assert (result.text, result.usage.input_tokens, result.usage.cached_input_tokens, result.usage.output_tokens) == ("hi", 307, 300, 9)


def test_an_absurd_count_is_a_bad_response_not_an_overflow_in_a_price(mock_llm):
    """10**400 tokens is no count: a budget that prices it (a float times it) would overflow."""
    mock_llm.add(anthropic_reply(10**400))
    agent = anthropic_agent(mock_llm)
    with pytest.raises(bandoneon.BadResponse, match=r"usage\.input_tokens is int 1000.*not a token count"):
        agent.run_sync("hello")
