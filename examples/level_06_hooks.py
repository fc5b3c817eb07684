"""Level 6 · Hooks: the company's travel rules, in the loop instead of the prompt.

Two booths on the model railway: ``before_tool_execution`` lowers the barrier on
first-class tickets (the model reads why and books tourist), ``after_tool_execution``
stamps over the passenger's ID number before it joins the history. Events only watch:
the ``tool_end`` listener already sees the stamped text.

Written with a small local plugin class: a hook is just a marked method. (The same rules,
pip-installed for every agent of a company, are the ``bandoneon-policy-example`` pack.)

Hooks run on every call, so keep them fast: ``agent.profile_hooks()`` times each plugin's
booths (``bandoneon plugins --profile PROMPT`` does it for your installed plugins), and
``hook_timeout`` fails the run, naming the plugin and the hook, when an async booth hangs.

Run: ``python examples/level_06_hooks.py`` (model from bandoneon.toml / $BANDONEON_MODEL).
"""

from __future__ import annotations

import re
from typing import Any, Literal

import bandoneon

TIMETABLE = {
    "Mar del Plata": [
        {"train": 101, "departs": "08:05", "first": 42000, "tourist": 18000},
        {"train": 205, "departs": "15:40", "first": 39000, "tourist": 16500},
    ]
}


@bandoneon.tool
def find_trains(to: str, date: str) -> list[dict[str, Any]]:
    """List the trains to a destination on a date, with the fare for each class."""
    return TIMETABLE.get(to, [])


@bandoneon.tool
def book_ticket(train: int, seat_class: Literal["first", "tourist"]) -> str:
    """Book one seat on a train for the employee who is asking."""
    return f"Booked train {train}, {seat_class} class, for Ana Pérez (DNI 30.123.456). Seat 14B."


class RailwayRules:
    """Two booths: the company's rule before a tool runs, legal's rule after."""

    name = "railway-rules"

    @bandoneon.hookimpl(tryfirst=True)  # a policy decides before anything else, and before any person is asked
    def before_tool_execution(self, tool: bandoneon.Tool, arguments: dict[str, Any]) -> bandoneon.Refuse | None:
        if tool.name == "book_ticket" and arguments.get("seat_class") == "first":
            return bandoneon.Refuse("Blocked by policy: first class needs a manager's approval. Book tourist instead.")
        return None

    @bandoneon.hookimpl(tryfirst=True)  # redaction first: later rewrites never see the number
    def after_tool_execution(self, result: bandoneon.ToolResult) -> str | None:
        return re.sub(r"DNI [\d.]+", "DNI ***", result.content)


def build_agent(model: Any = None) -> bandoneon.Agent:
    agent = bandoneon.Agent(
        model,
        system_prompt="You book train tickets for the company's employees.",
        tools=[find_trains, book_ticket],
        plugins=[RailwayRules()],
        max_turns=10,
        context_files=False,
        hook_timeout=10.0,  # a booth that hangs (a database that never answers) fails the run, named
    )
    # Events only watch: by the time this fires, the hook has already stamped over the DNI.
    agent.on("tool_end", lambda e: print(f"  {e.call.name} {'error:' if e.is_error else 'ok:'} {e.output}"))
    agent.on("tool_refused", lambda e: print(f"  {e.call.name} refused: {e.reason}"))
    return agent


def main(model: Any = None) -> bandoneon.RunResult:
    agent = build_agent(model)
    profile = agent.profile_hooks()
    result = agent.run_sync("Book me the most comfortable seat to Mar del Plata on Friday.")
    print(result.text)
    print("what the booths cost in this run:")
    print(profile.table(), end="")
    return result


if __name__ == "__main__":
    main()
