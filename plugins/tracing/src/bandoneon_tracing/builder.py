"""Turn the loop's events into a tree of spans: run → turn → model call / tool call.

State lives in ``run.stash[STATE_KEY]``, one ``RunTrace`` per run, and the spans of a whole
trace (a run and its subagents) in one shared ``TraceBuffer`` that is exported when the root
run ends.

Subagents. A child run's ``run.parent`` is the parent's ``RunContext``; its span must hang
under the *tool call* that started it. The tool call is found through a context variable
set at ``tool_start``: the loop emits ``tool_start`` in the task that then runs the tool
(each concurrent tool runs in its own task, and ``asyncio.to_thread`` copies the context),
so code the tool runs — a subagent's ``run`` included — sees its own tool's span, even when
several tools run at once. When the variable is not set (a subagent started from a hook,
say), the child hangs under the parent's only running tool call if there is exactly one,
else under the parent's current turn.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from typing import Any

import bandoneon

from .pricing import PriceTable
from .recording import Draft, Trace, redact_drafts
from .redaction import Redactor
from .spans import Kind

__all__ = ["RunTrace", "SpanBuilder", "TraceBuffer"]

STATE_KEY: bandoneon.StashKey[RunTrace] = bandoneon.StashKey("tracing")

_current_tool: contextvars.ContextVar[Draft | None] = contextvars.ContextVar("bandoneon_tracing_tool", default=None)


class TraceBuffer:
    """The spans of one trace, shared by a root run and its subagent runs. ``uses_agents``: a
    run's redaction rules include its agent's (``agent.redact``)."""

    __slots__ = ("spans", "uses_agents")

    def __init__(self) -> None:
        self.spans: list[Draft] = []
        self.uses_agents = False


class RunTrace:
    """One run's open spans. ``redactor`` holds the rules of the run's own agent (its guard).

    A plain class, made once per run: ``tools`` holds every tool span of the run by call id (an
    open one has no ``end``), ``turn_spans`` every turn's span when hook calls are timed (the
    only reader), else None."""

    __slots__ = ("buffer", "is_root", "model_span", "redactor", "response_model", "run_span", "tools", "turn_span", "turn_spans")

    def __init__(self, buffer: TraceBuffer, is_root: bool, redactor: Redactor, turn_spans: dict[int, Draft] | None):
        self.buffer = buffer
        self.is_root = is_root
        self.redactor = redactor
        self.turn_spans = turn_spans
        self.run_span: Draft
        self.turn_span: Draft | None = None
        self.model_span: Draft | None = None
        self.response_model: str | None = None
        self.tools: dict[str, Draft] = {}


class SpanBuilder:
    """One per plugin instance. ``export`` is called with each finished trace; ``redactor_for``
    gives the redaction rules of an agent (tracing's own, plus that agent's guard).

    Handlers record raw values on ``Draft``s (see ``recording``): cleaning, redaction and ids
    wait until someone reads the trace, so recording stays off the agent's bill."""

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
        self.prices = prices
        self.has_prices = bool(prices)
        self.redactor_for = redactor_for
        self.capture_content = capture_content
        self.clock = clock

    # ---------------------------------------------------------------- helpers

    def _open(self, state: RunTrace, kind: Kind, subject: object, parent: Draft | None, attributes: dict[str, Any]) -> Draft:
        span = Draft(kind, subject, parent, self.clock(), attributes, state.redactor)
        state.buffer.spans.append(span)
        return span

    def _close(self, span: Draft | None, error: str | None = None) -> None:
        if span is None or span.end is not None:
            return
        span.end = self.clock()
        if error is not None:
            span.error = error

    def _content(self, text: str, limit: int = 4000) -> str | None:
        if not self.capture_content:
            return None
        return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters]"

    def _cost(self, run: bandoneon.RunContext, usage: bandoneon.Usage, answered_by: str | None = None) -> float | None:
        """The provider's own figure, else the table's (an empty one is not even asked): by
        the model that answered (a dated version of an alias) when the table knows it, else
        by the model asked."""
        if usage.cost is not None or not self.has_prices:
            return usage.cost
        return self.prices.cost(answered_by if self.prices.get(answered_by) else _model_of(run), usage)

    # ---------------------------------------------------------------- events

    def handle(self, run: bandoneon.RunContext | None, event: bandoneon.Event) -> None:
        # Only the run's own events: one emitted outside a run has no run, and a child's event
        # forwarded as is to its parent's run would otherwise land in the parent's spans.
        if run is None or event.run_id != run.run_id:
            return
        if event.name == "run_start":
            self._start_run(run)
            return
        method = _HANDLERS.get(event.name)
        if method is not None:
            state = run.stash.get(STATE_KEY)
            if state is not None:
                method(self, run, state, event)

    def _start_run(self, run: bandoneon.RunContext) -> None:
        parent_state: RunTrace | None = run.parent.stash.get(STATE_KEY) if run.parent is not None else None
        if parent_state is not None:
            buffer, parent_span, is_root = parent_state.buffer, _parent_for_child(parent_state), False
        else:
            buffer, parent_span, is_root = TraceBuffer(), None, True
        state = RunTrace(buffer, is_root, self.redactor_for(run.agent), {} if self.hook_timing else None)
        if state.redactor.guard is not None:
            buffer.uses_agents = True
        agent_name = run.agent.name
        state.run_span = self._open(
            state,
            "run",
            agent_name,
            parent_span,
            {
                "gen_ai.agent.name": agent_name,
                "gen_ai.request.model": _model_of(run),
                "gen_ai.provider.name": getattr(run.provider, "name", None),
                "bandoneon.run_id": run.run_id,
                "bandoneon.parent_run_id": run.parent.run_id if run.parent is not None else None,
                "bandoneon.depth": run.depth,
                "bandoneon.prompt": self._content(run.prompt),
                # Images and files as kind, type, size and digest: never their bytes.
                "bandoneon.prompt.parts": [bandoneon.describe_part(p) for p in run.prompt_parts if p.kind != "text"] or None if run.prompt_parts else None,
                # The tools the run had (not only those it called): an eval case made from this
                # trace (`bandoneon eval add-case`) says what the model could choose from.
                "bandoneon.tools": sorted(run.tools) or None,
            },
        )
        run.stash[STATE_KEY] = state

    def _on_turn_start(self, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.TurnStart) -> None:
        self._close(state.turn_span)
        state.turn_span = self._open(state, "turn", event.turn, state.run_span, {"bandoneon.turn": event.turn})
        if state.turn_spans is not None:
            state.turn_spans[event.turn] = state.turn_span

    def _on_provider_request(self, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.ProviderRequest) -> None:
        if event.attempt > 1 and state.model_span is not None and state.model_span.end is None:
            state.model_span.add_event("attempt", self.clock(), {"bandoneon.attempt": event.attempt})
            return
        model = _model_of(run)
        state.response_model = None
        parent = state.turn_span if state.turn_span is not None and state.turn_span.end is None else state.run_span
        request = event.request
        state.model_span = self._open(
            state,
            "model",
            model,
            parent,
            {
                "gen_ai.request.model": model,
                "gen_ai.provider.name": getattr(run.provider, "name", None),
                "bandoneon.turn": event.turn,
                "bandoneon.messages": len(request.messages),
                "bandoneon.tools_offered": len(request.tools),
            },
        )

    def _on_model_fallback(self, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.ModelFallback) -> None:
        """The failing model's span ends with its error; the next request opens the fallback's."""
        if state.model_span is None:
            return
        state.model_span.attributes["bandoneon.fallback_to"] = event.to_model
        self._close(state.model_span, event.error)
        state.run_span.add_event("model_fallback", self.clock(), {"bandoneon.from_model": event.from_model, "bandoneon.to_model": event.to_model})

    def _on_provider_retry(self, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.ProviderRetry) -> None:
        span = state.model_span
        if span is None:
            return
        span.attributes["bandoneon.retries"] = event.attempt
        span.add_event("retry", self.clock(), {"bandoneon.attempt": event.attempt, "bandoneon.delay": event.delay, "error.message": event.error})

    def _on_assistant_message(self, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.AssistantMessage) -> None:
        span = state.model_span
        if span is None:
            return
        state.response_model = event.model
        message = event.message
        attributes = span.attributes
        attributes["gen_ai.response.model"] = event.model
        attributes["gen_ai.response.finish_reasons"] = [event.finish_reason]
        if message.tool_calls:
            attributes["bandoneon.tool_calls"] = [call.name for call in message.tool_calls]
        if message.content:
            attributes["bandoneon.output"] = self._content(message.content)
        # The model's reasoning (OpenAI-compatible reasoning fields, <think>, Anthropic
        # thinking); redacted blocks are opaque and are not shown.
        if message.thinking and (thinking := _thinking_text(message)):
            attributes["bandoneon.thinking"] = self._content(thinking)
        self._close(span, f"the reply was cut off (finish_reason={event.finish_reason})" if event.finish_reason == "length" else None)

    def _on_tool_start(self, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.ToolStart) -> None:
        _current_tool.set(self._tool_span(state, event.call))

    def _tool_span(self, state: RunTrace, call: bandoneon.ToolCall) -> Draft:
        parent = state.turn_span if state.turn_span is not None else state.run_span
        # Arguments on every tool span, refused and unknown calls included: with the model
        # span's text they are the model's whole reply, which a replay needs.
        span = state.tools[call.id] = self._open(
            state,
            "tool",
            call.name,
            parent,
            {
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id,
                "bandoneon.tool.arguments": self._content(call.arguments),
            },
        )
        return span

    def _on_tool_refused(self, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.ToolRefused) -> None:
        span = self._tool_span(state, event.call)
        span.attributes["bandoneon.tool.refused"] = True
        self._close(span, f"refused: {event.reason}")

    def _on_tool_end(self, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.ToolEnd) -> None:
        span = state.tools.get(event.call.id)
        if span is None or span.end is not None:
            return
        if _current_tool.get() is span:
            _current_tool.set(None)
        span.attributes["bandoneon.tool.output"] = self._content(event.output)
        self._close(span, (event.output[:500] or "the tool failed") if event.is_error else None)

    def tool_answered_without_running(self, run: bandoneon.RunContext, result: bandoneon.ToolResult) -> None:
        """A call that never got ``tool_start`` (unknown tool, broken arguments): an instant error span."""
        state = run.stash.get(STATE_KEY)
        if state is None or result.call.id in state.tools:
            return
        span = self._tool_span(state, result.call)
        self._close(span, result.content[:500] if result.is_error else None)

    def _on_compaction(self, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.CompactionDone) -> None:
        target = state.turn_span or state.run_span
        target.add_event("compaction", self.clock(), {"bandoneon.tokens_before": event.tokens_before, "bandoneon.tokens_after": event.tokens_after})

    def _on_turn_end(self, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.TurnEnd) -> None:
        usage = (event.usage, self._cost(run, event.usage, answered_by=state.response_model))
        if state.model_span is not None:
            state.model_span.usage = usage
        if state.turn_span is not None:
            state.turn_span.usage = usage
            self._close(state.turn_span)

    def _on_run_end(self, run: bandoneon.RunContext, state: RunTrace, event: bandoneon.RunEnd) -> None:
        cut_short = [span for span in (*state.tools.values(), state.model_span, state.turn_span) if span is not None and span.end is None]
        if cut_short:
            error = event.error or f"the run ended first ({event.reason})"
            for span in cut_short:
                self._close(span, error)
        if self.hook_timing:
            self._add_hook_calls(run, state)
        span = state.run_span
        span.usage = (event.usage, self._cost(run, event.usage))
        span.attributes["bandoneon.stop_reason"] = event.reason
        span.attributes["bandoneon.turns"] = event.turns
        self._close(span, event.error)
        if state.is_root:
            trace = Trace(state.buffer.spans)
            if state.buffer.uses_agents:
                # Redacted now, while the agents' rules are at hand: a kept trace must not keep
                # its agents alive (and with them their history) until someone reads it.
                redact_drafts(state.buffer.spans)
            self._export(trace)

    def _add_hook_calls(self, run: bandoneon.RunContext, state: RunTrace) -> None:
        """Each plugin hook call of the run as a ``hook`` event on its turn's span (events, not
        spans: a run makes dozens of hook calls, each a few microseconds), and each plugin's
        total as ``bandoneon.hook_ms.<plugin>`` on the run span."""
        profile = run.agent.hook_profile
        if profile is None:
            return
        totals: dict[str, float] = {}
        turn_spans = state.turn_spans or {}
        for call in profile.take_calls(run.run_id):
            attributes: dict[str, Any] = {"bandoneon.plugin": call.plugin, "bandoneon.hook": call.hook, "bandoneon.duration_ms": round(call.duration * 1000, 4)}
            if call.failed:
                attributes["error"] = True
            turn_spans.get(call.turn, state.run_span).add_event("hook", call.started, attributes)
            totals[call.plugin] = totals.get(call.plugin, 0.0) + call.duration
        for plugin, total in totals.items():
            state.run_span.attributes[f"bandoneon.hook_ms.{plugin}"] = round(total * 1000, 4)


# The event handlers by event name (but run_start), looked up once per event instead of built by getattr.
_HANDLERS: dict[str, Callable[[SpanBuilder, bandoneon.RunContext, RunTrace, Any], None]] = {
    name.removeprefix("_on_"): method for name, method in vars(SpanBuilder).items() if name.startswith("_on_")
}


def _model_of(run: bandoneon.RunContext) -> str | None:
    return getattr(run.provider, "model", None) or None


def _parent_for_child(parent: RunTrace) -> Draft:
    current = _current_tool.get()
    if current is not None and current.end is None and _root(current) is parent.buffer.spans[0]:
        return current
    running = [span for span in parent.tools.values() if span.end is None]
    if len(running) == 1:
        return running[0]
    return parent.turn_span if parent.turn_span is not None and parent.turn_span.end is None else parent.run_span


def _root(span: Draft) -> Draft:
    while span.parent is not None:
        span = span.parent
    return span


def _thinking_text(message: bandoneon.Message) -> str:
    return "\n\n".join(block.text for block in message.thinking if not block.is_redacted and block.text)
