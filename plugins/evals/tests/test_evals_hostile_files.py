"""Hostile and unusual dataset / recording files: read back exactly, or refused with the file
and line named (a ``DatasetError``), never a crash in the middle of the loader.

JSON written with ``ensure_ascii=False`` (``add_case``, ``RecordingProvider``) keeps U+2028,
U+2029 and U+0085 raw inside strings: they are not line ends of a JSONL file.
"""

from __future__ import annotations

import json
import sys

import bandoneon
import pytest
from bandoneon.cli import main
from bandoneon.testing import ScriptedModel
from bandoneon_evals import Case, DatasetError, RecordingProvider, ReplayProvider, ReportError, add_case, load_dataset, load_report, replay_model
from hypothesis import given
from hypothesis import strategies as st

SEPARATORS = "one\u2028two\u2029three\x85four\x1cfive\x0bsix\x0cseven"


def test_a_case_with_unicode_line_separators_reads_back_after_add_case(tmp_path):
    path = tmp_path / "d.jsonl"
    add_case(Case("a", f"Say {SEPARATORS}"), path)
    add_case(Case("b", "the next one"), path)  # add_case reads the dataset back first
    assert [(c.id, c.input) for c in load_dataset(path)] == [("a", f"Say {SEPARATORS}"), ("b", "the next one")]


def test_a_recorded_reply_with_unicode_line_separators_replays(tmp_path):
    path = tmp_path / "rec.jsonl"
    bandoneon.Agent(RecordingProvider(ScriptedModel(f"Holed {SEPARATORS}"), path), plugins=[], context_files=False).run_sync("Hole 1")
    agent = bandoneon.Agent(ReplayProvider(path), plugins=[], context_files=False)
    assert agent.run_sync("Hole 1").text == f"Holed {SEPARATORS}"


@given(st.text(min_size=1), st.text())
def test_any_case_text_reads_back_as_written(tmp_path_factory, case_id, prompt):
    path = tmp_path_factory.mktemp("d") / "d.jsonl"
    add_case(Case(case_id, prompt, {"output": prompt}), path)
    [case] = load_dataset(path)
    assert (case.id, case.input, case.expected) == (case_id, prompt, {"output": prompt})


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "a", "input": "x", "tags": 5}', "d.jsonl:1: 'tags' must be a list of strings"),
        ('{"id": "a", "input": "x", "attachments": 5}', "d.jsonl:1: 'attachments' must be a list"),
        ('{"id": "a", "input": "x", "metadata": 5}', "d.jsonl:1: 'metadata' must be an object"),
        ('{"id": "a", "input": "x", "metadata": [["k", "v"]]}', "d.jsonl:1: 'metadata' must be an object"),
        ('{"id": "a", "input": "x", "tags": {"tag": 1}}', "d.jsonl:1: 'tags' must be a list of strings"),
        ('{"id": "a", "input": "x", "expected": ' + "[" * 100_000 + "]" * 100_000 + "}", "d.jsonl:1: not JSON"),
    ],
)
def test_a_hostile_case_is_refused_naming_its_line(tmp_path, line, message):
    path = tmp_path / "d.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(DatasetError, match=message):
        load_dataset(path)


def test_a_dataset_that_is_not_utf8_is_refused_naming_the_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"id": "a", "input": "x"}\n{"id": "b", "input": "\xff"}\n')
    with pytest.raises(DatasetError, match="d.jsonl:2: not UTF-8"):
        load_dataset(path)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


optional = ["expected", "tags", "metadata", "attachments", "other"]


@given(st.fixed_dictionaries({"id": json_values, "input": st.text(max_size=5)}, optional={key: json_values for key in optional}))
def test_any_json_case_loads_or_is_a_dataset_error(tmp_path_factory, case):
    path = tmp_path_factory.mktemp("d") / "d.jsonl"
    path.write_text(json.dumps(case) + "\n")
    try:
        [loaded] = load_dataset(path)
    except DatasetError as exc:
        assert "d.jsonl:1: " in str(exc)
        return
    assert loaded.input == case["input"] and all(isinstance(t, str) for t in loaded.tags)


FIRST_LINES = [
    b"",
    b'{"type": "session", "version": 1, "id": "s1", "created_at": 1.0}\n',
    b'{"type": "session", "version": 1, "id": "s1", "created_at": 1.0}\n{"type": "message", "message": {"role": "user", "content": "hi"}}\n',
    b'{"span_id": "a", "trace_id": "t", "kind": "run", "start": 1.0, "attributes": {"bandoneon.prompt": "hi"}}\n',
]


@given(first=st.sampled_from(FIRST_LINES), rest=st.binary(max_size=64), padding=st.integers(0, 9000))
def test_a_recorded_run_file_of_any_bytes_is_a_case_or_a_dataset_error(tmp_path_factory, first, rest, padding):
    """A trace or a saved session holding anything (bytes that are not UTF-8 anywhere in its
    first 8 KB, a cut record) is a case or a DatasetError, never a raw decoding error."""
    folder = tmp_path_factory.mktemp("r")
    source = folder / "s1.jsonl"
    source.write_bytes(first + b" " * padding + rest)
    try:
        add_case(source, folder / "d.jsonl")
    except DatasetError:
        assert not (folder / "d.jsonl").exists()


DEEP = "[" * 100_000 + "]" * 100_000
SPAN = json.dumps({"span_id": "a", "trace_id": "t", "kind": "run", "start": 1.0})
SESSION = json.dumps({"type": "session", "version": 1, "id": "s2", "created_at": 1.0})


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("trace.jsonl", DEEP, "trace.jsonl:1: not JSON"),
        ("trace.jsonl", f"{SPAN}\n{DEEP}", "trace.jsonl:2: not JSON"),
        ("s2.jsonl", f"{SESSION}\n{DEEP}", "s2.jsonl:2: not a session record"),
    ],
)
def test_a_recorded_run_nested_without_end_is_refused_naming_its_line(tmp_path, monkeypatch, name, text, message):
    """Not a RecursionError from the plain JSON decoder (on CPython 3.11 it leaves the
    interpreter's depth bookkeeping off for whatever runs next)."""
    monkeypatch.setitem(sys.modules, "bandoneon_sessions", None)  # the session read through its format
    (tmp_path / name).write_text(text + "\n")
    with pytest.raises(DatasetError, match=message):
        add_case(tmp_path / name, tmp_path / "d.jsonl")


def test_a_recording_nested_without_end_is_a_config_error_naming_its_line(tmp_path):
    (tmp_path / "rec.jsonl").write_text('{"request": {}, "reply": ' + DEEP + "}\n")
    with pytest.raises(bandoneon.ConfigError, match="rec.jsonl:1: not a recorded exchange"):
        ReplayProvider(tmp_path / "rec.jsonl")


@given(reply=json_values)
def test_a_recorded_reply_that_is_not_a_reply_is_refused_when_the_recording_is_read(tmp_path_factory, reply):
    """Not a StructureError in the middle of the replayed run: the recording names its line."""
    path = tmp_path_factory.mktemp("r") / "rec.jsonl"
    bandoneon.Agent(RecordingProvider(ScriptedModel("Holed out."), path), plugins=[], context_files=False).run_sync("Hole 1")
    exchange = json.loads(path.read_text())
    path.write_text(json.dumps({**exchange, "reply": reply}) + "\n")
    try:
        replay = ReplayProvider(path)
    except bandoneon.ConfigError as exc:
        assert "rec.jsonl:1: not a recorded exchange" in str(exc)
        return
    agent = bandoneon.Agent(replay, plugins=[], context_files=False)
    assert isinstance(agent.run_sync("Hole 1").text, str)


@given(reply=json_values)
def test_a_case_whose_recorded_replies_are_not_replies_names_the_case(reply):
    try:
        replay_model(Case("hole-1", "Hole 1", metadata={"replies": [reply]}))
    except bandoneon.ConfigError as exc:
        assert "case 'hole-1': recorded reply #1 is not a model reply" in str(exc)


@given(report=json_values | st.fixed_dictionaries({"cases": st.lists(json_values, max_size=3)}, optional={"totals": json_values}))
def test_any_json_as_a_report_is_compared_or_refused_naming_the_file(tmp_path_factory, report):
    path = tmp_path_factory.mktemp("r") / "r.json"
    path.write_text(json.dumps(report))
    try:
        load_report(path)
    except ReportError as exc:
        assert str(exc).startswith(f"{path}: ")
        return
    assert main(["eval", "compare", str(path), str(path)]) == 0


@pytest.mark.parametrize("content", [DEEP.encode(), b'{"cases": []\xff}', None])
def test_a_report_that_cannot_be_read_is_a_report_error(tmp_path, content):
    path = tmp_path / "r.json"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    with pytest.raises(ReportError, match=f"{path}: "):
        load_report(path)


def test_adding_a_case_to_a_dataset_that_is_not_utf8_is_refused_and_leaves_it_as_it_was(tmp_path):
    path = tmp_path / "d.jsonl"
    stored = b'{"id": "a", "input": "\xff"}\n'
    path.write_bytes(stored)
    with pytest.raises(DatasetError, match=r"d\.jsonl:1: not UTF-8"):
        add_case(Case("b", "x"), path)
    assert path.read_bytes() == stored
