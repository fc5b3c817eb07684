"""Level 16 · Proactive agents: Milonga, the pocket pet, while her owner is at school.

A heartbeat checks on the pet every "two hours" (sped up here: one tick every
``interval`` seconds stands for two hours of pet time). Plain code reads the gauges on every
tick; only when one is low is the model woken, with a fixed prompt. Five ticks go by, one
wakes the model, and the owner gets exactly one beep.

Run it against any model: ``BANDONEON_MODEL=ollama:llama3.1 python examples/level_16_heartbeat.py``.
"""

from __future__ import annotations

from typing import Literal

import attrs

import bandoneon
from bandoneon_heartbeat import Heartbeat, HeartbeatReport

CHECK_PROMPT = "Check on Milonga. Take care of whatever is low, then beep her owner with one line."


@attrs.define
class Pet:
    """The pet lives in your app. Every tick, two hours go by and she gets hungrier."""

    hunger: int = 4
    happy: int = 4
    beeps: list[str] = attrs.field(factory=list)

    def time_passes(self) -> None:
        self.hunger = max(0, self.hunger - 1)

    def status(self) -> str:
        return f"hunger {self.hunger}/4 hearts, happiness {self.happy}/4 hearts, not sick, awake"


def pet_tools(pet: Pet) -> list[bandoneon.Tool]:
    def check_status() -> str:
        """Open the status screen: hunger and happiness in hearts, and whether the pet is sick or asleep."""
        return pet.status()

    def feed(food: Literal["meal", "snack"]) -> str:
        """Feed the pet a meal or a snack. A meal fills hunger; a snack only cheers it up."""
        if food == "meal":
            pet.hunger = 4
        else:
            pet.happy = min(4, pet.happy + 1)
        return f"Fed a {food}. {pet.status()}"

    def play() -> str:
        """Play the left-or-right game with the pet. Winning fills happiness."""
        pet.happy = 4
        return f"Played and won. {pet.status()}"

    def beep_owner(text: str) -> str:
        """Beep the owner with a short message. They are at school: only when something happened."""
        pet.beeps.append(text)
        return "Beeped."

    return [bandoneon.tool(f) for f in (check_status, feed, play, beep_owner)]


def build_agent(model: str | bandoneon.Provider | None = None, pet: Pet | None = None) -> bandoneon.Agent:
    return bandoneon.Agent(model, tools=pet_tools(pet or Pet()), max_turns=8, context_files=False)


def main(model: str | bandoneon.Provider | None = None, interval: float = 0.05, timeout: float | None = None) -> HeartbeatReport:
    pet = Pet()
    agent = build_agent(model, pet)
    agent.on("heartbeat_tick", lambda event: print(f"tick {event.tick}: the heartbeat woke the agent"))

    def something_is_low() -> bool:
        """Plain code, no model: while it says no, a tick costs 0 tokens."""
        pet.time_passes()  # in a real app the pet's clock runs by itself
        return pet.hunger <= 1 or pet.happy <= 1

    heartbeat = Heartbeat(
        agent,
        interval=interval,
        check_prompt=CHECK_PROMPT,
        local_condition=something_is_low,
        max_ticks=5,  # the fuses: a school day of ticks at most...
        timeout=timeout or 60 * interval,  # ...and of wall-clock time
        run_timeout=120,
    )
    report = heartbeat.run_sync()
    for outcome in report.outcomes:
        print(f"tick {outcome.tick}: {outcome.outcome}" + (f" — {outcome.text}" if outcome.text else ""))
    print(f"{report.stop}: {report.ticks} ticks, {report.woken} woke the model, {len(pet.beeps)} beep(s): {pet.beeps}")
    return report


if __name__ == "__main__":
    main()
