"""The OpenAI chat-completions wire format, for every provider that speaks it: the HTTP
provider of the core and the embedded llama-cpp-python model of bandoneon-local.

``WireOptions`` carries what some chat templates need (each measured on a real server):
templates that never render ``tool`` messages get results as user text, and templates that
list the tools only inside a system message always get one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import attrs

from ..errors import BadRequest, BadResponse
from ..messages import Message, ModelReply, ModelRequest, OutputSchema, ToolCall, ToolSpec, Usage
from ..parts import ImagePart, Part, TextPart
from .reasoning import ThinkSplitter, reasoning_of, split_think, thinking_blocks
from .base import DeltaCallback

__all__ = [
    "MAX_TOKEN_COUNT",
    "ChunkAssembler",
    "WireOptions",
    "finish_reason",
    "parse_completion",
    "token_count",
    "wire_messages",
    "wire_response_format",
    "wire_tool_choice",
    "wire_tools",
]


@attrs.frozen
class WireOptions:
    """How to write a request for one family of servers.

    ``tool_results_as_user``: send tool results as user messages naming the tool (for chat
    templates that drop ``tool`` messages). ``default_system_prompt``: sent when the request
    has none (for templates that list tools only inside a system message).
    ``required_as_named``: ``tool_choice="required"`` becomes the one offered tool by name
    (for servers that reject ``required``). ``description_in_parameters``: each tool's
    description is also put inside its parameters' schema (for templates that show the model
    the schema but not the description; the keyword changes nothing about what is valid).
    ``output_schema``: the server keeps to a ``response_format`` JSON schema (typed answers are
    asked for natively); ``output_schema_with_tools``: it does so also when tools are offered
    (grammar-constrained servers may not combine the two). ``input_kinds``: the parts
    besides text a user message may carry (``image``, ``file``). ``think_tags``: a
    ``<think>...</think>`` block opening the content is the message's thinking, not its text.
    ``send_reasoning``: earlier replies' thinking goes back as ``reasoning_content`` (off by
    default: DeepSeek and others answer 400 to it). ``response_format``: how a typed answer's
    schema is sent: ``"json_schema"`` (OpenAI's shape) or ``"json_object"`` (``{"type":
    "json_object", "schema": ...}``, what llama-cpp-python's server reads).
    """

    tool_results_as_user: bool = False
    default_system_prompt: str = ""
    required_as_named: bool = False
    description_in_parameters: bool = False
    output_schema: bool = True
    output_schema_with_tools: bool = True
    input_kinds: frozenset[str] = frozenset({"image", "file"})
    think_tags: bool = True
    send_reasoning: bool = False
    response_format: str = "json_schema"


PLAIN = WireOptions()


def wire_messages(request: ModelRequest, options: WireOptions = PLAIN) -> list[dict[str, Any]]:
    """The ``messages`` array: the system prompt first, then the history."""
    messages: list[dict[str, Any]] = []
    system = request.system_prompt or (options.default_system_prompt if request.tools else "")
    if system:
        messages.append({"role": "system", "content": system})
    messages.extend(_wire_message(m, options) for m in request.messages)
    return messages


def _wire_message(message: Message, options: WireOptions) -> dict[str, Any]:
    if message.role == "tool":
        if options.tool_results_as_user:
            label = "Error from" if message.is_error else "Result of"
            return {"role": "user", "content": f"{label} {message.name or 'the tool'}: {message.content}"}
        content = f"Error: {message.content}" if message.is_error and not message.content.startswith("Error") else message.content
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
    if message.role == "assistant":
        # Always a string: some servers answer 422 to null and 500 to a missing content.
        wire: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
        if options.send_reasoning and message.thinking:
            wire["reasoning_content"] = "\n\n".join(t.text for t in message.thinking if not t.is_redacted)
        if message.tool_calls:  # templates test for the key, so it is left out when empty
            wire["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in message.tool_calls
            ]
        return wire
    if message.parts:
        return {"role": message.role, "content": [_wire_part(part, options) for part in message.parts]}
    return {"role": message.role, "content": message.content}


def _wire_part(part: Part, options: WireOptions) -> dict[str, Any]:
    """One content part; a kind this server family cannot take is refused before the request."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if part.kind not in options.input_kinds:
        raise BadRequest(f"this server cannot take {part.kind}s (it takes {', '.join(sorted(options.input_kinds)) or 'text only'})")
    if isinstance(part, ImagePart):
        return {"type": "image_url", "image_url": {"url": part.data_url()}}
    return {"type": "file", "file": {"filename": part.name or "file", "file_data": part.data_url()}}


def wire_tools(tools: Iterable[ToolSpec], options: WireOptions = PLAIN) -> list[dict[str, Any]]:
    wired = []
    for tool in tools:
        parameters = dict(tool.parameters)
        if options.description_in_parameters and tool.description and "description" not in parameters:
            parameters = {"description": tool.description, **parameters}
        wired.append({"type": "function", "function": {"name": tool.name, "description": tool.description, "parameters": parameters}})
    return wired


def wire_tool_choice(request: ModelRequest, options: WireOptions = PLAIN) -> Any:
    """``tool_choice`` for a request that offers tools: always sent (some servers ignore tools
    without it), ``"auto"`` when the agent left it open."""
    choice = request.tool_choice if request.tool_choice is not None else "auto"
    if options.required_as_named and choice in ("required", "any") and len(request.tools) == 1:
        return {"type": "function", "function": {"name": request.tools[0].name}}
    return choice


def wire_response_format(schema: OutputSchema, options: WireOptions = PLAIN) -> dict[str, Any]:
    """``response_format`` asking for JSON of ``schema`` (strict where the schema allows it)."""
    if options.response_format == "json_object":
        return {"type": "json_object", "schema": dict(schema.schema)}
    inner: dict[str, Any] = {"name": schema.name, "schema": dict(schema.schema), "strict": schema.is_strict}
    if schema.description:
        inner["description"] = schema.description
    return {"type": "json_schema", "json_schema": inner}


def finish_reason(value: str | None) -> str:
    """Normalised: ``tool_calls`` for the legacy ``function_call`` too; ``stop`` when missing."""
    if value in ("tool_calls", "function_call"):
        return "tool_calls"
    return value or "stop"


def parse_usage(raw: Any, provider: str = "the server") -> Usage:
    """The ``usage`` object; ``BadResponse`` when a count is not a whole number."""
    if not isinstance(raw, dict):
        raise BadResponse(f"{provider}: the reply's usage is {_kind(raw)}, not an object", provider=provider)
    details = raw.get("prompt_tokens_details") or {}
    if not isinstance(details, dict):
        details = {}
    return Usage(
        input_tokens=token_count(raw.get("prompt_tokens"), "prompt_tokens", provider),
        output_tokens=token_count(raw.get("completion_tokens"), "completion_tokens", provider),
        cached_input_tokens=token_count(details.get("cached_tokens"), "cached_tokens", provider),
        requests=1,
    )


#: The most tokens a reply's count may say: the largest whole number a JSON number holds exactly.
#: A count past it is no count (and a budget's price times it overflows a float).
MAX_TOKEN_COUNT = 2**53 - 1


def token_count(value: Any, field: str, provider: str) -> int:
    """A count of a reply's ``usage`` (0 when missing); ``BadResponse`` unless a whole number
    from 0 to ``MAX_TOKEN_COUNT``, written ``12`` or ``12.0`` (as some proxies write it). Every
    wire reads its counts with it (the Anthropic plugin's too), so they follow one rule."""
    if value is None:
        return 0
    count = int(value) if type(value) is float and value.is_integer() else value
    if type(count) is int and 0 <= count <= MAX_TOKEN_COUNT:
        return count
    raise BadResponse(f"{provider}: the reply's usage.{field} is {_kind(value)}, not a token count", provider=provider)


def _kind(value: Any) -> str:
    """A short description of a wrong value, for an error message (never the whole value)."""
    if value is None:
        return "null"
    return f"{type(value).__name__} {json.dumps(value, default=str)[:60]}"


def parse_completion(data: Any, provider: str, model: str | None = None, *, think_tags: bool = True) -> ModelReply:
    """A ``chat.completion`` document as a ``ModelReply``; ``BadResponse`` when it is not one
    (every field the loop relies on is checked, so a malformed reply never escapes as a raw
    ``TypeError`` from deeper down)."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices:
        raise BadResponse(f"{provider}: the reply has no choices: {json.dumps(data, default=str)[:200]}", provider=provider)
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise BadResponse(f"{provider}: the reply's choices are not a list of objects: {json.dumps(choices, default=str)[:200]}", provider=provider)
    choice = choices[0]
    raw = choice.get("message") or {}
    if not isinstance(raw, dict):
        raise BadResponse(f"{provider}: the reply's message is {_kind(raw)}, not an object", provider=provider)
    content = raw.get("content") or ""
    if not isinstance(content, str):
        raise BadResponse(f"{provider}: the reply's content is {_kind(content)}, not text", provider=provider)
    raw_calls = raw.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise BadResponse(f"{provider}: the reply's tool_calls are {_kind(raw_calls)}, not a list", provider=provider)
    tool_calls = []
    for index, call in enumerate(raw_calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name") or "", str) or not isinstance(call.get("id") or "", str):
            raise BadResponse(f"{provider}: tool call {index} of the reply is malformed: {json.dumps(call, default=str)[:200]}", provider=provider)
        tool_calls.append(ToolCall(call.get("id") or f"call_{index}", function.get("name") or "", _arguments_text(function.get("arguments"))))
    thought, content = split_think(content) if think_tags else ("", content)
    message = Message("assistant", content, tuple(tool_calls), thinking=thinking_blocks(reasoning_of(raw), thought))
    reason = choice.get("finish_reason")
    if reason is not None and not isinstance(reason, str):
        raise BadResponse(f"{provider}: the reply's finish_reason is {_kind(reason)}, not text", provider=provider)
    reply_model = data.get("model")
    return ModelReply(
        message,
        finish_reason(reason),
        parse_usage(data.get("usage") or {}, provider),
        reply_model if isinstance(reply_model, str) and reply_model else model,
    )


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments or "{}"
    return json.dumps(arguments if arguments is not None else {})


class ChunkAssembler:
    """Reassembles a streamed reply from ``chat.completion.chunk`` objects, reporting each
    piece to ``on_delta`` as it arrives. Tool-call names are taken once (some servers repeat
    them in every chunk), arguments are concatenated by call index."""

    def __init__(self, on_delta: DeltaCallback | None, *, think_tags: bool = True):
        self.on_delta = on_delta
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.splitter = ThinkSplitter() if think_tags else None
        self.calls: dict[int, dict[str, str]] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.model: str | None = None
        self.pieces = 0
        #: The ``index`` of the choice being assembled: the first one seen. A server asked for
        #: several (``n`` in the settings) interleaves their deltas; mixing them would splice
        #: two replies into one (the non-streamed path also takes the first choice only).
        self.choice: Any = None

    @property
    def delivered(self) -> bool:
        return self.pieces > 0

    async def feed(self, chunk: dict[str, Any], provider: str = "the server") -> None:
        """Take one chunk; ``BadResponse`` when it is not shaped like one."""
        model = chunk.get("model")
        self.model = model if isinstance(model, str) and model else self.model
        if chunk.get("usage"):
            self.usage = parse_usage(chunk["usage"], provider)
        choices = chunk.get("choices") or []
        if not isinstance(choices, list) or not all(isinstance(c, dict) and isinstance(c.get("delta") or {}, dict) for c in choices):
            raise BadResponse(f"{provider}: a stream chunk's choices are malformed: {json.dumps(choices, default=str)[:200]}", provider=provider)
        for choice in choices:
            which = choice.get("index") or 0
            if which != self.choice:
                if self.choice is not None:
                    continue
                self.choice = which
            delta = choice.get("delta") or {}
            if not isinstance(delta.get("content") or "", str) or not isinstance(delta.get("tool_calls") or [], list):
                raise BadResponse(f"{provider}: a stream chunk's delta is malformed: {json.dumps(delta, default=str)[:200]}", provider=provider)
            reasoning = reasoning_of(delta)
            if reasoning:
                await self._piece("thinking", reasoning)
            if delta.get("content"):
                if self.splitter is None:
                    await self._piece("text", delta["content"])
                else:
                    for kind, piece in self.splitter.feed(delta["content"]):
                        await self._piece(kind, piece)
            for piece in delta.get("tool_calls") or ():
                function = piece.get("function") if isinstance(piece, dict) else None
                index = (piece["index"] if "index" in piece else self._unindexed_slot(piece, function)) if isinstance(piece, dict) else None
                # Every field the reply keeps is checked, as in ``parse_completion``: an id or a
                # name that is not text would otherwise escape later as a raw TypeError.
                if (
                    not isinstance(function or {}, dict)
                    or not isinstance(index, int)
                    or not isinstance((function or {}).get("arguments") or "", str)
                    or not isinstance((function or {}).get("name") or "", str)
                    or not isinstance(piece.get("id") or "", str)
                ):
                    raise BadResponse(f"{provider}: a streamed tool call is malformed: {json.dumps(piece, default=str)[:200]}", provider=provider)
                function = function or {}
                slot = self.calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
                slot["id"] = slot["id"] or piece.get("id") or ""
                slot["name"] = slot["name"] or function.get("name") or ""
                arguments = function.get("arguments") or ""
                slot["arguments"] += arguments
                self.pieces += 1
                if self.on_delta is not None:
                    await self.on_delta("tool_call", (index, slot["name"] or None, arguments))
            reason = choice.get("finish_reason")
            if reason:
                if not isinstance(reason, str):
                    raise BadResponse(f"{provider}: a stream chunk's finish_reason is {_kind(reason)}, not text", provider=provider)
                self.finish_reason = reason

    def _unindexed_slot(self, piece: dict[str, Any], function: Any) -> int:
        """The call a piece without an ``index`` belongs to (some servers leave it out): a new
        one when the piece brings an id or a name other than the last call's, else the last
        call, whose arguments it goes on with (a call's arguments may come in many pieces)."""
        if not self.calls:
            return 0
        last = max(self.calls)
        slot = self.calls[last]
        call_id = piece.get("id")
        name = function.get("name") if isinstance(function, dict) else None
        is_new = (call_id and call_id != slot["id"]) or (not call_id and name and slot["name"] and name != slot["name"])
        return last + 1 if is_new else last

    async def _piece(self, kind: str, text: str) -> None:
        (self.thinking if kind == "thinking" else self.text).append(text)
        self.pieces += 1
        if self.on_delta is not None:
            await self.on_delta(kind, text)

    def reply(self, model: str | None = None, usage: Usage | None = None) -> ModelReply:
        """The whole reply; ``usage`` stands in when the stream carried none."""
        if self.splitter is not None:
            for kind, piece in self.splitter.finish():
                (self.thinking if kind == "thinking" else self.text).append(piece)
        tool_calls = tuple(
            ToolCall(slot["id"] or f"call_{index}", slot["name"], slot["arguments"] or "{}") for index, slot in sorted(self.calls.items())
        )
        return ModelReply(
            Message("assistant", "".join(self.text), tool_calls, thinking=thinking_blocks("".join(self.thinking).strip())),
            finish_reason(self.finish_reason),
            self.usage or usage or Usage(requests=1),
            self.model or model,
        )
