"""N agent runs at once in one process against the loopback server; prints one JSON line.

    python benchmarks/concurrent_runs.py bandoneon|bare N

Memory per session: the growth of this process's peak RSS from after the warm-up run (imports,
the first connection) to the end, over N. It counts everything a session holds (for bandoneon
its agent, its run, its share of the connection pool) plus allocator slack; the server is in
its own process and not counted. Failed runs are counted in "errors", never dropped.
"""

from __future__ import annotations

import asyncio
import json
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bandoneon  # noqa: E402
import scenarios  # noqa: E402
from mock_server_process import serving  # noqa: E402
from sections import _bare_httpx_loop  # noqa: E402


async def main(contender: str, count: int) -> dict:
    with serving() as base_url:
        latencies: list[float] = []
        if contender == "bandoneon":

            def make_agent() -> bandoneon.Agent:
                return bandoneon.Agent(f"openai-compatible:bench@{base_url}", tools=[scenarios.FORECAST_TOOL], context_files=False, context_window=128_000)

            await make_agent().run(scenarios.PROMPT)  # warm-up: imports done before the clock starts
            baseline_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            agents = [make_agent() for _ in range(count)]

            async def one(index: int) -> None:
                started = time.perf_counter()
                result = await agents[index].run(scenarios.PROMPT)
                assert result.text == scenarios.ANSWER
                latencies.append(time.perf_counter() - started)
        else:
            import httpx

            async with httpx.AsyncClient(verify=False) as warm:  # warm-up, as above
                await _bare_httpx_loop(warm, base_url)
            baseline_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

            async def one(index: int) -> None:
                # One client per session, made when the session starts: the simplest fast code
                # (one httpx client shared by thousands of runs spends its time in its pool).
                started = time.perf_counter()
                async with httpx.AsyncClient(verify=False, timeout=120) as client:
                    assert await _bare_httpx_loop(client, base_url) == scenarios.ANSWER
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        outcomes = await asyncio.gather(*(one(i) for i in range(count)), return_exceptions=True)
        elapsed = time.perf_counter() - started
        errors = sum(1 for o in outcomes if isinstance(o, BaseException))
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        if failures:
            print(f"{len(failures)} failed; first: {type(failures[0]).__name__}: {failures[0]}", file=sys.stderr)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    latencies.sort()
    return {
        "throughput": count / elapsed,
        "p50": statistics.median(latencies) if latencies else float("nan"),
        "p99": latencies[max(0, int(len(latencies) * 0.99) - 1)] if latencies else float("nan"),
        "errors": errors,
        "peak_rss_mb": peak / 1024,
        "rss_per_session_kb": max(0, peak - baseline_rss) / count,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], int(sys.argv[2])))))
