"""What every script in this folder shares: the scenario, the timing and the output protocol.

Each script is run as ``<python> <script>.py --iterations N`` in its own process and prints one JSON
line ``{"median_s": ...}`` as its last stdout line, or, on failure, one line on stderr and exit 1
(``benchmarks/sections.py`` reads the last line of either). Standard library only: this module runs
in the peers' venv, which has no bandoneon. The scripts import it as ``_protocol``: their own folder
is ``sys.path[0]`` when they are run as scripts.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

# the 2-turn scenario: the model asks for get_forecast(city="Paris"), then answers
PROMPT = "Will it rain in Paris tomorrow?"
ANSWER = "Yes: 80% chance of rain."
OBSERVATION = "Paris: rain 80%"  # the tool's output for Paris

WARMUP = 100


def get_forecast(city: str) -> str:
    """Daily forecast for one city."""
    return f"{city}: rain 80%"


def median_of(run: Callable[[], object], iterations: int, warmup: int = WARMUP) -> float:
    """Calls ``run()`` ``warmup`` times untimed, then ``iterations`` times timed; the median in seconds."""
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(iterations):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


async def median_of_async(run: Callable[[], Awaitable[object]], iterations: int, warmup: int = WARMUP) -> float:
    """``median_of`` for a coroutine function, awaited inside the running event loop."""
    for _ in range(warmup):
        await run()
    samples = []
    for _ in range(iterations):
        started = time.perf_counter()
        await run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main(name: str, measure: Callable[[argparse.Namespace], Any], options: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """Parses ``--iterations`` (and the script's own ``options``: flag -> ``add_argument`` keywords),
    runs ``measure(args)`` (a coroutine it returns is run with ``asyncio.run``), and prints the
    ``{"median_s": ...}`` line, or ``<name>: <error>`` as one line on stderr and exits 1."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=1000)
    for flag, keywords in (options or {}).items():
        parser.add_argument(flag, **keywords)
    args = parser.parse_args()
    try:
        median = measure(args)
        if inspect.iscoroutine(median):
            median = asyncio.run(median)
    except Exception as error:  # one line on stderr, non-zero exit: the suite reports it as a failure
        print(f"{name}: {type(error).__name__}: {error}".replace("\n", " ")[:300], file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"median_s": median}))
