"""Level 1, what is an agent: the model chooses the control flow.

A villager lost the key to the village chest. The game offers two functions; the code never
says "ask the fisher, then search the oak": the model picks each step after reading the last result.
"""

from __future__ import annotations

import bandoneon

WITNESSES = {"fisher": "I saw a crow fly off with something shiny, towards the old oak."}
SPOTS = {"old oak": "In a crow's nest in the old oak: the village chest key!"}


@bandoneon.tool
def ask_villager(name: str) -> str:
    """Ask one villager what they saw. Known villagers: fisher, baker, smith."""
    return WITNESSES.get(name.lower(), f"{name} saw nothing unusual.")


@bandoneon.tool
def search_area(place: str) -> str:
    """Search one spot on the map, like the old oak, the bridge or the shop."""
    return SPOTS.get(place.lower(), f"Nothing at {place}.")


def build_agent(model=None) -> bandoneon.Agent:
    return bandoneon.Agent(
        model,
        tools=[ask_villager, search_area],
        system_prompt="You help villagers find lost things. Ask around, then search. Answer in one line.",
        context_files=False,
        max_turns=8,
    )


def main(model=None) -> bandoneon.RunResult:
    agent = build_agent(model)
    result = agent.run_sync("I lost the key to the village chest. Where is it?")
    path = [c.name for m in result.messages for c in m.tool_calls]
    print(f"path chosen by the model: {' -> '.join(path) or '(none)'}")
    print(f"{result.text}  [stop={result.stop}]")
    return result


if __name__ == "__main__":
    main()
