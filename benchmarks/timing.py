"""Side-by-side timing: contenders alternate within every round, figures are medians.

These machines are noisy; a ratio measured in one run, A and B interleaved, is what can be
trusted. ``Comparison.ratio`` takes the median of the per-round ratios, so a slow stretch of
the machine that hits one round does not decide the verdict.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import attrs

AsyncFn = Callable[[], Awaitable[Any]]


@attrs.frozen
class Comparison:
    """Per-call times of each contender, kept round by round."""

    rounds: Mapping[str, list[list[float]]]

    def median(self, name: str) -> float:
        return statistics.median(t for one_round in self.rounds[name] for t in one_round)

    def medians(self) -> dict[str, float]:
        return {name: self.median(name) for name in self.rounds}

    def ratio(self, name: str, floor: str) -> float:
        """Median over rounds of ``name``'s round median divided by ``floor``'s."""
        pairs = zip(self.rounds[name], self.rounds[floor], strict=True)
        return statistics.median(statistics.median(a) / statistics.median(b) for a, b in pairs)

    def difference(self, name: str, floor: str) -> float:
        """Median over rounds of ``name``'s round median minus ``floor``'s: what ``name`` adds."""
        pairs = zip(self.rounds[name], self.rounds[floor], strict=True)
        return statistics.median(statistics.median(a) - statistics.median(b) for a, b in pairs)


def _orders(names: list[str], rounds: int) -> Iterator[list[str]]:
    """The contenders of each round, rotated so none always goes first."""
    for index in range(rounds):
        shift = index % len(names)
        yield names[shift:] + names[:shift]


async def compare_async(contenders: Mapping[str, AsyncFn], *, iterations: int = 500, rounds: int = 7, warmup: int = 100) -> Comparison:
    names = list(contenders)
    for name in names:
        for _ in range(warmup):
            await contenders[name]()
    samples: dict[str, list[list[float]]] = {name: [] for name in names}
    for order in _orders(names, rounds):
        for name in order:
            fn, times = contenders[name], []
            gc.collect()
            for _ in range(iterations):
                started = time.perf_counter()
                await fn()
                times.append(time.perf_counter() - started)
            samples[name].append(times)
    return Comparison(samples)


def compare_sync(contenders: Mapping[str, Callable[[], Any]], *, iterations: int = 500, rounds: int = 7, warmup: int = 100) -> Comparison:
    names = list(contenders)
    for name in names:
        for _ in range(warmup):
            contenders[name]()
    samples: dict[str, list[list[float]]] = {name: [] for name in names}
    for order in _orders(names, rounds):
        for name in order:
            fn, times = contenders[name], []
            gc.collect()
            for _ in range(iterations):
                started = time.perf_counter()
                fn()
                times.append(time.perf_counter() - started)
            samples[name].append(times)
    return Comparison(samples)


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms"
