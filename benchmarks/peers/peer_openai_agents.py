"""The OpenAI Agents SDK's side of the peer comparison: the 2-turn run through ``Runner.run`` on an
in-process fake model, awaited inside one running event loop. Prints {"median_s": ...} last.

The fake model is a minimal ``agents.models.interface.Model`` subclass, as the SDK's own tests use
(their ``FakeModel``): it looks at the input it is given and returns a ``function_call`` for
get_forecast, or, once a ``function_call_output`` is in the input, the answer. Output items are built
with the SDK's ``agents.testing`` helpers. ``--fake scripted`` uses the SDK's ``agents.testing.
ScriptedModel`` instead (two steps queued per run); it records and deep-copies every call, so it
costs more than the loop it drives and is not the default.
"""

from __future__ import annotations

import os

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
os.environ.setdefault("OPENAI_API_KEY", "sk-fake-never-used")

from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.usage import Usage

from _protocol import ANSWER, OBSERVATION, PROMPT, get_forecast, main, median_of_async

set_tracing_disabled(True)

FORECAST_TOOL = function_tool(get_forecast)


_TOOL_CALL = function_call("get_forecast", {"city": "Paris"}, call_id="call_1")
_ANSWER_MESSAGE = assistant_message(ANSWER, item_id="msg_1")


class TwoTurnModel(Model):
    """Asks for get_forecast, then answers once the tool's output is in the input."""

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, *, previous_response_id, conversation_id, prompt) -> ModelResponse:
        last = input[-1] if isinstance(input, list) else None
        answered = isinstance(last, dict) and last.get("type") == "function_call_output"
        if answered:
            return ModelResponse(output=[_ANSWER_MESSAGE], usage=Usage(requests=1, input_tokens=20, output_tokens=8, total_tokens=28), response_id=None)
        return ModelResponse(output=[_TOOL_CALL], usage=Usage(requests=1, input_tokens=10, output_tokens=5, total_tokens=15), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the benchmark does not stream")


def _build(fake: str) -> tuple[Agent, Any]:
    if fake == "scripted":
        model = ScriptedModel()

        def before_run() -> None:
            model.extend([[function_call("get_forecast", {"city": "Paris"}, call_id="call_1")], [assistant_message(ANSWER)]])

        return Agent(name="bench", instructions=None, model=model, tools=[FORECAST_TOOL]), before_run
    return Agent(name="bench", instructions=None, model=TwoTurnModel(), tools=[FORECAST_TOOL]), lambda: None


async def measure(args) -> float:
    agent, before_run = _build(args.fake)

    async def run() -> None:
        before_run()
        result = await Runner.run(agent, PROMPT)
        assert result.final_output == ANSWER, result.final_output

    # the tool really ran and its output went back to the model
    before_run()
    result = await Runner.run(agent, PROMPT)
    outputs = [item.output for item in result.new_items if item.type == "tool_call_output_item"]
    assert outputs == [OBSERVATION], result.new_items
    return await median_of_async(run, args.iterations)


if __name__ == "__main__":
    main("openai_agents", measure, {"--fake": {"choices": ("model", "scripted"), "default": "model"}})
