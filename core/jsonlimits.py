"""JSON from outside (a model's tool arguments, a server's reply, a line of a saved file),
parsed with a depth and a size limit.

Python's decoder recurses: a document nested ten thousand levels deep raises
``RecursionError`` (or, a little less deep, parses and then breaks whatever walks it next).
``loads_bounded`` turns both into ``JsonLimitError``, a ``ValueError`` that says which limit
was crossed, so every caller's ``except ValueError`` already handles it.

The check is cheap on purpose: a document with no more brackets than the depth limit cannot
be too deep, so the depth is measured only when the bracket count says it might be.

A string that decodes to a lone surrogate (a ``\\ud800`` escape without its pair) comes back
with U+FFFD in its place (``bandoneon.as_unicode``): no store could write it as UTF-8.

Defaults (``DEFAULT_JSON_LIMITS``): 100 levels deep, 64 MiB. ``Agent(json_limits=...)`` sets the
limits for tool arguments, ``OpenAICompatible(json_limits=...)`` for reply bodies.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from typing import Any

import attrs

from .ranges import in_range
from .text import as_unicode

__all__ = ["DEFAULT_JSON_LIMITS", "JsonLimitError", "JsonLimits", "loads_bounded"]


class JsonLimitError(ValueError):
    """A JSON document is nested deeper or is larger than its limit allows."""


@attrs.frozen
class JsonLimits:
    """How deep (``max_depth`` levels of arrays and objects) and how large (``max_bytes``, in
    characters for text) one JSON document from outside may be."""

    max_depth: int = attrs.field(default=100, validator=in_range(at_least=1, integer=True))
    max_bytes: int = attrs.field(default=64 * 1024 * 1024, validator=in_range(at_least=1, integer=True))


DEFAULT_JSON_LIMITS = JsonLimits()


def loads_bounded(text: str | bytes, limits: JsonLimits = DEFAULT_JSON_LIMITS) -> Any:
    """``json.loads`` within ``limits``; ``JsonLimitError`` (a ``ValueError``) past them."""
    if len(text) > limits.max_bytes:
        raise JsonLimitError(f"the JSON is {len(text)} bytes long, over the limit of {limits.max_bytes}")
    # Whether the document may decode to a lone surrogate: it has an escape (``\\udc80``), or,
    # in text, a character past ASCII; in bytes, the UTF-8 form, which ``json.loads`` lets
    # through. Substring tests first, the pattern only when one hits: most documents have neither.
    if isinstance(text, bytes):
        brackets = text.count(b"[") + text.count(b"{")
        surrogates = (b"\\u" in text or b"\xed" in text) and _SURROGATE_BYTES.search(text) is not None
    else:
        brackets = text.count("[") + text.count("{")
        surrogates = ("\\u" in text or not text.isascii()) and _SURROGATE_TEXT.search(text) is not None
    # Measured before decoding, never by catching the decoder's RecursionError: on CPython
    # 3.11 that error leaves the interpreter's depth bookkeeping off (a later compile() fails
    # with "AST constructor recursion depth mismatch").
    if brackets > limits.max_depth and _depth(text) > limits.max_depth:
        raise JsonLimitError(f"the JSON is nested too deeply (the limit is {limits.max_depth} levels)")
    try:
        value = _whole_object(text) if type(text) is str and text[:1] == "{" and text[-1:] == "}" else _NOT_PARSED
        if value is _NOT_PARSED:
            value = json.loads(text)
    except RecursionError:  # only when max_depth is set above the interpreter's own limit
        raise JsonLimitError(f"the JSON is nested too deeply (the limit is {limits.max_depth} levels)") from None
    return _as_unicode_values(value) if surrogates else value


def _whole_object(text: str) -> Any:
    """The object ``text`` is, straight from the scanner; ``_NOT_PARSED`` when it is not one
    object with nothing after it (``json.loads`` then says what is wrong, in its words). For
    the usual document (tool arguments), ``json.loads``'s checks, wrappers and whitespace
    matches cost as much as the parse itself."""
    try:
        value, end = _scan(text, 0)
    except (StopIteration, json.JSONDecodeError):
        return _NOT_PARSED
    return value if end == len(text) else _NOT_PARSED


#: The scanner of a decoder with ``json.loads``'s settings: ``(value, end)`` of the value at an
#: index (an instance attribute, which the type stubs do not list).
_scan: Callable[[str, int], tuple[Any, int]] = vars(json.JSONDecoder())["scan_once"]
_NOT_PARSED: Any = object()


_SURROGATE_TEXT = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


def _as_unicode_values(value: Any) -> Any:
    """``value`` with ``as_unicode`` applied to every string in it, keys included."""
    if isinstance(value, str):
        return as_unicode(value)
    if isinstance(value, list):
        return [_as_unicode_values(item) for item in value]
    if isinstance(value, dict):
        return {as_unicode(key): _as_unicode_values(item) for key, item in value.items()}
    return value


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _depth(text: str | bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text (brackets inside strings do not
    count), without decoding it: strings and everything but brackets are cut out in C."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(itertools.accumulate(_STEP[c] for c in brackets), default=0)
