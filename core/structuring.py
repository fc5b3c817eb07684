"""Strict structuring of untrusted data (a model's tool arguments, a config file) with cattrs.

Nothing is coerced from the wrong type ("3" is not an integer), extra keys are refused, and
every problem becomes one sentence that names the field, what was expected and what came.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from .schema import type_phrase

if TYPE_CHECKING:
    import cattrs

__all__ = ["StructureError", "describe_value", "structure", "unstructure"]

T = TypeVar("T")


class StructureError(ValueError):
    """The data does not fit the type; ``problems`` holds one sentence per problem."""

    def __init__(self, problems: list[str]):
        super().__init__(" ".join(problems))
        self.problems = problems


def structure(data: Any, cls: type[T]) -> T:
    """``data`` as an instance of ``cls``, or ``StructureError`` with every problem explained."""
    try:
        return _converter().structure(data, cls)
    except Exception as exc:  # cattrs raises exception groups; translate them all
        raise StructureError(_explain(exc, data, cls) or [str(exc)]) from None


def unstructure(value: Any) -> Any:
    return _converter().unstructure(value)


def _strict_str(value: Any, _: Any) -> str:
    if isinstance(value, str):
        return value
    raise _Mismatch(str, value)


def _strict_int(value: Any, _: Any) -> int:
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    raise _Mismatch(int, value)


def _strict_float(value: Any, _: Any) -> float:
    if type(value) in (int, float):
        return float(value)
    raise _Mismatch(float, value)


def _strict_bool(value: Any, _: Any) -> bool:
    if type(value) is bool:
        return value
    raise _Mismatch(bool, value)


class _Mismatch(TypeError):
    def __init__(self, expected: Any, value: Any):
        super().__init__(f"expected {type_phrase(expected)}, got {describe_value(value)}")
        self.expected = expected
        self.value = value


@functools.cache
def _converter() -> cattrs.Converter:
    """Built on first use: ``import bandoneon`` does not pay for importing cattrs."""
    import cattrs

    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True, use_alias=True)
    converter.register_structure_hook(str, _strict_str)
    converter.register_structure_hook(int, _strict_int)
    converter.register_structure_hook(float, _strict_float)
    converter.register_structure_hook(bool, _strict_bool)
    return converter


def _explain(exc: BaseException, data: Any, cls: Any, path: str = "") -> list[str]:
    """Turn a cattrs error tree into one sentence per problem, naming the field."""
    from cattrs.errors import (
        ClassValidationError,
        ForbiddenExtraKeysError,
        IterableValidationError,
    )

    if isinstance(exc, ForbiddenExtraKeysError):
        allowed = ", ".join(f.name for f in attrs.fields(exc.cl)) or "none"
        return [
            f"Unknown field {_join(path, key)!r} (allowed: {allowed})." for key in sorted(exc.extra_fields)
        ]
    if isinstance(exc, ClassValidationError):
        problems: list[str] = []
        with_notes, without = exc.group_exceptions()
        for sub, note in with_notes:
            field_path = _join(path, note.name)
            value = data.get(note.name) if isinstance(data, dict) else None
            if isinstance(sub, KeyError):
                problems.append(f"Missing required field {field_path!r} ({type_phrase(note.type)}).")
            else:
                problems.extend(_explain(sub, value, note.type, field_path))
        for sub in without:
            problems.extend(_explain(sub, data, cls, path))
        return problems
    if isinstance(exc, IterableValidationError):
        problems = []
        with_notes, without = exc.group_exceptions()
        for sub, note in with_notes:
            item = data[note.index] if isinstance(data, list) and note.index < len(data) else None
            problems.extend(_explain(sub, item, note.type, f"{path}[{note.index}]"))
        for sub in without:
            problems.extend(_explain(sub, data, cls, path))
        return problems
    if isinstance(exc, _Mismatch):
        return [f"Field {path!r} must be {type_phrase(exc.expected)}, got {describe_value(exc.value)}."]
    if isinstance(exc, BaseExceptionGroup):
        return [p for sub in exc.exceptions for p in _explain(sub, data, cls, path)]
    if isinstance(exc, (ValueError, TypeError)) and type(exc).__module__ != "builtins":
        return [str(exc)]  # a class's own validation message (a plugin's ConfigError) says it best
    where = f"Field {path!r}" if path else "The arguments"
    return [f"{where} must be {type_phrase(cls)}, got {describe_value(data)}."]


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def describe_value(value: Any) -> str:
    """A value as an error sentence shows it: short JSON and its kind."""
    kinds = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "a list", dict: "an object"}
    shown = json.dumps(value, ensure_ascii=False, default=str)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    kind = "null" if value is None else kinds.get(type(value), type(value).__name__)
    return shown if value is None else f"{shown} ({kind})"


