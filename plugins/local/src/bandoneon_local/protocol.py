"""bandoneon's own tool protocol, for chat models whose template knows nothing of tools.

SmolLM2's chat template has no tool support, and llama.cpp does not enforce ``tool_choice``
for it, so the tools are rendered into the system prompt and every reply is constrained by a
JSON schema (llama.cpp turns it into a grammar) that is the union of

- ``{"tool": "<one of the offered names>", "arguments": {...}}`` with arguments valid for that
  tool's schema, and
- ``{"answer": "<text>"}``, the final answer.

A reply is therefore a well-formed call or an answer, never prose that looks like a call.
Every string in the schema gets a ``maxLength`` (the tool's own limit, or a default), so no
argument can run on until the context is full. The conversation is shown to the model in the
same shape: its past calls as that JSON, tool results as user messages naming the tool.

``ReplyDecoder`` reads the constrained reply as it streams, so an answer reaches listeners as
text deltas and a call as tool-call deltas (its arguments piece by piece).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from bandoneon import BadResponse, ConfigError, DeltaCallback, Message, ModelRequest, ToolCall, ToolSpec, loads_bounded

__all__ = [
    "DEFAULT_STRING_CAP",
    "ReplyDecoder",
    "ReplyShape",
    "cap_strings",
    "instructions",
    "render_messages",
    "reply_schema",
    "reply_shape",
]

#: ``maxLength`` of a string argument whose schema declares none (characters).
DEFAULT_STRING_CAP = 400
_TOOL, _ARGUMENTS, _ANSWER = "tool", "arguments", "answer"


@attrs.frozen
class ReplyShape:
    """What one reply may be: a call to one of ``calls``, and/or an answer (``may_answer``).

    ``calls`` empty and ``may_answer`` true with no tools offered at all means plain text.
    """

    calls: tuple[ToolSpec, ...]
    may_answer: bool
    offers_tools: bool
    #: The JSON schema of a typed answer (``ModelRequest.output_schema``), else a free string.
    answer_schema: Mapping[str, Any] | None = None

    @property
    def is_plain(self) -> bool:
        return not self.offers_tools


def reply_shape(tools: Sequence[ToolSpec], tool_choice: Any, answer_schema: Mapping[str, Any] | None = None) -> ReplyShape:
    """The shape ``tool_choice`` allows: ``auto``/None (call or answer), ``none`` (answer),
    ``required``/``any`` (a call), or one named tool; ``ConfigError`` for anything else."""
    tools = tuple(tools)
    if not tools:
        return ReplyShape((), True, False, answer_schema)
    if tool_choice is None or tool_choice == "auto":
        return ReplyShape(tools, True, True, answer_schema)
    if tool_choice == "none":
        return ReplyShape((), True, True, answer_schema)
    if tool_choice in ("required", "any"):
        return ReplyShape(tools, False, True)
    if isinstance(tool_choice, Mapping):
        name = (tool_choice.get("function") or {}).get("name") or tool_choice.get("name")
        if not name:
            raise ConfigError(f"local model: tool_choice {tool_choice!r} names no tool; use 'auto', 'none', 'required' or {{'type': 'function', 'function': {{'name': ...}}}}")
        chosen = tuple(t for t in tools if t.name == name)
        if not chosen:
            raise ConfigError(f"local model: tool_choice names {name!r}, which is not one of the offered tools ({', '.join(t.name for t in tools)})")
        return ReplyShape(chosen, False, True)
    raise ConfigError(f"local model: unknown tool_choice {tool_choice!r}; use 'auto', 'none', 'required' or a tool name dict")


#: Keywords whose values are data, not schemas: left as they are.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", "required"})
#: Keywords whose values map names to schemas: a property may be called "enum" or "default".
_NAMED_SCHEMAS = frozenset({"properties", "patternProperties", "$defs", "definitions"})


def cap_strings(schema: Any, cap: int) -> Any:
    """A copy of ``schema`` where every free string has a ``maxLength`` (its own, or ``cap``)."""
    if isinstance(schema, list):
        return [cap_strings(item, cap) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    capped = {}
    for key, value in schema.items():
        if key in _DATA_KEYWORDS:
            capped[key] = value
        elif key in _NAMED_SCHEMAS and isinstance(value, Mapping):
            capped[key] = {name: cap_strings(named, cap) for name, named in value.items()}
        else:
            capped[key] = cap_strings(value, cap)
    kind = capped.get("type")
    is_string = kind == "string" or (isinstance(kind, list) and "string" in kind)
    if is_string and "maxLength" not in capped and "enum" not in capped and "const" not in capped:
        capped["maxLength"] = cap
    return capped


def reply_schema(shape: ReplyShape, *, string_cap: int, answer_cap: int) -> dict[str, Any] | None:
    """The JSON schema every reply must match, or None for free text."""
    answer = cap_strings(shape.answer_schema, string_cap) if shape.answer_schema is not None else {"type": "string", "maxLength": answer_cap}
    if shape.is_plain:
        return answer if shape.answer_schema is not None else None
    variants: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {_TOOL: {"const": spec.name}, _ARGUMENTS: cap_strings(_object_schema(spec.parameters), string_cap)},
            "required": [_TOOL, _ARGUMENTS],
            "additionalProperties": False,
        }
        for spec in shape.calls
    ]
    if shape.may_answer:
        variants.append({"type": "object", "properties": {_ANSWER: answer}, "required": [_ANSWER], "additionalProperties": False})
    return variants[0] if len(variants) == 1 else {"oneOf": variants}


def _object_schema(parameters: Mapping[str, Any]) -> dict[str, Any]:
    schema = dict(parameters) or {"type": "object", "properties": {}}
    schema.setdefault("type", "object")
    return schema


def instructions(tools: Sequence[ToolSpec]) -> str:
    """The part of the system prompt that lists the tools and says how to reply.

    The same whatever ``tool_choice`` allows this turn (the grammar enforces that), so the
    system prompt does not change from turn to turn and llama.cpp's prompt cache keeps it.
    The format is described, not shown with a placeholder: a 135M model copies placeholders.
    """
    if not tools:
        return ""
    lines = ["You can call these tools:"]
    for spec in tools:
        properties = dict(spec.parameters).get("properties") or {}
        lines.append(f"- {spec.name}: {spec.description.strip() or '(no description)'} Arguments: {json.dumps(properties, ensure_ascii=False)}")
    lines.append(f'To call a tool, reply with JSON like {{"tool":"{tools[0].name}","arguments":{{...}}}}. To answer the user, reply with JSON: {{"answer": followed by your answer}}.')
    return "\n".join(lines)


def render_messages(request: ModelRequest, shape: ReplyShape) -> list[dict[str, Any]]:
    """The chat messages the model reads: system prompt (with the tool instructions), then the
    history, where past calls and answers appear in the reply format and results as user text."""
    system = "\n\n".join(part for part in (request.system_prompt, instructions(request.tools)) if part)
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in request.messages:
        messages.append(_render(message, as_json=not shape.is_plain))
    return messages


def _render(message: Message, *, as_json: bool) -> dict[str, Any]:
    if message.role == "tool":
        label = "Error from" if message.is_error else "Result of"
        return {"role": "user", "content": f"{label} {message.name or 'the tool'}: {message.content}"}
    if message.role == "assistant":
        if message.tool_calls:
            content = "\n".join(f'{{"{_TOOL}":{json.dumps(c.name)},"{_ARGUMENTS}":{c.arguments or "{}"}}}' for c in message.tool_calls)
        elif as_json:
            content = json.dumps({_ANSWER: message.content}, ensure_ascii=False, separators=(",", ":"))
        else:
            content = message.content
        return {"role": "assistant", "content": content}
    return {"role": message.role, "content": message.content}


class ReplyDecoder:
    """Reads a reply as it streams: plain text, or the constrained JSON of the protocol.

    ``feed`` takes each generated piece and reports what it can to ``on_delta``: the answer's
    text as it is decoded, the call's name once complete and its arguments piece by piece.
    ``message`` gives the whole reply once the stream ended.
    """

    def __init__(self, shape: ReplyShape, on_delta: DeltaCallback | None):
        self.shape = shape
        self.on_delta = on_delta
        self.raw: list[str] = []
        # the scanner's state, for the JSON form
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._after_key = False
        self._key: str | None = None
        self._string: list[str] = []  # the raw text of the depth-1 string being read
        self._reading: str | None = None  # "key", "tool", "answer", "arguments" or None
        self._name: str | None = None
        self._name_sent = False
        self._object: list[str] = []  # the raw text of the call's arguments, or of a typed answer
        self._object_sent = 0
        self._answer_sent = ""
        self._answer_raw = ""

    @property
    def text(self) -> str:
        return "".join(self.raw)

    async def feed(self, piece: str) -> None:
        self.raw.append(piece)
        if self.shape.is_plain:
            if self.on_delta is not None and piece:
                await self.on_delta("text", piece)
            return
        for char in piece:
            self._scan(char)
        await self._report()

    def _scan(self, char: str) -> None:
        if self._reading == "object":
            self._object.append(char)
        if self._in_string:
            if self._escape:
                self._escape = False
            elif char == "\\":
                self._escape = True
            elif char == '"':
                self._in_string = False
                if self._depth == 1:
                    self._end_string()
                return
            if self._depth == 1:
                self._string.append(char)
            return
        if char == '"':
            self._in_string = True
            if self._depth == 1:
                self._string = []
                self._reading = self._key if self._after_key else "key"
        elif char in "{[":
            self._depth += 1
            if self._depth == 2 and self._after_key and self._key in (_ARGUMENTS, _ANSWER):
                self._reading = "object"
                self._object = [char]
        elif char in "}]":
            self._depth -= 1
            if self._depth == 1 and self._reading == "object":
                self._reading = None
                self._after_key = False
        elif char == ":" and self._depth == 1:
            self._after_key = True
        elif char == "," and self._depth == 1:
            self._after_key = False

    def _end_string(self) -> None:
        value = _decode_string("".join(self._string))
        if self._reading == "key":
            self._key = value
        elif self._reading == _TOOL:
            self._name = value
            self._after_key = False
        elif self._reading == _ANSWER:
            self._answer_raw = "".join(self._string)
            self._after_key = False
        self._reading = None

    async def _report(self) -> None:
        if self.on_delta is None:
            return
        if self._key == _ANSWER and (self._reading == _ANSWER or self._answer_raw):
            decoded = _decode_prefix(self._answer_raw or "".join(self._string))
            if len(decoded) > len(self._answer_sent):
                await self.on_delta("text", decoded[len(self._answer_sent):])
                self._answer_sent = decoded
        if self._name is not None and not self._name_sent:
            self._name_sent = True
            await self.on_delta("tool_call", (0, self._name, ""))
        if len(self._object) > self._object_sent and (self._name_sent or self._key == _ANSWER):
            piece = "".join(self._object[self._object_sent:])
            self._object_sent = len(self._object)
            await self.on_delta("tool_call", (0, self._name, piece)) if self._name_sent else await self.on_delta("text", piece)

    def message(self, finish_reason: str) -> Message:
        """The reply as a message; a reply cut short by ``max_tokens`` keeps what was made
        (a call with its broken arguments, which the loop answers as cut off)."""
        text = self.text
        if self.shape.is_plain:
            return Message.assistant(text)
        try:
            data = loads_bounded(text)  # the model's text: bounded like any JSON from outside
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get(_TOOL), str):
            return Message.assistant("", [ToolCall(_call_id(), data[_TOOL], "".join(self._object) or "{}")])
        if isinstance(data, dict) and isinstance(data.get(_ANSWER), str):
            return Message.assistant(data[_ANSWER])
        if isinstance(data, dict) and _ANSWER in data:
            return Message.assistant("".join(self._object))
        if finish_reason == "length":
            name = self._name if self._name is not None else _decode_prefix("".join(self._string)) if self._reading == _TOOL else None
            if name is not None:
                return Message.assistant("", [ToolCall(_call_id(), name, "".join(self._object))])
            if self._object:
                return Message.assistant("".join(self._object))
            if self._key == _ANSWER:
                return Message.assistant(_decode_prefix(self._answer_raw or "".join(self._string)))
            return Message.assistant("")  # cut before anything could be read
        raise BadResponse(f"local: the reply does not follow the tool protocol: {text[:200]!r}", provider="local")


def _call_id() -> str:
    return f"call_{os.urandom(6).hex()}"


def _decode_string(raw: str) -> str:
    try:
        return str(json.loads(f'"{raw}"'))
    except ValueError:
        return _decode_prefix(raw)


def _decode_prefix(raw: str) -> str:
    """The decoded text of the longest prefix of a JSON string body that parses: a cut escape
    is left for later, and so is a dangling high surrogate (joined deltas equal the whole)."""
    for cut in range(len(raw), max(-1, len(raw) - 13), -1):
        try:
            decoded = str(json.loads(f'"{raw[:cut]}"'))
        except ValueError:
            continue
        if decoded and "\ud800" <= decoded[-1] <= "\udbff":
            continue
        return decoded
    return ""
