"""bandoneon's side of the peer comparison, in the same protocol as the peer scripts:
prints {"median_s": ...} for the 2-turn fake-model run, awaited in a running event loop."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scenarios  # noqa: E402


async def main(iterations: int) -> float:
    agent = scenarios.bandoneon_agent(None)
    for _ in range(100):
        await scenarios.bandoneon_run(agent)
    samples = []
    for _ in range(iterations):
        started = time.perf_counter()
        await scenarios.bandoneon_run(agent)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=1000)
    print(json.dumps({"median_s": asyncio.run(main(parser.parse_args().iterations))}))
