"""The Anthropic Messages API over httpx: no SDK, errors classified like every other provider.

Prompt caching is on by default: one breakpoint on the system prompt and one after the last
tool, so a long system prompt and the tool definitions are paid once per five minutes rather
than on every turn. 529 (overloaded) is a ``ServerError`` and an ``error`` event in a stream
is classified the same way, so the retry plugin treats both as it treats a 503.

Typed answers are asked for natively by tool-forcing: the run's output schema becomes one more
tool, ``final_answer``, that the model must call (``tool_choice`` ``tool`` or ``any``), and its
input comes back as the reply's text, as if the server had kept to a JSON schema.
"""

from __future__ import annotations

import json
import os
from typing import Any

import attrs

from bandoneon import (
    BadResponse,
    ConfigError,
    DeltaCallback,
    HttpClient,
    Message,
    ModelReply,
    ModelRequest,
    NetworkError,
    StreamInterrupted,
    Thinking,
    ToolCall,
    ToolSpec,
    Usage,
    classify_status,
    in_range,
    iter_sse,
    read_body,
    read_json,
)

from . import wire

__all__ = ["ANSWER_TOOL", "ANTHROPIC_VERSION", "AnthropicProvider", "anthropic_model"]

#: The forced tool that carries a typed answer (its input becomes the reply's text).
ANSWER_TOOL = "final_answer"

#: The range of each numeric option (``thinking_budget``: at least 1024 and below ``max_tokens``).
RANGES = {
    "max_tokens": in_range(at_least=1, integer=True),
    "timeout": in_range(above=0, unit="seconds"),
    "context_window": in_range(at_least=256, unit="tokens", integer=True, optional=True),
}

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
# The HTTP status each error type stands for, so a stream's error event is classified like a response.
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


class AnthropicProvider:
    """A Claude model behind the Messages API (``POST {base_url}/messages``).

    ``api_key`` defaults to ``$ANTHROPIC_API_KEY`` and ``base_url`` to ``$ANTHROPIC_BASE_URL``
    or Anthropic's. ``max_tokens`` is required by the API; a request's settings may override
    it. ``thinking_budget`` turns on extended thinking. ``cache_prompt=False`` sends no cache
    breakpoints. ``context_window`` is reported only when configured (never assumed).
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 4096,
        thinking_budget: int | None = None,
        cache_prompt: bool = True,
        timeout: float = 600.0,
        context_window: int | None = None,
        headers: dict[str, str] | None = None,
        name: str = "anthropic",
    ):
        if not model:
            raise ConfigError("anthropic: name the model, e.g. 'anthropic:claude-sonnet-4-5'")
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ConfigError(
                'anthropic: no API key; set ANTHROPIC_API_KEY, or name the variable that holds it with api_key_env = "VARIABLE" '
                "in bandoneon.toml (in code: AnthropicProvider(api_key=...))"
            )
        for option, value in (("max_tokens", max_tokens), ("timeout", timeout), ("context_window", context_window)):
            RANGES[option].check(option, value, owner="anthropic")
        if thinking_budget is not None and not 1024 <= thinking_budget < max_tokens:
            raise ConfigError(f"anthropic: thinking_budget must be at least 1024 and below max_tokens ({max_tokens}), got {thinking_budget}")
        self.name = name
        self.model = model
        self.base_url = (base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.max_tokens = max_tokens
        self.thinking_budget = thinking_budget
        self.cache_prompt = cache_prompt
        self._context_window = context_window
        all_headers = {"content-type": "application/json", "anthropic-version": ANTHROPIC_VERSION, "x-api-key": key, **(headers or {})}
        self._http = HttpClient(base_url=self.base_url, headers=all_headers, timeout=timeout, provider=name)

    def __repr__(self) -> str:
        return f"AnthropicProvider(model={self.model!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        await self._http.aclose()

    async def context_window(self) -> int | None:
        return self._context_window

    #: Images (inline or by URL) and documents (PDF, plain text) in user messages.
    input_kinds = frozenset({"image", "file"})

    def supports_output_schema(self, *, with_tools: bool) -> bool:
        """Typed answers are asked for by forcing the ``final_answer`` tool, with or without other tools."""
        return True

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request`` (public, so tests and plugins can see the wire format)."""
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": wire.wire_messages(request.messages)}
        system = wire.system_blocks(request, cache=self.cache_prompt)
        if system:
            body["system"] = system
        tools = request.tools
        schema = request.output_schema
        if schema is not None:
            tools = (*tools, ToolSpec(ANSWER_TOOL, schema.description or "Give your final answer with this tool.", schema.schema))
        if tools:
            body["tools"] = wire.wire_tools(tools, cache=self.cache_prompt)
        choice = wire.tool_choice(request.tool_choice, tools) if tools or request.tool_choice not in (None, "auto") else None
        if schema is not None and self.thinking_budget is None:
            # Extended thinking allows only auto; otherwise the answer tool is forced (alone) or
            # some tool is (so the model may still work with the others first).
            choice = {"type": "tool", "name": ANSWER_TOOL} if len(tools) == 1 else {"type": "any"}
        if choice is not None:
            body["tool_choice"] = choice
        if self.thinking_budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        body.update(request.settings)
        return body

    async def complete(self, request: ModelRequest, *, on_delta: DeltaCallback | None = None) -> ModelReply:
        body = self.request_body(request)
        if on_delta is None:
            reply = wire.parse_message(await self._http.post_json("/messages", body), self.name)
        else:
            if request.output_schema is not None:
                on_delta = _answer_pieces_as_text(on_delta)
            reply = await self._stream({**body, "stream": True}, on_delta)
        return _answer_as_text(reply) if request.output_schema is not None else reply

    async def _stream(self, body: dict[str, Any], on_delta: DeltaCallback) -> ModelReply:
        import httpx  # here, not at the top: discovering the plugin must not import httpx

        reader = _StreamReader(self.name, on_delta)
        try:
            async with self._http.stream("POST", "/messages", json=body) as response:
                limits = self._http.json_limits
                if response.status_code >= 400:  # the body within the limits too: a server may never stop sending
                    error_body = await read_body(response, self.name, limits)
                    raise classify_status(response.status_code, response.headers, error_body.decode("utf-8", "replace"), self.name, limits)
                async for event, data in iter_sse(response, limits, self.name):
                    if await reader.feed(event, read_json(data.encode(), self.name, limits)):
                        break
        except httpx.TransportError as exc:
            if reader.delivered:
                raise StreamInterrupted(f"{self.name}: the stream broke mid-reply: {exc or type(exc).__name__}", partial_text=reader.text, provider=self.name) from None
            raise NetworkError(f"{self.name}: cannot reach {self.base_url}: {exc or type(exc).__name__}", provider=self.name) from None
        return reader.reply()


class _StreamReader:
    """Assembles a reply from Messages API stream events, reporting pieces as they come."""

    def __init__(self, provider: str, on_delta: DeltaCallback):
        self.provider = provider
        self.on_delta = on_delta
        self.blocks: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, Any] = {}
        self.model: str | None = None
        self.stop_reason: str | None = None
        self.finished = False
        self.delivered = False

    @property
    def text(self) -> str:
        return "".join(b["text"] for _, b in sorted(self.blocks.items()) if b["type"] == "text")

    def _object(self, value: Any, what: str) -> dict[str, Any]:
        """A part of an event that must be an object ({} when missing): a broken event is a
        ``BadResponse``, never a raw ``AttributeError`` or ``TypeError`` from deeper down."""
        if value is None:
            return {}
        if isinstance(value, dict):
            return value
        raise BadResponse(f"{self.provider}: a stream event's {what} is not an object: {json.dumps(value, default=str)[:80]}", provider=self.provider)

    def _index(self, data: dict[str, Any], default: int) -> int:
        index = data.get("index", default)
        if type(index) is not int:
            raise BadResponse(f"{self.provider}: a stream event's index is {json.dumps(index, default=str)[:40]}, not a number", provider=self.provider)
        return index

    async def feed(self, event: str | None, data: Any) -> bool:
        """Take one event; True when the message is complete."""
        data = self._object(data, "data")
        kind = data.get("type") or event
        if kind == "error":
            error = data.get("error")
            raise self._error(error if isinstance(error, dict) else {"message": str(error or "")})
        if kind == "message_start":
            message = self._object(data.get("message"), "message")
            self.model = wire.text_of(message.get("model"), "model", self.provider) or None
            self.usage.update(self._object(message.get("usage"), "usage"))
        elif kind == "content_block_start":
            block = self._object(data.get("content_block"), "content_block")
            index = self._index(data, len(self.blocks))
            text = block.get("text") or block.get("thinking") or block.get("data")
            self.blocks[index] = {
                "type": block.get("type"),
                "text": wire.text_of(text, "content block text", self.provider),
                "signature": wire.text_of(block.get("signature"), "signature", self.provider),
                "id": wire.text_of(block.get("id"), "tool_use id", self.provider) or None,
                "name": wire.text_of(block.get("name"), "tool_use name", self.provider) or None,
                "json": "",
                "tool_index": sum(1 for b in self.blocks.values() if b["type"] == "tool_use"),
            }
            if block.get("type") == "tool_use":
                self.delivered = True
                await self.on_delta("tool_call", (self.blocks[index]["tool_index"], block.get("name"), ""))
        elif kind == "content_block_delta":
            await self._delta(self.blocks.get(self._index(data, 0)), self._object(data.get("delta"), "delta"))
        elif kind == "message_delta":
            stop = self._object(data.get("delta"), "delta").get("stop_reason")
            self.stop_reason = wire.text_of(stop, "stop_reason", self.provider) or self.stop_reason
            self.usage.update({k: v for k, v in self._object(data.get("usage"), "usage").items() if v is not None})
        elif kind == "message_stop":
            self.finished = True
            return True
        return False  # ping, content_block_stop and unknown events carry nothing to keep

    async def _delta(self, block: dict[str, Any] | None, delta: dict[str, Any]) -> None:
        if block is None:
            return
        kind = delta.get("type")
        if kind == "text_delta":
            piece = wire.text_of(delta.get("text"), "text", self.provider)
            block["text"] += piece
            if piece:
                self.delivered = True
                await self.on_delta("text", piece)
        elif kind == "input_json_delta":
            piece = wire.text_of(delta.get("partial_json"), "partial_json", self.provider)
            block["json"] += piece
            if piece:
                await self.on_delta("tool_call", (block["tool_index"], block["name"], piece))
        elif kind == "thinking_delta":
            piece = wire.text_of(delta.get("thinking"), "thinking", self.provider)
            block["text"] += piece
            if piece:
                await self.on_delta("thinking", piece)
        elif kind == "signature_delta":
            block["signature"] += wire.text_of(delta.get("signature"), "signature", self.provider)

    def _error(self, error: dict[str, Any]) -> Exception:
        """What an ``error`` event means: once text or a call was shown, a ``StreamInterrupted``
        (never replayed); before that, the error its type stands for, classified like a response."""
        kind = error.get("type") or "api_error"
        if self.delivered:
            return StreamInterrupted(f"{self.provider}: the stream broke mid-reply with {kind}: {error.get('message') or ''}", partial_text=self.text, provider=self.provider)
        detail = json.dumps({"error": {"type": kind, "message": f"{error.get('message') or kind} (an error event in the stream)"}})
        return classify_status(_ERROR_STATUS.get(kind, 500), {}, detail, self.provider)

    def reply(self) -> ModelReply:
        if not self.finished:
            raise StreamInterrupted(f"{self.provider}: the stream ended before message_stop", partial_text=self.text, provider=self.provider)
        text: list[str] = []
        calls: list[ToolCall] = []
        thinking: list[Thinking] = []
        for _, block in sorted(self.blocks.items()):
            if block["type"] == "text":
                text.append(block["text"])
            elif block["type"] == "tool_use":
                calls.append(ToolCall(block["id"] or f"toolu_{len(calls)}", block["name"] or "", block["json"] or "{}"))
            elif block["type"] == "thinking":
                thinking.append(Thinking(block["text"], block["signature"] or None))
            elif block["type"] == "redacted_thinking":
                thinking.append(Thinking(block["text"], None, is_redacted=True))
        message = Message("assistant", "".join(text), tuple(calls), thinking=tuple(thinking))
        usage: Usage = wire.usage(self.usage, self.provider)
        return ModelReply(message, wire.finish_reason(self.stop_reason), usage, self.model)


def _answer_as_text(reply: ModelReply) -> ModelReply:
    """The forced ``final_answer`` call as the reply's text (what a JSON-schema server returns)."""
    message = reply.message
    answers = [c for c in message.tool_calls if c.name == ANSWER_TOOL]
    if not answers:
        return reply
    others = tuple(c for c in message.tool_calls if c.name != ANSWER_TOOL)
    text = answers[0].arguments
    finish = reply.finish_reason if others else "stop"
    return attrs.evolve(reply, message=attrs.evolve(message, content=text, tool_calls=others), finish_reason=finish)


def _answer_pieces_as_text(on_delta: DeltaCallback) -> DeltaCallback:
    """Streamed pieces of the answer tool's input reported as text, like the reply they become."""
    answer_indexes: set[int] = set()

    async def forward(kind: str, payload: Any) -> None:
        if kind == "tool_call":
            index, name, piece = payload
            if name == ANSWER_TOOL:
                answer_indexes.add(index)
            if index in answer_indexes:
                if piece:
                    await on_delta("text", piece)
                return
        await on_delta(kind, payload)

    return forward


def anthropic_model(rest: str, **options: Any) -> AnthropicProvider:
    """The ``anthropic:`` factory: ``"anthropic:claude-sonnet-4-5"``."""
    try:
        return AnthropicProvider(rest.strip(), **options)
    except TypeError as exc:
        raise ConfigError(
            f"anthropic: {exc}; options are api_key, base_url, max_tokens, thinking_budget, cache_prompt, timeout, context_window, headers"
        ) from None
