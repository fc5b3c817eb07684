"""Median wall-clock time of one sandboxed run of ``print(1)`` (the README's figure).

Run: python plugins/sandbox/benchmarks/bench_run.py
"""

import asyncio
import statistics
import time

from bandoneon_sandbox import Box


async def main(runs: int = 20) -> None:
    box = Box()
    await box.run("pass")  # the one-time probe
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await box.run("print(1)")
        times.append(time.perf_counter() - started)
    print(f"median of {runs} runs of print(1): {statistics.median(times) * 1000:.0f} ms")


if __name__ == "__main__":
    asyncio.run(main())
