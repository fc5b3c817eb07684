"""Level 3, designing a tool: the model only reads the card.

Crooky's do_stuff next to the two tools the Oracle used in the battle. Run
`bandoneon tools check examples/level_03_designing_a_tool.py` to see the review: the cards are
read, and the tools that declare ``examples=`` are run on them and their results measured.
Crooky's type_chart returns the whole chart when one line would do: the check says how much of
the window it takes and how to shrink it. Any function can be measured on the spot too:
`bandoneon tools check --sample examples/level_03_designing_a_tool.py:check_matchup '{"attack": "grass", "defend": "water"}'`.
"""

from __future__ import annotations

from typing import Annotated, Literal

import bandoneon

TYPES = ("water", "grass", "fire", "electric", "rock")
CHART = {("grass", "water"): 2.0, ("electric", "water"): 2.0, ("fire", "water"): 0.5, ("water", "fire"): 2.0}
#: Every type of the full game, for Crooky's chart.
ALL_TYPES = TYPES + ("normal", "ice", "fighting", "poison", "ground", "flying", "psychic", "bug", "ghost", "dragon", "dark", "steel", "fairy")


@bandoneon.tool
def do_stuff(x: str) -> str:
    """Does stuff."""
    return "ok"


@bandoneon.tool(examples=[{}])
def type_chart() -> str:
    """The whole type chart: every attack type against every defending type, with its factor and a note."""
    return "\n".join(
        f"{attack} attacking {defend}: {CHART.get((attack, defend), 1.0):g}x damage (see the rules for dual types and abilities)"
        for attack in ALL_TYPES
        for defend in ALL_TYPES
    )


@bandoneon.tool
def identify_wild(creature: Annotated[str, "The creature's name as shown on screen, like Splashy"]) -> str:
    """Identify a wild creature: returns its one lowercase type, like water. Call it before check_matchup."""
    return {"splashy": "water"}.get(creature.lower(), "rock")


@bandoneon.tool(examples=[{"attack": "grass", "defend": "water"}])
def check_matchup(
    attack: Annotated[Literal["water", "grass", "fire", "electric", "rock"], "The attacking type, one lowercase type"],
    defend: Annotated[str, "The defending type: one lowercase type, like water (from identify_wild)"],
) -> str:
    """How effective one attack type is against one defending type. Returns one line, like 'grass vs water: 2x'."""
    if defend not in TYPES:
        raise bandoneon.ToolError(f"defend must be one lowercase type, like water (got {defend!r}). Call identify_wild to get it.")
    factor = CHART.get((attack, defend), 1.0)
    verdict = "super effective" if factor > 1 else "not very effective" if factor < 1 else "normal"
    return f"{attack} vs {defend}: {factor:g}x, {verdict}"


def build_agent(model=None) -> bandoneon.Agent:
    return bandoneon.Agent(
        model,
        tools=[identify_wild, check_matchup],
        system_prompt="You advise a trainer which partner to send in: grass, fire or electric.",
        context_files=False,
        max_turns=6,
    )


def main(model=None) -> bandoneon.RunResult:
    result = build_agent(model).run_sync("A wild Splashy blocks the path. Which partner do I send in?")
    print(f"{result.text}  [stop={result.stop}]")
    return result


if __name__ == "__main__":
    main()
