"""Level 4 · When to stop: the star in the level.

The agent searches the ? blocks of a level for a hidden star. There are three ways out:

- the flag (``end_turn``): the model answers in text, for example "there is no star";
- the warp pipe (``terminal_tool``): the model calls ``mark_star``, a tool marked
  ``terminal=True``; the run ends right after it runs without error, and its checked input
  is the answer (``result.answer``);
- the clock (``max_turns``): the turns run out. That is a failure, not an answer: the
  result says so, and the stop plugin's wrap-up asks the model once, tools off, for its best
  guess so the partial work is not lost.

Run it against any model (``BANDONEON_MODEL``, ``bandoneon.toml``, or a local one)::

    python examples/level_04_when_to_stop.py                 # usually the warp pipe
    python examples/level_04_when_to_stop.py --max-turns 1   # the clock runs out
"""

from __future__ import annotations

import argparse
from typing import Annotated, Literal

import bandoneon
from bandoneon_stop import StopRules

# The level: what each ? block hides, area by area. In a real game this reads the world state.
LEVEL = {
    "ground": {1: "a coin", 2: "a mushroom", 3: "nothing"},
    "sky": {4: "a coin", 5: "a coin", 6: "the star"},
    "underground": {7: "a coin", 8: "nothing"},
}

# The markers placed on the level map (the app's side effect of the warp pipe).
MAP_MARKERS: list[int] = []


@bandoneon.tool
def search_blocks(area: Annotated[str, "one of: ground, sky, underground"]) -> str:
    """Search the ? blocks in one area of the level. Returns what each block hides."""
    blocks = LEVEL.get(area.strip().lower())
    if blocks is None:
        raise bandoneon.ToolError(f"There is no area called {area!r}. The areas are: {', '.join(LEVEL)}.")
    return "; ".join(f"block {number}: {content}" for number, content in blocks.items())


@bandoneon.tool(terminal=True)
def mark_star(item: Literal["star"], block: Annotated[int, "the number of the block that hides the star"]) -> str:
    """Put a marker on the level map where the star is. Call it once, at the end."""
    if not any(LEVEL[area].get(block) == "the star" for area in LEVEL):
        raise bandoneon.ToolError(f"Block {block} does not hide the star. Search the areas first and mark the block that does.")
    MAP_MARKERS.append(block)
    return f"Marker placed on block {block}."


def build_agent(model: str | bandoneon.Provider | None = None, *, max_turns: int = 10) -> bandoneon.Agent:
    return bandoneon.Agent(
        model,
        tools=[search_blocks, mark_star],
        system_prompt="You explore a platform game level. When you know where the star is, deliver it with mark_star.",
        max_turns=max_turns,  # the clock: size it to the task
        plugins=[StopRules(permission_to_give_up=True, wrap_up_on=["max_turns"])],
    )


def main(model: str | bandoneon.Provider | None = None, *, max_turns: int = 10) -> bandoneon.RunResult:
    result = build_agent(model, max_turns=max_turns).run_sync("Is there a hidden star in this level?")
    if result.stop == "terminal_tool":
        print(f"Warp pipe: the star is in block {result.answer['block']} (checked answer: {result.answer}).")
    elif result.stop == "end_turn":
        print(f"Flag: the model answered in text: {result.text}")
    else:
        # The clock is a failure, never an answer, even when the wrap-up wrote a best guess.
        print(f"No answer: the run stopped on {result.stop} ({result.detail}).")
        if result.text:
            print(f"Best effort from what was found, not an answer: {result.text}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-turns", type=int, default=10)
    main(max_turns=parser.parse_args().max_turns)
