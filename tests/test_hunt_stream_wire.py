"""Hostile streamed replies over loopback HTTP (the testing kit's server): fields of the wrong
type in a streamed tool call, several choices interleaved, a stream that never stops sending
small events; and an output type that contains itself."""

from __future__ import annotations

import dataclasses
import json

import bandoneon
import pytest
from bandoneon import tool
from bandoneon.providers.openai import OpenAICompatible
from bandoneon.testing import Fault, Reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.usefixtures("only_the_core")

NOT_TEXT = st.one_of(
    st.integers(), st.floats(allow_nan=False), st.booleans(), st.lists(st.integers(), min_size=1, max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), min_size=1, max_size=2),
).filter(bool)  # a falsy value reads as a missing one, as in a whole (unstreamed) reply


@tool
def book_seat(seat: str) -> str:
    """Book one seat."""
    return f"booked {seat}"


def streaming_agent(server, **kwargs) -> bandoneon.Agent:
    agent = bandoneon.Agent(f"openai-compatible:mock@{server.base_url}", tools=[book_seat], plugins=[], context_files=False, **kwargs)
    agent.on("text_delta", lambda event: None)  # a delta listener turns streaming on
    return agent


def sse(*chunks: object) -> Fault:
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return Fault(status=200, body=body, headers={"content-type": "text/event-stream"})


def chunk(delta: dict, finish: object = None, index: int = 0) -> dict:
    return {"choices": [{"index": index, "delta": delta, "finish_reason": finish}]}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(["id", "name", "finish_reason"]), value=NOT_TEXT)
def test_a_streamed_field_that_is_not_text_is_a_bad_response_never_a_raw_error(mock_llm, field, value):
    mock_llm.reset()
    call = {"index": 0, "id": "c1", "function": {"name": "book_seat", "arguments": '{"seat": "1A"}'}}
    finish: object = "tool_calls"
    if field == "id":
        call["id"] = value
    elif field == "name":
        call["function"]["name"] = value
    else:
        finish = value
    mock_llm.add(sse(chunk({"tool_calls": [call]}), chunk({}, finish)), Reply(text="unused"))
    agent = streaming_agent(mock_llm)
    with pytest.raises(bandoneon.ProviderError, match=field):
        agent.run_sync("book 1A")
    assert [m.role for m in agent.messages] in ([], ["user"])  # nothing half-parsed was kept
    agent.close()


def test_a_stream_of_several_choices_is_assembled_from_the_first_only(mock_llm):
    """``n=2`` in the settings: the server interleaves two replies; they are not spliced."""
    mock_llm.add(
        sse(
            {"choices": [{"index": 0, "delta": {"content": "Left "}}, {"index": 1, "delta": {"content": "Right "}}]},
            chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "book_seat", "arguments": '{"seat": '}}]}, index=1),
            chunk({"content": "answer."}),
            chunk({}, "stop", index=1),
            chunk({}, "stop"),
        )
    )
    result = streaming_agent(mock_llm, settings={"n": 2}).run_sync("hi")
    assert (result.text, result.messages[-1].tool_calls) == ("Left answer.", ())


def test_a_stream_that_keeps_sending_small_events_is_refused_past_the_limit(mock_llm):
    limit = 64 * 1024
    event = f"data: {json.dumps(chunk({'content': 'x' * 50}))}\n\n"
    mock_llm.add(Fault(status=200, body=event * (4 * limit // len(event)), headers={"content-type": "text/event-stream"}))
    provider = OpenAICompatible("m", base_url=mock_llm.base_url, json_limits=bandoneon.JsonLimits(max_bytes=limit))
    agent = bandoneon.Agent(provider, plugins=[], context_files=False)
    agent.on("text_delta", lambda event: None)
    with pytest.raises(bandoneon.ProviderError, match=f"over the limit of {limit} characters in all"):
        agent.run_sync("hi")
    agent.close()


@dataclasses.dataclass
class Node:
    name: str
    children: list[Node]


def test_an_output_type_that_contains_itself_is_a_config_error_when_the_agent_is_made(mock_llm):
    with pytest.raises(bandoneon.ConfigError, match="recursive type"):
        bandoneon.Agent(f"openai-compatible:mock@{mock_llm.base_url}", output_type=Node, plugins=[], context_files=False)
