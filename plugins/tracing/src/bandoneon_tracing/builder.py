"""Turn the loop's events into a tree of spans: run → turn → model call / tool call.

State lives in ``run.state["tracing"]``, one ``RunTrace`` per run, and the spans of a whole
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

import attrs

import bandoneon

from .pricing import PriceTable
from .redaction import Redactor
from .spans import Span, SpanEvent, new_id

__all__ = ["RunTrace", "SpanBuilder", "TraceBuffer"]

STATE_KEY = "tracing"

_current_tool: contextvars.ContextVar[Span | None] = contextvars.ContextVar("bandoneon_tracing_tool", default=None)


@attrs.define(eq=False)
class TraceBuffer:
    """The spans of one trace, shared by a root run and its subagent runs."""

    trace_id: str
    spans: list[Span] = attrs.field(factory=list)


@attrs.define(eq=False)
class RunTrace:
    buffer: TraceBuffer
    run_span: Span
    is_root: bool
    turn_span: Span | None = None
    model_span: Span | None = None
    tools: dict[str, Span] = attrs.field(factory=dict)
    seen_calls: set[str] = attrs.field(factory=set)


class SpanBuilder:
    """One per agent (owned by the plugin). ``export`` is called with each finished trace."""

    def __init__(
        self,
        *,
        export: Callable[[list[Span]], None],
        prices: PriceTable,
        redactor: Redactor,
        capture_content: bool,
        clock: Callable[[], float] = time.time,
    ):
        self._export = export
        self.prices = prices
        self.redactor = redactor
        self.capture_content = capture_content
        self.clock = clock

    # ---------------------------------------------------------------- helpers

    def _open(self, buffer: TraceBuffer, name: str, kind: Any, parent: Span | None, attributes: dict[str, Any]) -> Span:
        span = Span(name, kind, buffer.trace_id, new_id(), parent.span_id if parent else None, self.clock(), attributes=self._clean(attributes))
        buffer.spans.append(span)
        return span

    def _close(self, span: Span | None, error: str | None = None) -> None:
        if span is None or span.end is not None:
            return
        span.end = self.clock()
        if error is not None:
            span.fail(self.redactor.text(error))

    def _clean(self, attributes: dict[str, Any]) -> dict[str, Any]:
        return {key: self.redactor.value(value) if self.redactor else value for key, value in attributes.items() if value is not None}

    def _content(self, text: str, limit: int = 4000) -> str | None:
        if not self.capture_content:
            return None
        return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters]"

    def _usage_attributes(self, model: str | None, usage: bandoneon.Usage) -> dict[str, Any]:
        cost = self.prices.cost(model, usage)
        return {
            "gen_ai.usage.input_tokens": usage.input_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": usage.cached_input_tokens or None,
            "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens or None,
            "bandoneon.cost": cost,
        }

    # ---------------------------------------------------------------- events

    def handle(self, run: bandoneon.RunContext, event: bandoneon.Event) -> None:
        method = getattr(self, "_on_" + event.name, None)
        if method is not None:
            method(run, event)

    def _on_run_start(self, run: bandoneon.RunContext, event: bandoneon.RunStart) -> None:
        parent_state: RunTrace | None = run.parent.state.get(STATE_KEY) if run.parent is not None else None
        if parent_state is not None:
            buffer, parent_span, is_root = parent_state.buffer, _parent_for_child(parent_state), False
        else:
            buffer, parent_span, is_root = TraceBuffer(new_id(16)), None, True
        agent_name = run.agent.name
        span = self._open(
            buffer,
            f"invoke_agent {agent_name}",
            "run",
            parent_span,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent_name,
                "gen_ai.request.model": _model_of(run),
                "gen_ai.provider.name": getattr(run.provider, "name", None),
                "bandoneon.run_id": run.run_id,
                "bandoneon.parent_run_id": event.parent_run_id,
                "bandoneon.depth": run.depth,
                "bandoneon.prompt": self._content(event.prompt),
            },
        )
        run.state[STATE_KEY] = RunTrace(buffer, span, is_root)

    def _on_turn_start(self, run: bandoneon.RunContext, event: bandoneon.TurnStart) -> None:
        state = _state(run)
        if state is None:
            return
        self._close(state.turn_span)
        state.turn_span = self._open(state.buffer, f"turn {event.turn}", "turn", state.run_span, {"bandoneon.turn": event.turn})

    def _on_provider_request(self, run: bandoneon.RunContext, event: bandoneon.ProviderRequest) -> None:
        state = _state(run)
        if state is None:
            return
        if event.attempt > 1 and state.model_span is not None and state.model_span.end is None:
            state.model_span.events.append(SpanEvent("attempt", self.clock(), {"bandoneon.attempt": event.attempt}))
            return
        model = _model_of(run)
        parent = state.turn_span if state.turn_span is not None and state.turn_span.end is None else state.run_span
        request = event.request
        state.model_span = self._open(
            state.buffer,
            f"chat {model}" if model else "chat",
            "model",
            parent,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": model,
                "gen_ai.provider.name": getattr(run.provider, "name", None),
                "bandoneon.turn": event.turn,
                "bandoneon.messages": len(request.messages),
                "bandoneon.tools_offered": len(request.tools),
                "bandoneon.retries": 0,
            },
        )

    def _on_provider_retry(self, run: bandoneon.RunContext, event: bandoneon.ProviderRetry) -> None:
        state = _state(run)
        if state is None or state.model_span is None:
            return
        span = state.model_span
        span.attributes["bandoneon.retries"] = event.attempt
        span.events.append(
            SpanEvent(
                "retry",
                self.clock(),
                self._clean({"bandoneon.attempt": event.attempt, "bandoneon.delay": event.delay, "error.message": event.error}),
            )
        )

    def _on_assistant_message(self, run: bandoneon.RunContext, event: bandoneon.AssistantMessage) -> None:
        state = _state(run)
        if state is None or state.model_span is None:
            return
        span = state.model_span
        message = event.message
        span.attributes.update(
            self._clean(
                {
                    "gen_ai.response.finish_reasons": [event.finish_reason],
                    "bandoneon.tool_calls": [call.name for call in message.tool_calls] or None,
                    "bandoneon.output": self._content(message.content) if message.content else None,
                }
            )
        )
        self._close(span, f"the reply was cut off (finish_reason={event.finish_reason})" if event.finish_reason == "length" else None)

    def _on_tool_start(self, run: bandoneon.RunContext, event: bandoneon.ToolStart) -> None:
        state = _state(run)
        if state is None:
            return
        span = self._tool_span(state, event.call)
        span.attributes.update(self._clean({"bandoneon.tool.arguments": self._content(event.call.arguments)}))
        state.tools[event.call.id] = span
        _current_tool.set(span)

    def _tool_span(self, state: RunTrace, call: bandoneon.ToolCall) -> Span:
        state.seen_calls.add(call.id)
        parent = state.turn_span if state.turn_span is not None else state.run_span
        return self._open(
            state.buffer,
            f"execute_tool {call.name}",
            "tool",
            parent,
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name, "gen_ai.tool.call.id": call.id},
        )

    def _on_tool_refused(self, run: bandoneon.RunContext, event: bandoneon.ToolRefused) -> None:
        state = _state(run)
        if state is None:
            return
        span = self._tool_span(state, event.call)
        span.attributes["bandoneon.tool.refused"] = True
        self._close(span, f"refused: {event.reason}")

    def _on_tool_end(self, run: bandoneon.RunContext, event: bandoneon.ToolEnd) -> None:
        state = _state(run)
        if state is None:
            return
        span = state.tools.pop(event.call.id, None)
        if span is None:
            return
        if _current_tool.get() is span:
            _current_tool.set(None)
        output = self._content(event.output)
        if output is not None:
            span.attributes["bandoneon.tool.output"] = self.redactor.text(output) if self.redactor else output
        self._close(span, (event.output[:500] or "the tool failed") if event.is_error else None)

    def tool_answered_without_running(self, run: bandoneon.RunContext, result: bandoneon.ToolResult) -> None:
        """A call that never got ``tool_start`` (unknown tool, broken arguments): an instant error span."""
        state = _state(run)
        if state is None or result.call.id in state.seen_calls:
            return
        span = self._tool_span(state, result.call)
        self._close(span, result.content[:500] if result.is_error else None)

    def _on_compaction(self, run: bandoneon.RunContext, event: bandoneon.CompactionDone) -> None:
        state = _state(run)
        if state is None:
            return
        target = state.turn_span or state.run_span
        target.events.append(
            SpanEvent("compaction", self.clock(), {"bandoneon.tokens_before": event.tokens_before, "bandoneon.tokens_after": event.tokens_after})
        )

    def _on_turn_end(self, run: bandoneon.RunContext, event: bandoneon.TurnEnd) -> None:
        state = _state(run)
        if state is None:
            return
        usage_attributes = self._clean(self._usage_attributes(_model_of(run), event.usage))
        if state.model_span is not None:
            state.model_span.attributes.update(usage_attributes)
        if state.turn_span is not None:
            state.turn_span.attributes.update(usage_attributes)
            self._close(state.turn_span)

    def _on_run_end(self, run: bandoneon.RunContext, event: bandoneon.RunEnd) -> None:
        state = _state(run)
        if state is None:
            return
        for span in [*state.tools.values(), state.model_span, state.turn_span]:
            self._close(span, event.error or f"the run ended first ({event.reason})")
        state.tools.clear()
        span = state.run_span
        span.attributes.update(
            self._clean(
                {
                    **self._usage_attributes(_model_of(run), event.usage),
                    "bandoneon.stop_reason": event.reason,
                    "bandoneon.turns": event.turns,
                }
            )
        )
        self._close(span, event.error)
        if state.is_root:
            self._export(list(state.buffer.spans))


def _state(run: bandoneon.RunContext) -> RunTrace | None:
    return run.state.get(STATE_KEY)


def _model_of(run: bandoneon.RunContext) -> str | None:
    return getattr(run.provider, "model", None) or None


def _parent_for_child(parent: RunTrace) -> Span:
    current = _current_tool.get()
    if current is not None and current.end is None and current.trace_id == parent.buffer.trace_id:
        return current
    running = [span for span in parent.tools.values() if span.end is None]
    if len(running) == 1:
        return running[0]
    return parent.turn_span if parent.turn_span is not None and parent.turn_span.end is None else parent.run_span
