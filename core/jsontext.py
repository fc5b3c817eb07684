"""``unstructure_json``: a value as compact JSON text, written directly from its attrs fields.

``unstructure_json(value) == json.dumps(unstructure(value), ensure_ascii=False,
separators=(",", ":"))`` for every value, without the dicts and lists in between: a store that
writes many small records (a session's messages, a trace's events) pays for the text alone.
Each attrs class gets an encoder generated on first use from its fields, as cattrs generates
its own; a field whose type or value the encoder has no short way for (a union, a mapping, a
value of a type its field does not declare) goes through the converter and the C JSON encoder.
"""

from __future__ import annotations

import json
import math
import types
import typing
from collections.abc import Callable
from typing import Any

import attrs

from .structuring import _converter, unstructure

__all__ = ["dumps_compact", "unstructure_json"]

_string = json.encoder.encode_basestring  # the C one where there is one: non-ASCII kept as written


def _compact_dumps() -> Callable[[Any], str]:
    """Compact JSON, built once: ``JSONEncoder.encode`` builds a new C encoder and a cycle
    check for every call, a quarter of the cost of a small value (unstructured values hold
    no cycles)."""
    options = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)
    make = getattr(json.encoder, "c_make_encoder", None)  # not in typeshed
    if make is None:  # a Python without the C accelerator
        return options.encode
    encoder = make(None, options.default, _string, None, ":", ",", False, False, True)
    return lambda value: "".join(encoder(value, 0))


#: ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` of plain JSON data, cheaper
#: (no cycle check: data that contains itself overflows the stack instead of a ValueError).
dumps_compact: Callable[[Any], str] = _compact_dumps()

_ENCODERS: dict[type, Callable[[Any], str]] = {}


def unstructure_json(value: Any) -> str:
    """``json.dumps(unstructure(value), ensure_ascii=False, separators=(",", ":"))``, without
    building the unstructured dicts first (several times cheaper for the loop's values:
    ``Message``, ``ToolCall``, ``Usage``)."""
    encoder = _ENCODERS.get(value.__class__)
    if encoder is None:
        encoder = _ENCODERS[value.__class__] = _encoder_for(value.__class__)
    return encoder(value)


def _through_converter(value: Any) -> str:
    return dumps_compact(unstructure(value))


def _encoder_for(cls: type) -> Callable[[Any], str]:
    if not attrs.has(cls):
        return _through_converter
    try:
        return _generated(cls)
    except Exception:  # an annotation naming what is not importable here, a type cattrs refuses: its way, and its error
        return _through_converter


def _generated(cls: type) -> Callable[[Any], str]:
    """The encoder of ``cls``: one f-string of its fields (an f-string joins its pieces in one
    step, where a ``%`` template is parsed again on every call, several times the cost)."""
    attrs.resolve_types(cls)
    fields = attrs.fields(cls)
    if not all(f.init for f in fields):  # cattrs leaves init=False fields out: its rules, its way
        return _through_converter
    converter = _converter()
    names: dict[str, Any] = dict(_NAMES)
    pieces, lines = [], []
    for index, field in enumerate(fields):
        other = f"_other{index}"
        names[other] = _fallback(converter.get_unstructure_hook(field.type))
        # The key as JSON, braces doubled: the literal text of the f-string.
        key = _string(field.alias or field.name).replace("{", "{{").replace("}", "}}")
        pieces.append(key + ":{" + _expression(field.type, f"x{index}", other, names) + "}")
        lines.append(f"    x{index} = v.{field.name}\n")
    # The expressions hold names only (no quotes, no backslashes), so repr() of the whole is a
    # valid f-string literal whatever the keys hold.
    template = "{{" + ",".join(pieces) + "}}"
    source = f"def encode(v):\n{''.join(lines)}    return f{template!r}\n"
    exec(compile(source, f"<unstructure_json {cls.__qualname__}>", "exec"), names)  # noqa: S102  (field names only, as cattrs generates its own)
    encode: Callable[[Any], str] = names["encode"]
    return encode


def _fallback(hook: Callable[[Any], Any]) -> Callable[[Any], str]:
    return lambda value: dumps_compact(hook(value))


def _expression(tp: Any, x: str, other: str, names: dict[str, Any]) -> str:
    """Python source for the JSON text of ``x``, declared ``tp``; ``other(x)`` when the
    value is not of the type the short way expects (the converter then decides, as before)."""
    members = typing.get_args(tp)
    if tp is str or (typing.get_origin(tp) is typing.Literal and all(type(m) is str for m in members)):
        return f"(_string({x}) if {x}.__class__ is str else {other}({x}))"
    if tp is bool:
        return f"(_true if {x} is True else _false if {x} is False else {other}({x}))"
    if tp is int:  # the int itself: the f-string writes it as str() does, which for an int is repr()
        return f"({x} if {x}.__class__ is int else {other}({x}))"
    if tp is float:  # NaN and the infinities (written as JSON's extensions) the converter's way
        return f"({x} if {x}.__class__ is float and _isfinite({x}) else {other}({x}))"  # str() of a float is its repr()
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and len(members) == 2 and type(None) in members:
        (inner,) = [m for m in members if m is not type(None)]
        return f"(_null if {x} is None else {_expression(inner, x, other, names)})"
    if isinstance(tp, type) and attrs.has(tp):
        names[f"_class_{other}"] = tp
        return f"(_json({x}) if {x}.__class__ is _class_{other} else {other}({x}))"
    if typing.get_origin(tp) in (tuple, list) and (len(members) == 1 or (len(members) == 2 and members[1] is Ellipsis)):
        item = members[0]
        names[f"_item_{other}"] = item if isinstance(item, type) and attrs.has(item) else None
        return f"(_empty if {x} == () else _sequence({x}, _item_{other}, {other}))"
    return f"{other}({x})"


def _sequence(values: Any, item_class: type | None, other: Callable[[Any], str]) -> str:
    """A list or tuple field: each item through its class's encoder when all are exactly the
    declared attrs class; anything else through the converter."""
    if values.__class__ is not tuple and values.__class__ is not list:
        return other(values)
    if not values:
        return "[]"
    if item_class is None:
        return other(values)
    texts = []
    for value in values:
        if value.__class__ is not item_class:
            return other(values)
        texts.append(unstructure_json(value))
    return "[" + ",".join(texts) + "]"


#: What the generated encoders refer to: the constants too, so that no expression holds a quote.
_NAMES: dict[str, Any] = {
    "_string": _string,
    "_isfinite": math.isfinite,
    "_json": unstructure_json,
    "_sequence": _sequence,
    "_true": "true",
    "_false": "false",
    "_null": "null",
    "_empty": "[]",
}
