"""N agent runs at once in one process against the loopback server; prints one JSON line.

    python benchmarks/concurrent_runs.py bandoneon|bare N
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
from bandoneon.testing import MockLLMServer  # noqa: E402
from sections import _bare_httpx_loop, _openai_two_turn  # noqa: E402


async def main(contender: str, count: int) -> dict:
    with MockLLMServer() as server:
        server.respond_with(_openai_two_turn)
        baseline_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        latencies: list[float] = []
        errors = 0
        if contender == "bandoneon":
            agents = [
                bandoneon.Agent(f"openai-compatible:bench@{server.base_url}", tools=[scenarios.FORECAST_TOOL], context_files=False, context_window=128_000)
                for _ in range(count)
            ]

            async def one(index: int) -> None:
                started = time.perf_counter()
                result = await agents[index].run(scenarios.PROMPT)
                assert result.text == scenarios.ANSWER
                latencies.append(time.perf_counter() - started)
        else:
            import httpx

            client = httpx.AsyncClient(verify=False, limits=httpx.Limits(max_connections=None, max_keepalive_connections=count), timeout=120)

            async def one(index: int) -> None:
                started = time.perf_counter()
                assert await _bare_httpx_loop(client, server.base_url) == scenarios.ANSWER
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        outcomes = await asyncio.gather(*(one(i) for i in range(count)), return_exceptions=True)
        elapsed = time.perf_counter() - started
        errors = sum(1 for o in outcomes if isinstance(o, BaseException))
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
