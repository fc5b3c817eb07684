"""bandoneon's messages in the Anthropic Messages API's wire format, and back.

The wire format lives here, not on the message classes: thinking blocks and their signatures,
tool_use / tool_result blocks, image and document blocks, cache breakpoints, usage with cache
tokens.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bandoneon import BadResponse, ConfigError, ImagePart, Message, ModelReply, ModelRequest, Part, TextPart, Thinking, ToolCall, ToolSpec, Usage, openai_wire

__all__ = ["CACHE_BREAKPOINT", "finish_reason", "parse_message", "system_blocks", "text_of", "tool_choice", "usage", "wire_messages", "wire_tools"]

CACHE_BREAKPOINT = {"type": "ephemeral"}
_EMPTY_REPLY = "(empty reply)"


def wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The ``messages`` array: tool results become ``tool_result`` blocks of a user turn, and
    consecutive user-side entries are merged so the roles alternate as the API requires."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            wire.append({"role": "assistant", "content": _assistant_blocks(message)})
            continue
        if message.role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content}
            if message.is_error:
                block["is_error"] = True
            blocks = [block]
        elif message.parts:
            blocks = [_part_block(part) for part in message.parts]
        else:  # a user message, or a system message inside the history (a compaction summary) read as user text
            blocks = [{"type": "text", "text": message.content}]
        if wire and wire[-1]["role"] == "user":
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": "user", "content": blocks})
    return wire


#: The documents the Messages API reads inline.
DOCUMENT_TYPES = frozenset({"application/pdf", "text/plain"})


def _part_block(part: Part) -> dict[str, Any]:
    """A text, image or document block (inline base64, or a URL the API fetches)."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        if part.data is None:
            return {"type": "image", "source": {"type": "url", "url": part.url}}
        return {"type": "image", "source": {"type": "base64", "media_type": part.media_type, "data": _base64(part.data)}}
    if part.media_type not in DOCUMENT_TYPES:
        raise ConfigError(f"anthropic: a file must be one of {', '.join(sorted(DOCUMENT_TYPES))} to be read, got {part.media_type!r} ({part.name or 'unnamed'})")
    if part.media_type == "text/plain":
        source = {"type": "text", "media_type": "text/plain", "data": part.data.decode("utf-8", "replace")}
    else:
        source = {"type": "base64", "media_type": part.media_type, "data": _base64(part.data)}
    block: dict[str, Any] = {"type": "document", "source": source}
    if part.name:
        block["title"] = part.name
    return block


def _base64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode("ascii")


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for thought in message.thinking:  # sent back unchanged: the API checks the signatures
        if thought.is_redacted:
            blocks.append({"type": "redacted_thinking", "data": thought.text})
        elif thought.signature:  # unsigned reasoning came from another server (a fallback, a resumed session): the API refuses it
            blocks.append({"type": "thinking", "thinking": thought.text, "signature": thought.signature})
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": _tool_input(call)})
    if not blocks:  # the API refuses an assistant turn with no content
        blocks.append({"type": "text", "text": _EMPTY_REPLY})
    return blocks


def _tool_input(call: ToolCall) -> dict[str, Any]:
    """``input`` must be an object. Broken arguments were already answered with an error result,
    so the call is replayed with the raw text kept under one key rather than dropped."""
    try:
        value = call.parsed_arguments()
    except ValueError:
        return {"_unparsed_arguments": call.arguments}
    return value if isinstance(value, dict) else {"_arguments": value}


def wire_tools(tools: Sequence[ToolSpec], *, cache: bool) -> list[dict[str, Any]]:
    wire = [{"name": t.name, "description": t.description, "input_schema": dict(t.parameters)} for t in tools]
    if cache and wire:  # one breakpoint after the last tool caches every tool definition
        wire[-1]["cache_control"] = dict(CACHE_BREAKPOINT)
    return wire


def tool_choice(choice: str | Mapping[str, Any] | None, tools: Sequence[ToolSpec]) -> dict[str, Any] | None:
    """bandoneon's (OpenAI-style) tool_choice as Anthropic's; None leaves the API default (auto)."""
    if choice is None:
        return None
    if choice == "auto":
        return {"type": "auto"}
    if choice == "none":
        return {"type": "none"}
    if choice in ("required", "any"):
        return {"type": "any"}
    if isinstance(choice, Mapping):
        if choice.get("type") in ("auto", "any", "none") or (choice.get("type") == "tool" and choice.get("name")):
            return dict(choice)
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        if name:
            if name not in {t.name for t in tools}:
                raise ConfigError(f"anthropic: tool_choice names {name!r}, which is not one of the offered tools")
            return {"type": "tool", "name": name}
    raise ConfigError(f"anthropic: unknown tool_choice {choice!r}; use 'auto', 'none', 'required' or {{'type': 'tool', 'name': ...}}")


def system_blocks(request: ModelRequest, *, cache: bool) -> list[dict[str, Any]] | None:
    if not request.system_prompt:
        return None
    block: dict[str, Any] = {"type": "text", "text": request.system_prompt}
    if cache:
        block["cache_control"] = dict(CACHE_BREAKPOINT)
    return [block]


def usage(raw: Mapping[str, Any] | None, provider: str = "anthropic") -> Usage:
    """Anthropic's ``input_tokens`` excludes cached tokens; bandoneon's includes them (as parts).
    ``BadResponse`` when a count is not a whole number (it would break every sum of usage)."""
    raw = raw or {}
    if not isinstance(raw, Mapping):
        raise BadResponse(f"{provider}: the reply's usage is not an object: {json.dumps(raw, default=str)[:80]}", provider=provider)
    fresh = _count(raw, "input_tokens", provider)
    read = _count(raw, "cache_read_input_tokens", provider)
    written = _count(raw, "cache_creation_input_tokens", provider)
    return Usage(
        input_tokens=fresh + read + written,
        output_tokens=_count(raw, "output_tokens", provider),
        cached_input_tokens=read,
        cache_write_tokens=written,
        requests=1,
    )


def _count(raw: Mapping[str, Any], field: str, provider: str) -> int:
    """By the rule of the OpenAI-compatible wire: a count reads the same from either server."""
    return openai_wire.token_count(raw.get(field), field, provider)


def text_of(value: Any, what: str, provider: str) -> str:
    """A field of the reply that must be text ("" when missing); ``BadResponse`` otherwise, so a
    number or an object never reaches the history (to break a later request or a store)."""
    if value is None or isinstance(value, str):
        return value or ""
    raise BadResponse(f"{provider}: the reply's {what} is {json.dumps(value, default=str)[:60]}, not text", provider=provider)


def finish_reason(stop_reason: str | None) -> str:
    return {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length", None: "stop"}.get(stop_reason, stop_reason or "stop")


def parse_message(data: Any, provider: str) -> ModelReply:
    """A whole ``message`` document as a ``ModelReply``; ``BadResponse`` when it is not one."""
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise BadResponse(f"{provider}: the reply is not a message: {json.dumps(data)[:200]}", provider=provider)
    text: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[Thinking] = []
    for block in data["content"]:
        if not isinstance(block, dict):
            raise BadResponse(f"{provider}: a content block of the reply is not an object: {json.dumps(block, default=str)[:80]}", provider=provider)
        kind = block.get("type")
        if kind == "text":
            text.append(text_of(block.get("text"), "text", provider))
        elif kind == "tool_use":
            call_id, name = text_of(block.get("id"), "tool_use id", provider), text_of(block.get("name"), "tool_use name", provider)
            calls.append(ToolCall(call_id or f"toolu_{len(calls)}", name, _input_text(block.get("input"))))
        elif kind == "thinking":
            thinking.append(Thinking(text_of(block.get("thinking"), "thinking", provider), text_of(block.get("signature"), "signature", provider) or None))
        elif kind == "redacted_thinking":
            thinking.append(Thinking(text_of(block.get("data"), "redacted_thinking data", provider), None, is_redacted=True))
    message = Message("assistant", "".join(text), tuple(calls), thinking=tuple(thinking))
    stop = text_of(data.get("stop_reason"), "stop_reason", provider) or None
    return ModelReply(message, finish_reason(stop), usage(data.get("usage"), provider), text_of(data.get("model"), "model", provider) or None)


def _input_text(value: Any) -> str:
    """Tool input as JSON text; a string the server sent (broken JSON) is kept verbatim, so the
    loop's argument check tells the model exactly what was wrong."""
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {})
