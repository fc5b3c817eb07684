"""Level 12 · Plan and reflect: the paper round on Tango Street.

The agent plans every stop before it rides (the plan goes into every request), and ticks
each task as it goes. One paper lands in the bushes; the tool says so, and the model may
tick the box anyway. The editor (your code) reviews the porches themselves before accepting
the answer, and sends what is missing back to the same agent, which keeps its history and
its plan. Rounds are capped; the result says what is still open.

Run it against any model: ``BANDONEON_MODEL=ollama:llama3.1 python examples/level_12_plan_and_reflect.py``.
"""

from __future__ import annotations

import bandoneon
from bandoneon_plan import Plan, ReflectResult, reflect_sync

SUBSCRIBERS = [12, 14, 18]


class Street:
    """The real world: which porches have a paper. The first throw at #14 lands in the bushes."""

    def __init__(self) -> None:
        self.porches: set[int] = set()
        self.throws: dict[int, int] = {}

    def throw_paper(self, house: int) -> str:
        self.throws[house] = self.throws.get(house, 0) + 1
        if house == 14 and self.throws[house] == 1:
            return "bushes"
        self.porches.add(house)
        return "porch"


def build_agent(model: str | bandoneon.Provider | None = None, street: Street | None = None) -> bandoneon.Agent:
    street = street or Street()

    @bandoneon.tool
    def deliver(house: int) -> str:
        """Ride to a house and throw today's paper onto its porch. Says where the paper landed.

        Args:
            house: the house number on Tango Street.
        """
        landed = street.throw_paper(house)
        return f"Paper on the porch at #{house}." if landed == "porch" else f"Paper landed in the bushes at #{house}."

    return bandoneon.Agent(
        model,
        system_prompt="You deliver newspapers. Plan every stop before you start, and tick each task as you go.",
        tools=[deliver],
        plugins=[Plan()],
        max_turns=20,
        context_files=False,
    )


def main(model: str | bandoneon.Provider | None = None) -> ReflectResult:
    street = Street()
    agent = build_agent(model, street)

    def review(result: bandoneon.RunResult) -> list[str]:
        """Check the world, not the plan: the porches themselves."""
        return [f"#{house} has no paper on the porch" for house in SUBSCRIBERS if house not in street.porches]

    outcome = reflect_sync(
        agent,
        f"Deliver today's paper to every subscriber on Tango Street: {', '.join(map(str, SUBSCRIBERS))}.",
        review,
        max_rounds=2,
    )
    for item in agent.plan:
        print(f"[{item.status}] {item.description}")
    print(outcome.result.text)
    print(f"review rounds: {outcome.rounds}, still open: {list(outcome.open) or 'nothing'}")
    return outcome


if __name__ == "__main__":
    main()
