"""Level 9 · Memory: the coffee roaster that remembers a regular.

Two days, two sessions. Each session is a fresh agent: the history (the bandoneón) starts
empty every morning. Only the diary carries over: `remember` saves a note with its embedding
under the customer's scope, `recall` finds it by meaning the next day, even though "the same
as last time" shares no words with "1 kg Colombia".

The customer's id reaches the memory through `deps`, never through the model's arguments:
one diary per customer, checked on every call.

Run it with a model (`BANDONEON_MODEL=...`) and an embedder: the local one
(`pip install 'bandoneon-memory[local]'`) or `BANDONEON_EMBEDDER=openai-compatible:MODEL@URL`.
Notes go to `$BANDONEON_MEMORY_PATH` (default ~/.bandoneon/memory.sqlite3); list or delete
them with `bandoneon memory list --scope c-2291`.
"""

from __future__ import annotations

import os
import zlib
from typing import Annotated, Literal

import bandoneon
from bandoneon_memory import Memory

CUSTOMER = "c-2291"

SYSTEM = (
    "You are the shop assistant of a coffee roaster. When a customer tells you something worth keeping "
    "(what they buy, how they like it, where it ships), save it with remember: one fact per note, not the "
    "whole chat. If they refer to the past, use recall first; if nothing matches well, ask instead of guessing."
)


@bandoneon.tool(capabilities={"changes_world"})
def place_order(
    origin: Annotated[str, "The coffee, e.g. 'Colombia'"],
    kilos: Annotated[float, "How many kilos"],
    grind: Annotated[Literal["whole bean", "espresso", "moka", "filter", "french press"], "How to grind it"],
    ship_to: Annotated[str, "The city to ship to"],
) -> str:
    """Roast, grind and ship an order. Returns the order number."""
    number = zlib.crc32(f"{origin}|{kilos}|{grind}|{ship_to}".encode()) % 10000
    return f"Order R-{number:04d}: {kilos:g} kg {origin}, {grind}, to {ship_to}."


def build_agent(model=None) -> bandoneon.Agent:
    """One day's session: a fresh history, the shared diary."""
    memory = Memory(embedder=os.environ.get("BANDONEON_EMBEDDER"), top_k=3, min_score=0.2)
    return bandoneon.Agent(model, tools=[place_order], system_prompt=SYSTEM, plugins=[memory], max_turns=10, context_files=False)


def main(model=None) -> bandoneon.RunResult:
    monday = build_agent(model)
    first = monday.run_sync("Hi! A kilo of Colombia, ground for a moka pot, shipped to Rosario.", deps={"memory_scope": CUSTOMER})
    print("Monday:", first.text)

    tuesday = build_agent(model)  # the Eraser Wraith came: a new session, an empty history
    second = tuesday.run_sync("Hi again! Send me the same as last time.", deps={"memory_scope": CUSTOMER})
    print("Tuesday:", second.text)
    return second


if __name__ == "__main__":
    main()
