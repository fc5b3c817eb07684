"""Budgets per run: tokens, cost and wall time. A budget is a limit, never an answer."""

from __future__ import annotations

import bandoneon


def run_cost(usage: bandoneon.Usage, price_per_million_tokens: tuple[float, float] | None) -> float | None:
    """What the run has cost so far: the provider's own price when it reports one, else the
    configured (input, output) price per million tokens, else None (unknown)."""
    if usage.cost is not None:
        return usage.cost
    if price_per_million_tokens is None:
        return None
    input_price, output_price = price_per_million_tokens
    return (usage.input_tokens * input_price + usage.output_tokens * output_price) / 1_000_000


def tokens_over(usage: bandoneon.Usage, max_tokens: int) -> bandoneon.Stop | None:
    used = usage.total_tokens
    if used < max_tokens:
        return None
    return bandoneon.Stop("budget", f"the run used {used} tokens ({usage.input_tokens} in, {usage.output_tokens} out); max_tokens={max_tokens}")


def cost_over(cost: float, max_cost: float) -> bandoneon.Stop | None:
    if cost < max_cost:
        return None
    return bandoneon.Stop("budget", f"the run cost {cost:.6g}; max_cost={max_cost:g}")


def time_over(elapsed: float, max_seconds: float) -> bandoneon.Stop | None:
    if elapsed < max_seconds:
        return None
    return bandoneon.Stop("budget", f"the run took {elapsed:.3g} s; max_seconds={max_seconds:g} (checked between turns)")
