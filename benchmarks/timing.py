"""Side-by-side timing: contenders alternate within every round, figures are medians.

These machines are noisy; a ratio measured in one run, A and B interleaved, is what can be trusted.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

AsyncFn = Callable[[], Awaitable[Any]]


async def compare_async(contenders: Mapping[str, AsyncFn], *, iterations: int = 500, rounds: int = 7, warmup: int = 100) -> dict[str, float]:
    """Median seconds per call for each contender, interleaved round by round."""
    names = list(contenders)
    for name in names:
        for _ in range(warmup):
            await contenders[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        order = names[round_index % len(names):] + names[: round_index % len(names)]
        for name in order:
            fn = contenders[name]
            gc.collect()
            for _ in range(iterations):
                started = time.perf_counter()
                await fn()
                samples[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in samples.items()}


def compare_sync(contenders: Mapping[str, Callable[[], Any]], *, iterations: int = 500, rounds: int = 7, warmup: int = 100) -> dict[str, float]:
    names = list(contenders)
    for name in names:
        for _ in range(warmup):
            contenders[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        order = names[round_index % len(names):] + names[: round_index % len(names)]
        for name in order:
            fn = contenders[name]
            gc.collect()
            for _ in range(iterations):
                started = time.perf_counter()
                fn()
                samples[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in samples.items()}


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms"
