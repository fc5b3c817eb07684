"""The wire formats the mock server renders: OpenAI chat completions (and its error shape for the
other non-Anthropic paths), the Anthropic Messages API, and the mock's embeddings."""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import math
import re
import struct
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from .server import Reply, ToolArgs


@attrs.frozen
class Turn:
    """A reply resolved against its request: all a wire format needs to render it."""

    reply: Reply
    model: str
    message_id: str
    tool_ids: tuple[str, ...]
    prompt_tokens: int
    completion_tokens: int
    created: int

    def tool_calls(self) -> Iterator[tuple[str, str, ToolArgs]]:
        for call_id, (_, name, args) in zip(self.tool_ids, self.reply.tool_calls, strict=True):
            yield call_id, name, args


class OpenAIChat:
    """OpenAI chat completions; its error shape also serves the other non-Anthropic paths."""

    tool_id_prefix = "call_"
    message_id_prefix = "chatcmpl-mock-"
    _error_types = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_exceeded"}

    def error_body(self, status: int, message: str, error_type: str | None = None) -> Any:
        default = "server_error" if status >= 500 else "invalid_request_error"
        error_type = error_type or self._error_types.get(status, default)
        return {"error": {"message": message, "type": error_type, "param": None, "code": None}}

    def complete(self, turn: Turn) -> Any:
        message: dict[str, Any] = {"role": "assistant", "content": turn.reply.text}
        if turn.reply.thinking:
            message[turn.reply.reasoning_field] = _reasoning(turn)
        if turn.reply.tool_calls:
            message["tool_calls"] = [
                {"id": call_id, "type": "function",
                 "function": {"name": name, "arguments": _json_text(args)}}
                for call_id, name, args in turn.tool_calls()
            ]
        choice = {"index": 0, "message": message, "finish_reason": self._finish_reason(turn)}
        return {**self._envelope(turn, "chat.completion"), "choices": [choice],
                "usage": self._usage(turn)}

    def stream(self, turn: Turn, request_body: Mapping[str, Any]) -> list[bytes]:
        deltas: list[dict[str, Any]] = [{"role": "assistant"}]
        field = turn.reply.reasoning_field
        deltas += [{field: piece} for piece in _words(_reasoning(turn))]
        deltas += [{"content": piece} for piece in _words(turn.reply.text or "")]
        for index, (call_id, name, args) in enumerate(turn.tool_calls()):
            function = {"name": name, "arguments": ""}
            deltas.append({"tool_calls": [
                {"index": index, "id": call_id, "type": "function", "function": function}
            ]})
            deltas += [
                {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                for piece in _thirds(_json_text(args))
            ]
        chunks = [self._chunk(turn, delta, None) for delta in deltas]
        chunks.append(self._chunk(turn, {}, self._finish_reason(turn)))
        options = request_body.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            chunks.append({**self._envelope(turn, "chat.completion.chunk"), "choices": [],
                           "usage": self._usage(turn)})
        return [_sse(None, chunk) for chunk in chunks] + [b"data: [DONE]\n\n"]

    def stream_error(self, turn: Turn, error_type: str) -> list[bytes]:
        error = {"message": f"MockLLMServer: injected {error_type}", "type": error_type}
        return [_sse(None, self._chunk(turn, {"role": "assistant"}, None)),
                _sse(None, {"error": error})]

    def _envelope(self, turn: Turn, kind: str) -> dict[str, Any]:
        return {"id": turn.message_id, "object": kind, "created": turn.created,
                "model": turn.model}

    def _chunk(self, turn: Turn, delta: Any, finish_reason: str | None) -> Any:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return {**self._envelope(turn, "chat.completion.chunk"), "choices": [choice]}

    def _finish_reason(self, turn: Turn) -> str:
        if turn.reply.finish_reason is not None:
            return turn.reply.finish_reason
        return "tool_calls" if turn.reply.tool_calls else "stop"

    def _usage(self, turn: Turn) -> Any:
        return {
            "prompt_tokens": turn.prompt_tokens,
            "completion_tokens": turn.completion_tokens,
            "total_tokens": turn.prompt_tokens + turn.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": turn.reply.cached_tokens},
        }


class AnthropicMessages:
    """The Anthropic Messages API, thinking blocks and mid-stream error events included."""

    tool_id_prefix = "toolu_"
    message_id_prefix = "msg_mock_"
    _error_types = {
        400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
        404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error",
    }

    def error_body(self, status: int, message: str, error_type: str | None = None) -> Any:
        error_type = error_type or self._error_types.get(status, "api_error")
        return {"type": "error", "error": {"type": error_type, "message": message}}

    def complete(self, turn: Turn) -> Any:
        content: list[dict[str, Any]] = [
            {"type": "thinking", "thinking": text, "signature": signature}
            for text, signature in turn.reply.thinking
        ]
        if turn.reply.text is not None:
            content.append({"type": "text", "text": turn.reply.text})
        content += [
            {"type": "tool_use", "id": call_id, "name": name, "input": _tool_input(args)}
            for call_id, name, args in turn.tool_calls()
        ]
        return self._message(turn, content, self._stop_reason(turn), turn.completion_tokens)

    def stream(self, turn: Turn, request_body: Mapping[str, Any]) -> list[bytes]:
        blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        for text, signature in turn.reply.thinking:
            deltas = [{"type": "thinking_delta", "thinking": piece} for piece in _words(text)]
            deltas.append({"type": "signature_delta", "signature": signature})
            blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
        if turn.reply.text is not None:
            deltas = [{"type": "text_delta", "text": piece} for piece in _words(turn.reply.text)]
            blocks.append(({"type": "text", "text": ""}, deltas))
        for call_id, name, args in turn.tool_calls():
            deltas = [{"type": "input_json_delta", "partial_json": piece}
                      for piece in _thirds(_json_text(args))]
            blocks.append(({"type": "tool_use", "id": call_id, "name": name, "input": {}}, deltas))
        events = [self._message_start(turn)]
        for index, (block, deltas) in enumerate(blocks):
            events.append(_sse("content_block_start", {
                "type": "content_block_start", "index": index, "content_block": block}))
            events += [
                _sse("content_block_delta",
                     {"type": "content_block_delta", "index": index, "delta": delta})
                for delta in deltas
            ]
            stop = {"type": "content_block_stop", "index": index}
            events.append(_sse("content_block_stop", stop))
        events.append(_sse("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": self._stop_reason(turn), "stop_sequence": None},
            "usage": {"output_tokens": turn.completion_tokens},
        }))
        events.append(_sse("message_stop", {"type": "message_stop"}))
        return events

    def stream_error(self, turn: Turn, error_type: str) -> list[bytes]:
        error = self.error_body(529, f"MockLLMServer: injected {error_type}", error_type)
        return [self._message_start(turn), _sse("error", error)]

    def _message_start(self, turn: Turn) -> bytes:
        # The real API counts one output token at message_start; message_delta has the total.
        message = self._message(turn, [], None, 1)
        return _sse("message_start", {"type": "message_start", "message": message})

    def _message(
        self, turn: Turn, content: list[Any], stop_reason: str | None, output_tokens: int
    ) -> Any:
        return {
            "id": turn.message_id, "type": "message", "role": "assistant", "model": turn.model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {
                "input_tokens": turn.prompt_tokens,
                "output_tokens": output_tokens,
                "cache_read_input_tokens": turn.reply.cached_tokens,
                "cache_creation_input_tokens": 0,
            },
        }

    def _stop_reason(self, turn: Turn) -> str:
        if turn.reply.finish_reason is not None:
            return turn.reply.finish_reason
        return "tool_use" if turn.reply.tool_calls else "end_turn"


Dialect = OpenAIChat | AnthropicMessages
OPENAI = OpenAIChat()
ANTHROPIC = AnthropicMessages()


def _reasoning(turn: Turn) -> str:
    """The thinking blocks as OpenAI-compatible servers send reasoning: one text, no signatures."""
    return "\n\n".join(text for text, _ in turn.reply.thinking)


def _sse(event: str | None, data: Any) -> bytes:
    prefix = f"event: {event}\n" if event else ""
    return f"{prefix}data: {json.dumps(data)}\n\n".encode()


def _json_text(args: ToolArgs) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def _tool_input(args: ToolArgs) -> Any:
    """Anthropic's ``input`` is an object; args that are not valid JSON go out as the raw string,
    which is exactly the malformed response a test of broken args wants."""
    if not isinstance(args, str):
        return dict(args)
    try:
        return json.loads(args)
    except ValueError:
        return args


def _words(text: str) -> list[str]:
    """Split before each word that follows whitespace: the pieces join back to ``text``."""
    return [piece for piece in re.split(r"(?<=\s)(?=\S)", text) if piece]


def _thirds(text: str) -> list[str]:
    """Split into up to three pieces, as servers stream tool arguments in fragments."""
    cuts = [0, len(text) // 3, 2 * len(text) // 3, len(text)]
    return [text[start:end] for start, end in itertools.pairwise(cuts) if start < end]


def hashed_embedding(text: str, dimensions: int) -> list[float]:
    """A bag of hashed words, L2-normalised: meaningless but stable, and texts that share words
    have a higher cosine. blake2b, unlike ``hash()``, is the same in every process."""
    vector = [0.0] * dimensions
    for word in re.findall(r"\w+", text.lower()) or [""]:
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vector[int.from_bytes(digest, "big") % dimensions] += 1.0
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector]


def base64_floats(vector: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
