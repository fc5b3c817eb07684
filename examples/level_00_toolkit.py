"""Level 0, your toolkit: a model, a system prompt, the messages, and a tool.

Nimbus the weather oracle. The agent keeps the history across runs, so the second question
("Will it rain tomorrow?") knows the city from the first.
"""

from __future__ import annotations

import bandoneon


@bandoneon.tool
def get_forecast(city: str, date: str) -> str:
    """Daily forecast for one city: rain chance and min/max temp.

    Args:
        city: the city, like Buenos Aires
        date: the day, as YYYY-MM-DD
    """
    return f"{city} {date}: rain 70%, 11-17 C"


def build_agent(model=None) -> bandoneon.Agent:
    return bandoneon.Agent(
        model,
        tools=[get_forecast],
        system_prompt="You are Nimbus, a weather assistant. Today is 2026-09-25. Answer in one short line.",
        context_files=False,
        max_turns=5,
    )


def main(model=None) -> bandoneon.RunResult:
    agent = build_agent(model)
    agent.run_sync("I'm in Buenos Aires.")
    result = agent.run_sync("Will it rain tomorrow?")
    print(result.text)
    print(f"{len(agent.messages)} messages in the history, all resent on every call")
    return result


if __name__ == "__main__":
    main()
