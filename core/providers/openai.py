"""The OpenAI-compatible provider: chat completions over httpx, with streaming.

Works with OpenAI, Ollama, vLLM, LM Studio and llama.cpp's server. Quirks of real servers
are handled here, each one on purpose:

- ``tool_choice: "auto"`` is sent whenever tools are offered (llama.cpp ignores tools without it);
- an assistant message always has a string ``content`` (llama.cpp: ``null`` → 422, missing → 500);
- tool calls are executed whenever the reply carries them, whatever ``finish_reason`` says;
- a streamed request that yields nothing at all is asked again without streaming (llama.cpp
  returns an empty stream when tools are offered with ``tool_choice: "auto"``).
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..errors import BadResponse, NetworkError, StreamInterrupted
from ..messages import Message, ModelReply, ModelRequest, ToolCall, Usage
from .base import DeltaCallback, register_provider
from .http import HttpClient, classify_status, iter_sse, read_json

__all__ = ["OpenAICompatible"]


class OpenAICompatible:
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        timeout: float = 120.0,
        context_window: int | None = None,
        headers: dict[str, str] | None = None,
        name: str = "openai-compatible",
    ):
        self.name = name
        self.model = model
        self.base_url = base_url.rstrip("/")
        key = api_key if api_key is not None else (os.environ.get("BANDONEON_API_KEY") or os.environ.get("OPENAI_API_KEY"))
        all_headers = {"content-type": "application/json", **(headers or {})}
        if key:
            all_headers["authorization"] = f"Bearer {key}"
        self._http = HttpClient(base_url=self.base_url, headers=all_headers, timeout=timeout, provider=name)
        self._context_window = context_window
        self._window_asked = context_window is not None

    def __repr__(self) -> str:
        return f"OpenAICompatible(model={self.model!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        await self._http.aclose()

    # ---------------------------------------------------------------- the call

    async def complete(self, request: ModelRequest, *, on_delta: DeltaCallback | None = None) -> ModelReply:
        body = self.request_body(request)
        if on_delta is None:
            return parse_completion(await self._http.post_json("/chat/completions", body), self.name)
        reply = await self._stream(body, on_delta)
        if reply is None:  # an empty stream: ask again, plainly
            return parse_completion(await self._http.post_json("/chat/completions", body), self.name)
        return reply

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request`` (public, so tests and plugins can see the wire format)."""
        messages: list[dict[str, Any]] = []
        if request.system_prompt:
            messages.append({"role": "system", "content": request.system_prompt})
        messages.extend(_wire_message(m) for m in request.messages)
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if request.tools:
            body["tools"] = [
                {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}}
                for t in request.tools
            ]
            body["tool_choice"] = request.tool_choice if request.tool_choice is not None else "auto"
        elif request.tool_choice is not None:
            body["tool_choice"] = request.tool_choice
        body.update(request.settings)
        return body

    async def _stream(self, body: dict[str, Any], on_delta: DeltaCallback) -> ModelReply | None:
        import httpx

        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        finish_reason: str | None = None
        usage = Usage(requests=1)
        model: str | None = None
        delivered = False
        try:
            async with self._http.client().stream("POST", "/chat/completions", json=body) as response:
                if response.status_code >= 400:
                    raise classify_status(response.status_code, response.headers, (await response.aread()).decode("utf-8", "replace"), self.name)
                async for _, data in iter_sse(response):
                    if data.strip() == "[DONE]":
                        break
                    chunk = read_json(data.encode(), self.name)
                    if "error" in chunk:
                        raise _stream_error(chunk["error"], self.name, delivered, "".join(text))
                    model = chunk.get("model") or model
                    if chunk.get("usage"):
                        usage = _usage(chunk["usage"])
                    for choice in chunk.get("choices") or ():
                        delta = choice.get("delta") or {}
                        if delta.get("content"):
                            text.append(delta["content"])
                            delivered = True
                            await on_delta("text", delta["content"])
                        for piece in delta.get("tool_calls") or ():
                            index = piece.get("index", len(calls))
                            slot = calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
                            function = piece.get("function") or {}
                            slot["id"] = piece.get("id") or slot["id"]
                            slot["name"] += function.get("name") or ""
                            slot["arguments"] += function.get("arguments") or ""
                            delivered = True
                            await on_delta("tool_call", (index, slot["name"] or None, function.get("arguments") or ""))
                        if choice.get("finish_reason"):
                            finish_reason = choice["finish_reason"]
        except httpx.TransportError as exc:
            if delivered:
                raise StreamInterrupted(f"{self.name}: the stream broke mid-reply: {exc or type(exc).__name__}", partial_text="".join(text), provider=self.name) from None
            raise NetworkError(f"{self.name}: cannot reach {self.base_url}: {exc or type(exc).__name__}", provider=self.name) from None
        if not delivered and finish_reason is None:
            return None
        if finish_reason is None:
            raise StreamInterrupted(f"{self.name}: the stream ended before the reply was finished", partial_text="".join(text), provider=self.name)
        tool_calls = tuple(
            ToolCall(slot["id"] or f"call_{index}", slot["name"], slot["arguments"] or "{}") for index, slot in sorted(calls.items())
        )
        message = Message.assistant("".join(text), tool_calls)
        return ModelReply(message, _finish_reason(finish_reason), usage, model)

    # ---------------------------------------------------------------- the window

    async def context_window(self) -> int | None:
        """Learned once from the server where it says so (vLLM ``max_model_len``, llama.cpp ``/props``)."""
        if not self._window_asked:
            self._window_asked = True
            models = await self._http.get_json("/models")
            for entry in (models or {}).get("data") or ():
                if isinstance(entry, dict) and entry.get("id") == self.model and entry.get("max_model_len"):
                    self._context_window = int(entry["max_model_len"])
            if self._context_window is None:
                for entry in (models or {}).get("data") or ():
                    if isinstance(entry, dict) and entry.get("max_model_len"):
                        self._context_window = int(entry["max_model_len"])
                        break
            if self._context_window is None:
                root = self.base_url.removesuffix("/v1")
                props = await self._http.get_json(f"{root}/props")
                n_ctx = ((props or {}).get("default_generation_settings") or {}).get("n_ctx")
                if n_ctx:
                    self._context_window = int(n_ctx)
        return self._context_window


def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        content = f"Error: {message.content}" if message.is_error and not message.content.startswith("Error") else message.content
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
    if message.role == "assistant":
        wire: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
        if message.tool_calls:
            wire["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in message.tool_calls
            ]
        return wire
    return {"role": message.role, "content": message.content}


def parse_completion(data: Any, provider: str) -> ModelReply:
    """A ``chat.completion`` JSON document as a ``ModelReply``; ``BadResponse`` when it is not one."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices:
        raise BadResponse(f"{provider}: the reply has no choices: {json.dumps(data)[:200]}", provider=provider)
    choice = choices[0]
    raw = choice.get("message") or {}
    tool_calls = []
    for index, call in enumerate(raw.get("tool_calls") or ()):
        function = call.get("function") or {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {})
        tool_calls.append(ToolCall(call.get("id") or f"call_{index}", function.get("name") or "", arguments))
    message = Message.assistant(raw.get("content") or "", tool_calls)
    return ModelReply(message, _finish_reason(choice.get("finish_reason")), _usage(data.get("usage") or {}), data.get("model"))


def _usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("prompt_tokens_details") or {}
    return Usage(
        input_tokens=raw.get("prompt_tokens") or 0,
        output_tokens=raw.get("completion_tokens") or 0,
        cached_input_tokens=details.get("cached_tokens") or 0,
        requests=1,
    )


def _finish_reason(value: str | None) -> str:
    if value in ("tool_calls", "function_call"):
        return "tool_calls"
    return value or "stop"


def _stream_error(error: Any, provider: str, delivered: bool, partial: str) -> Exception:
    message = error.get("message") if isinstance(error, dict) else str(error)
    if delivered:
        return StreamInterrupted(f"{provider}: the server reported an error mid-stream: {message}", partial_text=partial, provider=provider)
    from ..errors import ServerError

    return ServerError(f"{provider}: the server reported an error in the stream: {message}", provider=provider)


def _named_server(default_url: str, name: str, key_env: str | None = None):
    def factory(model: str, **options: Any) -> OpenAICompatible:
        options.setdefault("base_url", default_url)
        if key_env and "api_key" not in options:
            options["api_key"] = os.environ.get(key_env) or os.environ.get("BANDONEON_API_KEY")
        return OpenAICompatible(model or "default", name=name, **options)

    return factory


def _openai_compatible(rest: str, **options: Any) -> OpenAICompatible:
    model, sep, url = rest.rpartition("@")
    if not sep:
        base_url = options.pop("base_url", None) or os.environ.get("BANDONEON_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            from ..errors import ConfigError

            raise ConfigError(
                f"'openai-compatible:{rest}' needs a server address: write 'openai-compatible:MODEL@http://host:port/v1' "
                "or set BANDONEON_BASE_URL"
            )
        model, url = rest, base_url
    return OpenAICompatible(model or "default", base_url=url, **options)


register_provider("openai", _named_server("https://api.openai.com/v1", "openai", "OPENAI_API_KEY"))
register_provider("openai-compatible", _openai_compatible)
register_provider("ollama", _named_server("http://localhost:11434/v1", "ollama"))
register_provider("lmstudio", _named_server("http://localhost:1234/v1", "lmstudio"))
register_provider("vllm", _named_server("http://localhost:8000/v1", "vllm"))
register_provider("llamacpp", _named_server("http://localhost:8080/v1", "llamacpp"))
