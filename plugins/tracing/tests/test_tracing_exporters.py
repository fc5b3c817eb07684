"""Exporters: JSONL file, OpenTelemetry (SDK in-memory exporter), OTLP endpoint down, opt-in only."""

import asyncio
import json
import logging
import socket
import subprocess
import sys
import threading

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call, reply
from bandoneon_tracing import JsonlExporter, Span, Tracing, flush, read_jsonl
from bandoneon_tracing.otel import OtelExporter, otel_configured
from bandoneon_tracing.writer import schedule


@bandoneon.tool
def iron(meters: int) -> str:
    """Hit an iron.

    Args:
        meters: how far
    """
    return f"{meters} m, on the green"


OTEL_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED")


@pytest.fixture
def no_otel_env(monkeypatch):
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def golf_agent(tracing, *replies):
    return bandoneon.Agent(ScriptedModel(*(replies or (call("iron", meters=150), "Holed out in 2"))), tools=[iron], plugins=[tracing], context_files=False)


def test_the_jsonl_file_holds_one_span_per_line_and_reads_back(tmp_path, no_otel_env):
    path = tmp_path / "traces" / "golf.jsonl"
    tracing = Tracing(jsonl=str(path))
    golf_agent(tracing).run_sync("Hole 1")
    tracing.flush()  # the file is written from a thread, in batches; flush() writes it now
    lines = path.read_text().splitlines()
    assert len(lines) == 6
    spans = read_jsonl(path)
    assert [s.kind for s in spans].count("tool") == 1
    assert all(json.loads(line)["trace_id"] == spans[0].trace_id for line in lines)


def test_the_jsonl_file_and_the_memory_hold_the_same_redacted_spans(tmp_path, no_otel_env):
    """The writer thread and a reader may build a trace at once: it is built once, redacted."""
    path = tmp_path / "golf.jsonl"
    tracing = Tracing(jsonl=str(path), redact=["Astor"])
    golf_agent(tracing).run_sync("Astor plays hole 1")
    in_memory = tracing.memory.last
    tracing.flush()
    written = read_jsonl(path)
    assert [(s.span_id, s.attributes) for s in written] == [(s.span_id, s.attributes) for s in in_memory]
    assert "Astor" not in path.read_text()


def test_concurrent_jsonl_writers_never_interleave_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    exporter = JsonlExporter(path)
    big = "x" * 20_000
    traces = [[Span("s", "tool", f"{n:032x}", f"{i:016x}", None, 0.0, 1.0, attributes={"pad": big}) for i in range(20)] for n in range(8)]
    threads = [threading.Thread(target=exporter.export, args=(trace,)) for trace in traces]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    spans = read_jsonl(path)
    assert len(spans) == 160
    order = [s.trace_id for s in spans]
    # each trace's 20 lines are contiguous
    assert all(len(set(order[i : i + 20])) == 1 for i in range(0, 160, 20))


def test_a_broken_trace_file_line_is_named(tmp_path):
    path = tmp_path / "bad.jsonl"
    good = json.dumps(Span("run", "run", "a" * 32, "b" * 16, None, 1.0, 2.0).to_json())
    path.write_text(good + "\n{not json\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not JSON"):
        read_jsonl(path)
    path.write_text(good + '\n{"name": "x"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not a span"):
        read_jsonl(path)


def test_nothing_is_exported_unless_configured(no_otel_env):
    assert not otel_configured()
    tracing = Tracing()
    assert [type(s).__name__ for s in tracing._sinks] == ["InMemoryExporter"]
    no_otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert otel_configured()
    no_otel_env.setenv("OTEL_SDK_DISABLED", "true")
    assert not otel_configured()
    assert [type(s).__name__ for s in Tracing()._sinks] == ["InMemoryExporter"]


def test_otel_true_without_configuration_is_a_clear_error(no_otel_env):
    with pytest.raises(bandoneon.ConfigError, match="OTEL_EXPORTER_OTLP_ENDPOINT"):
        Tracing(otel=True)


def test_spans_reach_the_opentelemetry_sdk_with_genai_attributes_and_parents(no_otel_env):
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
        InMemorySpanExporter,
    )

    memory = InMemorySpanExporter()
    usage = bandoneon.Usage(input_tokens=120, output_tokens=30, requests=1)
    tracing = Tracing(exporters=[OtelExporter(span_exporter=memory)])
    golf_agent(tracing, reply("", call("iron", meters=150), usage=usage), reply("Holed out in 2", usage=usage)).run_sync("Hole 1")
    spans = {s.name: s for s in memory.get_finished_spans()}
    run, tool = spans["invoke_agent agent"], spans["execute_tool iron"]
    chats = [s for s in memory.get_finished_spans() if s.name.startswith("chat")]
    assert len(memory.get_finished_spans()) == 6
    assert run.parent is None
    assert chats[0].attributes["gen_ai.operation.name"] == "chat"
    assert chats[0].attributes["gen_ai.request.model"] == "scripted"
    assert chats[0].attributes["gen_ai.usage.input_tokens"] == 120
    assert chats[0].attributes["gen_ai.usage.output_tokens"] == 30
    assert tool.attributes["gen_ai.tool.name"] == "iron"
    assert tool.parent.span_id == spans["turn 1"].context.span_id
    assert {s.context.trace_id for s in memory.get_finished_spans()} == {run.context.trace_id}
    assert run.attributes["gen_ai.usage.input_tokens"] == 240


def test_an_error_span_has_error_status_in_opentelemetry(no_otel_env):
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
        InMemorySpanExporter,
    )
    from opentelemetry.trace import StatusCode

    @bandoneon.tool
    def drive(meters: int) -> str:
        """Drive.

        Args:
            meters: how far
        """
        raise bandoneon.ToolError("water hazard")

    memory = InMemorySpanExporter()
    tracing = Tracing(exporters=[OtelExporter(span_exporter=memory)])
    agent = bandoneon.Agent(ScriptedModel(call("drive", meters=200), "lost"), tools=[drive], plugins=[tracing], context_files=False)
    agent.run_sync("Hole 3")
    (tool,) = [s for s in memory.get_finished_spans() if s.name == "execute_tool drive"]
    assert tool.status.status_code is StatusCode.ERROR and "water" in tool.status.description
    assert tool.attributes["error.type"] == "tool_error"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_otlp_endpoint_that_is_down_drops_spans_with_a_warning_and_the_agent_is_unaffected(no_otel_env, caplog):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    no_otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    no_otel_env.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    tracing = Tracing()
    (otel,) = [s for s in tracing._sinks if isinstance(s, OtelExporter)]
    with caplog.at_level(logging.WARNING, logger="bandoneon.tracing"):
        result = golf_agent(tracing).run_sync("Hole 1")
        otel.force_flush(5_000)
        otel.shutdown()
    assert result.text == "Holed out in 2"
    assert "span(s) dropped" in caplog.text
    assert len(tracing.traces) == 1  # the local copy is still there


def test_closing_the_agent_writes_the_queued_traces(tmp_path, no_otel_env):
    path = tmp_path / "golf.jsonl"
    agent = golf_agent(Tracing(jsonl=str(path)), *[step for _ in range(3) for step in (call("iron", meters=150), "Holed out in 2")])

    async def play():
        for hole in range(3):
            await agent.run(f"Hole {hole}")
        await agent.aclose()

    asyncio.run(play())
    assert len(path.read_text().splitlines()) == 18


def test_a_process_that_exits_without_closing_loses_no_trace(tmp_path):
    path = tmp_path / "exit.jsonl"
    script = (
        "import bandoneon\n"
        "from bandoneon.testing import ScriptedModel\n"
        "from bandoneon_tracing import Tracing\n"
        f"agent = bandoneon.Agent(ScriptedModel('a', 'b'), plugins=[Tracing(jsonl={str(path)!r}, otel=False)], context_files=False)\n"
        "agent.run_sync('one')\n"
        "agent.run_sync('two')\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    spans = [json.loads(line) for line in path.read_text().splitlines()]
    assert [s["kind"] for s in spans].count("run") == 2


def test_flush_waits_for_a_batch_the_writer_thread_is_writing(tmp_path):
    """The CI failure behind this test: ``trace show`` read an empty file because the writer
    thread had taken the trace off the queue and not yet written it when ``read_jsonl`` flushed."""
    class SlowStore:
        def __init__(self):
            self.started, self.release, self.written = threading.Event(), threading.Event(), False

        def flush(self):
            self.started.set()
            self.release.wait(5)
            self.written = True

        def forget_pending(self):
            pass

    store = SlowStore()
    schedule(store)
    assert store.started.wait(5)  # the writer thread is inside the batch
    seen = []
    flusher = threading.Thread(target=lambda: (flush(), seen.append(store.written)))
    flusher.start()
    flusher.join(0.2)
    assert flusher.is_alive()  # still waiting for the batch in progress
    store.release.set()
    flusher.join(5)
    assert seen == [True]


def test_a_store_whose_flush_flushes_again_does_not_deadlock():
    class Reentrant:
        def __init__(self):
            self.flushed = 0

        def flush(self):
            self.flushed += 1
            flush()  # as a logging handler that exports might

        def forget_pending(self):
            pass

    store = Reentrant()
    schedule(store)
    flusher = threading.Thread(target=flush, daemon=True)
    flusher.start()
    flusher.join(5)
    assert not flusher.is_alive() and store.flushed == 1


def test_each_jsonl_line_is_the_spans_json_as_json_dumps_writes_it(tmp_path, no_otel_env):
    """The file format: one ``json.dumps(span.to_json(), ensure_ascii=False)`` a line, text
    beyond ASCII kept as it is, control characters and line separators escaped or kept as JSON says."""
    path = tmp_path / "golf.jsonl"
    tracing = Tracing(jsonl=str(path))
    golf_agent(tracing).run_sync("Trou n°1 à Évian \u2028 \t \"par 4\" 🏌")
    tracing.flush()
    expected = "".join(json.dumps(span.to_json(), ensure_ascii=False) + "\n" for span in tracing.memory.last)
    assert path.read_text(encoding="utf-8") == expected
    assert "Évian" in expected
