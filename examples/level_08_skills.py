"""Level 8 · On-demand skills: the bakery's order assistant.

Three manuals (custom-cake-order, catering-quote, allergen-info) live as SKILL.md folders.
Only their names and descriptions go in the system prompt; the model calls ``load_skill``
when a request matches one, and the recipe tells it to check the calendar before it
promises a date. ``custom-cake-order`` declares ``allowed-tools: check_calendar``, so while
it is loaded the model cannot wander off to other tools.

The skills come from the example skill pack's folder, so this script runs from a checkout.
With the pack installed (``pip install examples/skillpack-bakery``) drop ``folders=`` and
``packs=[]``: the installed pack brings the same skills.

Run with a model: ``BANDONEON_MODEL=ollama:llama3.1 python examples/level_08_skills.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import bandoneon
from bandoneon_skills import Skills

BAKERY_SKILLS = Path(__file__).resolve().parent.parent / "examples/skillpack-bakery/src/bandoneon_skillpack_bakery/skills"

PROMPT = "I need a cake for 20 people this Saturday. Chocolate, and one guest can't have nuts."

# The bakery's production calendar. In a real shop this reads the kitchen's schedule.
SLOTS = {
    ("friday", "nut-free"): "07:00-11:00 free (nut-free line bakes Friday mornings only); pickup from 16:00",
    ("friday", "regular"): "all day free; pickup from 16:00",
    ("saturday", "regular"): "full: two weddings; pickup only for existing orders",
    ("saturday", "nut-free"): "the nut-free line does not bake on Saturdays",
}


@bandoneon.tool
def check_calendar(
    day: Annotated[str, "the day to check, e.g. 'Friday'"],
    line: Annotated[Literal["regular", "nut-free"], "the production line"],
) -> str:
    """Free baking slots and pickup times for a day, per production line."""
    return SLOTS.get((day.strip().lower(), line), f"{line} line on {day}: nothing scheduled, free all day")


def build_agent(model: bandoneon.Provider | str | None = None) -> bandoneon.Agent:
    return bandoneon.Agent(
        model,
        tools=[check_calendar],
        system_prompt="You are the order assistant of a bakery. Load the matching skill before you answer.",
        plugins=[Skills(mode="on-demand", folders=[BAKERY_SKILLS], packs=[])],
        context_files=False,
        max_turns=10,
    )


def main(model: bandoneon.Provider | str | None = None) -> bandoneon.RunResult:
    agent = build_agent(model)

    @agent.on("tool_end")
    def show(event: bandoneon.ToolEnd) -> None:
        if event.call.name == "load_skill":
            print("loaded:", event.output[:60].replace("\n", " "), "...")

    result = agent.run_sync(PROMPT)
    print(result.text)
    print(f"[stop={result.stop} turns={result.turns}]")
    return result


if __name__ == "__main__":
    main()
