"""In-process models for tests: a queue of scripted replies, or a function of the request."""

from __future__ import annotations

import abc
import importlib.util
import inspect
import itertools
import json
import os
import sys
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..messages import Message, ModelReply, ModelRequest, ToolCall, Usage
from ..providers.base import DeltaCallback

__all__ = ["FunctionModel", "ScriptedModel", "call", "load_script", "reply"]

_ids = itertools.count(1)

Scripted = str | ToolCall | ModelReply | BaseException | Iterable[ToolCall]


def call(name: str, arguments: dict[str, Any] | str | None = None, /, **kwargs: Any) -> ToolCall:
    """A tool call as a model would write it: ``call("get_forecast", city="Paris")``.

    Pass a string as ``arguments`` to send raw (possibly broken) JSON.
    """
    if isinstance(arguments, str):
        raw = arguments
    else:
        raw = json.dumps({**(arguments or {}), **kwargs})
    return ToolCall(f"call_{next(_ids)}", name, raw)


def reply(text: str = "", *calls: ToolCall, finish_reason: str | None = None, usage: Usage | None = None) -> ModelReply:
    """A whole model reply: text, tool calls, or both."""
    reason = finish_reason or ("tool_calls" if calls else "stop")
    return ModelReply(Message.assistant(text, calls), reason, usage or Usage(requests=1), "scripted")


def _as_reply(item: Any) -> ModelReply:
    if isinstance(item, ModelReply):
        return item
    if isinstance(item, str):
        return reply(item)
    if isinstance(item, ToolCall):
        return reply("", item)
    if isinstance(item, Message):
        return ModelReply(item, "tool_calls" if item.tool_calls else "stop", Usage(requests=1), "scripted")
    calls = tuple(item)
    if calls and all(isinstance(c, ToolCall) for c in calls):
        return reply("", *calls)
    raise TypeError(f"a scripted reply must be a str, ToolCall, list of ToolCall, Message or ModelReply, got {item!r}")


async def _stream_text(message: Message, on_delta: DeltaCallback | None) -> None:
    if on_delta is None:
        return
    if message.content:
        words = message.content.split(" ")
        for index, word in enumerate(words):
            await on_delta("text", word if index == len(words) - 1 else word + " ")
    for index, tool_call in enumerate(message.tool_calls):
        await on_delta("tool_call", (index, tool_call.name, tool_call.arguments))


class _RecordingModel(abc.ABC):
    """What both in-process models share: record the request, turn the answer into a reply,
    stream its text when asked, report a window. They take every kind of part (images,
    files), so tests can send them; set ``input_kinds`` on an instance to play a model that
    does not."""

    name = "recording"
    input_kinds: frozenset[str] = frozenset({"image", "file"})

    def __init__(self, *, context_window: int | None, model: str):
        self.model = model
        self.requests: list[ModelRequest] = []
        self._window = context_window

    @abc.abstractmethod
    async def _answer(self, request: ModelRequest) -> Any:
        """What to reply to ``request``: anything ``_as_reply`` takes, or an exception to raise."""

    async def complete(self, request: ModelRequest, *, on_delta: DeltaCallback | None = None) -> ModelReply:
        self.requests.append(request)
        item = await self._answer(request)
        if isinstance(item, BaseException):
            raise item
        result = _as_reply(item)
        await _stream_text(result.message, on_delta)
        return result

    async def context_window(self) -> int | None:
        return self._window


class ScriptedModel(_RecordingModel):
    """A provider that answers from a queue; records every request.

    Items: a string (text reply), a ``ToolCall`` or a list of them (tool-call reply), a
    ``ModelReply``, or an exception to raise (to test error paths). An empty queue is an
    ``AssertionError`` naming the request, so a test that needs more replies says so.
    """

    name = "scripted"

    def __init__(self, *replies: Scripted, context_window: int | None = None, model: str = "scripted"):
        super().__init__(context_window=context_window, model=model)
        self._queue: list[Any] = list(replies)

    def add(self, *replies: Scripted) -> ScriptedModel:
        self._queue.extend(replies)
        return self

    @property
    def remaining(self) -> int:
        return len(self._queue)

    def assert_all_used(self) -> None:
        if self._queue:
            raise AssertionError(f"{len(self._queue)} scripted replies were never requested: {self._queue!r}")

    async def _answer(self, request: ModelRequest) -> Any:
        if not self._queue:
            last = request.messages[-1].content[:60] if request.messages else ""
            raise AssertionError(f"ScriptedModel has no reply left for request #{len(self.requests)} (last message: {last!r})")
        return self._queue.pop(0)


class FunctionModel(_RecordingModel):
    """A provider whose reply is computed: ``fn(request)`` (sync or async) returns what a
    ``ScriptedModel`` accepts. Every request is recorded."""

    name = "function"

    def __init__(self, function: Callable[[ModelRequest], Any], *, context_window: int | None = None, model: str = "function"):
        super().__init__(context_window=context_window, model=model)
        self.function = function

    async def _answer(self, request: ModelRequest) -> Any:
        item = self.function(request)
        return await item if inspect.isawaitable(item) else item


def load_script(path: str | os.PathLike[str]) -> types.ModuleType:
    """Import a script (an example, a user's agent file) by path, so a test can call its
    functions (``load_script("examples/level_02_agent_loop.py").main(ScriptedModel(...))``).

    The module is registered in ``sys.modules`` under the file's stem, as an import would, so
    string annotations of its classes (``from __future__ import annotations``) resolve.
    """
    location = Path(path)
    spec = importlib.util.spec_from_file_location(location.stem, location)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {location} as a Python script")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[spec.name]
        raise
    return module
