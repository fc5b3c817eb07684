"""The values that travel through the loop: messages, tool calls, usage, requests, replies.

All are frozen attrs classes: a hook that wants a change returns a changed copy
(``attrs.evolve``), so no plugin can edit another's view behind its back.
Wire formats live in the providers, never here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import attrs

from .jsonlimits import loads_bounded
from .parts import Part, TextPart

__all__ = [
    "Message",
    "ModelReply",
    "ModelRequest",
    "OutputSchema",
    "Thinking",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Turn",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]


@attrs.frozen
class ToolCall:
    """A tool the model asked for. ``arguments`` is the raw JSON text, exactly as the model wrote it."""

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> Any:
        """The arguments decoded from JSON within the default ``JsonLimits``; a ``ValueError``
        (``json.JSONDecodeError``, or ``JsonLimitError`` past the limits) when they are broken."""
        return loads_bounded(self.arguments or "{}")


@attrs.frozen
class Thinking:
    """A reasoning block a provider returned. Sent back unchanged (with its signature) when required."""

    text: str
    signature: str | None = None
    is_redacted: bool = False


if TYPE_CHECKING:
    # mypy's attrs plugin types a field's __init__ parameter by its converter's first
    # parameter, and the builtin tuple's has no item type; the checker sees these typed twins,
    # the run time the builtin itself (no extra call per message).
    def _tool_calls(items: Iterable[ToolCall], /) -> tuple[ToolCall, ...]: ...
    def _thinking(items: Iterable[Thinking], /) -> tuple[Thinking, ...]: ...
    def _parts(items: Iterable[Part], /) -> tuple[Part, ...]: ...
else:
    _tool_calls = _thinking = _parts = tuple


@attrs.frozen
class Message:
    """One entry of the history.

    ``role="tool"`` messages answer the call named by ``tool_call_id``; ``is_error`` marks a
    result the model should read as a failure. ``parts`` holds a user message's text, images
    and files in order when it has more than text (``content`` is then its words); it is empty
    for a text-only message.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_tool_calls)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    thinking: tuple[Thinking, ...] = attrs.field(default=(), converter=_thinking)
    parts: tuple[Part, ...] = attrs.field(default=(), converter=_parts)

    @classmethod
    def user(cls, content: str, parts: Sequence[Part] = ()) -> Message:
        return cls("user", content, parts=tuple(parts))

    @classmethod
    def assistant(cls, content: str = "", tool_calls: Sequence[ToolCall] = ()) -> Message:
        return cls("assistant", content, tuple(tool_calls))

    @classmethod
    def tool(cls, call: ToolCall, content: str, *, is_error: bool = False) -> Message:
        return cls("tool", content, tool_call_id=call.id, name=call.name, is_error=is_error)



def map_texts(message: Message, change: Callable[[str], str]) -> Message:
    """``message`` with ``change`` applied to each of its texts: its words, its tool calls'
    arguments, its thinking and its text parts (a prompt with images keeps its words there
    too). The message itself when ``change`` left every text as it was, and likewise each tool
    call, thought and part: most messages need no change, and then nothing is built."""
    content = change(message.content) if message.content else message.content
    calls = tuple(_changed(call, "arguments", change) for call in message.tool_calls) if message.tool_calls else ()
    thinking = tuple(_changed(thought, "text", change) for thought in message.thinking) if message.thinking else ()
    parts = tuple(_changed(part, "text", change) if part.kind == "text" else part for part in message.parts) if message.parts else ()
    if content == message.content and calls == message.tool_calls and thinking == message.thinking and parts == message.parts:
        return message
    return attrs.evolve(message, content=content, tool_calls=calls, thinking=thinking, parts=parts)


_WithText = TypeVar("_WithText", ToolCall, Thinking, TextPart)


def _changed(item: _WithText, field: str, change: Callable[[str], str]) -> _WithText:
    """``item`` with ``change`` applied to its text ``field``; ``item`` itself when unchanged."""
    text = getattr(item, field)
    changed = change(text)
    if changed == text:
        return item
    changes: dict[str, Any] = {field: changed}
    return attrs.evolve(item, **changes)


@attrs.frozen
class Usage:
    """Tokens spent, and the cost when the model is priced. Adds up with ``+``.

    ``cached_input_tokens`` and ``cache_write_tokens`` are *parts of* ``input_tokens``
    (never added on top), so totals never count a cached token twice.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    requests: int = 0
    cost: float | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        # Nothing plus a usage is that usage (frozen: it can be shared). A run starts from
        # NO_USAGE, so its first reply's usage is counted without building a copy.
        if self is NO_USAGE and type(other) is Usage:
            return other
        if self.cost is None and other.cost is None:
            cost = None
        else:
            cost = (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.requests + other.requests,
            cost,
        )


#: The usage of nothing yet: where a run's and a new agent's counts start (see ``Usage.__add__``).
NO_USAGE = Usage()


@attrs.frozen
class ToolSpec:
    """A tool as the model sees it: name, description and the JSON Schema of its input."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@attrs.frozen
class OutputSchema:
    """The JSON shape the model's final text must have, for providers that can ask the server
    to keep to it (OpenAI ``response_format``, a llama.cpp JSON-schema grammar, Anthropic
    tool-forcing). ``schema`` always describes a JSON object; ``is_strict`` says it meets
    OpenAI's strict-mode rules (every property required, no extra keys)."""

    name: str
    schema: Mapping[str, Any]
    description: str = ""
    is_strict: bool = False


@attrs.frozen
class ModelRequest:
    """Everything one model call sends. ``before_provider_call`` hooks return changed copies.

    ``output_schema`` is set when the run wants a typed answer and the provider said it can
    enforce the shape itself (``supports_output_schema``); the reply's text is then that JSON.
    """

    messages: tuple[Message, ...]
    system_prompt: str = ""
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str | Mapping[str, Any] | None = None
    settings: Mapping[str, Any] = attrs.field(factory=dict)
    stream: bool = False
    output_schema: OutputSchema | None = None


@attrs.frozen
class ModelReply:
    """What one model call returned.

    ``finish_reason`` is normalised: ``"stop"``, ``"tool_calls"``, ``"length"`` or the
    provider's own word when it has no equivalent.
    """

    message: Message
    finish_reason: str = "stop"
    usage: Usage = NO_USAGE
    model: str | None = None


@attrs.frozen
class ToolResult:
    """The outcome of one tool call, before it joins the history as a ``tool`` message.

    ``arguments`` holds the validated input (``None`` when validation failed), which is what a
    terminal tool hands back as the run's answer.
    """

    call: ToolCall
    content: str
    is_error: bool = False
    arguments: Mapping[str, Any] | None = None
    duration: float = 0.0
    was_refused: bool = False

    def to_message(self) -> Message:
        return Message.tool(self.call, self.content, is_error=self.is_error)


@attrs.frozen
class Turn:
    """One lap of the loop: the model's reply and the results of the tools it asked for."""

    number: int
    reply: ModelReply
    tool_results: tuple[ToolResult, ...] = ()

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.reply.message.tool_calls)
