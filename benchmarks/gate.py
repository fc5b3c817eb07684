"""The performance gate: the main figures as ratios to the bare loop, checked against a baseline.

    python benchmarks/gate.py             # measure, compare with benchmarks/baseline.json; exit 1 on a regression
    python benchmarks/gate.py --update    # measure and rewrite the baseline (say so in the commit message)

Every figure is a ratio to the bare level-2 loop measured in the same process, contenders
interleaved round by round (``timing.compare_async``), so a slow machine moves both sides. A
figure fails when its ratio is more than ``--tolerance`` (1.5) times its baseline ratio; a failing
figure is measured once more before the gate says so, because one noisy stretch of a shared
machine must not fail CI. Absolute times are printed for the reader, never compared.

It runs in under a minute and is part of the default ``tox`` run (env ``bench-gate``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "baseline.json"
sys.path.insert(0, str(HERE))
os.environ.setdefault("BANDONEON_DISABLED_PLUGINS", "policy-example")

import bandoneon  # noqa: E402
import scenarios  # noqa: E402
from timing import compare_async, us  # noqa: E402

FLOOR = "bare loop"
# Plugins measured alone (each added to an agent with no other plugin). Sessions is I/O-bound:
# its figure is dominated by fdatasync, which this gate does not judge (RESULTS.md does).
PLUGINS_ALONE = ("compaction", "guard", "plan", "skills", "stop", "retry", "subagents", "tracing")

Contender = Callable[[], Awaitable[Any]]


def _plugin(name: str) -> object | None:
    """A fresh instance of an installed plugin with its default options, or None if not installed."""
    if name not in bandoneon.installed_plugins():
        return None
    return bandoneon.build_plugin(bandoneon.load_plugin(name))


async def _new_agent_run() -> None:
    agent = scenarios.bandoneon_agent(None)
    result = await agent.run(scenarios.PROMPT)
    assert result.text == scenarios.ANSWER, result


async def _agent_creation() -> None:
    scenarios.bandoneon_agent(None)


def contenders() -> dict[str, Contender]:
    """The figures the gate watches, by name; the bare loop is the floor they are divided by."""
    defaults = scenarios.bandoneon_agent(None)
    no_plugins = scenarios.bandoneon_agent([])
    found: dict[str, Contender] = {
        FLOOR: scenarios.bare_loop,
        "2-turn run, default plugins": lambda: scenarios.bandoneon_run(defaults),
        "2-turn run, no plugins": lambda: scenarios.bandoneon_run(no_plugins),
        "new agent per run, default plugins": _new_agent_run,
        "agent creation, default plugins": _agent_creation,
    }
    everything = [p for p in (_plugin(n) for n in PLUGINS_ALONE) if p is not None]
    if everything:
        together = scenarios.bandoneon_agent(everything)
        found["2-turn run, the gated plugins together"] = lambda: scenarios.bandoneon_run(together)
    for name in PLUGINS_ALONE:
        plugin = _plugin(name)
        if plugin is not None:
            agent = scenarios.bandoneon_agent([plugin])
            found[f"2-turn run, {name} alone"] = lambda agent=agent: scenarios.bandoneon_run(agent)
    return found


async def measure(names: list[str] | None = None, *, iterations: int = 300, rounds: int = 5) -> dict[str, tuple[float, float]]:
    """``{figure: (ratio to the bare loop, median seconds)}`` for ``names`` (default: all)."""
    every = contenders()
    chosen = {name: every[name] for name in (names or list(every)) if name in every}
    chosen[FLOOR] = every[FLOOR]
    comparison = await compare_async(chosen, iterations=iterations, rounds=rounds, warmup=50)
    return {name: (comparison.ratio(name, FLOOR), comparison.median(name)) for name in chosen if name != FLOOR}


def _verdicts(figures: dict[str, tuple[float, float]], baseline: dict[str, float], tolerance: float) -> dict[str, str]:
    """Each figure's verdict: "ok", "regressed ...", or "new" (no baseline yet)."""
    verdicts = {}
    for name, (ratio, _) in figures.items():
        base = baseline.get(name)
        if base is None:
            verdicts[name] = "new (not in the baseline)"
        elif ratio > base * tolerance:
            verdicts[name] = f"REGRESSED: {ratio / base:.2f}× the baseline (limit {tolerance}×)"
        else:
            verdicts[name] = "ok"
    return verdicts


def _table(figures: dict[str, tuple[float, float]], baseline: dict[str, float], verdicts: dict[str, str]) -> str:
    rows = ["| figure | median | ratio to the bare loop | baseline ratio | verdict |", "|---|---|---|---|---|"]
    for name, (ratio, seconds) in figures.items():
        base = baseline.get(name)
        rows.append(f"| {name} | {us(seconds)} | {ratio:.1f}× | {f'{base:.1f}×' if base else '—'} | {verdicts.get(name, '')} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update", action="store_true", help="rewrite benchmarks/baseline.json with this run's ratios")
    parser.add_argument("--tolerance", type=float, default=1.5, help="a ratio this many times its baseline fails (default 1.5)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)  # plugins that write (traces, sessions) write into a throwaway folder
        figures = asyncio.run(measure())
        if args.update:
            BASELINE.write_text(json.dumps({name: round(ratio, 2) for name, (ratio, _) in figures.items()}, indent=2) + "\n")
            print(_table(figures, {}, {}))
            print(f"\nbaseline written to {BASELINE.relative_to(HERE.parent)}: commit it with a message that says the baseline moved, and why.")
            return 0
        baseline = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
        verdicts = _verdicts(figures, baseline, args.tolerance)
        failing = [name for name, verdict in verdicts.items() if verdict.startswith("REGRESSED")]
        if failing:  # one noisy stretch must not fail CI: measure the failing figures again, longer
            print(f"re-measuring {len(failing)} figure(s) that look slower: {', '.join(failing)}", file=sys.stderr)
            figures.update(asyncio.run(measure(failing, iterations=600, rounds=7)))
            verdicts = _verdicts(figures, baseline, args.tolerance)
    print(_table(figures, baseline, verdicts))
    missing = sorted(set(baseline) - set(figures))
    if missing:
        print(f"\nnot measured (plugin not installed): {', '.join(missing)}")
    regressed = [name for name, verdict in verdicts.items() if verdict.startswith("REGRESSED")]
    if regressed:
        print(f"\nperformance gate FAILED: {', '.join(regressed)}", file=sys.stderr)
        return 1
    print("\nperformance gate passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
