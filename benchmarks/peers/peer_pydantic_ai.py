"""pydantic-ai's side of the peer comparison: the 2-turn run on pydantic-ai's own test double,
``FunctionModel``, awaited inside one running event loop. Prints {"median_s": ...} last."""

from __future__ import annotations

import os

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("LOGFIRE_IGNORE_NO_CONFIG", "1")

import argparse
import asyncio
import json
import statistics
import sys
import time

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

PROMPT = "Will it rain in Paris tomorrow?"
ANSWER = "Yes: 80% chance of rain."


def get_forecast(city: str) -> str:
    """Daily forecast for one city."""
    return f"{city}: rain 80%"


def two_turn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Asks for get_forecast, then answers once the tool's return comes back."""
    last = messages[-1]
    if any(isinstance(part, ToolReturnPart) for part in last.parts):
        return ModelResponse(parts=[TextPart(ANSWER)])
    return ModelResponse(parts=[ToolCallPart("get_forecast", {"city": "Paris"}, tool_call_id="call_1")])


async def main(iterations: int) -> float:
    agent = Agent(FunctionModel(two_turn), tools=[get_forecast])

    async def run() -> None:
        result = await agent.run(PROMPT)
        assert result.output == ANSWER, result.output

    # the tool really ran and its return went back to the model
    result = await agent.run(PROMPT)
    returns = [p for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
    assert [r.content for r in returns] == ["Paris: rain 80%"], returns
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
    try:
        median = asyncio.run(main(parser.parse_args().iterations))
    except Exception as error:  # one line on stderr, non-zero exit: the suite reports it as a failure
        print(f"pydantic_ai: {type(error).__name__}: {error}".replace("\n", " ")[:300], file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"median_s": median}))
