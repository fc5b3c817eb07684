"""A trace's log of events turned into its tree of drafts, when the trace is first read.

``builder`` records each run's events on the agent's loop as ``handler, run, time, payload``
in one log per trace (a root run and its subagents, in the order things happened);
``draft_trace`` replays that log through the handlers below, off the agent's bill: the JSONL
writer thread, or whoever reads ``tracing.traces`` first. The payload is the event itself when
it holds only what the span needs, else the facts taken when it happened (``builder``).

Subagents: a child's run span hangs under the tool call that started it, known by the
``tool_start`` event its run saw as current (``RunFacts.current_tool``), when that call is still
running when the child starts; else under the parent's only running tool call if there is
exactly one, else under the parent's current turn (or run). Replaying in order, the parent's
spans are exactly as they were when the child started.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import bandoneon

from .pricing import PriceTable
from .recording import Draft
from .redaction import Redactor, clip

__all__ = ["HANDLERS", "Handler", "Log", "RunFacts", "Settings", "draft_trace"]


class Settings:
    """What the replay needs of the plugin's options."""

    __slots__ = ("capture_content", "has_prices", "prices")

    def __init__(self, prices: PriceTable, capture_content: bool):
        self.prices = prices
        self.has_prices = bool(prices)
        self.capture_content = capture_content


class RunFacts:
    """What a run's spans need of the run itself, taken when it starts (``builder``): its
    agent's name and rules (``redactor``: tracing's, plus the agent's guard), its model and
    provider, its tools' names; for a subagent's run, its parent run's facts and the
    ``tool_start`` it started under, if any."""

    __slots__ = ("agent_name", "current_tool", "depth", "model", "parent", "parent_run_id", "prompt_parts", "provider_name", "redactor", "tools")

    def __init__(
        self,
        agent_name: str,
        model: str | None,
        provider_name: str | None,
        parent_run_id: str | None,
        depth: int,
        prompt_parts: list[str] | None,
        tools: tuple[str, ...],
        redactor: Redactor,
        parent: RunFacts | None,
        current_tool: bandoneon.ToolStart | None,
    ):
        self.agent_name = agent_name
        self.model = model
        self.provider_name = provider_name
        self.parent_run_id = parent_run_id
        self.depth = depth
        self.prompt_parts = prompt_parts
        self.tools = tools
        self.redactor = redactor
        self.parent = parent
        self.current_tool = current_tool


class _Spans:
    """One run's spans while its events are replayed: the open ones and every tool call's (by
    call id; an open one has no ``end``)."""

    __slots__ = ("model_span", "response_model", "run", "run_span", "tools", "turn_model_span", "turn_span", "turn_spans")

    def __init__(self, run: RunFacts):
        self.run = run
        self.run_span: Draft
        self.turn_span: Draft | None = None
        self.model_span: Draft | None = None
        #: The turn's model span while a side call's is ``model_span`` (its usage comes later).
        self.turn_model_span: Draft | None = None
        self.response_model: str | None = None
        self.tools: dict[str, Draft] = {}
        self.turn_spans: dict[int, Draft] = {}


class _Replay:
    """One trace being drafted."""

    __slots__ = ("drafts", "runs", "settings", "tools_by_start")

    def __init__(self, settings: Settings):
        self.settings = settings
        self.drafts: list[Draft] = []
        self.runs: dict[RunFacts, _Spans] = {}
        #: Every tool span of the trace by its ``tool_start`` event (by id: events compare by
        #: identity, and the log keeps each alive while this lives).
        self.tools_by_start: dict[int, Draft] = {}

    def open(self, spans: _Spans, kind: Any, subject: object, parent: Draft | None, start: float, attributes: dict[str, Any]) -> Draft:
        draft = Draft(kind, subject, parent, start, attributes, spans.run.redactor)
        self.drafts.append(draft)
        return draft

    def content(self, text: str, limit: int = 4000) -> str | None:
        if not self.settings.capture_content:
            return None
        return clip(text, limit)  # redacted when built: the rules still see past the cut

    def cost(self, usage: bandoneon.Usage, model: str | None, answered_by: str | None = None) -> float | None:
        """The provider's own figure, else the table's (an empty one is not even asked): by
        the model that answered (a dated version of an alias) when the table knows it, else
        by the model asked."""
        settings = self.settings
        if usage.cost is not None or not settings.has_prices:
            return usage.cost
        return settings.prices.cost(answered_by if settings.prices.get(answered_by) else model, usage)

    def tool_span(self, spans: _Spans, call: bandoneon.ToolCall, time: float) -> Draft:
        parent = spans.turn_span if spans.turn_span is not None else spans.run_span
        # Arguments on every tool span, refused and unknown calls included: with the model
        # span's text they are the model's whole reply, which a replay needs.
        draft = spans.tools[call.id] = self.open(
            spans,
            "tool",
            call.name,
            parent,
            time,
            {
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id,
                "bandoneon.tool.arguments": self.content(call.arguments),
            },
        )
        return draft

    def parent_for_child(self, run: RunFacts) -> Draft | None:
        parent_run = run.parent
        if parent_run is None:
            return None
        parent = self.runs[parent_run]
        current = self.tools_by_start.get(id(run.current_tool))
        if current is not None and current.end is None:
            return current
        running = [draft for draft in parent.tools.values() if draft.end is None]
        if len(running) == 1:
            return running[0]
        return parent.turn_span if parent.turn_span is not None and parent.turn_span.end is None else parent.run_span


Handler = Callable[[_Replay, _Spans, float, Any], None]
#: A trace's log: four items per recorded moment, its handler, the run's facts, the time, and
#: the event or the facts taken then. Flat, not a tuple per moment: a kept trace is then a
#: handful of objects for the cycle collector to walk, whatever its length.
Log = list[Any]


def draft_trace(log: Log, settings: Settings) -> list[Draft]:
    """The drafts of a trace, in the order their spans started."""
    replay = _Replay(settings)
    runs = replay.runs
    items = iter(log)
    for handler, run, time, payload in zip(items, items, items, items, strict=True):
        spans = runs.get(run)
        if spans is None:
            spans = runs[run] = _Spans(run)
        handler(replay, spans, time, payload)
    return replay.drafts


def _close(draft: Draft | None, time: float, error: str | None = None) -> None:
    if draft is None or draft.end is not None:
        return
    draft.end = time
    if error is not None:
        draft.error = error


# ------------------------------------------------------------------------------ handlers


def _on_run_start(replay: _Replay, spans: _Spans, time: float, event: bandoneon.RunStart) -> None:
    run = spans.run
    spans.run_span = replay.open(
        spans,
        "run",
        run.agent_name,
        replay.parent_for_child(run),
        time,
        {
            "gen_ai.agent.name": run.agent_name,
            "gen_ai.request.model": run.model,
            "gen_ai.provider.name": run.provider_name,
            "bandoneon.run_id": event.run_id,
            "bandoneon.parent_run_id": run.parent_run_id,
            "bandoneon.depth": run.depth,
            "bandoneon.prompt": replay.content(event.prompt),
            "bandoneon.prompt.parts": run.prompt_parts,
            # The tools the run had (not only those it called): an eval case made from this
            # trace (`bandoneon eval add-case`) says what the model could choose from.
            "bandoneon.tools": sorted(run.tools) or None,
        },
    )


def _on_turn_start(replay: _Replay, spans: _Spans, time: float, event: bandoneon.TurnStart) -> None:
    _close(spans.turn_span, time)
    spans.turn_span = spans.turn_spans[event.turn] = replay.open(spans, "turn", event.turn, spans.run_span, time, {"bandoneon.turn": event.turn})


Names = tuple[str | None, str | None] | None  # a provider's model and name; None: the run's own


def _model(run: RunFacts, names: Names) -> str | None:
    return run.model if names is None else names[0]


def _on_provider_request(replay: _Replay, spans: _Spans, time: float, facts: tuple[int, int, int, int, Names, bool]) -> None:
    turn, attempt, messages, tools_offered, names, side = facts
    model, provider_name = (spans.run.model, spans.run.provider_name) if names is None else names
    if attempt > 1 and spans.model_span is not None and spans.model_span.end is None:
        spans.model_span.add_event("attempt", time, {"bandoneon.attempt": attempt})
        return
    attributes = {
        "gen_ai.request.model": model,
        "gen_ai.provider.name": provider_name,
        "bandoneon.turn": turn,
        "bandoneon.messages": messages,
        "bandoneon.tools_offered": tools_offered,
    }
    if side:  # a plugin's call for the run (a summary, a wrap-up): it ends with side_call_end
        attributes["bandoneon.side_call"] = True
        spans.turn_model_span = spans.model_span
    else:
        spans.response_model = None
    parent = spans.turn_span if spans.turn_span is not None and spans.turn_span.end is None else spans.run_span
    spans.model_span = replay.open(spans, "model", model, parent, time, attributes)


def _on_model_fallback(replay: _Replay, spans: _Spans, time: float, event: bandoneon.ModelFallback) -> None:
    """The failing model's span ends with its error; the next request opens the fallback's."""
    if spans.model_span is None:
        return
    spans.model_span.attributes["bandoneon.fallback_to"] = event.to_model
    _close(spans.model_span, time, event.error)
    spans.run_span.add_event("model_fallback", time, {"bandoneon.from_model": event.from_model, "bandoneon.to_model": event.to_model})


def _on_provider_retry(replay: _Replay, spans: _Spans, time: float, event: bandoneon.ProviderRetry) -> None:
    draft = spans.model_span
    if draft is None:
        return
    draft.attributes["bandoneon.retries"] = event.attempt
    draft.add_event("retry", time, {"bandoneon.attempt": event.attempt, "bandoneon.delay": event.delay, "error.message": event.error})


def _on_assistant_message(replay: _Replay, spans: _Spans, time: float, event: bandoneon.AssistantMessage) -> None:
    draft = spans.model_span
    if draft is None:
        return
    spans.response_model = event.model
    _replied(replay, draft, time, event.message, event.finish_reason, event.model)


def _on_side_call_end(replay: _Replay, spans: _Spans, time: float, event: bandoneon.SideCallEnd) -> None:
    """A side call's span ends with its reply (its own usage and cost) or its error; the turn's
    model span is the current one again."""
    draft = spans.model_span
    if draft is None or draft.end is not None:
        return
    if event.message is None:
        _close(draft, time, event.error or "the call failed")
    else:
        draft.usage = (event.usage, replay.cost(event.usage, draft.attributes["gen_ai.request.model"], answered_by=event.model))
        _replied(replay, draft, time, event.message, event.finish_reason, event.model)
    spans.model_span, spans.turn_model_span = spans.turn_model_span, None


def _replied(replay: _Replay, draft: Draft, time: float, message: bandoneon.Message, finish_reason: str | None, model: str | None) -> None:
    """What a model call answered, on its span, which ends there."""
    attributes = draft.attributes
    attributes["gen_ai.response.model"] = model
    attributes["gen_ai.response.finish_reasons"] = [finish_reason]
    if message.tool_calls:
        attributes["bandoneon.tool_calls"] = [call.name for call in message.tool_calls]
    if message.content:
        attributes["bandoneon.output"] = replay.content(message.content)
    # The model's reasoning (OpenAI-compatible reasoning fields, <think>, Anthropic
    # thinking); redacted blocks are opaque and are not shown.
    if message.thinking and (thinking := _thinking_text(message)):
        attributes["bandoneon.thinking"] = replay.content(thinking)
    _close(draft, time, f"the reply was cut off (finish_reason={finish_reason})" if finish_reason == "length" else None)


def _on_tool_start(replay: _Replay, spans: _Spans, time: float, event: bandoneon.ToolStart) -> None:
    replay.tools_by_start[id(event)] = replay.tool_span(spans, event.call, time)


def _on_tool_refused(replay: _Replay, spans: _Spans, time: float, event: bandoneon.ToolRefused) -> None:
    draft = replay.tool_span(spans, event.call, time)
    draft.attributes["bandoneon.tool.refused"] = True
    _close(draft, time, f"refused: {event.reason}")


def _on_tool_answered(replay: _Replay, spans: _Spans, time: float, event: bandoneon.ToolAnswered) -> None:
    """A call that never ran (unknown tool, broken arguments, a hook's answer): an instant span."""
    if event.call.id in spans.tools:
        return
    draft = replay.tool_span(spans, event.call, time)
    _close(draft, time, event.output[:500] if event.is_error else None)


def _on_tool_end(replay: _Replay, spans: _Spans, time: float, event: bandoneon.ToolEnd) -> None:
    draft = spans.tools.get(event.call.id)
    if draft is None or draft.end is not None:
        return
    draft.attributes["bandoneon.tool.output"] = replay.content(event.output)
    _close(draft, time, (event.output[:500] or "the tool failed") if event.is_error else None)


def _on_compaction(replay: _Replay, spans: _Spans, time: float, event: bandoneon.CompactionDone) -> None:
    target = spans.turn_span or spans.run_span
    target.add_event("compaction", time, {"bandoneon.tokens_before": event.tokens_before, "bandoneon.tokens_after": event.tokens_after})


def _on_turn_end(replay: _Replay, spans: _Spans, time: float, facts: tuple[bandoneon.TurnEnd, Names]) -> None:
    event, names = facts
    usage = (event.usage, replay.cost(event.usage, _model(spans.run, names), answered_by=spans.response_model))
    if spans.model_span is not None:
        spans.model_span.usage = usage
    if spans.turn_span is not None:
        spans.turn_span.usage = usage
        _close(spans.turn_span, time)


def _on_run_end(replay: _Replay, spans: _Spans, time: float, facts: tuple[bandoneon.RunEnd, Names, list[Any] | None]) -> None:
    event, names, hook_calls = facts
    cut_short = [draft for draft in (*spans.tools.values(), spans.model_span, spans.turn_span) if draft is not None and draft.end is None]
    if cut_short:
        error = event.error or f"the run ended first ({event.reason})"
        for draft in cut_short:
            _close(draft, time, error)
    if hook_calls is not None:
        _add_hook_calls(spans, hook_calls)
    draft = spans.run_span
    draft.usage = (event.usage, replay.cost(event.usage, _model(spans.run, names)))
    draft.attributes["bandoneon.stop_reason"] = event.reason
    draft.attributes["bandoneon.turns"] = event.turns
    _close(draft, time, event.error)


def _add_hook_calls(spans: _Spans, calls: list[Any]) -> None:
    """Each plugin hook call of the run as a ``hook`` event on its turn's span (events, not
    spans: a run makes dozens of hook calls, each a few microseconds), and each plugin's
    total as ``bandoneon.hook_ms.<plugin>`` on the run span."""
    totals: dict[str, float] = {}
    for call in calls:
        attributes: dict[str, Any] = {"bandoneon.plugin": call.plugin, "bandoneon.hook": call.hook, "bandoneon.duration_ms": round(call.duration * 1000, 4)}
        if call.failed:
            attributes["error"] = True
        spans.turn_spans.get(call.turn, spans.run_span).add_event("hook", call.started, attributes)
        totals[call.plugin] = totals.get(call.plugin, 0.0) + call.duration
    for plugin, total in totals.items():
        spans.run_span.attributes[f"bandoneon.hook_ms.{plugin}"] = round(total * 1000, 4)


#: The handlers by event name: the events a trace records.
HANDLERS: dict[str, Handler] = {name.removeprefix("_on_"): handler for name, handler in list(globals().items()) if name.startswith("_on_")}


def _thinking_text(message: bandoneon.Message) -> str:
    return "\n\n".join(block.text for block in message.thinking if not block.is_redacted and block.text)
