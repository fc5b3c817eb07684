"""smolagents' side of the peer comparison: the 2-turn run through ``ToolCallingAgent.run`` on an
in-process fake model, timed as called (smolagents is synchronous). Prints {"median_s": ...} last.

The fake model is a ``smolagents.models.Model`` subclass whose ``generate`` returns a
``ChatMessage`` with a get_forecast tool call, then, once the tool's observation is the last message,
a ``final_answer`` tool call: a ToolCallingAgent's run ends only through that tool, so the second
turn is smolagents' way of saying "here is the answer" (its own tests' fake models do the same).
"""

from __future__ import annotations

import os

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

from smolagents import ToolCallingAgent, tool
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model
from smolagents.monitoring import LogLevel, TokenUsage

import _protocol
from _protocol import ANSWER, OBSERVATION, PROMPT, main, median_of


@tool
def get_forecast(city: str) -> str:
    """Daily forecast for one city.

    Args:
        city: The city to forecast.
    """
    return _protocol.get_forecast(city)


def _call(name: str, arguments: dict, call_id: str) -> ChatMessage:
    # built fresh each time: the agent rewrites the arguments of the message it is given
    return ChatMessage(
        role=MessageRole.ASSISTANT,
        content=None,
        tool_calls=[ChatMessageToolCall(function=ChatMessageToolCallFunction(name=name, arguments=arguments), id=call_id, type="function")],
        token_usage=TokenUsage(input_tokens=10, output_tokens=5),
    )


class TwoTurnModel(Model):
    """Asks for get_forecast, then answers (through final_answer) once the observation came back."""

    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs) -> ChatMessage:
        last = messages[-1]
        if last.role == MessageRole.TOOL_RESPONSE:
            assert OBSERVATION in last.content[0]["text"], last
            return _call("final_answer", {"answer": ANSWER}, "call_2")
        return _call("get_forecast", {"city": "Paris"}, "call_1")


def measure(args) -> float:
    agent = ToolCallingAgent(tools=[get_forecast], model=TwoTurnModel(model_id="bench"), verbosity_level=LogLevel.OFF, max_steps=4)

    def run() -> None:
        result = agent.run(PROMPT)
        assert result == ANSWER, result

    run()
    steps = [step for step in agent.memory.steps if getattr(step, "observations", None)]
    assert [step.observations for step in steps][:1] == [OBSERVATION], agent.memory.steps  # the tool really ran
    return median_of(run, args.iterations)


if __name__ == "__main__":
    main("smolagents", measure)
