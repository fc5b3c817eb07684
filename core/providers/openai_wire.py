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

from ..errors import BadResponse
from ..messages import Message, ModelReply, ModelRequest, ToolCall, ToolSpec, Usage
from .base import DeltaCallback

__all__ = ["ChunkAssembler", "WireOptions", "finish_reason", "parse_completion", "wire_messages", "wire_tool_choice", "wire_tools"]


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
    """

    tool_results_as_user: bool = False
    default_system_prompt: str = ""
    required_as_named: bool = False
    description_in_parameters: bool = False


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
        if message.tool_calls:  # templates test for the key, so it is left out when empty
            wire["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in message.tool_calls
            ]
        return wire
    return {"role": message.role, "content": message.content}


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


def finish_reason(value: str | None) -> str:
    """Normalised: ``tool_calls`` for the legacy ``function_call`` too; ``stop`` when missing."""
    if value in ("tool_calls", "function_call"):
        return "tool_calls"
    return value or "stop"


def parse_usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("prompt_tokens_details") or {}
    return Usage(
        input_tokens=raw.get("prompt_tokens") or 0,
        output_tokens=raw.get("completion_tokens") or 0,
        cached_input_tokens=details.get("cached_tokens") or 0,
        requests=1,
    )


def parse_completion(data: Any, provider: str, model: str | None = None) -> ModelReply:
    """A ``chat.completion`` document as a ``ModelReply``; ``BadResponse`` when it is not one."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices:
        raise BadResponse(f"{provider}: the reply has no choices: {json.dumps(data, default=str)[:200]}", provider=provider)
    choice = choices[0]
    raw = choice.get("message") or {}
    tool_calls = []
    for index, call in enumerate(raw.get("tool_calls") or ()):
        function = call.get("function") or {}
        tool_calls.append(ToolCall(call.get("id") or f"call_{index}", function.get("name") or "", _arguments_text(function.get("arguments"))))
    message = Message.assistant(raw.get("content") or "", tool_calls)
    return ModelReply(message, finish_reason(choice.get("finish_reason")), parse_usage(data.get("usage") or {}), data.get("model") or model)


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments or "{}"
    return json.dumps(arguments if arguments is not None else {})


class ChunkAssembler:
    """Reassembles a streamed reply from ``chat.completion.chunk`` objects, reporting each
    piece to ``on_delta`` as it arrives. Tool-call names are taken once (some servers repeat
    them in every chunk), arguments are concatenated by call index."""

    def __init__(self, on_delta: DeltaCallback | None):
        self.on_delta = on_delta
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.model: str | None = None
        self.pieces = 0

    @property
    def delivered(self) -> bool:
        return self.pieces > 0

    async def feed(self, chunk: dict[str, Any]) -> None:
        self.model = chunk.get("model") or self.model
        if chunk.get("usage"):
            self.usage = parse_usage(chunk["usage"])
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content"):
                self.text.append(delta["content"])
                self.pieces += 1
                if self.on_delta is not None:
                    await self.on_delta("text", delta["content"])
            for piece in delta.get("tool_calls") or ():
                index = piece.get("index", len(self.calls))
                function = piece.get("function") or {}
                slot = self.calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
                slot["id"] = slot["id"] or piece.get("id") or ""
                slot["name"] = slot["name"] or function.get("name") or ""
                arguments = function.get("arguments") or ""
                slot["arguments"] += arguments
                self.pieces += 1
                if self.on_delta is not None:
                    await self.on_delta("tool_call", (index, slot["name"] or None, arguments))
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]

    def reply(self, model: str | None = None, usage: Usage | None = None) -> ModelReply:
        """The whole reply; ``usage`` stands in when the stream carried none."""
        tool_calls = tuple(
            ToolCall(slot["id"] or f"call_{index}", slot["name"], slot["arguments"] or "{}") for index, slot in sorted(self.calls.items())
        )
        return ModelReply(
            Message.assistant("".join(self.text), tool_calls),
            finish_reason(self.finish_reason),
            self.usage or usage or Usage(requests=1),
            self.model or model,
        )
