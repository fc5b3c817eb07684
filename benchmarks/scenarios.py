"""The runs every benchmark measures: a 2-turn agent run (the model asks for one tool, then
answers) on an in-process fake model, driven by bandoneon or by the bare level-2 loop."""

from __future__ import annotations

import json
from typing import Any

import attrs
import bandoneon
from bandoneon import Message, ModelReply, ToolCall, Usage

PROMPT = "Will it rain in Paris tomorrow?"
ANSWER = "Yes: 80% chance of rain."
ARGUMENTS = '{"city": "Paris"}'


def get_forecast(city: str) -> str:
    """Daily forecast for one city."""
    return f"{city}: rain 80%"


FORECAST_TOOL = bandoneon.tool(get_forecast)

_CALL = ToolCall("call_1", "get_forecast", ARGUMENTS)
_TOOL_REPLY = ModelReply(Message.assistant("", (_CALL,)), "tool_calls", Usage(10, 5, requests=1))
_TEXT_REPLY = ModelReply(Message.assistant(ANSWER), "stop", Usage(20, 8, requests=1))


class TwoTurnModel:
    """A provider that asks for get_forecast, then answers. Costs next to nothing."""

    name = "bench"
    model = "bench"

    async def complete(self, request: Any, *, on_delta: Any = None) -> ModelReply:
        last = request.messages[-1]
        return _TEXT_REPLY if last.role == "tool" else _TOOL_REPLY

    async def context_window(self) -> int | None:
        return 128_000


@attrs.frozen
class Forecast:
    """The small typed answer of the output benchmark."""

    city: str
    rain_chance: int


_JSON_REPLY = ModelReply(Message.assistant('{"city": "Paris", "rain_chance": 80}'), "stop", Usage(20, 8, requests=1))


class TwoTurnJsonModel(TwoTurnModel):
    """TwoTurnModel whose answer is the JSON of a ``Forecast``, kept to natively."""

    async def complete(self, request: Any, *, on_delta: Any = None) -> ModelReply:
        return _JSON_REPLY if request.messages[-1].role == "tool" else _TOOL_REPLY

    def supports_output_schema(self, *, with_tools: bool) -> bool:
        return True


def typed_agent(plugins: Any = None) -> bandoneon.Agent:
    return bandoneon.Agent(TwoTurnJsonModel(), tools=[FORECAST_TOOL], plugins=plugins, context_files=False, output_type=Forecast)


async def typed_run(agent: bandoneon.Agent) -> None:
    agent.clear()
    result = await agent.run(PROMPT)
    assert result.output == Forecast("Paris", 80), result


class FreshTwoTurnModel(TwoTurnModel):
    """``TwoTurnModel`` with new message objects in every reply (as from a real server)."""

    async def complete(self, request: Any, *, on_delta: Any = None) -> ModelReply:
        if request.messages[-1].role == "tool":
            return ModelReply(Message.assistant(ANSWER), "stop", Usage(20, 8, requests=1))
        return ModelReply(Message.assistant("", (ToolCall("call_1", "get_forecast", ARGUMENTS),)), "tool_calls", Usage(10, 5, requests=1))


def bandoneon_agent(plugins: Any = None) -> bandoneon.Agent:
    """``plugins=None``: the installed recommended defaults, as a user gets them."""
    return bandoneon.Agent(TwoTurnModel(), tools=[FORECAST_TOOL], plugins=plugins, context_files=False)


async def bandoneon_run(agent: bandoneon.Agent) -> None:
    agent.clear()
    result = await agent.run(PROMPT)
    assert result.text == ANSWER, result


def bandoneon_run_sync(agent: bandoneon.Agent) -> None:
    agent.clear()
    result = agent.run_sync(PROMPT)
    assert result.text == ANSWER, result


# ---------------------------------------------------------------- the floor: level 2 from scratch


async def _bare_chat(messages: list[dict[str, Any]]) -> dict[str, Any]:
    if messages[-1]["role"] == "tool":
        return {"finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER}}
    call = {"id": "call_1", "type": "function", "function": {"name": "get_forecast", "arguments": ARGUMENTS}}
    return {"finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [call]}}


BARE_TOOLS = {"get_forecast": get_forecast}


async def bare_loop(prompt: str = PROMPT, chat: Any = _bare_chat, max_turns: int = 10) -> str:
    """The level-2 loop of the track: no validation, no hooks, no events."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        choice = await chat(messages)
        reply = choice["message"]
        messages.append(reply)
        if choice["finish_reason"] != "tool_calls":
            return reply["content"]
        for call in reply["tool_calls"]:
            function = BARE_TOOLS[call["function"]["name"]]
            output = function(**json.loads(call["function"]["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
    raise RuntimeError("no answer")
