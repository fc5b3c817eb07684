"""Typed answers: how a run asks the model for a value of ``output_type`` and checks what came.

Two ways to ask, chosen per run (``output_mode``):

- ``"native"``: the provider makes the server keep to a JSON schema (OpenAI ``response_format``,
  a llama.cpp grammar, Anthropic tool-forcing); the reply's text is the JSON.
- ``"tool"``: the model is offered one more tool, ``final_answer``, whose input is the answer.

``"auto"`` takes ``native`` when the provider says it can (``supports_output_schema``), else
``tool``. Either way the answer is structured with the core's cattrs converter; what does not
fit goes back to the model as sentences naming each field, at most ``output_retries`` times.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from .errors import ConfigError
from .jsonlimits import DEFAULT_JSON_LIMITS, JsonLimits, loads_bounded
from .messages import OutputSchema, ToolSpec
from .schema import json_schema, object_fields, parse_docstring
from .structuring import StructureError, structure, unstructure

__all__ = ["OUTPUT_TOOL", "OutputMode", "OutputSpec", "is_plain_text", "output_spec"]

OutputMode = Literal["auto", "native", "tool"]
OUTPUT_MODES = ("auto", "native", "tool")

#: The name of the tool that carries the answer in ``tool`` mode.
OUTPUT_TOOL = "final_answer"
#: Where a value that is not an object (a list, a number, one of several shapes) sits in the
#: JSON the model writes: servers and APIs want an object at the top.
WRAPPER_KEY = "answer"

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n?```\s*$", re.DOTALL)


class OutputInvalid(ValueError):
    """The model's answer does not fit the output type; the message is what the model reads."""


@attrs.frozen
class OutputSpec:
    """One run's output type, how it is asked for, and how many repairs it may take."""

    type: Any
    schema: OutputSchema
    is_wrapped: bool
    mode: Literal["native", "tool"]
    retries: int
    limits: JsonLimits = DEFAULT_JSON_LIMITS

    @property
    def tool(self) -> ToolSpec:
        return ToolSpec(OUTPUT_TOOL, _tool_description(self.schema), self.schema.schema)

    def parse_text(self, text: str) -> Any:
        """The answer written as JSON text (``native`` mode, a wrap-up), structured."""
        match = _FENCE.match(text)
        raw = match.group(1) if match else text
        try:
            data = loads_bounded(raw, self.limits)
        except ValueError as exc:
            shown = text.strip()[:60]
            raise OutputInvalid(
                f"Your answer is not valid JSON ({exc.__class__.__name__}: {exc}); it began {shown!r}. "
                f"Reply with only the JSON object: {_shape(self)}."
            ) from None
        _refuse_non_finite(raw, data)
        return self.check(data)

    def parse_arguments(self, arguments: str) -> Any:
        """The answer given as the ``final_answer`` tool's input, structured."""
        try:
            data = loads_bounded(arguments or "{}", self.limits)
        except ValueError as exc:
            raise OutputInvalid(f"The input of {OUTPUT_TOOL} is not valid JSON ({exc}). Call it again with {_shape(self)}.") from None
        _refuse_non_finite(arguments, data)
        return self.check(data)

    def check_tool_input(self, answer: Any) -> Any:
        """A ``Stop``'s answer (a terminal tool's input) as the typed answer. The tool structured
        its input for its own parameters (a ``Reading`` instance, not its JSON object): it is
        unstructured to JSON's shapes and checked from there, every number too (the tool's
        reading takes ``NaN``, as Python's decoder does)."""
        data = unstructure(answer)
        if not _all_finite(data):
            raise OutputInvalid(_NOT_FINITE)
        return self.check(data)

    def check(self, data: Any) -> Any:
        """``data`` (decoded JSON) as an instance of the type."""
        if self.is_wrapped:
            if isinstance(data, dict) and set(data) == {WRAPPER_KEY}:
                data = data[WRAPPER_KEY]
        try:
            return structure(data, self.type, subject="The answer")
        except StructureError as exc:
            raise OutputInvalid(" ".join(exc.problems)) from None

    def repair_prompt(self, problem: str) -> str:
        """What the model reads after an answer that did not fit."""
        how = "Reply again with only the corrected JSON." if self.mode == "native" else f"Call {OUTPUT_TOOL} again with the corrected answer."
        return f"Your answer does not have the required shape. {problem} {how}"

    def missing_tool_prompt(self) -> str:
        return f"Give your final answer by calling the {OUTPUT_TOOL} tool with {_shape(self)}; a plain text reply is not accepted."


#: Text that may decode to a number that is not finite: Python's decoder takes ``NaN`` and
#: ``Infinity`` (JSON has neither) and turns ``1e999`` or a decimal of 309 digits into ``inf``.
_MAYBE_NOT_FINITE = re.compile(r"NaN|Infinity|[eE]\+?\d{3}|\d{309}")


_NOT_FINITE = "Your answer has a number that is not finite (NaN, Infinity, or too large for a float); JSON allows only finite numbers."


def _refuse_non_finite(text: str, data: Any) -> None:
    """An answer with a number that is not finite is not valid JSON: sent back for repair,
    never handed to the caller (a store or a JSON API would fail on it later). The decoded
    value is walked only when the text has a token that might be one (a C-level search)."""
    if _MAYBE_NOT_FINITE.search(text) is not None and not _all_finite(data):
        raise OutputInvalid(_NOT_FINITE)


def _all_finite(value: Any) -> bool:
    """Every float in ``value`` (decoded JSON, or unstructured arguments) is finite."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return all(_all_finite(item) for item in value)
    if isinstance(value, Mapping):
        return all(_all_finite(item) for item in value.values())
    return True


def is_plain_text(output_type: Any) -> bool:
    """No type, or ``str``: the answer is the model's text, and a run needs no ``OutputSpec``."""
    return output_type is None or output_type is str


def output_spec(
    output_type: Any, mode: str, retries: int, providers: Sequence[object], *, has_tools: bool, limits: JsonLimits = DEFAULT_JSON_LIMITS
) -> OutputSpec | None:
    """The spec of a run, or None when the answer is plain text (no type, or ``str``).

    ``providers`` are the model and its fallbacks: the answer is asked for natively only when
    every one of them can, since a fallback may take over mid-run.
    """
    if is_plain_text(output_type):
        return None
    if mode not in OUTPUT_MODES:
        raise ConfigError(f"output_mode must be one of {', '.join(OUTPUT_MODES)}, got {mode!r}")
    if retries < 0:
        raise ConfigError(f"output_retries must be 0 or more, got {retries}")
    schema, is_wrapped = _schema(output_type)
    lacking = [p for p in providers if not _native(p, has_tools)]
    native = not lacking
    if mode == "native" and not native:
        name = getattr(lacking[0], "name", type(lacking[0]).__name__)
        raise ConfigError(
            f"output_mode='native' but the provider {name!r} cannot enforce a JSON schema"
            + (" together with tools" if has_tools else "")
            + "; use output_mode='tool' (a final_answer tool) or 'auto'"
        )
    chosen: Literal["native", "tool"] = "native" if mode == "native" or (mode == "auto" and native) else "tool"
    return OutputSpec(output_type, schema, is_wrapped, chosen, retries, limits)


def _native(provider: object, has_tools: bool) -> bool:
    supports = getattr(provider, "supports_output_schema", None)
    return bool(supports(with_tools=has_tools)) if callable(supports) else False


@functools.lru_cache(maxsize=256)
def _schema(output_type: Any) -> tuple[OutputSchema, bool]:
    """The wire schema of a type, built once per type (runs of one agent reuse it)."""
    try:
        inner = json_schema(output_type)
    except TypeError as exc:
        raise ConfigError(f"output_type {output_type!r} cannot be asked of a model: {exc}") from None
    except RecursionError:
        # A class with a field of its own type (a tree): the schema is written out inline, so
        # it never ends. Said when the agent is made, like any other type no model can fill in.
        raise ConfigError(
            f"output_type {output_type!r} cannot be asked of a model: it contains itself (a recursive type); "
            "give the nesting a fixed depth, or take the nested part as a JSON string"
        ) from None
    is_object = object_fields(output_type) is not None
    if is_object:
        schema = inner
        description = parse_docstring(output_type.__doc__)[0]
    else:
        schema = {"type": "object", "properties": {WRAPPER_KEY: inner}, "required": [WRAPPER_KEY], "additionalProperties": False}
        description = ""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", getattr(output_type, "__name__", "") if is_object else WRAPPER_KEY)[:64] or WRAPPER_KEY
    return OutputSchema(name, schema, description, is_strict=_is_strict(schema)), not is_object


def _is_strict(schema: Any) -> bool:
    """OpenAI's strict mode: every object lists all its properties as required and allows no
    others; every schema says what it is (``{}``, for ``Any``, is refused: "schema must have a
    'type' key"); a few keywords are not supported at all."""
    if not isinstance(schema, Mapping) or "prefixItems" in schema or "uniqueItems" in schema:
        return False
    if not _SAYS_WHAT.intersection(schema):
        return False
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False or set(schema.get("required") or ()) != set(properties):
            return False
        if not all(_is_strict(value) for value in properties.values()):
            return False
    if "items" in schema and not _is_strict(schema["items"]):
        return False
    return all(_is_strict(option) for option in schema.get("anyOf", ()))


#: The keywords of which a schema in strict mode needs at least one.
_SAYS_WHAT = frozenset(("type", "anyOf", "enum", "const", "$ref"))


def _shape(spec: OutputSpec) -> str:
    fields = spec.schema.schema.get("properties") or {}
    return "an object with the fields " + ", ".join(fields) if fields else "a JSON object"


def _tool_description(schema: OutputSchema) -> str:
    lead = "Give your final answer with this tool once you have it; its input is the answer."
    return f"{lead} {schema.description}" if schema.description else lead
