"""Level 11 — Observability and evals: the golf course, traced, and its three holes as an eval.

The caddie (the model) reads the hole and picks a club; the clubs (tools) ``drive``, ``iron``
and ``putt`` move the ball. First we play hole 3 with the tracing plugin on and print the
timeline (a red ``!`` bar is a ball in the water). Then the marshal (``run_eval``) hands the
three holes to a fresh golfer each and stamps the scorecard with the level's scorers: did it
hole out (contains), with the expected clubs (trajectory, ordered subset), at or under par
(our own check). Last, a golfer's bug report grows the dataset: the run traced with the club
maker's first putter (it measured from the tee, not the pin) becomes a regression case with
``add_case`` (``bandoneon eval add-case TRACE --to DATASET.jsonl --expect tool_errors=0`` on the
command line), its trace kept as the evidence. Replayed, the case fails with the old putter and
passes with the fixed one; a replay repeats the recorded shots, so it checks our clubs, not the
caddie.

Run it against any model: ``BANDONEON_MODEL=ollama:llama3.1 python examples/level_11_observability.py``.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import attrs

import bandoneon
from bandoneon_evals import Case, Report, Sample, Score, add_case, contains, custom, evaluate, replay_model, tool_errors, trajectory
from bandoneon_tracing import Tracing, read_jsonl, render_text

GREEN = 20  # metres: close enough to putt


@attrs.frozen
class Hole:
    number: int
    par: int
    length: int
    water: tuple[int, int] | None = None  # a band of water across the fairway, in metres from the tee

    @property
    def prompt(self) -> str:
        hazard = f" Water crosses the fairway from {self.water[0]} m to {self.water[1]} m." if self.water else ""
        return f"Hole {self.number}: par {self.par}, {self.length} m to the pin.{hazard} Play it out and report your score as 'Holed out in N'."


HOLES = [
    Hole(1, 3, 150),
    Hole(2, 4, 360),
    Hole(3, 4, 330, water=(180, 260)),
]

DATASET = [
    Case("hole-1", HOLES[0].prompt, {"par": 3, "tools": ["iron", "putt"], "contains": "Holed out"}),
    Case("hole-2", HOLES[1].prompt, {"par": 4, "tools": ["drive", "iron", "putt"], "contains": "Holed out"}),
    # Lay up short of the water: a driver finds it.
    Case("hole-3", HOLES[2].prompt, {"par": 4, "tools": ["iron", "iron", "putt"], "contains": "Holed out"}),
]


def golf_tools(hole: Hole, *, first_putter: bool = False) -> list[bandoneon.Tool]:
    """The clubs, bound to one ball on one hole (a fresh set per agent: no shared state).

    ``first_putter`` hands out the club maker's first putter, which measured from the tee."""
    ball = {"position": 0, "strokes": 0, "holed": False}

    def swing(club: str, meters: int, longest: int) -> str:
        if ball["holed"]:
            raise bandoneon.ToolError("The ball is already in the hole. Report the score.")
        ball["strokes"] += 1
        shot = min(max(meters, 1), longest)
        landing = ball["position"] + shot
        if hole.water and hole.water[0] <= landing < hole.water[1]:
            ball["strokes"] += 1  # penalty stroke; play again from where the ball was
            raise bandoneon.ToolError(
                f"Splash: the {club} landed in the water at {landing} m. One penalty stroke; "
                f"you play again from {ball['position']} m. Strokes: {ball['strokes']}."
            )
        # A full shot never drops in: it stops at least 3 m from the pin.
        ball["position"] = landing if abs(hole.length - landing) >= 3 else hole.length - 3
        left = abs(hole.length - ball["position"])
        where = "on the green" if left <= GREEN else "on the fairway"
        return f"The {club} flew {shot} m. Ball {where}, {left} m to the pin. Strokes: {ball['strokes']}."

    @bandoneon.tool
    def drive(meters: int) -> str:
        """Hit the driver: long (up to 250 m) but hard to stop short of a hazard.

        Args:
            meters: how far to hit, in metres
        """
        return swing("drive", meters, 250)

    @bandoneon.tool
    def iron(meters: int) -> str:
        """Hit an iron: accurate, up to 160 m. Use it to lay up short of water or to reach the green.

        Args:
            meters: how far to hit, in metres
        """
        return swing("iron", meters, 160)

    @bandoneon.tool
    def putt() -> str:
        """Putt: holes the ball from the green (20 m or closer to the pin)."""
        if ball["holed"]:
            raise bandoneon.ToolError("The ball is already in the hole. Report the score.")
        left = ball["position"] if first_putter else abs(hole.length - ball["position"])
        if left > GREEN:
            raise bandoneon.ToolError(f"Too far to putt: {left} m to the pin. Use an iron to reach the green.")
        ball["strokes"] += 1
        ball["holed"] = True
        return f"In the hole! Holed out in {ball['strokes']}."

    return [drive, iron, putt]


def build_agent(model: str | bandoneon.Provider | None = None, *, hole: Hole = HOLES[2], plugins: list[object] | None = None, first_putter: bool = False) -> bandoneon.Agent:
    return bandoneon.Agent(
        model,
        tools=golf_tools(hole, first_putter=first_putter),
        system_prompt="You are a golf caddie. Pick one club per shot, read where the ball landed, and finish the hole. Then say 'Holed out in N'.",
        plugins=plugins if plugins is not None else [],
        max_turns=10,
        context_files=False,
        name="golfer",
    )


def strokes_in(output: str) -> float:
    match = re.search(r"in (\d+)", output)
    return int(match.group(1)) if match else float("inf")


def at_or_under_par(sample: Sample) -> Score:
    """Our own check: the score the golfer reported is at or under the hole's par."""
    strokes, par = strokes_in(sample.output), sample.case.expected["par"]
    return Score("par", 1.0 if strokes <= par else 0.0, strokes <= par, f"{strokes} strokes on a par {par}")


SCORERS = [contains("Holed out"), trajectory(mode="ordered"), custom(at_or_under_par, name="par")]


def make_golfer_for(model: str | bandoneon.Provider | None):
    """The marshal's factory: a fresh golfer per case, on that case's hole."""

    def make_agent(case: Case) -> bandoneon.Agent:
        hole = HOLES[int(case.id.split("-")[1]) - 1]
        return build_agent(model, hole=hole)

    return make_agent


def main(model: str | bandoneon.Provider | None = None) -> Report:
    # 1. SEE one run: hole 3, traced to a JSONL file, then shown as a timeline.
    trace_file = Path(tempfile.mkdtemp(prefix="golf-")) / "hole-3.jsonl"
    golfer = build_agent(model, hole=HOLES[2], plugins=[Tracing(jsonl=str(trace_file))])
    result = golfer.run_sync(HOLES[2].prompt)
    print(f"hole 3: {result.text or result.stop}")
    print(render_text(read_jsonl(trace_file)))
    print(f"(trace written to {trace_file}; `bandoneon trace show {trace_file} --html golf.html` draws the waterfall)\n")

    # 2. GRADE many runs: three holes, a fresh golfer each, three scorers.
    report: Report = evaluate(DATASET, make_golfer_for(model), SCORERS, concurrency=3, progress=sys.stderr.isatty(), name="golf")
    print(report.table())

    # 3. GROW the dataset: a golfer says the putter never works on hole 1. Their traced run
    #    becomes a regression case, with the trace as the evidence.
    bug_trace = trace_file.with_name("bug-report.jsonl")
    build_agent(model, hole=HOLES[0], plugins=[Tracing(jsonl=str(bug_trace))], first_putter=True).run_sync(HOLES[0].prompt)
    regressions = trace_file.with_name("regressions.jsonl")
    case = add_case(bug_trace, regressions, expect={"tool_errors": 0}, case_id="putter-on-hole-1")
    print(f"case {case.id!r} added to {regressions}; evidence: trace {case.metadata['evidence']['trace_id']}")
    for label, first_putter in (("the first putter", True), ("the fixed putter", False)):
        replayed = evaluate(
            regressions, lambda case, first_putter=first_putter: build_agent(replay_model(case), hole=HOLES[0], first_putter=first_putter), [tool_errors()], progress=False, name="regressions"
        )
        print(f"regression case with {label}: pass rate {replayed.pass_rate:.0%}")
    return report


__all__ = ["DATASET", "HOLES", "SCORERS", "build_agent", "golf_tools", "main", "make_golfer_for"]

if __name__ == "__main__":
    main()
