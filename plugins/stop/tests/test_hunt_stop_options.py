"""Prices that are no number of money: ``nan`` and ``inf`` (TOML has both) are refused when the
plugin is made, never found out as a run that stops after its first turn with "cost nan"."""

from __future__ import annotations

import math

import bandoneon
import pytest
from bandoneon_stop import StopRules


@pytest.mark.parametrize("price", [(math.nan, 1.0), (1.0, math.inf), (-math.inf, 0.0)])
def test_a_price_that_is_not_finite_is_a_config_error(price):
    with pytest.raises(bandoneon.ConfigError, match="price_per_million_tokens"):
        StopRules(max_cost=1.0, price_per_million_tokens=price)
    with pytest.raises(bandoneon.ConfigError, match="price_per_million_tokens"):
        bandoneon.build_plugin(StopRules, {"max_cost": 1.0, "price_per_million_tokens": list(price)})
