"""pydantic-ai's side of the peer comparison: the 2-turn run on pydantic-ai's own test double,
``FunctionModel``, awaited inside one running event loop. Prints {"median_s": ...} last."""

from __future__ import annotations

import os

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("LOGFIRE_IGNORE_NO_CONFIG", "1")

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from _protocol import ANSWER, OBSERVATION, PROMPT, get_forecast, main, median_of_async


def two_turn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Asks for get_forecast, then answers once the tool's return comes back."""
    last = messages[-1]
    if any(isinstance(part, ToolReturnPart) for part in last.parts):
        return ModelResponse(parts=[TextPart(ANSWER)])
    return ModelResponse(parts=[ToolCallPart("get_forecast", {"city": "Paris"}, tool_call_id="call_1")])


async def measure(args) -> float:
    agent = Agent(FunctionModel(two_turn), tools=[get_forecast])

    async def run() -> None:
        result = await agent.run(PROMPT)
        assert result.output == ANSWER, result.output

    # the tool really ran and its return went back to the model
    result = await agent.run(PROMPT)
    returns = [p for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
    assert [r.content for r in returns] == [OBSERVATION], returns
    return await median_of_async(run, args.iterations)


if __name__ == "__main__":
    main("pydantic_ai", measure)
