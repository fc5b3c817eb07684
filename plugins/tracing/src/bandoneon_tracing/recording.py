"""Spans while a trace is drafted, and the finished trace built from them when first read.

Recording is on the agent's path, so it keeps the run's events only (``builder``). A finished
``Trace`` drafts its spans from them (``drafting``: raw attributes, no ids, no redaction, no
dropping of unset attributes) and turns the drafts into ``Span``s once, when an exporter or a
reader first looks at it (the JSONL writer on its own thread, the memory on
``tracing.traces``): ids are drawn and every attribute, event and error is cleaned and
redacted there, and the events and drafts are dropped. So what anyone reads is redacted, and
a run whose trace nobody reads never pays for building it. (When an agent's own rules redact
a trace, its drafts are made and redacted when the root run ends, and forget those rules:
drafts must not keep agents alive. The spans are still built when first read.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

import bandoneon

from .redaction import Redactor
from .spans import Kind, Span, SpanEvent, new_id

__all__ = ["NO_RULES", "Draft", "Trace", "redact_drafts"]


#: Per kind of span: the operation its name starts with (the rest is its subject: the agent,
#: the turn, the model, the tool) and the attributes every span of that kind carries.
_KINDS: dict[str, tuple[str, dict[str, Any]]] = {
    "run": ("invoke_agent", {"gen_ai.operation.name": "invoke_agent"}),
    "turn": ("turn", {}),
    "model": ("chat", {"gen_ai.operation.name": "chat", "bandoneon.retries": 0}),
    "tool": ("execute_tool", {"gen_ai.operation.name": "execute_tool"}),
}

#: Building a trace is rare and short: one lock for all of them costs less than one each.
_BUILDING = threading.Lock()

#: No rules: what a draft redacted in advance (``Draft.redact_now``) is built with.
NO_RULES = Redactor()


class Draft:
    """A span being recorded: raw attributes (None values included), raw error text, and the
    redaction rules of the run it belongs to (a subagent's agent may have its own guard)."""

    __slots__ = ("attributes", "end", "error", "events", "kind", "parent", "redactor", "span_id", "start", "subject", "usage")

    def __init__(self, kind: Kind, subject: object, parent: Draft | None, start: float, attributes: dict[str, Any], redactor: Redactor):
        self.kind = kind
        self.subject = subject
        self.parent = parent
        self.start = start
        self.attributes = attributes
        self.redactor = redactor
        self.end: float | None = None
        self.error: str | None = None
        #: None until the first event: most spans have none, and a list each is a cost per span.
        self.events: list[SpanEvent] | None = None
        #: The tokens and their cost, turned into ``gen_ai.usage.*`` attributes when built.
        self.usage: tuple[bandoneon.Usage, float | None] | None = None
        self.span_id = ""

    def add_event(self, name: str, time: float, attributes: dict[str, Any]) -> None:
        """Something that happened at ``time`` inside the span (a retry, a compaction)."""
        if self.events is None:
            self.events = []
        self.events.append(SpanEvent(name, time, attributes))

    def redact_now(self, redactor: Redactor) -> None:
        """Apply ``redactor`` (this draft's rules) to what the draft holds, and forget the rules:
        an agent's own rules hold the agent, and a kept draft must not."""
        self.attributes = _clean(redactor, self.attributes)
        if self.error is not None:
            self.error = redactor.text(self.error)
        if self.events:
            self.events = [SpanEvent(event.name, event.time, _clean(redactor, event.attributes)) for event in self.events]
        self.redactor = NO_RULES

    def to_span(self, trace_id: str, redactor: Redactor | None = None) -> Span:
        """The finished span, redacted by ``redactor`` (default: the draft's own rules)."""
        redactor = redactor or self.redactor
        operation, defaults = _KINDS[self.kind]
        attributes = _clean(redactor, self.attributes)
        if self.usage is not None:
            _add_usage(attributes, *self.usage)
        if defaults:  # the kind's own constants are tracing's words, not data: not redacted
            attributes = {**defaults, **attributes}
        return Span(
            operation if self.subject is None or self.subject == "" else f"{operation} {self.subject}",
            self.kind,
            trace_id,
            self.span_id,
            self.parent.span_id if self.parent is not None else None,
            self.start,
            self.end,
            "ok" if self.error is None else "error",
            None if self.error is None else redactor.text(self.error),
            attributes,
            [SpanEvent(event.name, event.time, _clean(redactor, event.attributes)) for event in self.events] if self.events else [],
        )


class Trace(Sequence[Span]):
    """A finished trace: a read-only sequence of spans, built on first read from ``drafts``
    (or from what ``drafts()`` returns then), once, under a lock: the JSONL writer thread and
    a reader may both ask."""

    __slots__ = ("_drafts", "_spans")

    def __init__(self, drafts: list[Draft] | Callable[[], list[Draft]]):
        self._drafts: list[Draft] | Callable[[], list[Draft]] | None = drafts
        self._spans: list[Span] | None = None

    def build(self) -> list[Span]:
        """The spans, built on the first call (by whoever reads first)."""
        spans = self._spans
        if spans is None:
            with _BUILDING:
                if self._spans is None:
                    drafts = self._drafts
                    assert drafts is not None
                    self._spans = _build(drafts if isinstance(drafts, list) else drafts())
                    self._drafts = None
                spans = self._spans
        return spans

    @overload
    def __getitem__(self, index: int) -> Span: ...
    @overload
    def __getitem__(self, index: slice) -> list[Span]: ...
    def __getitem__(self, index: int | slice) -> Span | list[Span]:
        return self.build()[index]

    def __len__(self) -> int:
        return len(self.build())

    def __iter__(self) -> Iterator[Span]:
        return iter(self.build())

    def __repr__(self) -> str:
        return f"Trace({self.build()!r})"


def _build(drafts: list[Draft]) -> list[Span]:
    # The trace's id and its spans' in one draw (16 hex digits a span, 32 for the trace).
    ids = new_id(16 + 8 * len(drafts))
    trace_id = ids[:32]
    for start, draft in enumerate(drafts, 2):
        draft.span_id = ids[16 * start : 16 * start + 16]
    spans = []
    for draft, redactor in _remembering(drafts):
        spans.append(draft.to_span(trace_id, redactor))
    return spans


def redact_drafts(drafts: list[Draft]) -> None:
    """Redact ``drafts`` now, each by its run's rules, and let them forget the rules (see
    ``Draft.redact_now``); their spans are built later, when first read, as any trace's."""
    for draft, redactor in _remembering(drafts):
        draft.redact_now(redactor)


def _remembering(drafts: list[Draft]) -> Iterator[tuple[Draft, Redactor]]:
    """Each draft with its rules, remembering each string's result for this trace: one
    remembering redactor per set of rules (a subagent's agent may have its own guard)."""
    redactors: dict[int, Redactor] = {}
    for draft in drafts:
        redactor = redactors.get(id(draft.redactor))
        if redactor is None:
            redactor = redactors[id(draft.redactor)] = draft.redactor.for_one_trace()
        yield draft, redactor


def _add_usage(attributes: dict[str, Any], usage: bandoneon.Usage, cost: float | None) -> None:
    """The tokens (the cache's only when some) and the cost (when priced), as attributes."""
    attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
    attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
    if usage.cached_input_tokens:
        attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cached_input_tokens
    if usage.cache_write_tokens:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
    if cost is not None:
        attributes["bandoneon.cost"] = cost


def _clean(redactor: Redactor, attributes: dict[str, Any]) -> dict[str, Any]:
    """Drop unset attributes and redact the rest with the run's rules."""
    if redactor.is_noop:
        return {key: value for key, value in attributes.items() if value is not None}
    return {key: redactor.value(value) for key, value in attributes.items() if value is not None}
