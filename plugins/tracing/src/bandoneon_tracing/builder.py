"""Record a run's events for its trace: on the agent's loop, one append per event.

Each event a trace needs becomes ``handler, run, time, payload`` in its trace's log
(one per trace: a root run and its subagents' runs, in the order things happened). The
payload is the event itself when the event holds only what its span needs (frozen values: a
reply, a tool call and its output), else the facts that cannot wait, taken
when the event happens: a request's model and counts (not the request: it holds the whole
history), the model a turn or a run ends with. A run's own facts (its agent's name and rules,
its model, its tools) are taken at ``run_start`` (``RunFacts``); nothing recorded holds
the run, its agent or its provider. When the root run ends, the log becomes a ``Trace`` whose
spans are drafted (``drafting``) and built (``recording``) when it is first read.

Subagents. A child run's ``run.parent`` is the parent's ``RunContext``; its span must hang
under the *tool call* that started it. The tool call is found through a context variable
set at ``tool_start``: the loop emits ``tool_start`` in the task that then runs the tool
(each concurrent tool runs in its own task, and ``asyncio.to_thread`` copies the context),
so code the tool runs — a subagent's ``run`` included — sees its own tool's ``tool_start``,
even when several tools run at once; the child's run keeps it (``RunFacts.current_tool``) and
the replay finds its span (see ``drafting``).
"""

from __future__ import annotations

import contextvars
import functools
import time
from collections.abc import Callable
from typing import Any, Protocol

import bandoneon

from .drafting import HANDLERS, Handler, Log, RunFacts, Settings, draft_trace
from .pricing import PriceTable
from .recording import Trace, redact_drafts
from .redaction import Redactor

__all__ = ["RunTrace", "SpanBuilder", "record"]

STATE_KEY: bandoneon.StashKey[RunTrace] = bandoneon.StashKey("tracing")

_current_tool: contextvars.ContextVar[bandoneon.ToolStart | None] = contextvars.ContextVar("bandoneon_tracing_tool", default=None)


class RunTrace:
    """One run's recording state (in its stash): its ``facts``, taken at ``run_start``, the log
    of its trace (one list for a root run and its subagents' runs), its trace's ``root`` run
    (None: this one), and the run's ``provider`` until the run ends, so each request asks it
    for its names only when it changed (a fallback). ``uses_agents`` (on the root) says some
    run's rules need its agent (a ``redact_text`` that takes it): the trace is then redacted
    when the root run ends.

    Nothing refers back to it: the log's entries hold the facts, so a finished trace is freed
    as soon as nobody holds it, without waiting for the cycle collector."""

    __slots__ = ("facts", "log", "provider", "root", "uses_agents")

    facts: RunFacts
    provider: object

    def __init__(self, run: bandoneon.RunContext, parent: RunTrace | None, redactor: Redactor, uses_agent: bool):
        if parent is None:
            self.root: RunTrace | None = None
            self.log: Log = []
            parent_facts = current_tool = None
        else:
            self.root = parent.root or parent
            self.log = parent.log
            parent_facts, current_tool = parent.facts, _current_tool.get()
        self.uses_agents = uses_agent
        if uses_agent and self.root is not None:
            self.root.uses_agents = True
        provider = self.provider = run.provider
        model, provider_name = _names(provider)
        self.facts = RunFacts(
            run.agent.name,
            model,
            provider_name,
            run.parent.run_id if run.parent is not None else None,
            run.depth if run.parent is not None else 0,
            # Images and files as kind, type, size and digest: never their bytes (nor kept until read).
            [bandoneon.describe_part(p) for p in run.prompt_parts if p.kind != "text"] or None if run.prompt_parts else None,
            # The names only: the tools themselves may hold anything, an agent included.
            tuple(run.tools),
            redactor,
            parent_facts,
            current_tool,
        )


class SpanBuilder:
    """One per plugin instance. ``export`` is called with each finished trace; ``rules`` are
    tracing's own redaction rules, to which each run adds its agent's (its guard's), if any:
    one instance may trace agents with different guards.

    ``record`` is the plugin's ``on_event`` (see the module's docstring): drafting, cleaning,
    redaction and ids wait until someone reads the trace, so recording stays off the agent's
    bill."""

    __slots__ = ("_export", "_last", "hook_timing", "rules", "settings")

    def __init__(
        self,
        *,
        export: Callable[[Trace], None],
        prices: PriceTable,
        rules: Redactor,
        capture_content: bool,
        hook_timing: bool = False,
    ):
        self._export = export
        self.hook_timing = hook_timing
        self.settings = Settings(prices, capture_content)
        self.rules = rules
        self._last: tuple[Callable[[str], str], Redactor] | None = None

    def start_run(self, run: bandoneon.RunContext) -> RunTrace:
        parent: RunTrace | None = run.parent.stash.get(STATE_KEY) if run.parent is not None else None
        agent = run.agent
        if not agent.redacts:
            state = RunTrace(run, parent, self.rules, False)
        elif (rules := agent.text_redaction) is not None:  # the agent's rules, without the agent
            state = RunTrace(run, parent, self._with(rules), False)
        else:  # a rule takes the agent: the trace is redacted when its root run ends
            state = RunTrace(run, parent, self.rules.with_guard(agent.redact), True)
        run.stash[STATE_KEY] = state
        return state

    def _with(self, rules: Callable[[str], str]) -> Redactor:
        """Tracing's rules plus an agent's, made once for the last agent rules seen (every run
        of one agent, and of agents with the same plugins, has the same)."""
        last = self._last
        if last is None or last[0] is not rules:
            last = self._last = (rules, self.rules.with_guard(rules))
        return last[1]

    def finish(self, root: RunTrace) -> None:
        """The root run ended: its trace goes to the exporters."""
        if root.uses_agents:
            # Drafted and redacted now, while the agents' rules are at hand: a kept trace must
            # not keep its agents alive (and with them their history) until someone reads it.
            drafts = draft_trace(root.log, self.settings)
            redact_drafts(drafts)
            self._export(Trace(drafts))
        else:
            self._export(Trace(functools.partial(draft_trace, root.log, self.settings)))


class HasBuilder(Protocol):
    _builder: SpanBuilder


def record(tracing: HasBuilder, run: bandoneon.RunContext | None, event: bandoneon.Event) -> None:
    """The plugin's ``on_event``: the event (or the facts it needs now) appended to its trace's
    log. A function of the plugin, not a method of the builder: a call less per event."""
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
        state = tracing._builder.start_run(run)
    if facts is None:  # most events: the event itself, nothing to take, nothing to finish
        state.log += (handler, state.facts, _now(), event)
        return
    builder = tracing._builder
    state.log += (handler, state.facts, _now(), facts(builder, run, state, event))
    if handler is _on_run_end and state.root is None:
        builder.finish(state)


def _names(provider: object) -> tuple[str | None, str | None]:
    """A provider's model and name."""
    return getattr(provider, "model", None) or None, getattr(provider, "name", None)


_now = time.time


# ------------------------------------------------------------------ facts that cannot wait


def _provider_request(builder: SpanBuilder, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.ProviderRequest) -> tuple[Any, ...]:
    """Not the request: it holds the whole history. Its provider's names when it is not the one
    the run started with."""
    request = event.request
    provider = run.provider
    return (event.turn, event.attempt, len(request.messages), len(request.tools), None if provider is state.provider else _names(provider), event.side)


def _tool_start(builder: SpanBuilder, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.ToolStart) -> bandoneon.ToolStart:
    _current_tool.set(event)
    return event


def _turn_end(builder: SpanBuilder, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.TurnEnd) -> tuple[Any, ...]:
    """The model a turn is priced by when its answer's model is not in the table (None: the
    provider the run started with)."""
    provider = run.provider
    return (event, None if provider is state.provider else _names(provider))


def _run_end(builder: SpanBuilder, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.RunEnd) -> tuple[Any, ...]:
    """The model the run ends with, and its timed hook calls (when hook calls are timed)."""
    profile = run.agent.hook_profile if builder.hook_timing else None
    provider = run.provider
    names = None if provider is state.provider else _names(provider)
    state.provider = None  # a kept trace keeps no provider
    return (event, names, list(profile.take_calls(run.run_id)) if profile is not None else None)


Facts = Callable[[SpanBuilder, bandoneon.RunContext, RunTrace, Any], Any]
_FACTS: dict[str, Facts] = {"provider_request": _provider_request, "tool_start": _tool_start, "turn_end": _turn_end, "run_end": _run_end}
_on_run_start, _on_run_end = HANDLERS["run_start"], HANDLERS["run_end"]
#: Per event a trace records: its handler (see ``drafting``) and what to take when it happens
#: (None: the event itself).
_RECORDERS: dict[str, tuple[Handler, Facts | None]] = {name: (handler, _FACTS.get(name)) for name, handler in HANDLERS.items()}
