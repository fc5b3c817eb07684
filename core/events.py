"""Typed events: the loop tells what happened; listeners watch, they cannot change anything.

Every event class registers its ``name`` when it is defined, so ``agent.on(name, fn)``
can reject a misspelled name at once. Events compare by identity (``eq=False``): they are
records of moments, and skipping the generated comparison keeps ``import bandoneon`` fast. Plugins define their own events by subclassing
``Event`` (for example ``steering`` or ``heartbeat_tick``).

The core's events have no ``__slots__`` (``slots=False``): a frozen attrs class then writes its
fields straight into the new instance's ``__dict__``, where a slotted one calls
``object.__setattr__`` once per field; a run with observers builds a dozen events, each about
a third cheaper so (issue #19). They are as frozen either way.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from .messages import Message, ModelRequest, ToolCall, Usage

__all__ = [
    "AnswerSentBack",
    "AssistantMessage",
    "CompactionDone",
    "Event",
    "ProviderRequest",
    "ProviderRetry",
    "RunEnd",
    "RunStart",
    "SideCallEnd",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallDelta",
    "ToolAnswered",
    "ToolEnd",
    "ToolRefused",
    "ToolStart",
    "TurnEnd",
    "TurnStart",
    "ModelFallback",
    "OutputDelta",
    "event_names",
]

_REGISTRY: dict[str, type[Event]] = {}


@attrs.frozen(eq=False, slots=False)
class Event:
    """Base class of every event. ``run_id`` tells which run it belongs to."""

    name: ClassVar[str] = "event"
    run_id: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            _REGISTRY[cls.name] = cls


def event_names() -> frozenset[str]:
    """The names ``agent.on`` accepts: the core's events and those of imported plugins."""
    return frozenset(_REGISTRY)


@attrs.frozen(eq=False, slots=False)
class RunStart(Event):
    name: ClassVar[str] = "run_start"
    prompt: str
    parent_run_id: str | None = None


@attrs.frozen(eq=False, slots=False)
class TurnStart(Event):
    name: ClassVar[str] = "turn_start"
    turn: int


@attrs.frozen(eq=False, slots=False)
class ProviderRequest(Event):
    """A request goes to the model (``attempt`` > 1: again, after a retry). ``side``: a call a
    plugin makes for the run (``RunContext.call_model``: a summary, a wrap-up), whose end is a
    ``SideCallEnd``; a turn's call ends with its ``AssistantMessage``."""

    name: ClassVar[str] = "provider_request"
    turn: int
    request: ModelRequest
    attempt: int = 1
    side: bool = False


@attrs.frozen(eq=False, slots=False)
class SideCallEnd(Event):
    """A side call (``RunContext.call_model``) ended: its reply's ``message``, ``finish_reason``,
    ``model`` and ``usage``, or the ``error`` it failed with (then the others are None, the
    usage empty). Never in the history: the plugin that asked decides what becomes of it."""

    name: ClassVar[str] = "side_call_end"
    turn: int
    message: Message | None
    finish_reason: str | None
    model: str | None
    usage: Usage
    error: str | None = None


@attrs.frozen(eq=False, slots=False)
class ProviderRetry(Event):
    name: ClassVar[str] = "provider_retry"
    turn: int
    attempt: int
    max_attempts: int | None
    delay: float
    error: str


@attrs.frozen(eq=False, slots=False)
class ModelFallback(Event):
    """A model's retries were spent on errors worth retrying; ``to_model`` takes over for the
    rest of the run. Models are named ``provider:model``."""

    name: ClassVar[str] = "model_fallback"
    turn: int
    from_model: str
    to_model: str
    error: str


@attrs.frozen(eq=False, slots=False)
class TextDelta(Event):
    name: ClassVar[str] = "text_delta"
    text: str


@attrs.frozen(eq=False, slots=False)
class ThinkingDelta(Event):
    """A piece of the model's reasoning while it streams in (kept as the message's ``thinking``)."""

    name: ClassVar[str] = "thinking_delta"
    text: str


@attrs.frozen(eq=False, slots=False)
class ToolCallDelta(Event):
    """A piece of a tool call while it streams in; ``index`` tells which call of the message."""

    name: ClassVar[str] = "tool_call_delta"
    index: int
    tool_name: str | None
    arguments_delta: str


@attrs.frozen(eq=False, slots=False)
class OutputDelta(Event):
    """A typed answer while it streams in. ``partial`` is the JSON so far (complete values, and
    a string as far as it got); ``output`` is that much already checked against the output
    type (for a list, its complete items), or None while it does not fit yet."""

    name: ClassVar[str] = "output_delta"
    partial: Any
    output: Any = None


@attrs.frozen(eq=False, slots=False)
class AnswerSentBack(Event):
    """A ``check_answer`` hook sent the model's answer back; ``reason`` is what the model reads."""

    name: ClassVar[str] = "answer_sent_back"
    turn: int
    reason: str


@attrs.frozen(eq=False, slots=False)
class AssistantMessage(Event):
    name: ClassVar[str] = "assistant_message"
    turn: int
    message: Message
    finish_reason: str
    model: str | None = None


@attrs.frozen(eq=False, slots=False)
class ToolStart(Event):
    """A tool call was authorised and is about to run (refused calls never get one)."""

    name: ClassVar[str] = "tool_start"
    call: ToolCall
    arguments: Any


@attrs.frozen(eq=False, slots=False)
class ToolRefused(Event):
    name: ClassVar[str] = "tool_refused"
    call: ToolCall
    reason: str


@attrs.frozen(eq=False, slots=False)
class ToolAnswered(Event):
    """A tool call was answered without running: no tool has its name, its arguments do not fit
    the tool, or a ``before_tool_execution`` hook answered it (``Respond``). ``output`` is what
    the model will read (after every hook). Refused calls get ``tool_refused`` instead, calls
    that run ``tool_start`` and ``tool_end``: each call gets one of the three."""

    name: ClassVar[str] = "tool_answered"
    call: ToolCall
    output: str
    is_error: bool


@attrs.frozen(eq=False, slots=False)
class ToolEnd(Event):
    """A tool call finished; ``output`` is what the model will read (after every hook)."""

    name: ClassVar[str] = "tool_end"
    call: ToolCall
    output: str
    is_error: bool
    duration: float


@attrs.frozen(eq=False, slots=False)
class CompactionDone(Event):
    name: ClassVar[str] = "compaction"
    tokens_before: int
    tokens_after: int
    removed: tuple[str, ...]


@attrs.frozen(eq=False, slots=False)
class TurnEnd(Event):
    name: ClassVar[str] = "turn_end"
    turn: int
    usage: Usage


@attrs.frozen(eq=False, slots=False)
class RunEnd(Event):
    """The run is over. ``reason`` is ``RunResult.stop``; ``error`` is set when it raised."""

    name: ClassVar[str] = "run_end"
    reason: str
    turns: int
    usage: Usage
    error: str | None = None
