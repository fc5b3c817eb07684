"""The JSONL file rotates by size: whole traces in every file, the newest in ``path``, at most
``jsonl_keep`` older files, and options out of range refused with a clear error."""

import json
import os

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_tracing import JsonlExporter, Span, Tracing, read_jsonl


@bandoneon.tool
def putt(meters: int) -> str:
    """Putt.

    Args:
        meters: how far
    """
    return f"{meters} m, in the hole"


def play(tracing: Tracing, holes: int) -> None:
    """``holes`` runs of 6 spans each (run, 2 turns, 2 model calls, a tool call), each its own trace."""
    steps = [step for _ in range(holes) for step in (call("putt", meters=3), "In.")]
    agent = bandoneon.Agent(ScriptedModel(*steps), tools=[putt], plugins=[tracing], context_files=False)
    for hole in range(holes):
        agent.run_sync(f"Hole {hole}")
        tracing.flush()  # one batch per trace, so the file can rotate between traces


def files_of(path):
    """The current file and the rotated ones, newest first, as they are on disk."""
    rotated = sorted((p for p in path.parent.iterdir() if p.name.startswith(path.name + ".")), key=lambda p: int(p.suffix[1:]))
    return [path, *rotated] if path.exists() else rotated


def trace_ids(path):
    return [span.trace_id for span in read_jsonl(path)]


@pytest.fixture
def no_otel(monkeypatch):
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER"):
        monkeypatch.delenv(name, raising=False)


def test_a_file_past_max_bytes_rotates_and_no_trace_is_split_or_lost(tmp_path, no_otel):
    path = tmp_path / "golf.jsonl"
    play(Tracing(jsonl=str(path), jsonl_max_bytes=1), 1)
    one_trace = path.stat().st_size
    path.unlink()
    # room for two traces a file: 7 traces make 4 files, the newest holding the last trace
    tracing = Tracing(jsonl=str(path), jsonl_max_bytes=2 * one_trace + one_trace // 2, jsonl_keep=10)
    play(tracing, 7)
    files = files_of(path)
    assert [f.name for f in files] == ["golf.jsonl", "golf.jsonl.1", "golf.jsonl.2", "golf.jsonl.3"]
    assert all(f.stat().st_size <= tracing.jsonl_max_bytes for f in files)
    per_file = [trace_ids(f) for f in files]
    assert [len(set(ids)) for ids in per_file] == [1, 2, 2, 2]
    assert all(len(ids) == 6 * len(set(ids)) for ids in per_file)  # every trace whole in one file
    # oldest first across the files: the memory's order, each trace once
    written = [trace_id for ids in reversed(per_file) for trace_id in dict.fromkeys(ids)]
    assert written == [trace[0].trace_id for trace in tracing.traces]


def test_only_keep_rotated_files_are_kept(tmp_path, no_otel):
    path = tmp_path / "golf.jsonl"
    tracing = Tracing(jsonl=str(path), jsonl_max_bytes=1, jsonl_keep=2)  # every trace starts a file
    play(tracing, 5)
    assert [f.name for f in files_of(path)] == ["golf.jsonl", "golf.jsonl.1", "golf.jsonl.2"]
    newest_three = [trace[0].trace_id for trace in tracing.traces[-3:]]
    assert [trace_ids(f)[0] for f in reversed(files_of(path))] == newest_three


def test_a_batch_larger_than_max_bytes_is_written_whole_to_a_file_of_its_own(tmp_path):
    path = tmp_path / "big.jsonl"
    exporter = JsonlExporter(path, max_bytes=1000, keep=3)
    trace = [Span("s", "tool", "a" * 32, f"{i:016x}", None, 0.0, 1.0, attributes={"pad": "x" * 600}) for i in range(3)]
    exporter.export(trace)
    exporter.export(trace)
    exporter.flush()  # one batch of 2 traces, over 3 kB
    assert files_of(path) == [path]
    assert len(path.read_text().splitlines()) == 6
    exporter.export(trace[:1])
    exporter.flush()
    assert [len(read_jsonl(f)) for f in files_of(path)] == [1, 6]


def test_max_bytes_0_never_rotates(tmp_path, no_otel):
    path = tmp_path / "golf.jsonl"
    play(Tracing(jsonl=str(path), jsonl_max_bytes=0), 3)
    assert files_of(path) == [path]
    assert len(set(trace_ids(path))) == 3


def test_the_default_rotates_at_64_mib_keeping_5_files(tmp_path):
    tracing = Tracing(jsonl=str(tmp_path / "t.jsonl"))
    assert (tracing.jsonl_max_bytes, tracing.jsonl_keep) == (64 * 1024 * 1024, 5)


def test_a_file_rotated_by_another_writer_meanwhile_is_not_written_to(tmp_path):
    """Another process rotated the file while this one waited for its lock: the lines go to the
    new file at the path, not to the rotated one."""
    path = tmp_path / "shared.jsonl"
    first, second = JsonlExporter(path, max_bytes=1, keep=3), JsonlExporter(path, max_bytes=0)
    span = Span("s", "run", "b" * 32, "c" * 16, None, 0.0, 1.0)
    first.export([span])
    first.flush()
    os.replace(path, f"{path}.1")  # as the other process's rotation leaves it
    second.export([span])
    second.flush()
    assert [len(read_jsonl(f)) for f in files_of(path)] == [1, 1]


def test_a_rotation_that_fails_appends_to_the_file_rather_than_losing_the_batch(tmp_path, caplog):
    path = tmp_path / "golf.jsonl"
    (tmp_path / "golf.jsonl.1").mkdir()  # path cannot be renamed over a folder
    (tmp_path / "golf.jsonl.1" / "x").write_text("")
    exporter = JsonlExporter(path, max_bytes=1, keep=1)
    span = Span("s", "run", "d" * 32, "e" * 16, None, 0.0, 1.0)
    for _ in range(2):
        exporter.export([span])
        exporter.flush()
    assert len(read_jsonl(path)) == 2
    assert "could not rotate" in caplog.text


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"jsonl_max_bytes": -1}, "tracing: jsonl_max_bytes must be a whole number of at least 0 bytes, got -1"),
        ({"jsonl_max_bytes": 1.5}, "jsonl_max_bytes must be a whole number"),
        ({"jsonl_max_bytes": "64MB"}, "jsonl_max_bytes must be a whole number"),
        ({"jsonl_keep": 0}, "tracing: jsonl_keep must be a whole number of at least 1, got 0"),
        ({"jsonl_keep": True}, "jsonl_keep must be a whole number"),
    ],
)
def test_rotation_options_out_of_range_are_a_clear_error(tmp_path, options, message):
    with pytest.raises(bandoneon.ConfigError, match=message.replace(".", r"\.")):
        Tracing(jsonl=str(tmp_path / "t.jsonl"), **options)
    # from a configuration file's options: the plugin and the option are named
    (option,) = options
    with pytest.raises(bandoneon.ConfigError, match=f"plugin 'tracing': .*{option}'? must be"):
        bandoneon.build_plugin(bandoneon.load_plugin("tracing"), {"jsonl": str(tmp_path / "t.jsonl"), **options})


def test_the_exporter_refuses_bad_rotation_options_too(tmp_path):
    with pytest.raises(bandoneon.ConfigError, match="keep must be a whole number of at least 1, got 0"):
        JsonlExporter(tmp_path / "t.jsonl", keep=0)
    with pytest.raises(bandoneon.ConfigError, match="max_bytes must be a whole number of at least 0 bytes, got -5"):
        JsonlExporter(tmp_path / "t.jsonl", max_bytes=-5)


def test_rotated_files_hold_whole_json_lines(tmp_path, no_otel):
    path = tmp_path / "golf.jsonl"
    play(Tracing(jsonl=str(path), jsonl_max_bytes=4000, jsonl_keep=20), 6)
    for f in files_of(path):
        raw = f.read_bytes()
        assert raw.endswith(b"\n")
        assert all(json.loads(line)["trace_id"] for line in raw.splitlines())
