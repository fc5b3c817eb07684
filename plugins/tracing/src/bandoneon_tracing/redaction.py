"""Redaction of what spans carry: traces hold users' data (prompts, tool inputs and outputs).

Two sources of rules, applied in order: the guard plugin's, when a plugin named ``guard`` is
active in the agent, then tracing's own ``redact`` regexes. The guard is read by duck typing
(tracing does not import it, so each installs alone): a ``redact(text) -> str`` method if it
has one, else every ``policy.redactions`` item's ``apply(text)`` — all of them, whatever tools
they are scoped to, since a span carries text from every tool and from the prompt.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import bandoneon

__all__ = ["Redactor", "guard_redaction"]

MASK = "[REDACTED]"


class Redactor:
    """Tracing's own regexes, plus (``with_guard``) one agent's guard redaction."""

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

    def text(self, value: str) -> str:
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


def guard_redaction(guard: Any) -> Callable[[str], str] | None:
    """The guard's redaction as one function, or None when it exposes none."""
    redact = getattr(guard, "redact", None)
    if callable(redact):
        return redact
    rules = [r for r in getattr(getattr(guard, "policy", None), "redactions", ()) if callable(getattr(r, "apply", None))]
    if not rules:
        return None

    def apply_all(text: str) -> str:
        for rule in rules:
            text = rule.apply(text)
        return text

    return apply_all
