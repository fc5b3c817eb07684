"""The value so far of a JSON document that is still streaming in.

A typed answer arrives a few characters at a time; a UI wants the fields that are already
there. ``parse_partial`` keeps what is complete (and a string cut mid-way, as far as it got)
and leaves out what could still change its meaning: a number or ``true`` cut mid-way, a key
whose value has not started.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["NOTHING", "parse_partial"]

#: Nothing usable yet (the text is empty, or holds only an unfinished scalar).
NOTHING: Any = object()

_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")
#: A scalar the text may still be in the middle of (it runs to the end of the text).
_SCALAR_PREFIX = re.compile(r"-?\d*(?:\.\d*)?(?:[eE][+-]?\d*)?|t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?")
_WHITESPACE = " \t\n\r"
_AFTER_SCALAR = _WHITESPACE + ",]}"


class _End(Exception):
    """The text ran out; ``value`` is what was built up to there."""

    def __init__(self, value: Any):
        self.value = value


#: Deeper than this is refused (``ValueError``), as the bounded decoder refuses it.
MAX_DEPTH = 100


def parse_partial(text: str) -> Any:
    """The value of the JSON prefix ``text``; ``NOTHING`` if none yet; ``ValueError`` if broken
    or nested deeper than ``MAX_DEPTH``."""
    parser = _Parser(text)
    try:
        value = parser.value()
    except _End as end:
        return end.value
    return value


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.at = 0
        self.depth = 0

    def _skip(self) -> None:
        while self.at < len(self.text) and self.text[self.at] in _WHITESPACE:
            self.at += 1
        if self.at >= len(self.text):
            raise _End(NOTHING)

    def value(self) -> Any:
        self._skip()
        char = self.text[self.at]
        if char in "{[":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise ValueError(f"the JSON is nested deeper than {MAX_DEPTH} levels")
            value = self._object() if char == "{" else self._array()
            self.depth -= 1
            return value
        if char == '"':
            return self._string()
        if _SCALAR_PREFIX.fullmatch(self.text, self.at):
            raise _End(NOTHING)  # "12" may become "123", "tr" is not yet "true"
        match = _SCALAR.match(self.text, self.at)
        if match is None or (match.end() < len(self.text) and self.text[match.end()] not in _AFTER_SCALAR):
            raise ValueError(f"not JSON at character {self.at}: {self.text[self.at:self.at + 20]!r}")
        self.at = match.end()
        return json.loads(match.group())

    def _object(self) -> dict[str, Any]:
        result: dict[str, Any] = {}
        self.at += 1
        while True:
            try:
                self._skip()
            except _End:
                raise _End(result) from None
            char = self.text[self.at]
            if char == "}":
                self.at += 1
                return result
            if char == ",":
                self.at += 1
                continue
            if char != '"':
                raise ValueError(f"expected a key at character {self.at}")
            key: str | None = None
            try:
                key = self._string(keep_partial=False)
                self._skip()
                if self.text[self.at] != ":":
                    raise ValueError(f"expected ':' at character {self.at}")
                self.at += 1
                result[key] = self.value()
            except _End as end:
                if end.value is not NOTHING and key is not None:
                    result[key] = end.value
                raise _End(result) from None

    def _array(self) -> list[Any]:
        result: list[Any] = []
        self.at += 1
        while True:
            try:
                self._skip()
            except _End:
                raise _End(result) from None
            char = self.text[self.at]
            if char == "]":
                self.at += 1
                return result
            if char == ",":
                self.at += 1
                continue
            try:
                result.append(self.value())
            except _End as end:
                if end.value is not NOTHING:
                    result.append(end.value)
                raise _End(result) from None

    def _string(self, *, keep_partial: bool = True) -> str:
        start = self.at
        self.at += 1
        while self.at < len(self.text):
            char = self.text[self.at]
            if char == "\\":
                self.at += 2
            elif char == '"':
                self.at += 1
                text: str = json.loads(self.text[start:self.at])
                return text
            else:
                self.at += 1
        if not keep_partial:
            raise _End(NOTHING)
        body = self.text[start:]
        body = re.sub(r"\\(u[0-9a-fA-F]{0,3})?$", "", body)  # an escape cut mid-way is left out
        try:
            raise _End(json.loads(body + '"'))
        except ValueError:
            raise _End(NOTHING) from None
