"""The ``tracing`` plugin: a trace per run, exported where you said, nowhere else."""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import attrs

import bandoneon

from .builder import SpanBuilder, record
from .exporters import DEFAULT_KEEP, DEFAULT_MAX_BYTES, KEEP, MAX_BYTES, InMemoryExporter, JsonlExporter
from .pricing import PriceTable
from .recording import Trace
from .redaction import Redactor
from .spans import Span

__all__ = ["Tracing"]

log = logging.getLogger("bandoneon.tracing")


@attrs.define
class Tracing(bandoneon.Plugin):
    """Record every run as a tree of spans; keep the last traces in memory (``tracing.memory``)
    and export them to ``jsonl``, to ``exporters`` and, when the ``OTEL_*`` variables ask for
    it, to OpenTelemetry."""

    name: ClassVar[str] = "tracing"
    #: The subagents plugin gives a child the parent's instance, so the child's spans join the
    #: parent's trace (the state is per run, so sharing is safe).

    jsonl: str | None = None
    #: The JSONL file is rotated before a batch would take it past this size (0: never) ...
    jsonl_max_bytes: int = attrs.field(default=DEFAULT_MAX_BYTES, validator=MAX_BYTES)
    #: ... and this many rotated files are kept (``jsonl.1`` the newest).
    jsonl_keep: int = attrs.field(default=DEFAULT_KEEP, validator=KEEP)
    otel: bool | None = None
    redact: list[str] = attrs.field(factory=list)
    prices: dict[str, dict[str, float]] = attrs.field(factory=dict)
    capture_content: bool = True
    keep_traces: int = attrs.field(default=100, validator=bandoneon.in_range(at_least=0, integer=True))
    exporters: list[Any] = attrs.field(factory=list)
    #: Time each plugin's hook calls (``agent.profile_hooks``) and put them on the spans as
    #: ``hook`` events. Off by default: timing every hook call is a cost of its own.
    hook_timing: bool = False

    # State, not options: set without the options' checks (on_setattr), once per new agent.
    memory: InMemoryExporter = attrs.field(init=False, on_setattr=attrs.setters.NO_OP)
    _builder: SpanBuilder = attrs.field(init=False, on_setattr=attrs.setters.NO_OP)
    _sinks: list[Any] = attrs.field(init=False, on_setattr=attrs.setters.NO_OP)

    def __attrs_post_init__(self) -> None:
        for exporter in self.exporters:
            if not callable(getattr(exporter, "export", None)):
                raise bandoneon.ConfigError(f"tracing: exporter {exporter!r} has no export(spans) method")
        self.memory = InMemoryExporter(max(self.keep_traces, 1))
        self._sinks = [*self.exporters]
        if self.keep_traces:
            self._sinks.insert(0, self.memory)
        if self.jsonl:
            self._sinks.append(JsonlExporter(self.jsonl, max_bytes=self.jsonl_max_bytes, keep=self.jsonl_keep))
        if self.otel is not False:
            from .otel import OtelExporter, otel_configured

            if self.otel or otel_configured():
                exporter = OtelExporter.from_env()
                if exporter is None:
                    raise bandoneon.ConfigError("tracing: otel=true but no OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_TRACES_EXPORTER is set (or OTEL_SDK_DISABLED=true)")
                self._sinks.append(exporter)
        self._builder = SpanBuilder(
            export=self._export,
            prices=PriceTable(self.prices),
            rules=Redactor(self.redact),
            capture_content=self.capture_content,
            hook_timing=self.hook_timing,
        )

    @property
    def traces(self) -> list[list[Span]]:
        """The last traces kept in memory, oldest first."""
        return self.memory.traces

    def flush(self) -> None:
        """Write what the exporters still queue (the JSONL file's batch) now. Called when an
        agent closes; at interpreter exit the writer does it anyway."""
        for sink in self._sinks:
            flush = getattr(sink, "flush", None)
            if flush is None:
                continue
            try:
                flush()
            except Exception as exc:  # as in _export: never break the agent
                log.warning("tracing: exporter %r failed to flush: %s: %s", sink, type(exc).__name__, exc)

    def _export(self, spans: Trace) -> None:
        for sink in self._sinks:
            try:
                sink.export(spans)
            except Exception as exc:  # a broken trace store must never break the agent
                log.warning("tracing: exporter %r failed, trace %s dropped there: %s: %s", sink, spans[0].trace_id if spans else "?", type(exc).__name__, exc)

    # ---------------------------------------------------------------- hooks

    @bandoneon.hookimpl(optionalhook=True)  # bandoneon-subagents' hook; it may not be installed
    def inherited_by_subagents(self) -> object:
        """Subagents get this very instance (the same rules, one trace)."""
        return self

    #: Each event of a run recorded for its trace (``builder.record``: a function of the plugin,
    #: so each event costs one call, not two).
    on_event = bandoneon.hookimpl(record)

    @bandoneon.hookimpl
    def agent_created(self, agent: bandoneon.Agent) -> None:
        if self.hook_timing:
            agent.profile_hooks(keep_calls=True)

    @bandoneon.hookimpl
    def agent_closed(self, agent: bandoneon.Agent) -> None:
        self.flush()

    @staticmethod
    @bandoneon.hookimpl
    def register_commands(subparsers: Any) -> None:
        from .show import register

        register(subparsers)
