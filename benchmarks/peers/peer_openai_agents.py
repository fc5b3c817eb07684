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

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.usage import Usage

PROMPT = "Will it rain in Paris tomorrow?"
ANSWER = "Yes: 80% chance of rain."

set_tracing_disabled(True)


@function_tool
def get_forecast(city: str) -> str:
    """Daily forecast for one city."""
    return f"{city}: rain 80%"


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

        return Agent(name="bench", instructions=None, model=model, tools=[get_forecast]), before_run
    return Agent(name="bench", instructions=None, model=TwoTurnModel(), tools=[get_forecast]), lambda: None


async def main(iterations: int, fake: str) -> float:
    agent, before_run = _build(fake)

    async def run() -> None:
        before_run()
        result = await Runner.run(agent, PROMPT)
        assert result.final_output == ANSWER, result.final_output

    # the tool really ran and its output went back to the model
    before_run()
    result = await Runner.run(agent, PROMPT)
    outputs = [item.output for item in result.new_items if item.type == "tool_call_output_item"]
    assert outputs == ["Paris: rain 80%"], result.new_items
    for _ in range(100):
        await run()
    samples = []
    for _ in range(iterations):
        started = time.perf_counter()
        await run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--fake", choices=("model", "scripted"), default="model")
    args = parser.parse_args()
    try:
        median = asyncio.run(main(args.iterations, args.fake))
    except Exception as error:  # one line on stderr, non-zero exit: the suite reports it as a failure
        print(f"openai_agents: {type(error).__name__}: {error}".replace("\n", " ")[:300], file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"median_s": median}))
