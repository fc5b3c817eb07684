"""The OpenTelemetry exporter (extra ``bandoneon-tracing[otel]``).

Finished bandoneon spans are replayed into a real OpenTelemetry ``TracerProvider`` with
their recorded start and end times, so any OTel backend shows the same tree. Attribute
names follow the GenAI semantic conventions where they exist (``gen_ai.operation.name``,
``gen_ai.request.model``, ``gen_ai.usage.input_tokens``, ``gen_ai.tool.name``...); the rest
are ``bandoneon.*``.

Nothing is sent anywhere unless configured: ``from_env()`` returns None unless one of
``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or
``OTEL_TRACES_EXPORTER`` (``otlp`` or ``console``) is set, and ``OTEL_SDK_DISABLED=true``
turns it off. OpenTelemetry's own default (send to localhost:4318) is deliberately not
followed. When the endpoint is down, the batch is dropped with one warning per failure on
the ``bandoneon.tracing`` logger; export happens on the SDK's background thread, so the
agent never waits for it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any, cast

import bandoneon

from .spans import Span

__all__ = ["OtelExporter", "otel_configured"]

log = logging.getLogger("bandoneon.tracing")


def otel_configured() -> bool:
    """True when the standard ``OTEL_*`` variables ask for trace export."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    chosen = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if chosen == "none":
        return False
    return bool(chosen or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def _sdk() -> Any:
    try:
        from opentelemetry.sdk import trace as sdk_trace
    except ImportError:
        raise bandoneon.ConfigError("OpenTelemetry export needs the SDK: pip install 'bandoneon-tracing[otel]'") from None
    return sdk_trace


class OtelExporter:
    """Replays bandoneon spans into an OpenTelemetry ``TracerProvider``.

    Pass ``span_exporter`` (e.g. the SDK's ``InMemorySpanExporter``) to export synchronously
    to it, or ``tracer_provider`` to use one you configured; with neither, use ``from_env``.
    """

    def __init__(self, *, span_exporter: Any = None, tracer_provider: Any = None, batch: bool = False):
        sdk_trace = _sdk()
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter

        if tracer_provider is None:
            tracer_provider = sdk_trace.TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "bandoneon")}))
            if span_exporter is not None:
                processor_class = BatchSpanProcessor if batch else SimpleSpanProcessor
                # _WarnOnFailure is a SpanExporter by shape (the SDK is imported lazily, so not by base class)
                tracer_provider.add_span_processor(processor_class(cast(SpanExporter, _WarnOnFailure(span_exporter))))
        self.provider = tracer_provider
        self._tracer = tracer_provider.get_tracer("bandoneon_tracing", bandoneon.__version__)

    @classmethod
    def from_env(cls) -> OtelExporter | None:
        """An exporter configured by the ``OTEL_*`` variables, or None when they ask for none."""
        if not otel_configured():
            return None
        _sdk()
        chosen = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() or "otlp"
        if chosen == "console":
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            return cls(span_exporter=ConsoleSpanExporter(), batch=True)
        if chosen != "otlp":
            raise bandoneon.ConfigError(f"OTEL_TRACES_EXPORTER={chosen!r} is not supported by bandoneon-tracing; use otlp, console or none")
        protocol = (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip()
        if protocol == "grpc":
            try:
                from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
            except ImportError:
                raise bandoneon.ConfigError("OTLP over gRPC needs opentelemetry-exporter-otlp-proto-grpc (or set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf)") from None
        else:
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # type: ignore[no-redef]
            except ImportError:
                raise bandoneon.ConfigError("OTLP export needs opentelemetry-exporter-otlp-proto-http: pip install 'bandoneon-tracing[otel]'") from None
        # The OTLP exporter reads its endpoint, headers and timeout from the same variables.
        return cls(span_exporter=OTLPSpanExporter(), batch=True)

    def export(self, spans: Sequence[Span]) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        live: dict[str, Any] = {}
        for span in sorted(spans, key=lambda s: s.start):
            parent = live.get(span.parent_id) if span.parent_id else None
            context = trace.set_span_in_context(parent) if parent is not None else None
            kind = trace.SpanKind.CLIENT if span.kind == "model" else trace.SpanKind.INTERNAL
            otel_span = self._tracer.start_span(
                span.name, context=context, kind=kind, start_time=_ns(span.start), attributes=_otel_attributes(span.attributes)
            )
            otel_span.set_attribute("bandoneon.span_kind", span.kind)
            for event in span.events:
                otel_span.add_event(event.name, _otel_attributes(event.attributes), timestamp=_ns(event.time))
            if span.status == "error":
                otel_span.set_attribute("error.type", _error_type(span))
                otel_span.set_status(Status(StatusCode.ERROR, span.error or ""))
            live[span.span_id] = otel_span
        for span in spans:
            live[span.span_id].end(end_time=_ns(span.end if span.end is not None else span.start))

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self.provider.force_flush(timeout_millis))

    def shutdown(self) -> None:
        self.provider.shutdown()


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


def _error_type(span: Span) -> str:
    if span.attributes.get("bandoneon.tool.refused"):
        return "refused"
    return "tool_error" if span.kind == "tool" else "error"


def _otel_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """OTel attributes are scalars or homogeneous lists of scalars; anything else becomes text."""
    clean: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        if isinstance(value, (str, bool, int, float)):
            clean[key] = value
        elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            clean[key] = list(value)
        else:
            clean[key] = str(value)
    return clean


class _WarnOnFailure:
    """Wraps an OTel span exporter: a failed export is dropped with a warning, never raised."""

    def __init__(self, inner: Any):
        self.inner = inner

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        try:
            result = self.inner.export(spans)
        except Exception as exc:
            log.warning("tracing: %d span(s) dropped: the OpenTelemetry exporter raised %s: %s", len(spans), type(exc).__name__, exc)
            return SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            endpoint = getattr(self.inner, "_endpoint", None) or "the exporter"
            log.warning("tracing: %d span(s) dropped: export to %s failed (is the collector running?)", len(spans), endpoint)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        flush = getattr(self.inner, "force_flush", None)
        return bool(flush(timeout_millis)) if flush is not None else True
