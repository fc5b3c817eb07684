"""The loop against a real model: llama.cpp's own server (through the core's OpenAI-compatible
provider, ``llamacpp:`` prefix) and the same model in-process (bandoneon-local). Protocol, not
wisdom: the 135M model's answers are often wrong, but a call must be well-formed, answered,
and the run must end with a stated reason.

Tool calls run in-process only: SmolLM2's chat template has no tool support, so llama.cpp's
server neither renders the tools nor enforces ``tool_choice`` for it; bandoneon-local brings
its own protocol for exactly that reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Literal

import attrs
import pytest

import bandoneon
from bandoneon_local import LocalModel

FAST = {"max_tokens": 48, "temperature": 0.0}
ALWAYS_WEATHER = {"type": "function", "function": {"name": "get_weather"}}


@bandoneon.tool
def get_weather(city: Annotated[str, "the city"]) -> str:
    """Get the current weather for a city."""
    return f"Sunny, 21 C in {city}"


@pytest.fixture(params=["server", "inprocess"])
def model(request: pytest.FixtureRequest) -> Callable[[], bandoneon.Provider]:
    """A fresh provider for the same model: over HTTP, or in this process."""
    if request.param == "server":
        server = request.getfixturevalue("llama_server")
        return lambda: bandoneon.resolve_model(f"llamacpp:smollm2@{server.base_url}", api_key="")
    return LocalModel


def agent(model: Callable[[], bandoneon.Provider], **kwargs) -> bandoneon.Agent:
    kwargs.setdefault("settings", FAST)
    kwargs.setdefault("plugins", [])
    return bandoneon.Agent(model(), context_files=False, **kwargs)


def calls_of(result: bandoneon.RunResult) -> list[bandoneon.ToolCall]:
    return [c for m in result.messages if m.role == "assistant" for c in m.tool_calls]


def test_plain_text_streams(model):
    talker = agent(model)
    pieces: list[str] = []
    talker.on("text_delta", lambda e: pieces.append(e.text))
    result = talker.run_sync("Say hello in one sentence.")
    assert result.stop == "end_turn" and result.ok
    assert len(pieces) > 1 and "".join(pieces) == result.text


def test_max_tokens_bounds_a_reply(model):
    result = agent(model, settings={"max_tokens": 6}).run_sync("Write a long story about a dragon.")
    assert result.usage.output_tokens <= 6 and result.stop == "end_turn"


def test_a_typed_answer_is_kept_to_its_schema(model):
    @attrs.frozen
    class City:
        name: str

    result = agent(model).run_sync("Name a city in Peru.", output_type=City)
    assert result.ok and isinstance(result.output, City)


def test_an_error_from_the_model_is_a_bad_request_and_the_history_stays_usable(model):
    talker = agent(model)
    with pytest.raises(bandoneon.BadRequest, match="context"):
        talker.run_sync("word " * 5000)
    assert [m.role for m in talker.messages] == ["user"]
    talker.clear()
    assert talker.run_sync("Say hi.").stop == "end_turn"


@attrs.frozen
class Weather:
    sunny: bool
    verdict: Literal["go out", "stay in"]


def test_a_typed_answer_kept_to_its_schema_by_the_real_server(llama_server):
    """The native path: the schema goes as response_format and the server's grammar keeps the
    small model to it, so the first answer is valid and no repair round is needed."""
    provider = bandoneon.resolve_model(f"llamacpp:smollm2@{llama_server.base_url}", api_key="")
    result = bandoneon.Agent(provider, context_files=False, plugins=[], settings={"max_tokens": 64, "temperature": 0.0}, output_type=Weather).run_sync(
        "It is sunny and warm. Should I go out?"
    )
    assert result.stop == "end_turn", result.detail
    assert isinstance(result.output, Weather)
    assert result.usage.requests == 1


def test_cancelling_a_streamed_reply_stops_it_and_the_model_serves_the_next(model):
    talker = agent(model, settings={"max_tokens": 300})
    pieces: list[str] = []

    def on_text(event: bandoneon.TextDelta) -> None:
        pieces.append(event.text)
        if len(pieces) == 2:
            talker.cancel()

    talker.on("text_delta", on_text)
    assert talker.run_sync("Write a long story about a dragon.").stop == "cancelled"
    assert len(pieces) < 300
    assert agent(model).run_sync("Say hi.").stop == "end_turn"


def test_a_tool_call_round_trip_in_process():
    result = agent(LocalModel, tools=[get_weather], max_turns=2).run_sync("What is the weather in Paris?")
    calls = calls_of(result)
    assert calls and calls[0].name == "get_weather"
    assert isinstance(json.loads(calls[0].arguments)["city"], str)
    results = {m.tool_call_id: m for m in result.messages if m.role == "tool"}
    assert results[calls[0].id].content.startswith("Sunny, 21 C in ") and not results[calls[0].id].is_error
    assert result.stop in ("end_turn", "max_turns")
    assert result.usage.requests >= 2 and result.usage.input_tokens > 0


def test_max_turns_ends_the_run_with_every_call_answered_in_process():
    looper = agent(LocalModel, tools=[get_weather], tool_choice=ALWAYS_WEATHER, max_turns=2)
    result = looper.run_sync("What is the weather in Oslo?")
    assert result.stop == "max_turns" and not result.ok and result.turns == 2
    assert len(calls_of(result)) == 2
    assert {c.id for c in calls_of(result)} == {m.tool_call_id for m in result.messages if m.role == "tool"}
    with pytest.raises(bandoneon.NoAnswer, match="max_turns"):
        result.unwrap()
