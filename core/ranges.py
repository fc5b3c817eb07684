"""Numeric options: one range check shared by the core and every plugin.

Every number a user can set (``max_turns``, a timeout, a plugin's ``top_k``) has a documented
range. ``in_range`` states it once; the same object is an attrs validator on a plugin's option
field and a plain check for keyword arguments, and its error names the key, the range and the
value::

    top_k: int = attrs.field(default=3, validator=bandoneon.in_range(at_least=1))

    compaction: threshold must be above 0 and at most 1, got 1.5

``Range.short`` is the notation the READMEs' option tables use (``0 < x ≤ 1``, ``≥ 1``); a
meta-test holds each table to it.
"""

from __future__ import annotations

from typing import Any

import attrs

from .errors import ConfigError

__all__ = ["Range", "in_range"]


def _fmt(number: float) -> str:
    return f"{number:g}" if isinstance(number, float) else str(number)


@attrs.frozen
class Range:
    """A closed or half-open interval for one numeric option (see ``in_range``)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    unit: str = ""
    optional: bool = False
    integer: bool = False
    #: The value last found in range, compared by identity: every new agent checks each plugin
    #: option's default (one object per field), so the check is mostly ``value is accepted``.
    #: The same object has the same type and value, so it is in range again. (At first, an
    #: object of its own, which no option's value can be.)
    _accepted: Any = attrs.field(factory=object, init=False, eq=False, repr=False)

    def describe(self) -> str:
        """The range in words: ``at least 1``, ``above 0 and at most 1``, ``between 0 and 1``."""
        unit = f" {self.unit}" if self.unit else ""
        if self.low is not None and self.high is not None:
            if self.low_open:
                text = f"above {_fmt(self.low)} and at most {_fmt(self.high)}{unit}"
            else:
                text = f"between {_fmt(self.low)} and {_fmt(self.high)}{unit}"
        elif self.low is not None:
            text = f"{'above' if self.low_open else 'at least'} {_fmt(self.low)}{unit}"
        elif self.high is not None:
            text = f"at most {_fmt(self.high)}{unit}"
        else:
            text = f"any number{unit}"
        if self.integer:
            return f"a whole number {'of ' if text.startswith('at least') else ''}{text}"
        return text

    @property
    def short(self) -> str:
        """The range in symbols, as the option tables print it: ``> 0``, ``≥ 1``, ``0 < x ≤ 1``."""
        if self.low is not None and self.high is not None:
            return f"{_fmt(self.low)} {'<' if self.low_open else '≤'} x ≤ {_fmt(self.high)}"
        if self.low is not None:
            return f"{'>' if self.low_open else '≥'} {_fmt(self.low)}"
        if self.high is not None:
            return f"≤ {_fmt(self.high)}"
        return "any"

    def contains(self, value: Any) -> bool:
        if value is None:
            return self.optional
        kind = type(value)
        # Exact int and float first: every plugin option of every new agent passes through here.
        if kind is int:
            pass
        elif kind is float:
            if value != value or (self.integer and not value.is_integer()):
                return False
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            return False
        elif self.integer and not (isinstance(value, int) or float(value).is_integer()):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or value <= self.high

    def check(self, key: str, value: Any, *, owner: str | None = None) -> None:
        """Raise ``ConfigError`` naming ``key`` (and ``owner``) unless ``value`` is in range."""
        if value is self._accepted:
            return
        if self.contains(value):
            object.__setattr__(self, "_accepted", value)
            return
        prefix = f"{owner}: " if owner else ""
        raise ConfigError(f"{prefix}{key} must be {self.describe()}, got {value!r}")

    def __call__(self, instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        """The attrs-validator form: the owner is the plugin's name (or the class name), looked
        up only when the value is refused (building an agent validates every option)."""
        if value is self._accepted:
            return
        if self.contains(value):
            object.__setattr__(self, "_accepted", value)
            return
        from .plugins import plugin_name

        self.check(attribute.name, value, owner=plugin_name(instance))


def in_range(
    *,
    at_least: float | None = None,
    above: float | None = None,
    at_most: float | None = None,
    unit: str = "",
    optional: bool = False,
    integer: bool = False,
) -> Range:
    """The range of a numeric option: ``at_least`` or ``above`` a bound, ``at_most`` another.

    ``optional=True`` lets None through (None meaning "no limit" or "unset"); ``unit`` is said
    in the error (``seconds``, ``tokens``); ``integer=True`` refuses fractions. Booleans and
    non-numbers are always refused.
    """
    if at_least is not None and above is not None:
        raise ValueError("give at_least or above, not both")
    low = at_least if at_least is not None else above
    return Range(low=low, high=at_most, low_open=above is not None, unit=unit, optional=optional, integer=integer)
