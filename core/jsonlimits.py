"""JSON from outside (a model's tool arguments, a server's reply, a line of a saved file),
parsed with a depth and a size limit.

Python's decoder recurses: a document nested ten thousand levels deep raises
``RecursionError`` (or, a little less deep, parses and then breaks whatever walks it next).
``loads_bounded`` turns both into ``JsonLimitError``, a ``ValueError`` that says which limit
was crossed, so every caller's ``except ValueError`` already handles it.

The check is cheap on purpose: a document with no more brackets than the depth limit cannot
be too deep, so the depth is measured only when the bracket count says it might be.

Defaults (``DEFAULT_JSON_LIMITS``): 100 levels deep, 64 MiB. ``Agent(json_limits=...)`` sets the
limits for tool arguments, ``OpenAICompatible(json_limits=...)`` for reply bodies.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import attrs

from .ranges import in_range

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
    if isinstance(text, bytes):
        brackets = text.count(b"[") + text.count(b"{")
    else:
        brackets = text.count("[") + text.count("{")
    # Measured before decoding, never by catching the decoder's RecursionError: on CPython
    # 3.11 that error leaves the interpreter's depth bookkeeping off (a later compile() fails
    # with "AST constructor recursion depth mismatch").
    if brackets > limits.max_depth and _depth(text) > limits.max_depth:
        raise JsonLimitError(f"the JSON is nested too deeply (the limit is {limits.max_depth} levels)")
    try:
        return json.loads(text)
    except RecursionError:  # only when max_depth is set above the interpreter's own limit
        raise JsonLimitError(f"the JSON is nested too deeply (the limit is {limits.max_depth} levels)") from None


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
