"""Instructions per operation, counted by valgrind: a figure that does not drift with the machine.

    python benchmarks/instructions.py                      # every figure
    python benchmarks/instructions.py default newagent     # some of them

Timings on a shared VM drift by 2x within minutes; the number of instructions the interpreter
executes for an operation does not (hash seed fixed). Each figure is the difference between a
process doing the operation ``--runs`` more times and one doing it only for the warm-up, divided
by ``--runs``, so start-up and imports cancel out. Compare two versions of the code by running this
in each checkout. Needs valgrind (not part of the default test run; slow: about a minute a figure).

Figures: ``create`` (an agent with the default plugins), ``newagent`` (create one and run the
2-turn run), ``default`` / ``none`` (the 2-turn run on a reused agent with the default plugins /
none), ``gated`` (the plugins the gate measures alone, together: ``gate.PLUGINS_ALONE``), or plugin names joined with ``+``.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIGURES = ("create", "newagent", "default", "none", "gated")
WARMUP = 20

_CHILD = """
import asyncio, os, sys
sys.path.insert(0, {here!r})
os.environ.setdefault("BANDONEON_DISABLED_PLUGINS", "policy-example")
import bandoneon, scenarios
from gate import PLUGINS_ALONE
what, count = sys.argv[1], int(sys.argv[2])

def plugin(name):
    return bandoneon.build_plugin(bandoneon.load_plugin(name))

async def main():
    if what == "create":
        for _ in range(count):
            scenarios.bandoneon_agent(None)
        return
    if what == "newagent":
        for _ in range(count):
            await scenarios.bandoneon_run(scenarios.bandoneon_agent(None))
        return
    plugins = None if what == "default" else [] if what == "none" else [plugin(p) for p in (PLUGINS_ALONE if what == "gated" else what.split("+"))]
    agent = scenarios.bandoneon_agent(plugins)
    for _ in range(count):
        await scenarios.bandoneon_run(agent)

asyncio.run(main())
"""


def instructions(figure: str, count: int) -> int:
    """Instructions valgrind counted for a process doing ``figure`` ``count`` times."""
    with tempfile.TemporaryDirectory() as folder:
        child = Path(folder) / "child.py"
        child.write_text(_CHILD.format(here=str(HERE)))
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={folder}/out", sys.executable, str(child), figure, str(count)],
            env=dict(os.environ, PYTHONHASHSEED="0"),
            capture_output=True,
            text=True,
            cwd=folder,
        )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or found is None:
        raise SystemExit(f"{figure}: the measured process failed:\n{done.stderr[-3000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("figures", nargs="*", default=list(FIGURES))
    parser.add_argument("--runs", type=int, default=200, help="operations counted per figure (default 200)")
    options = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: apt install valgrind")
    print("| figure | instructions per operation |\n|---|---|")
    with ThreadPoolExecutor(2) as pool:
        for figure in options.figures:
            warm, measured = pool.map(functools.partial(instructions, figure), (WARMUP, WARMUP + options.runs))
            print(f"| {figure} | {(measured - warm) / options.runs / 1000:,.1f} k |", flush=True)


if __name__ == "__main__":
    main()
