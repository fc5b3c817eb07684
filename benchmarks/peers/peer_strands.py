"""Strands Agents' side of the peer comparison: the 2-turn run through ``Agent.invoke_async`` on an
in-process fake model provider, awaited inside one running event loop. Prints {"median_s": ...} last.

The fake model is a ``strands.models.Model`` subclass (a custom model provider) whose ``stream``
yields ConverseStream-style events: a toolUse block for get_forecast (stopReason ``tool_use``), then,
once the toolResult is the last message, a text block with the answer (stopReason ``end_turn``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("STRANDS_OTEL_ENABLE_CONSOLE_EXPORT", "false")
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

from typing import Any

from strands import Agent, tool
from strands.models import Model

import _protocol
from _protocol import ANSWER, OBSERVATION, PROMPT, main, median_of_async


@tool
def get_forecast(city: str) -> str:
    """Daily forecast for one city.

    Args:
        city: The city to forecast.
    """
    return _protocol.get_forecast(city)


def _metadata(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    usage = {"inputTokens": input_tokens, "outputTokens": output_tokens, "totalTokens": input_tokens + output_tokens}
    return {"metadata": {"usage": usage, "metrics": {"latencyMs": 0}}}


def _tool_use_events() -> list[dict[str, Any]]:
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"start": {"toolUse": {"name": "get_forecast", "toolUseId": "call_1"}}}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"city": "Paris"}'}}}},
        {"contentBlockStop": {}},
        {"messageStop": {"stopReason": "tool_use"}},
        _metadata(10, 5),
    ]


def _answer_events() -> list[dict[str, Any]]:
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"start": {}}},
        {"contentBlockDelta": {"delta": {"text": ANSWER}}},
        {"contentBlockStop": {}},
        {"messageStop": {"stopReason": "end_turn"}},
        _metadata(20, 8),
    ]


class TwoTurnModel(Model):
    """Asks for get_forecast, then answers once the tool's result is the last message."""

    def __init__(self) -> None:
        self.config: dict[str, Any] = {"model_id": "bench"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):
        raise NotImplementedError("the benchmark asks for no structured output")

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs):
        results = [block["toolResult"] for block in messages[-1]["content"] if "toolResult" in block]
        if results:
            assert results[0]["content"][0]["text"] == OBSERVATION, results
            events = _answer_events()
        else:
            events = _tool_use_events()
        for event in events:
            yield event


async def measure(args) -> float:
    agent = Agent(model=TwoTurnModel(), tools=[get_forecast], callback_handler=None)

    async def run() -> None:
        agent.messages.clear()
        result = await agent.invoke_async(PROMPT)
        assert str(result).strip() == ANSWER, str(result)
        assert result.stop_reason == "end_turn", result.stop_reason

    await run()
    assert len(agent.messages) == 4, agent.messages  # user, toolUse, toolResult, answer: the tool really ran
    return await median_of_async(run, args.iterations)


if __name__ == "__main__":
    main("strands", measure)
