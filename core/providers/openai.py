"""The OpenAI-compatible provider: chat completions over httpx, with streaming.

Works with OpenAI, Ollama, vLLM, LM Studio and llama.cpp's server. Quirks of real servers
are handled here, each one on purpose:

- ``tool_choice: "auto"`` is sent whenever tools are offered (llama.cpp ignores tools without it);
- an assistant message always has a string ``content`` (llama.cpp: ``null`` → 422, missing → 500);
- tool calls are executed whenever the reply carries them, whatever ``finish_reason`` says;
- a streamed request that yields nothing at all is asked again without streaming (llama.cpp
  returns an empty stream when tools are offered with ``tool_choice: "auto"``).

Named servers: ``openai:``, ``ollama:``, ``lmstudio:``, ``vllm:``, ``llamacpp:`` (llama.cpp's
``llama-server``), ``llama-cpp-python:`` (with the wire options its chat template needs); each
also takes ``MODEL@URL``. ``openai-compatible:MODEL@URL`` is any other server.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..errors import (
    BadRequest,
    BadResponse,
    ConfigError,
    NetworkError,
    ProviderError,
    ServerError,
    StreamInterrupted,
)
from ..jsonlimits import DEFAULT_JSON_LIMITS, JsonLimits
from ..messages import ModelReply, ModelRequest
from .base import DeltaCallback, register_provider
from .http import HttpClient, classify_status, context_too_long, iter_sse, read_body, read_json
from .openai_wire import (
    PLAIN,
    ChunkAssembler,
    WireOptions,
    parse_completion,
    wire_messages,
    wire_response_format,
    wire_tool_choice,
    wire_tools,
)

__all__ = ["OpenAICompatible"]


class OpenAICompatible:
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``wire`` adapts the request to a server family's chat template (see ``WireOptions``).
    ``json_limits`` bounds the depth and size of the server's reply bodies (see ``JsonLimits``).
    """

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
        wire: WireOptions = PLAIN,
        json_limits: JsonLimits = DEFAULT_JSON_LIMITS,
    ):
        self.name = name
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.wire = wire
        key = api_key if api_key is not None else (os.environ.get("BANDONEON_API_KEY") or os.environ.get("OPENAI_API_KEY"))
        all_headers = {"content-type": "application/json", **(headers or {})}
        if key:
            all_headers["authorization"] = f"Bearer {key}"
        self._http = HttpClient(base_url=self.base_url, headers=all_headers, timeout=timeout, provider=name, json_limits=json_limits)
        self._context_window = context_window
        self._window_asked = context_window is not None

    def __repr__(self) -> str:
        return f"OpenAICompatible(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def input_kinds(self) -> frozenset[str]:
        """The parts besides text this server family takes (see ``WireOptions.input_kinds``)."""
        return self.wire.input_kinds

    def supports_output_schema(self, *, with_tools: bool) -> bool:
        """Whether typed answers can be asked for with ``response_format`` (see ``WireOptions``)."""
        return self.wire.output_schema and (self.wire.output_schema_with_tools or not with_tools)

    async def aclose(self) -> None:
        await self._http.aclose()

    # ---------------------------------------------------------------- the call

    async def complete(self, request: ModelRequest, *, on_delta: DeltaCallback | None = None) -> ModelReply:
        try:
            return await self._complete(request, on_delta)
        except BadRequest as exc:
            if exc.status == 404 and not self.base_url.endswith("/v1"):
                # The most common wrong address: the server's root instead of its API prefix.
                raise BadRequest(
                    f"{exc} ({self.base_url}/chat/completions does not exist; OpenAI-compatible servers usually "
                    f"serve under /v1: try {self.base_url}/v1)",
                    status=404,
                    provider=self.name,
                ) from None
            raise

    async def _complete(self, request: ModelRequest, on_delta: DeltaCallback | None) -> ModelReply:
        body = self.request_body(request)
        if on_delta is None:
            return parse_completion(await self._http.post_json("/chat/completions", body), self.name, self.model, think_tags=self.wire.think_tags)
        reply = await self._stream(body, on_delta)
        if reply is not None:
            return reply
        # An empty stream: ask again, plainly. llama.cpp closes the empty stream's keep-alive
        # connection without saying so, and the pool may hand that connection out once more.
        try:
            data = await self._http.post_json("/chat/completions", body)
        except NetworkError:
            data = await self._http.post_json("/chat/completions", body)
        return parse_completion(data, self.name, self.model, think_tags=self.wire.think_tags)

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request`` (public, so tests and plugins can see the wire format)."""
        body: dict[str, Any] = {"model": self.model, "messages": wire_messages(request, self.wire)}
        if request.tools:
            body["tools"] = wire_tools(request.tools, self.wire)
            body["tool_choice"] = wire_tool_choice(request, self.wire)
        elif request.tool_choice is not None:
            body["tool_choice"] = request.tool_choice
        if request.output_schema is not None:
            body["response_format"] = wire_response_format(request.output_schema, self.wire)
        body.update(request.settings)
        return body

    async def _stream(self, body: dict[str, Any], on_delta: DeltaCallback) -> ModelReply | None:
        import httpx

        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        assembler = ChunkAssembler(on_delta, think_tags=self.wire.think_tags)
        try:
            async with self._http.stream("POST", "/chat/completions", json=body) as response:
                limits = self._http.json_limits
                if response.status_code >= 400:
                    error_body = await read_body(response, self.name, limits)
                    raise classify_status(response.status_code, response.headers, error_body.decode("utf-8", "replace"), self.name, limits)
                async for _, data in iter_sse(response, limits, self.name):
                    if data.strip() == "[DONE]":
                        break
                    chunk = read_json(data.encode(), self.name, self._http.json_limits)
                    if not isinstance(chunk, dict):
                        raise BadResponse(f"{self.name}: a stream chunk is not a JSON object: {data[:80]!r}", provider=self.name)
                    if "error" in chunk:
                        raise _stream_error(chunk["error"], self.name, assembler)
                    await assembler.feed(chunk, self.name)
        except httpx.TransportError as exc:
            detail = str(exc) or type(exc).__name__
            if assembler.delivered:
                raise StreamInterrupted(f"{self.name}: the stream broke mid-reply: {detail}", partial_text="".join(assembler.text), provider=self.name) from None
            if isinstance(exc, httpx.TimeoutException):
                raise NetworkError(f"{self.name}: the request to {self.base_url} timed out ({type(exc).__name__})", provider=self.name) from None
            raise NetworkError(f"{self.name}: cannot reach {self.base_url}: {detail}", provider=self.name) from None
        if not assembler.delivered and assembler.finish_reason is None:
            return None
        if assembler.finish_reason is None:
            raise StreamInterrupted(f"{self.name}: the stream ended before the reply was finished", partial_text="".join(assembler.text), provider=self.name)
        return assembler.reply(self.model)

    # ---------------------------------------------------------------- the window

    async def context_window(self) -> int | None:
        """Learned once from the server where it says so (vLLM ``max_model_len``, llama.cpp ``/props``)."""
        if not self._window_asked:
            self._window_asked = True
            self._context_window = await self._learn_window()
        return self._context_window

    async def _learn_window(self) -> int | None:
        entries = [e for e in ((await self._http.get_json("/models")) or {}).get("data") or () if isinstance(e, dict)]
        ours = [e for e in entries if e.get("id") == self.model] or entries
        for entry in ours:
            if entry.get("max_model_len"):
                return int(entry["max_model_len"])
        props = await self._http.get_json(f"{self.base_url.removesuffix('/v1')}/props")
        n_ctx = ((props or {}).get("default_generation_settings") or {}).get("n_ctx")
        return int(n_ctx) if n_ctx else None


def _stream_error(error: Any, provider: str, assembler: ChunkAssembler) -> ProviderError:
    message = error.get("message") if isinstance(error, dict) else str(error)
    if assembler.delivered:
        return StreamInterrupted(f"{provider}: the server reported an error mid-stream: {message}", partial_text="".join(assembler.text), provider=provider)
    said = f"{provider}: the server reported an error in the stream: {message}"
    # Some servers (LM Studio) answer 200 and say in the stream that the request is too long.
    return context_too_long(error, said, provider=provider) or ServerError(said, provider=provider)


def _named_server(default_url: str, name: str, key_env: str | None = None, wire: WireOptions = PLAIN) -> Callable[..., OpenAICompatible]:
    def factory(model: str, **options: Any) -> OpenAICompatible:
        model, _, url = model.rpartition("@") if "@" in model else (model, "", "")
        options.setdefault("base_url", url or default_url)
        options.setdefault("wire", wire)
        if key_env and "api_key" not in options:
            options["api_key"] = os.environ.get(key_env) or os.environ.get("BANDONEON_API_KEY")
        if key_env and not options.get("api_key") and options["base_url"].rstrip("/") == default_url:
            # The hosted service always needs one: say so now, not as an HTTP 401 after the request.
            raise ConfigError(
                f'{name}: no API key; set {key_env} (or BANDONEON_API_KEY), or name the variable that holds it with api_key_env = "VARIABLE" in bandoneon.toml (in code: the provider\'s api_key=...)'
            )
        return OpenAICompatible(model or "default", name=name, **options)

    return factory


#: llama-cpp-python's own server with ``--chat_format chatml-function-calling``: its template
#: never renders ``tool`` messages, lists tools only inside a system message, shows a tool's
#: schema but not its description, answers HTTP 500 to ``tool_choice="required"``, has no
#: image handler, and reads a JSON schema as ``{"type": "json_object", "schema": ...}`` (only
#: when no tools are offered).
LLAMA_CPP_PYTHON = WireOptions(
    tool_results_as_user=True,
    default_system_prompt="You are a helpful assistant.",
    required_as_named=True,
    description_in_parameters=True,
    output_schema_with_tools=False,
    input_kinds=frozenset(),
    response_format="json_object",
)
#: llama.cpp's ``llama-server`` turns a JSON schema into a grammar, and refuses a grammar
#: together with tools; it reads images (with a vision projector loaded) but not files.
LLAMA_CPP = WireOptions(output_schema_with_tools=False, input_kinds=frozenset({"image"}))


def _openai_compatible(rest: str, **options: Any) -> OpenAICompatible:
    model, sep, url = rest.rpartition("@")
    if not sep:
        base_url = options.pop("base_url", None) or os.environ.get("BANDONEON_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
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
register_provider("llamacpp", _named_server("http://localhost:8080/v1", "llamacpp", wire=LLAMA_CPP))
register_provider("llama-cpp-python", _named_server("http://localhost:8000/v1", "llama-cpp-python", wire=LLAMA_CPP_PYTHON))
