"""bandoneon-tracing: a trace per run (level 11 of the Agent Harness Patterns track)."""

from __future__ import annotations

from .exporters import Exporter, InMemoryExporter, JsonlExporter, TraceFileError, read_jsonl
from .plugin import Tracing
from .pricing import Price, PriceTable, cost_of
from .recording import Trace
from .redaction import Redactor
from .show import render_html, render_text
from .spans import Span, SpanEvent
from .writer import flush_all as flush

__all__ = [
    "Exporter",
    "InMemoryExporter",
    "JsonlExporter",
    "Price",
    "PriceTable",
    "Redactor",
    "Span",
    "SpanEvent",
    "Trace",
    "TraceFileError",
    "Tracing",
    "cost_of",
    "flush",
    "read_jsonl",
    "render_html",
    "render_text",
]
