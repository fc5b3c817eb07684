"""Strict structuring of untrusted data (a model's tool arguments, a config file) with cattrs.

Nothing is coerced from the wrong type ("3" is not an integer), extra keys are refused, and
every problem becomes one sentence that names the field, what was expected and what came.
"""

from __future__ import annotations

import collections.abc
import functools
import json
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar


from .schema import literal_value, object_fields, type_phrase

if TYPE_CHECKING:
    import cattrs

__all__ = ["StructureError", "describe_value", "structure", "structurer", "unstructure"]

T = TypeVar("T")


class StructureError(ValueError):
    """The data does not fit the type; ``problems`` holds one sentence per problem."""

    def __init__(self, problems: list[str]):
        super().__init__(" ".join(problems))
        self.problems = problems


def structure(data: Any, cls: type[T], *, subject: str = "The arguments") -> T:
    """``data`` as an instance of ``cls``, or ``StructureError`` with every problem explained.

    ``subject`` names the whole value in a sentence about it ("The arguments must be an
    object..."; an output type says "The answer").
    """
    try:
        return _converter().structure(data, cls)
    except Exception as exc:  # cattrs raises exception groups; translate them all
        raise _explained(exc, data, cls, subject) from None


def structurer(cls: type[T], *, subject: str = "The arguments") -> Callable[[Any], T]:
    """``structure`` for one class, its cattrs hook looked up once: a tool structures its
    arguments on every call, where the converter's dispatch cost more than the fields."""
    hook = _converter().get_structure_hook(cls)

    def structured(data: Any) -> T:
        try:
            value: T = hook(data, cls)
        except Exception as exc:  # as ``structure`` does
            raise _explained(exc, data, cls, subject) from None
        return value

    return structured


def _explained(exc: Exception, data: Any, cls: type[Any], subject: str) -> StructureError:
    """What cattrs raised about ``data``, as one sentence per problem."""
    return StructureError(_explain(exc, data, cls, subject=subject) or [str(exc)])


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


def _is_choice(tp: Any) -> bool:
    """A union of two or more shapes besides None (plain ``Optional[X]`` stays cattrs's)."""
    import types
    import typing

    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return False
    return len([a for a in typing.get_args(tp) if a is not type(None)]) > 1


def _structure_choice(value: Any, tp: Any) -> Any:
    """The first member of the union the value fits, tried in the order written; when none
    fits, the problems of the closest member (fewest problems) are the ones reported."""
    import typing

    members = typing.get_args(tp)
    if value is None and type(None) in members:
        return None
    best: list[str] | None = None
    for member in members:
        if member is type(None):
            continue
        try:
            return _converter().structure(value, member)
        except Exception as exc:
            problems = _explain(exc, value, member, subject="The value")
            if best is None or len(problems) < len(best):
                best = problems
    raise _NoMember(tp, value, best or [])


def _is_collection(tp: Any) -> bool:
    """A list, sequence or set type: cattrs would build one from any iterable it is given."""
    from cattrs.cols import is_any_set, is_sequence

    return is_sequence(tp) or is_any_set(tp)


def _collection_factory(tp: Any, converter: cattrs.Converter) -> Callable[[Any, Any], Any]:
    """cattrs's own hook for ``tp``, behind a check that the value is an array: iterated, a
    string gave its characters (``"urgent"`` for ``list[str]`` became six tags) and an object
    its keys, with no problem reported."""
    from cattrs.cols import homogenous_tuple_structure_factory, is_any_set, is_mutable_sequence, list_structure_factory

    if is_any_set(tp):
        inner = _set_hook(tp, converter)
    elif is_mutable_sequence(tp):
        inner = list_structure_factory(tp, converter)
    else:
        inner = homogenous_tuple_structure_factory(tp, converter)

    def structure(value: Any, kind: Any) -> Any:
        if isinstance(value, (str, bytes, bytearray, collections.abc.Mapping)):
            raise _Mismatch(kind, value)
        return inner(value, kind)

    return structure


def _set_hook(tp: Any, converter: cattrs.Converter) -> Callable[[Any, Any], Any]:
    from cattrs.cols import is_set

    args = typing.get_args(tp)
    element_type = args[0] if args else Any
    element = converter.get_structure_hook(element_type)
    build = set if is_set(tp) else frozenset
    return lambda value, _: build(element(item, element_type) for item in value)


def _is_literal(tp: Any) -> bool:
    return typing.get_origin(tp) is typing.Literal


def _strict_literal(value: Any, tp: Any) -> Any:
    """The literal's own value that ``value`` is, of the same kind: ``==`` took ``true`` for
    ``1`` and gave the caller a boolean. Numbers match across int and float (``1.0`` is ``1``,
    as for an ``int`` field); an enum member is matched by its value."""
    for choice in typing.get_args(tp):
        expected = literal_value(choice)
        if value == expected and (type(value) is type(expected) or {type(value), type(expected)} == {int, float}):
            return choice
    raise _Mismatch(tp, value)


def _is_fixed_tuple(tp: Any) -> bool:
    """``tuple[int, str]``: so many items, each of its own type."""
    args = typing.get_args(tp)
    return typing.get_origin(tp) is tuple and bool(args) and args[-1] is not Ellipsis


def _fixed_tuple_factory(tp: Any, converter: cattrs.Converter) -> Callable[[Any, Any], Any]:
    """Each item by its type's hook, from an array of exactly as many items (cattrs iterated
    whatever came: ``"ab"`` became ``("a", "b")``)."""
    from cattrs.errors import IterableValidationError, IterableValidationNote

    item_types = typing.get_args(tp)
    hooks = [converter.get_structure_hook(item_type) for item_type in item_types]

    def structure(value: Any, kind: Any) -> Any:
        if not isinstance(value, (list, tuple)) or len(value) != len(item_types):
            raise _Mismatch(kind, value)
        items, errors = [], []
        for index, (item, item_type, hook) in enumerate(zip(value, item_types, hooks, strict=True)):
            try:
                items.append(hook(item, item_type))
            except Exception as exc:  # noted with its index, as cattrs notes a list's items
                exc.__notes__ = [*getattr(exc, "__notes__", []), IterableValidationNote(f"Structuring {kind} @ index {index}", index, item_type)]
                errors.append(exc)
        if errors:
            raise IterableValidationError(f"While structuring {kind!r}", errors, kind)
        return tuple(items)

    return structure


class _NoMember(TypeError):
    def __init__(self, expected: Any, value: Any, closest: list[str]):
        super().__init__(f"expected {type_phrase(expected)}, got {describe_value(value)}")
        self.expected = expected
        self.value = value
        self.closest = closest


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
    converter.register_structure_hook_func(_is_choice, _structure_choice)
    converter.register_structure_hook_factory(_is_collection, _collection_factory)
    converter.register_structure_hook_func(_is_literal, _strict_literal)
    converter.register_structure_hook_factory(_is_fixed_tuple, _fixed_tuple_factory)
    # Bytes (an image, a file) travel as base64 text in JSON: sessions, recordings, traces.
    converter.register_unstructure_hook(bytes, _bytes_to_text)
    converter.register_structure_hook(bytes, _bytes_from_text)
    return converter


def _bytes_to_text(value: bytes) -> str:
    import base64

    return base64.b64encode(value).decode("ascii")


def _bytes_from_text(value: Any, _: Any) -> bytes:
    import base64
    import binascii

    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error:
            pass
    raise _Mismatch(bytes, value)


def _explain(exc: BaseException, data: Any, cls: Any, path: str = "", *, subject: str = "The arguments") -> list[str]:
    """Turn a cattrs error tree into one sentence per problem, naming the field."""
    from cattrs.errors import (
        ClassValidationError,
        ForbiddenExtraKeysError,
        IterableValidationError,
    )

    if isinstance(exc, ForbiddenExtraKeysError):
        allowed = ", ".join(object_fields(exc.cl) or ()) or "none"
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
                problems.extend(_explain(sub, value, note.type, field_path, subject=subject))
        for sub in without:
            problems.extend(_explain(sub, data, cls, path, subject=subject))
        return problems
    if isinstance(exc, IterableValidationError):
        problems = []
        items_with_notes, items_without = exc.group_exceptions()
        for sub, item_note in items_with_notes:
            index = item_note.index  # an int for a list (a str names a mapping's key)
            item = data[index] if isinstance(data, list) and isinstance(index, int) and index < len(data) else None
            problems.extend(_explain(sub, item, item_note.type, f"{path}[{item_note.index}]", subject=subject))
        for sub in items_without:
            problems.extend(_explain(sub, data, cls, path, subject=subject))
        return problems
    where = f"Field {path!r}" if path else subject
    if isinstance(exc, _Mismatch):
        return [f"{where} must be {type_phrase(exc.expected)}, got {describe_value(exc.value)}."]
    if isinstance(exc, _NoMember):
        inner = [p for p in exc.closest if not p.startswith("The value must be")]  # field-level problems only
        closest = f" Closest fit: {' '.join(inner)}" if inner else ""
        return [f"{where} must be {type_phrase(exc.expected)}, got {describe_value(exc.value)}.{closest}"]
    if isinstance(exc, BaseExceptionGroup):
        return [p for sub in exc.exceptions for p in _explain(sub, data, cls, path, subject=subject)]
    if isinstance(exc, (ValueError, TypeError)) and type(exc).__module__ != "builtins":
        return [str(exc)]  # a class's own validation message (a plugin's ConfigError) says it best
    if isinstance(exc, (ValueError, TypeError)) and isinstance(data, collections.abc.Mapping) and object_fields(cls) is not None:
        # Every field fitted, and the class refused them (an attrs validator, __post_init__):
        # its words are what the model can act on, not the shape it already had right.
        return [f"{where} is not accepted: {str(exc).rstrip('.')}."]
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


