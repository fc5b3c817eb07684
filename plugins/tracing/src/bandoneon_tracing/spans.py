"""Spans: one piece of work in a run, with its times, status and attributes.

Spans are plain mutable records while the run is going (a model call learns its token
counts only at ``turn_end``, after it ended) and are handed to exporters once the root run
is over, so every exporter sees finished spans. Their JSON form is the JSONL file format
that ``bandoneon trace show`` reads back.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any, Literal, cast

import attrs

__all__ = ["Span", "SpanEvent", "new_id"]

Kind = Literal["run", "turn", "model", "tool"]


def new_id(size: int = 8) -> str:
    """A random hex id: 8 bytes for spans, 16 for traces (the OpenTelemetry sizes).

    Ids need to be unique, not secret (OpenTelemetry's own SDK draws them the same way), so the
    random module's generator serves; ``os.urandom`` cost a system call per span. Its shared
    generator, not one of our own: that one is reseeded in a forked child, so worker processes
    forked from one parent do not draw the same ids.
    """
    return f"{random.getrandbits(size * 8):0{size * 2}x}"


@attrs.define
class SpanEvent:
    """Something that happened at an instant inside a span (a retry, a refusal)."""

    name: str
    time: float
    attributes: dict[str, Any] = attrs.field(factory=dict)


@attrs.define
class Span:
    """One span. Times are seconds since the epoch; ``end`` is None while it is open."""

    name: str
    kind: Kind
    trace_id: str
    span_id: str
    parent_id: str | None
    start: float
    end: float | None = None
    status: Literal["ok", "error"] = "ok"
    error: str | None = None
    attributes: dict[str, Any] = attrs.field(factory=dict)
    events: list[SpanEvent] = attrs.field(factory=list)

    @property
    def duration(self) -> float:
        return (self.end if self.end is not None else self.start) - self.start

    def fail(self, message: str) -> None:
        self.status = "error"
        self.error = message

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "parent_id": self.parent_id,
            "start": self.start,
            "end": self.end,
            "duration": self.duration,
            "status": self.status,
            "error": self.error,
            "attributes": self.attributes,
            "events": [{"name": e.name, "time": e.time, "attributes": e.attributes} for e in self.events],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Span:
        """A span from its JSON form. A trace file may come from someone else or be damaged,
        so every field is checked here, where ``read_jsonl`` can name the line: ``KeyError``,
        ``TypeError`` or ``ValueError`` when a field is missing or wrong."""
        return cls(
            name=str(data["name"]),
            kind=cast(Kind, _string(data["kind"], "kind")),  # another kind is kept: it is drawn grey
            trace_id=str(data["trace_id"]),
            span_id=str(data["span_id"]),
            parent_id=_optional_string(data.get("parent_id"), "parent_id"),
            start=_finite(data["start"], "start"),
            end=None if data.get("end") is None else _finite(data["end"], "end"),
            status=_status(data.get("status", "ok")),
            error=_optional_string(data.get("error"), "error"),
            attributes=_mapping(data.get("attributes"), "attributes"),
            events=[SpanEvent(str(e["name"]), _finite(e["time"], "event time"), _mapping(e.get("attributes"), "event attributes")) for e in data.get("events") or ()],
        )


def _string(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a string, not {type(value).__name__}")
    return value


def _optional_string(value: Any, field: str) -> str | None:
    return None if value is None else _string(value, field)


def _finite(value: Any, field: str) -> float:
    """A time as a float; NaN and infinities are refused, as they would poison every offset
    and bar of the trace (JSON numbers too big for a float become infinities or overflow)."""
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ValueError(f"{field} is not a finite number")
    return number


def _status(value: Any) -> Literal["ok", "error"]:
    if value not in ("ok", "error"):
        raise ValueError("status is neither 'ok' nor 'error'")
    return value


def _mapping(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{field} must be an object, not {type(value).__name__}")
    return dict(value)
