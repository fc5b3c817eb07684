"""Typed answers: ask for an attrs class, get a checked object (or a stated failure).

The agent looks the forecast up with a tool, then answers with a ``Forecast``. On a server with
native structured output (OpenAI, vLLM, Ollama, llama.cpp without tools) the answer is kept to a
JSON schema; elsewhere the model gets a ``final_answer`` tool. An answer that does not fit goes
back to the model with the field named, up to ``output_retries`` times.
"""

from __future__ import annotations

from typing import Literal

import attrs

import bandoneon


@attrs.frozen
class Forecast:
    """Tomorrow's weather in one city.

    Args:
        city: the city name
        rain_chance: chance of rain in percent, 0-100
        advice: what to bring
    """

    city: str
    rain_chance: int
    advice: Literal["umbrella", "sunglasses", "nothing"]


@bandoneon.tool
def get_forecast(city: str) -> str:
    """Tomorrow's forecast for one city."""
    return f"{city}: 80% chance of rain, 12-18 C."


def build_agent(model=None) -> bandoneon.Agent[None, Forecast]:
    return bandoneon.Agent(
        model,
        tools=[get_forecast],
        output_type=Forecast,
        system_prompt="You are Nimbus, a weather assistant. Look the forecast up before answering.",
        max_turns=5,
        context_files=False,
    )


def main(model=None) -> bandoneon.RunResult[Forecast]:
    agent = build_agent(model)
    result = agent.run_sync("Will it rain in Buenos Aires tomorrow?")
    if result.output is not None:
        print(f"{result.output.city}: {result.output.rain_chance}% -> bring {result.output.advice}")
    print(f"how the run ended: stop={result.stop} ok={result.ok} turns={result.turns}")
    if not result.ok:
        print(f"why: {result.detail}")
    return result


if __name__ == "__main__":
    main()
