"""The run context: the one wide object passed to every hook and to tools that ask for it.

Hooks grow by reading new attributes here, never by new arguments.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs

from .messages import NO_USAGE, Message, ModelReply, ModelRequest, Usage
from .parts import Part
from .stash import Stash

if TYPE_CHECKING:
    from .agent import Agent
    from .decisions import FinalAnswer
    from .events import Event
    from .output import OutputSpec
    from .providers.base import Provider
    from .messages import ToolResult
    from .tools import Tool

__all__ = ["LoopState", "RunContext"]


@attrs.define
class LoopState:
    """The loop's own bookkeeping for one run: the core's, not a channel for plugins."""

    #: Results of the current turn's tools that finished, kept if the run is cut off mid-turn.
    pending_results: dict[str, ToolResult] = attrs.field(factory=dict)
    #: A typed run's answer, between the turn that gave it and the result.
    output: Any = None
    #: The answer as ``check_answer`` rewrote it, between the hook and the result.
    rewritten_answer: FinalAnswer | None = None


def _deliver_nothing(run: RunContext | None, event: Event) -> None:
    """The event delivery of a context built by hand (not by ``Agent.new_run``)."""


class _Delivered:
    """What ``RunContext.emit`` returns for an event delivered on the spot: awaiting it is done.
    ``__await__`` is a C call (a partial is not bound as a method) handing back an empty iterator."""

    __slots__ = ()

    __await__ = functools.partial(iter, ())


_DELIVERED = _Delivered()


@attrs.define(eq=False)
class RunContext:
    """One run of an agent, as hooks and tools see it.

    ``messages`` is the working history the model will be sent (compaction may shorten it);
    ``agent.transcript`` keeps everything. ``stash`` is where plugins keep what they need for
    the length of the run, under typed keys (``bandoneon.StashKey``). ``deps`` is whatever the caller passed to ``run``.
    ``system_prompt`` is this run's base prompt (the agent's, plus the context files read when
    the run started); plugins' sections are added to it per request. ``last_request`` is the
    loop's last request to the model (system prompt included); side
    calls plugins make with ``call_model`` (a summary, a wrap-up) do not replace it.
    ``provider`` is the model answering now (a fallback after the model failed);
    ``usage_by_model`` splits ``usage`` by ``provider:model``. ``prompt`` is the prompt's text; ``prompt_parts`` all its parts in order when it has
    images or files (empty for a text prompt). ``output`` is the run's typed-answer spec (None for a plain-text run): its ``type``, its
    ``mode`` (``native`` or ``tool``) and the schema the model is asked to keep to.
    """

    agent: Agent[Any, Any]
    run_id: str
    prompt: str
    messages: list[Message]
    transcript: list[Message]
    provider: Provider
    tools: dict[str, Tool]
    deps: Any = None
    parent: RunContext | None = None
    system_prompt: str = ""
    last_request: ModelRequest | None = None
    prompt_parts: tuple[Part, ...] = ()
    output: OutputSpec | None = None
    wants_events: bool = False
    wants_deltas: bool = False
    turn: int = 0
    usage: Usage = NO_USAGE
    usage_by_model: dict[str, Usage] = attrs.field(factory=dict)
    started_at: float = attrs.field(factory=time.monotonic)
    stash: Stash = attrs.field(factory=Stash, repr=False)
    loop_state: LoopState = attrs.field(factory=LoopState, repr=False)
    #: The agent's event delivery (``Agent._emit``, or ``Hooks.deliver`` for a run that started
    #: with no listeners), set by ``Agent.new_run``; a context built by hand emits nothing. A
    #: bound method of the agent's, not a closure over the run: the run would then hold
    #: itself, and every run would be left to the cyclic garbage collector.
    #: It delivers at once and returns None when nothing needs awaiting, else the awaitable
    #: that delivers: the loop calls it directly, saving ``emit``'s coroutine a dozen times a run.
    _emit: Callable[[RunContext | None, Event], Awaitable[None] | None] = attrs.field(default=_deliver_nothing, repr=False)

    def append(self, message: Message) -> None:
        """Add a message to the working history and to the full transcript."""
        self.messages.append(message)
        self.transcript.append(message)

    async def call_model(self, request: ModelRequest) -> ModelReply:
        """One model call for a plugin (a summary, a wrap-up), with this run's provider, retry
        policy and fallbacks; its usage is counted. Listeners see its ``provider_request``
        (``side=True``) and then a ``side_call_end`` with the reply or the error, so a trace
        closes the span it opened for it."""
        from .events import SideCallEnd
        from .loop import call_model

        try:
            reply = await call_model(self, request, side=True)
        except Exception as exc:
            if self.wants_events and (delivering := self._emit(self, SideCallEnd(self.run_id, self.turn, None, None, None, NO_USAGE, str(exc) or type(exc).__name__))) is not None:
                await delivering
            raise
        if self.wants_events and (delivering := self._emit(self, SideCallEnd(self.run_id, self.turn, reply.message, reply.finish_reason, reply.model, reply.usage))) is not None:
            await delivering
        return reply

    @property
    def depth(self) -> int:
        """0 for a top-level run, 1 for its subagents, and so on."""
        return 0 if self.parent is None else self.parent.depth + 1

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started_at

    def emit(self, event: Event) -> Awaitable[None]:
        """Publish an event to the agent's listeners and to plugins' ``on_event``; await it.

        Delivered on the spot when nothing needs awaiting (no listeners, every observer sync),
        and then what it returns is already done: the loop's dozen events a run make no
        coroutine each."""
        return self._emit(self, event) or _DELIVERED
