"""Redaction of what spans carry: traces hold users' data (prompts, tool inputs and outputs).

Two sources of rules, applied in order: the agent's own (``agent.redact``: every plugin's
``redact_text``, so the guard's and the policy packs' redactions, whatever tools they are
scoped to, since a span carries text from every tool and from the prompt), then tracing's own
``redact`` regexes. Tracing imports no other plugin, so each installs alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import bandoneon

__all__ = ["Redactor", "clip"]

MASK = "[REDACTED]"
#: How much of a long text past its cut a ``Clipped`` keeps for the rules to see.
_MARGIN = 4000


class Clipped(str):
    """Text cut at ``limit`` (the ``str`` value, marker included) that still holds ``_MARGIN``
    characters past the cut: span text is cut when drafted but redacted later, and a secret the
    cut runs through must reach the rules whole, or its first part (most of a key) is kept."""

    longer: str
    limit: int
    total: int


def _cut(text: str, limit: int, more: int) -> str:
    return text[:limit] + f"… [{more} more characters]" if more > 0 else text


def clip(text: str, limit: int) -> str:
    """``text``, cut at ``limit`` characters with a note of how many more there were."""
    if len(text) <= limit:
        return text
    clipped = Clipped(_cut(text, limit, len(text) - limit))
    clipped.longer, clipped.limit, clipped.total = text[: limit + _MARGIN], limit, len(text)
    return clipped


class Redactor:
    """Tracing's own regexes, plus (``with_guard``) one agent's store redaction (``agent.redact``)."""

    def __init__(self, patterns: Iterable[str] = (), *, guard: Callable[[str], str] | None = None):
        self.rules: list[re.Pattern[str]] = []
        for pattern in patterns:
            try:
                self.rules.append(re.compile(pattern))
            except re.error as exc:
                raise bandoneon.ConfigError(f"tracing: redact pattern {pattern!r} is not a valid regex: {exc}") from None
        self.guard = guard

    @property
    def is_noop(self) -> bool:
        """True when no rule applies: spans then skip the redaction walk altogether."""
        return self.guard is None and not self.rules

    def with_guard(self, guard: Callable[[str], str] | None) -> Redactor:
        """The same rules, plus ``guard`` (None: the same rules only)."""
        if guard is None:
            return self
        copy = Redactor(guard=guard)
        copy.rules = self.rules
        return copy

    def for_one_trace(self) -> Redactor:
        """These rules, remembering each string's result: a trace repeats its model, tool and
        agent names across spans, and a guard's rules are a chain of hook calls per string.
        Only for the build of one trace (the rules do not change during it)."""
        return self if self.is_noop else _Remembering(self)

    def text(self, value: str) -> str:
        if type(value) is Clipped:  # redact what the cut ran through, then cut again
            redacted = self.text(value.longer)
            unseen = value.total - len(value.longer)
            return _cut(redacted, value.limit, unseen + max(0, len(redacted) - value.limit))
        if self.guard is not None:
            value = self.guard(value)
        for rule in self.rules:
            value = rule.sub(MASK, value)
        return value

    def value(self, value: Any) -> Any:
        """Redact strings, recursively inside lists and dicts; other values pass unchanged."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(item) for item in value]
        return value


class _Remembering(Redactor):
    """``Redactor.for_one_trace``: each distinct string redacted once."""

    def __init__(self, rules: Redactor):
        super().__init__(guard=rules.guard)
        self.rules = rules.rules
        self._done: dict[str, str] = {}

    def text(self, value: str) -> str:
        if type(value) is Clipped:  # equal to any text with the same first `limit` characters
            return super().text(value)
        done = self._done.get(value)
        if done is None:
            done = self._done[value] = super().text(value)
        return done
