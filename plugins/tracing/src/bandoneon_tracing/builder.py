"""Record a run's events for its trace: on the agent's loop, one append per event.

Each event a trace needs becomes an entry ``(handler, run, time, payload)`` of its trace's log
(one ``TraceBuffer`` per trace: a root run and its subagents' runs, in the order things
happened). The payload is the event itself when the event holds only what its span needs
(frozen values: a reply, a tool call and its output), else the facts that cannot wait, taken
when the event happens: a request's model and counts (not the request: it holds the whole
history), the model a turn or a run ends with. A run's own facts (its agent's name and rules,
its model, its tools) are taken at ``run_start`` into its ``RunTrace``; nothing recorded holds
the run, its agent or its provider. When the root run ends, the log becomes a ``Trace`` whose
spans are drafted (``drafting``) and built (``recording``) when it is first read.

Subagents. A child run's ``run.parent`` is the parent's ``RunContext``; its span must hang
under the *tool call* that started it. The tool call is found through a context variable
set at ``tool_start``: the loop emits ``tool_start`` in the task that then runs the tool
(each concurrent tool runs in its own task, and ``asyncio.to_thread`` copies the context),
so code the tool runs — a subagent's ``run`` included — sees its own tool's ``tool_start``,
even when several tools run at once; the child's run keeps it (``RunTrace.current_tool``) and
the replay finds its span (see ``drafting``).
"""

from __future__ import annotations

import contextvars
import functools
import time
from collections.abc import Callable
from typing import Any

import bandoneon

from .drafting import HANDLERS, Entry, Handler, Settings, draft_trace
from .pricing import PriceTable
from .recording import Trace, redact_drafts
from .redaction import Redactor

__all__ = ["RunTrace", "SpanBuilder", "TraceBuffer"]

STATE_KEY: bandoneon.StashKey[RunTrace] = bandoneon.StashKey("tracing")

_current_tool: contextvars.ContextVar[bandoneon.ToolStart | None] = contextvars.ContextVar("bandoneon_tracing_tool", default=None)


class TraceBuffer:
    """The log of one trace, shared by a root run and its subagent runs. ``uses_agents``: a
    run's redaction rules include its agent's (``agent.redact``)."""

    __slots__ = ("log", "uses_agents")

    def __init__(self) -> None:
        self.log: list[Entry] = []
        self.uses_agents = False


class RunTrace:
    """One run's facts, taken at ``run_start``. ``redactor`` holds the rules of the run's own
    agent (its guard); ``parent`` is the parent run's, for a subagent's run, and
    ``current_tool`` the ``tool_start`` its run started under, if any; ``hook_calls`` the
    run's timed hook calls (taken at ``run_end`` when hook calls are timed)."""

    __slots__ = (
        "agent_name",
        "buffer",
        "current_tool",
        "depth",
        "hook_calls",
        "model",
        "parent",
        "parent_run_id",
        "prompt_parts",
        "provider_name",
        "redactor",
        "tools",
    )

    def __init__(self, run: bandoneon.RunContext, buffer: TraceBuffer, parent: RunTrace | None, redactor: Redactor):
        self.buffer = buffer
        self.parent = parent
        self.current_tool = _current_tool.get() if parent is not None else None
        self.redactor = redactor
        self.agent_name = run.agent.name
        provider = run.provider
        self.model: str | None = getattr(provider, "model", None) or None
        self.provider_name: str | None = getattr(provider, "name", None)
        self.parent_run_id = run.parent.run_id if run.parent is not None else None
        self.depth = run.depth
        # Images and files as kind, type, size and digest: never their bytes (nor kept until read).
        self.prompt_parts = [bandoneon.describe_part(p) for p in run.prompt_parts if p.kind != "text"] or None if run.prompt_parts else None
        # The names only: the tools themselves may hold anything, an agent included.
        self.tools = tuple(run.tools)
        self.hook_calls: list[Any] | None = None


class SpanBuilder:
    """One per plugin instance. ``export`` is called with each finished trace; ``redactor_for``
    gives the redaction rules of an agent (tracing's own, plus that agent's guard).

    ``handle`` records (see the module's docstring): drafting, cleaning, redaction and ids wait
    until someone reads the trace, so recording stays off the agent's bill."""

    def __init__(
        self,
        *,
        export: Callable[[Trace], None],
        prices: PriceTable,
        redactor_for: Callable[[bandoneon.Agent], Redactor],
        capture_content: bool,
        hook_timing: bool = False,
        clock: Callable[[], float] = time.time,
    ):
        self._export = export
        self.hook_timing = hook_timing
        self.settings = Settings(prices, capture_content)
        self.redactor_for = redactor_for
        self.clock = clock

    def handle(self, run: bandoneon.RunContext | None, event: bandoneon.Event) -> None:
        # Only the run's own events: one emitted outside a run has no run, and a child's event
        # forwarded as is to its parent's run would otherwise land in the parent's spans.
        if run is None or event.run_id != run.run_id:
            return
        recorder = _RECORDERS.get(event.name)
        if recorder is None:
            return
        handler, facts = recorder
        state = run.stash.get(STATE_KEY)
        if state is None:
            if handler is not _on_run_start:
                return
            state = self._start_run(run)
        state.buffer.log.append((handler, state, self.clock(), event if facts is None else facts(self, run, state, event)))
        if handler is _on_run_end and state.parent is None:
            self._finish(state.buffer)

    def _start_run(self, run: bandoneon.RunContext) -> RunTrace:
        parent: RunTrace | None = run.parent.stash.get(STATE_KEY) if run.parent is not None else None
        buffer = parent.buffer if parent is not None else TraceBuffer()
        state = RunTrace(run, buffer, parent, self.redactor_for(run.agent))
        if state.redactor.guard is not None:
            buffer.uses_agents = True
        run.stash[STATE_KEY] = state
        return state

    def _finish(self, buffer: TraceBuffer) -> None:
        """The root run ended: its trace goes to the exporters."""
        if buffer.uses_agents:
            # Drafted and redacted now, while the agents' rules are at hand: a kept trace must
            # not keep its agents alive (and with them their history) until someone reads it.
            drafts = draft_trace(buffer.log, self.settings)
            redact_drafts(drafts)
            self._export(Trace(drafts))
        else:
            self._export(Trace(functools.partial(draft_trace, buffer.log, self.settings)))


# ------------------------------------------------------------------ facts that cannot wait


def _provider_request(builder: SpanBuilder, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.ProviderRequest) -> tuple[Any, ...]:
    provider = run.provider
    request = event.request
    return (event.turn, event.attempt, getattr(provider, "model", None) or None, getattr(provider, "name", None), len(request.messages), len(request.tools))


def _tool_start(builder: SpanBuilder, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.ToolStart) -> bandoneon.ToolStart:
    _current_tool.set(event)
    return event


def _turn_end(builder: SpanBuilder, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.TurnEnd) -> tuple[Any, ...]:
    """The model a turn is priced by when its answer's model is not in the table."""
    return (event, getattr(run.provider, "model", None) or None if builder.settings.has_prices else None)


def _run_end(builder: SpanBuilder, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.RunEnd) -> tuple[Any, ...]:
    if builder.hook_timing and (profile := run.agent.hook_profile) is not None:
        state.hook_calls = list(profile.take_calls(run.run_id))
    return (event, getattr(run.provider, "model", None) or None)


Facts = Callable[[SpanBuilder, bandoneon.RunContext, RunTrace, Any], Any]
_FACTS: dict[str, Facts] = {"provider_request": _provider_request, "tool_start": _tool_start, "turn_end": _turn_end, "run_end": _run_end}
_on_run_start, _on_run_end = HANDLERS["run_start"], HANDLERS["run_end"]
#: Per event a trace records: its handler (see ``drafting``) and what to take when it happens
#: (None: the event itself).
_RECORDERS: dict[str, tuple[Handler, Facts | None]] = {name: (handler, _FACTS.get(name)) for name, handler in HANDLERS.items()}
