"""JSON Schema from Python type hints, and docstring parameter descriptions.

Only the shapes a model can fill in are supported: str, int, float, bool, None, Literal,
Enum, list/tuple/set, dict with str keys, Optional and unions, attrs classes, dataclasses and
TypedDicts. Anything else is a ``TypeError`` when the tool (or the output type) is defined,
not a surprise when the model answers.
"""

from __future__ import annotations

import enum
import inspect
import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Union

import attrs

__all__ = ["json_schema", "literal_value", "object_fields", "parse_docstring", "type_phrase"]

_PRIMITIVES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
}


def unwrap_annotated(tp: Any) -> tuple[Any, str | None]:
    """``Annotated[T, "description"]`` → ``(T, "description")``; anything else → ``(tp, None)``."""
    if typing.get_origin(tp) is Annotated:
        base, *extras = typing.get_args(tp)
        description = next((e for e in extras if isinstance(e, str)), None)
        return base, description
    return tp, None


def is_optional(tp: Any) -> bool:
    return _is_union(tp) and type(None) in typing.get_args(tp)


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def json_schema(tp: Any) -> dict[str, Any]:
    """The JSON Schema of one Python type, as a model reads it."""
    tp, description = unwrap_annotated(tp)
    schema = _schema(tp)
    if description:
        schema = {**schema, "description": description}
    return schema


def _schema(tp: Any) -> dict[str, Any]:
    if tp is Any:
        return {}
    if tp in _PRIMITIVES:
        return dict(_PRIMITIVES[tp])
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Literal:
        return {"enum": [literal_value(a) for a in args]}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [member.value for member in tp]}
    if _is_union(tp):
        options = [a for a in args if a is not type(None)]
        inner = json_schema(options[0]) if len(options) == 1 else {"anyOf": [json_schema(a) for a in options]}
        if type(None) in args:
            if "type" in inner and isinstance(inner["type"], str):
                return {**inner, "type": [inner["type"], "null"]}
            return {"anyOf": [inner, {"type": "null"}]}
        return inner
    if origin in (list, tuple, set, frozenset, Sequence) or tp in (list, tuple, set, frozenset):
        schema: dict[str, Any] = {"type": "array"}
        if origin is tuple and args and args[-1] is not Ellipsis:
            schema.update(prefixItems=[json_schema(a) for a in args], minItems=len(args), maxItems=len(args))
        elif args:
            schema["items"] = json_schema(args[0])
        if origin in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        schema = {"type": "object"}
        if len(args) == 2:
            if args[0] is not str:
                raise TypeError(f"dict keys must be str for a tool parameter, got {args[0]!r}")
            schema["additionalProperties"] = json_schema(args[1])
        return schema
    fields = object_fields(tp)
    if fields is not None:
        return object_schema(fields, descriptions=parse_docstring(tp.__doc__)[1])
    raise TypeError(
        f"{tp!r} cannot be described to a model as JSON; use str, int, float, bool, Literal, Enum, list, dict, "
        "an attrs class, a dataclass or a TypedDict"
    )


def object_fields(tp: Any) -> dict[str, tuple[Any, bool]] | None:
    """``{name: (type, is_required)}`` of an attrs class, a dataclass or a TypedDict; None otherwise."""
    if not isinstance(tp, type):
        return None
    if attrs.has(tp):
        attrs.resolve_types(tp)  # string annotations (from __future__ import annotations)
        # init=False fields are the class's own state: nobody passes them, and cattrs does not read them
        return {f.name: (f.type, f.default is attrs.NOTHING) for f in attrs.fields(tp) if f.init}
    if hasattr(tp, "__dataclass_fields__"):  # dataclasses.is_dataclass, without importing it (issue #19)
        import dataclasses

        hints = typing.get_type_hints(tp, include_extras=True)
        return {
            f.name: (hints[f.name], f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
            for f in dataclasses.fields(tp)
            if f.init
        }
    if typing.is_typeddict(tp):
        hints = typing.get_type_hints(tp)  # without extras: NotRequired[...] is read from __required_keys__
        required = getattr(tp, "__required_keys__", frozenset(hints))
        return {name: (hint, name in required) for name, hint in hints.items()}
    return None


def object_schema(fields: Mapping[str, tuple[Any, bool]], descriptions: Mapping[str, str] | None = None) -> dict[str, Any]:
    """An object schema with ``required`` and ``additionalProperties: false``.

    ``fields`` maps a name to ``(type, is_required)``.
    """
    descriptions = descriptions or {}
    properties: dict[str, Any] = {}
    for name, (tp, _) in fields.items():
        prop = json_schema(tp)
        if name in descriptions and "description" not in prop:
            prop["description"] = descriptions[name]
        properties[name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": [name for name, (_, required) in fields.items() if required],
        "additionalProperties": False,
    }


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$", re.IGNORECASE)
_SECTION_HEADER = re.compile(r"^\s*(Returns?|Raises|Yields|Examples?|Notes?)\s*:\s*$", re.IGNORECASE)
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {parameter: description})."""
    if not doc:
        return "", {}
    description: list[str] = []
    params: dict[str, str] = {}
    section = "description"
    current: str | None = None
    arg_indent: int | None = None
    for line in inspect.cleandoc(doc).splitlines():
        if _ARGS_HEADER.match(line):
            section, current, arg_indent = "args", None, None
        elif _SECTION_HEADER.match(line):
            section, current = "other", None
        elif section == "description":
            description.append(line)
        elif section == "args" and line.strip():
            indent = len(line) - len(line.lstrip())
            match = _ARG_LINE.match(line)
            if match and (arg_indent is None or indent <= arg_indent):
                arg_indent = indent
                current = match.group(1).lstrip("*")
                params[current] = match.group(3).strip()
            elif current:
                params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(description).strip(), params


def type_phrase(tp: Any) -> str:
    """How an expected type reads in an error sentence for the model: 'an integer', 'one of ...'."""
    tp, _ = unwrap_annotated(tp)
    if tp is Any:
        return "any value"
    simple = {str: "a string", int: "an integer", float: "a number", bool: "true or false", type(None): "null", bytes: "base64 text"}
    if tp in simple:
        return simple[tp]
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(literal_value(a)) for a in typing.get_args(tp))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(repr(m.value) for m in tp)
    if _is_union(tp):
        return " or ".join(type_phrase(a) for a in typing.get_args(tp))
    if origin in (list, tuple, set, frozenset, Sequence) or tp in (list, tuple, set, frozenset):
        args = typing.get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            return f"a list of {len(args)} items ({', '.join(type_phrase(a) for a in args)})"
        return f"a list of {_plural(args[0])}" if args else "a list"
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        return "an object"
    fields = object_fields(tp)
    if fields is not None:
        return "an object with the fields " + ", ".join(fields)
    return getattr(tp, "__name__", repr(tp))


def literal_value(value: Any) -> Any:
    """A ``Literal``'s value as JSON has it: an enum member (``Literal[Colour.RED]``) is its value
    (the schema offers it so, and an answer is matched against it so)."""
    return value.value if isinstance(value, enum.Enum) else value


def _plural(tp: Any) -> str:
    phrase = type_phrase(tp)
    for article in ("an ", "a "):
        if phrase.startswith(article):
            return phrase[len(article):] + "s"
    return phrase
