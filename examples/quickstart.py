"""The README's first command: an agent with one tool answers on the default model.

With nothing configured that is the embedded SmolLM2-135M (bandoneon-local): a 135M-parameter
model that shows the machinery (a tool call made, answered, a stated ending), not intelligence.
Point it at a real model with BANDONEON_MODEL / BANDONEON_BASE_URL (see the README).
"""

from __future__ import annotations

import bandoneon


@bandoneon.tool
def get_forecast(city: str, date: str) -> str:
    """Daily forecast for one city: rain chance and min/max temperature.

    Args:
        city: the city name, like Buenos Aires
        date: the day, as YYYY-MM-DD
    """
    return f"{city} on {date}: 80% chance of rain, 12-18 C."


def build_agent(model=None) -> bandoneon.Agent:
    return bandoneon.Agent(
        model,
        tools=[get_forecast],
        system_prompt="You are Nimbus, a weather assistant. Today is 2026-09-25. Use get_forecast, then answer in one short line.",
        max_turns=4,
        settings={"max_tokens": 96},
        context_files=False,
    )


def main(model=None) -> bandoneon.RunResult:
    agent = build_agent(model)
    print(f"model: {agent.provider.name}:{agent.provider.model}")
    result = agent.run_sync("What is the forecast for Buenos Aires on 2026-09-26?")
    for message in result.messages:
        if message.role == "assistant" and message.tool_calls:
            for call in message.tool_calls:
                print(f"  tool call: {call.name}({call.arguments})")
        elif message.role == "tool":
            print(f"  tool result: {message.content}")
    print(f"answer: {result.text!r}")
    print(f"how the run ended: stop={result.stop} ok={result.ok} turns={result.turns} tokens={result.usage.total_tokens}")
    return result


if __name__ == "__main__":
    main()
