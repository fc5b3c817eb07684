"""Level 12 · Plan and reflect: the paper round on Tango Street.

The agent plans every stop before it rides (the plan goes into every request), and ticks
each task as it goes. One paper lands in the bushes; the tool says so, and the model may
tick the box anyway. The editor (your code) reviews the porches themselves before accepting
the answer, and sends what is missing back to the same agent, which keeps its history and
its plan. Rounds are capped; the result says what is still open.

Then the round nobody can finish: the gate at #18 is locked, so no throw reaches its porch and
the review can never pass. When the rounds run out, the work goes to a person (level 13)
through the human plugin's approval channel (``Plan(escalate=True)``, or ``reflect(...,
on_exhausted="human")``): they accept it as it is, or answer with a correction ("leave it in the
mailbox") that the agent gets as one more round.

Run it against any model: ``BANDONEON_MODEL=ollama:llama3.1 python examples/level_12_plan_and_reflect.py``.
"""

from __future__ import annotations

from typing import Any, Literal

import bandoneon
from bandoneon_plan import Plan, ReflectResult, reflect_sync

SUBSCRIBERS = [12, 14, 18]


class Street:
    """The real world: which porches have a paper. The first throw at #14 lands in the bushes."""

    def __init__(self, locked_gates: tuple[int, ...] = ()) -> None:
        self.porches: set[int] = set()
        self.mailboxes: set[int] = set()
        self.throws: dict[int, int] = {}
        self.locked_gates = locked_gates

    def throw_paper(self, house: int, where: str = "porch") -> str:
        if where == "mailbox":
            self.mailboxes.add(house)
            return "mailbox"
        self.throws[house] = self.throws.get(house, 0) + 1
        if house in self.locked_gates or (house == 14 and self.throws[house] == 1):
            return "bushes"
        self.porches.add(house)
        return "porch"

    def undelivered(self) -> list[str]:
        """The review: the porches and mailboxes themselves, not the plan."""
        return [f"#{house} has no paper on the porch" for house in SUBSCRIBERS if house not in self.porches | self.mailboxes]


def build_agent(model: str | bandoneon.Provider | None = None, street: Street | None = None, plugins: list[Any] | None = None) -> bandoneon.Agent:
    street = street or Street()

    @bandoneon.tool
    def deliver(house: int, where: Literal["porch", "mailbox"] = "porch") -> str:
        """Ride to a house and throw today's paper onto its porch (or leave it in the mailbox). Says where the paper landed.

        Args:
            house: the house number on Tango Street.
            where: porch (the subscribers' choice), or mailbox only when someone says so.
        """
        landed = street.throw_paper(house, where)
        return f"Paper landed in the bushes at #{house}." if landed == "bushes" else f"Paper in the {landed} at #{house}."

    return bandoneon.Agent(
        model,
        system_prompt="You deliver newspapers. Plan every stop before you start, and tick each task as you go.",
        tools=[deliver],
        plugins=plugins if plugins is not None else [Plan()],
        max_turns=20,
        # A paper round's answers and plan updates are short: a small model that rambles is cut
        # off (a reply costs it a fraction of a second per token), and the six runs stay quick.
        settings={"max_tokens": 96},
        context_files=False,
    )


def main(model: str | bandoneon.Provider | None = None) -> ReflectResult:
    street = Street()
    agent = build_agent(model, street)

    outcome = reflect_sync(agent, ROUND, lambda result: street.undelivered(), max_rounds=2)
    for item in agent.plugin(Plan).plan:
        print(f"[{item.status}] {item.description}")
    print(outcome.result.text)
    print(f"review rounds: {outcome.rounds}, still open: {list(outcome.open) or 'nothing'}")
    return outcome


ROUND = f"Deliver today's paper to every subscriber on Tango Street: {', '.join(map(str, SUBSCRIBERS))}."


def main_with_a_person(model: str | bandoneon.Provider | None = None, person: Any = "terminal") -> ReflectResult:
    """The gate at #18 is locked: after two rounds the editor (``person``: a human plugin channel,
    the terminal by default) accepts the round as it is or says what to do instead."""
    from bandoneon_human import Human  # the person's part needs bandoneon-human; the paper round above does not

    street = Street(locked_gates=(18,))
    agent = build_agent(model, street, plugins=[Plan(escalate=True), Human(channel=person)])
    outcome = reflect_sync(agent, ROUND, lambda result: street.undelivered(), max_rounds=2)
    for escalation in outcome.escalations:
        said = f": {escalation.correction!r}" if escalation.correction else ""
        print(f"asked a person about {list(escalation.findings)} -> {escalation.outcome}{said}")
    print(f"review rounds: {outcome.rounds}, still open: {list(outcome.open) or 'nothing'}, accepted: {outcome.accepted}")
    return outcome


if __name__ == "__main__":
    main()
    main_with_a_person()
