"""What a model call cost, from a per-model price table.

Prices are in currency units per million tokens. ``Usage.cached_input_tokens`` and
``cache_write_tokens`` are *parts of* ``input_tokens``: they are priced at their own rate
instead of the input rate, never on top of it, so a cached token is never counted twice.
No prices are built in: they change every few months and a stale table is worse than none.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

import bandoneon

__all__ = ["Price", "PriceTable", "cost_of"]


@attrs.frozen
class Price:
    """Per million tokens. A missing cached rate means cached tokens cost the input rate."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def __attrs_post_init__(self) -> None:
        for field in attrs.fields(Price):
            value = getattr(self, field.name)
            if value is not None and value < 0:
                raise bandoneon.ConfigError(f"price {field.name} must not be negative, got {value}")


class PriceTable:
    """Model name → ``Price``. A key ending in ``*`` matches every model starting with the rest;
    the longest match wins, so ``gpt-4o-mini*`` beats ``gpt-4o*``."""

    def __init__(self, prices: Mapping[str, Price | Mapping[str, float]] | None = None):
        self._exact: dict[str, Price] = {}
        self._prefixes: list[tuple[str, Price]] = []
        for model, price in (prices or {}).items():
            value = price if isinstance(price, Price) else _price_from(model, price)
            if model.endswith("*"):
                self._prefixes.append((model[:-1], value))
            else:
                self._exact[model] = value
        self._prefixes.sort(key=lambda item: len(item[0]), reverse=True)

    def __bool__(self) -> bool:
        return bool(self._exact or self._prefixes)

    def get(self, model: str | None) -> Price | None:
        if not model:
            return None
        if model in self._exact:
            return self._exact[model]
        for prefix, price in self._prefixes:
            if model.startswith(prefix):
                return price
        return None

    def cost(self, model: str | None, usage: bandoneon.Usage) -> float | None:
        """The cost of ``usage`` on ``model``: the provider's own figure when it gave one,
        else the table's; None when neither knows."""
        if usage.cost is not None:
            return usage.cost
        price = self.get(model)
        return None if price is None else cost_of(price, usage)


def cost_of(price: Price, usage: bandoneon.Usage) -> float:
    cached = min(usage.cached_input_tokens, usage.input_tokens)
    written = min(usage.cache_write_tokens, usage.input_tokens - cached)
    plain = usage.input_tokens - cached - written
    total = plain * price.input
    total += cached * (price.cached_input if price.cached_input is not None else price.input)
    total += written * (price.cache_write if price.cache_write is not None else price.input)
    total += usage.output_tokens * price.output
    return total / 1_000_000


def _price_from(model: str, data: Mapping[str, float]) -> Price:
    unknown = set(data) - {f.name for f in attrs.fields(Price)}
    if unknown:
        raise bandoneon.ConfigError(f"price of {model!r}: unknown key(s) {', '.join(sorted(unknown))}; use input, output, cached_input, cache_write")
    try:
        return Price(**data)
    except TypeError as exc:
        raise bandoneon.ConfigError(f"price of {model!r} needs input and output (per million tokens): {exc}") from None
