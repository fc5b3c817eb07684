"""Compaction time for a history of N messages squeezed into an 8,000-token window.

Reuses the compaction plugin's own history generator (plugins/compaction/benchmarks).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "compaction" / "benchmarks"))

from bench_shrink import history  # noqa: E402
from bandoneon_compaction import shrink_history  # noqa: E402


def time_compaction(messages: int, runs: int = 9) -> float:
    """Median seconds to shrink ``messages`` messages (truncate and drop) to 8,000 tokens."""
    long = history(messages)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        shrink_history(long, limit=8_000, keep_recent_turns=2)
        times.append(time.perf_counter() - started)
    return statistics.median(times)
