"""A broken Messages API reply (a field of the wrong type anywhere), whole or streamed: the run
gets a reply whose fields are what they claim to be, or a ``ProviderError`` (``BadResponse``)
the retry policy and the caller understand; never a raw ``AttributeError`` or ``TypeError``."""

from __future__ import annotations

import json

import bandoneon
import pytest
from bandoneon.testing import Fault, MockLLMServer, json_paths, replaced_at
from bandoneon_anthropic import AnthropicProvider
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=2) | st.dictionaries(st.text(max_size=4), children, max_size=2),
    max_leaves=4,
)

MESSAGE = {
    "type": "message",
    "model": "claude-test",
    "content": [
        {"type": "thinking", "thinking": "hm", "signature": "sig"},
        {"type": "text", "text": "Rain."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_forecast", "input": {"city": "Oslo"}},
    ],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 5, "output_tokens": 2, "cache_read_input_tokens": 1},
}
STREAM = [
    {"type": "message_start", "message": {"model": "claude-test", "usage": {"input_tokens": 5}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Rain."}},
    {"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_forecast"}},
    {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{}"}},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
    {"type": "message_stop"},
]


def _paths(document):
    """Every place in a document a hostile server could put another value (its types kept: they
    name the event)."""
    return [path for path in json_paths(document) if path[-1] != "type"]


@pytest.fixture(scope="module")
def server():
    with MockLLMServer() as server:
        yield server


def _check(server, fault: Fault, *, stream: bool) -> None:
    server.reset()
    server.add(fault)
    provider = AnthropicProvider("claude-test", api_key="k", base_url=server.base_url)
    agent = bandoneon.Agent(provider, plugins=[], context_files=False, max_turns=1)
    if stream:
        agent.on("text_delta", lambda event: None)
    try:
        result = agent.run_sync("Rain in Oslo?")
    except bandoneon.ProviderError:
        return
    finally:
        agent.close()
    usage = result.usage
    assert all(type(n) is int for n in (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens, usage.cache_write_tokens))
    for message in result.messages:
        assert isinstance(message.content, str)
        assert all(isinstance(c.id, str) and isinstance(c.name, str) for c in message.tool_calls)
        assert all(isinstance(t.text, str) and isinstance(t.signature, str | None) for t in message.thinking)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(_paths(MESSAGE)), value=JSON)
def test_a_whole_reply_with_any_field_replaced_is_a_reply_or_a_bad_response(server, path, value):
    _check(server, Fault(status=200, body=json.dumps(replaced_at(MESSAGE, path, value))), stream=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(_paths(STREAM)), value=JSON)
def test_a_stream_with_any_field_replaced_is_a_reply_or_a_bad_response(server, path, value):
    events = replaced_at(STREAM, path, value)
    body = "".join(f"event: {e.get('type') if isinstance(e, dict) else 'x'}\ndata: {json.dumps(e)}\n\n" for e in events)
    _check(server, Fault(status=200, body=body, headers={"content-type": "text/event-stream"}), stream=True)
