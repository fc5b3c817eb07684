"""Reasoning from OpenAI-compatible servers (``reasoning_content``, ``reasoning``, a leading
``<think>`` block) becomes the message's thinking, streams as ``thinking_delta``, and is not sent
back unless the server is said to want it."""

from __future__ import annotations

import json

import bandoneon
import pytest
from bandoneon import OpenAICompatible, WireOptions
from bandoneon.providers.reasoning import ThinkSplitter, split_think
from bandoneon.testing import MockLLMServer, Reply
from hypothesis import given
from hypothesis import strategies as st


def agent_on(server: MockLLMServer, **kwargs) -> bandoneon.Agent:
    kwargs.setdefault("plugins", [])
    model = kwargs.pop("model", None) or f"openai-compatible:m@{server.base_url}"
    return bandoneon.Agent(model, context_files=False, **kwargs)


def test_reasoning_content_is_the_messages_thinking_and_is_not_sent_back(mock_llm):
    mock_llm.add(Reply(text="Rain, 80%.", thinking=[("The user asks about rain; check the forecast.", "")]), Reply(text="You're welcome."))
    agent = agent_on(mock_llm)
    result = agent.run_sync("Rain tomorrow?")
    assert result.text == "Rain, 80%."
    assert [t.text for t in result.messages[-1].thinking] == ["The user asks about rain; check the forecast."]
    agent.run_sync("Thanks")
    replayed = mock_llm.requests[1].json["messages"][1]
    assert replayed == {"role": "assistant", "content": "Rain, 80%."}


async def test_the_reasoning_field_streams_as_thinking_deltas_apart_from_the_text(mock_llm):
    mock_llm.add(Reply(text="Rain, 80%.", thinking=[("Check the forecast first.", "")], reasoning_field="reasoning"))
    agent = agent_on(mock_llm)
    thinking, text = [], []
    async for event in agent.stream("Rain tomorrow?"):
        if event.name == "thinking_delta":
            thinking.append(event.text)
        elif event.name == "text_delta":
            text.append(event.text)
    assert "".join(thinking) == "Check the forecast first."
    assert "".join(text) == "Rain, 80%."
    assert agent.messages[-1].thinking[0].text == "Check the forecast first."


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_leading_think_block_is_thinking_not_text(mock_llm, stream):
    mock_llm.add(Reply(text="<think>\nThe user wants rain odds.\n</think>\n\nRain, 80%."))
    agent = agent_on(mock_llm)
    if stream:
        shown = [e.text async for e in agent.stream("Rain?") if e.name == "text_delta"]
        assert "".join(shown) == "Rain, 80%."
    else:
        await agent.run("Rain?")
    message = agent.messages[-1]
    assert (message.content, [t.text for t in message.thinking]) == ("Rain, 80%.", ["The user wants rain odds."])


def test_think_tags_can_be_left_in_the_text(mock_llm):
    mock_llm.add(Reply(text="<think>x</think> y"))
    provider = OpenAICompatible("m", base_url=mock_llm.base_url, wire=WireOptions(think_tags=False))
    result = agent_on(mock_llm, model=provider).run_sync("?")
    assert result.text == "<think>x</think> y" and result.messages[-1].thinking == ()


def test_a_server_that_wants_its_reasoning_back_gets_it(mock_llm):
    mock_llm.add(Reply(text="A.", thinking=[("because", "")]), Reply(text="B."))
    provider = OpenAICompatible("m", base_url=mock_llm.base_url, wire=WireOptions(send_reasoning=True))
    agent = agent_on(mock_llm, model=provider)
    agent.run_sync("1")
    agent.run_sync("2")
    assert mock_llm.requests[1].json["messages"][1]["reasoning_content"] == "because"


def test_tracing_shows_the_thinking_of_a_reply(mock_llm, tmp_path):
    tracing = pytest.importorskip("bandoneon_tracing")
    mock_llm.add(Reply(text="Rain.", thinking=[("Look at the sky.", "")]))
    path = tmp_path / "trace.jsonl"
    agent = agent_on(mock_llm, plugins=[tracing.Tracing(jsonl=str(path))])
    agent.run_sync("?")
    agent.close()
    spans = [json.loads(line) for line in path.read_text().splitlines()]
    assert any(s["attributes"].get("bandoneon.thinking") == "Look at the sky." for s in spans)


@given(st.text(alphabet="ab <>/thinkx\n", max_size=40), st.lists(st.integers(min_value=1, max_value=7), max_size=12))
def test_streamed_splitting_agrees_with_splitting_the_whole(content, cuts):
    splitter = ThinkSplitter()
    pieces, at = [], 0
    for cut in cuts:
        pieces.append(content[at : at + cut])
        at += cut
    pieces.append(content[at:])
    out = [part for piece in pieces if piece for part in splitter.feed(piece)] + splitter.finish()
    thinking = "".join(text for kind, text in out if kind == "thinking").strip()
    text = "".join(text for kind, text in out if kind == "text")
    assert (thinking, text) == split_think(content)
