"""Level 15 · Subagents: a San Telmo evening, planned by a parent and two scouts.

The parent plans evenings out. Its only tools are two scouts: each is a whole agent with its
own system prompt and its own heavy tools (listings, pages, reviews). The parent writes each
scout a brief; a fresh scout does the digging and sends back three lines. All the parent ever
reads is those lines. Both scouts are asked for in one message, so they run in parallel.

Run it against any model: ``BANDONEON_MODEL=ollama:llama3.1 python examples/level_15_subagents.py``.
"""

from __future__ import annotations

import bandoneon
from bandoneon_subagents import subagent

# The scouts' own tools: the heavy ones. In a real app they call an events API and read pages.
EVENTS = {
    "San Telmo": [
        ("La Catedral del Tango", "Defensa 1200", "Saturday 22:00-03:00", "A big, warm milonga with a live orquesta. " * 20),
        ("Milonga del Zaguán", "Bolívar 900", "Saturday 21:00-01:00", "Small and friendly, beginners' class at 20:00. " * 20),
    ]
}
PLACES = {
    "Defensa": [
        ("El Desnivel", "Defensa 855", "open 12:00-00:30", "Classic parrilla, crowded on weekends. " * 20),
        ("Café San Juan", "Av. San Juan 450", "open 19:30-23:30", "Tapas and fish, book ahead. " * 20),
    ]
}


@bandoneon.tool
def search_events(neighborhood: str, date: str) -> str:
    """Search tango events by neighborhood and date. Returns every match with its blurb.

    Args:
        neighborhood: a Buenos Aires neighborhood, e.g. "San Telmo".
        date: a day, e.g. "Saturday".
    """
    found = [e for e in EVENTS.get(neighborhood, []) if date.lower() in e[2].lower()]
    return "\n\n".join(f"{name} — {address} — {times}\n{blurb}" for name, address, times, blurb in found) or "No events found."


@bandoneon.tool
def search_places(near: str) -> str:
    """Search restaurants near a street, with their opening hours and reviews.

    Args:
        near: a street name, e.g. "Defensa".
    """
    found = PLACES.get(near, [])
    return "\n\n".join(f"{name} — {address} — {hours}\n{reviews}" for name, address, hours, reviews in found) or "Nothing found."


def build_agent(model: str | bandoneon.Provider | None = None) -> bandoneon.Agent:
    """The parent: two scouts as tools, and nothing else."""
    milonga_scout = subagent(
        "milonga_scout",
        "Finds tango events (milongas) in Buenos Aires.",
        model=model,
        system_prompt="You find milongas in Buenos Aires. Reply in 3 lines: name, address, times. No lists, no links.",
        tools=[search_events],
        max_turns=6,
    )
    food_scout = subagent(
        "food_scout",
        "Finds places to eat in Buenos Aires.",
        model=model,
        system_prompt="You find restaurants in Buenos Aires. Reply in 3 lines: name, address, why.",
        tools=[search_places],
        max_turns=6,
    )
    return bandoneon.Agent(
        model,
        system_prompt="You plan evenings out. Send the scouts out with a clear brief each, then put their answers together.",
        tools=[milonga_scout, food_scout],
        max_turns=6,
        context_files=False,
    )


def main(model: str | bandoneon.Provider | None = None) -> bandoneon.RunResult:
    agent = build_agent(model)
    result = agent.run_sync(
        "I'm staying in San Telmo. Find me a milonga for Saturday night, and somewhere to eat nearby before it."
    )
    print(result.text)
    print(f"[{result.stop}, {result.turns} turns, {result.usage.total_tokens} tokens including both scouts]")
    return result


if __name__ == "__main__":
    main()
