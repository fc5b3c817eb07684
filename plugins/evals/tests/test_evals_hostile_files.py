"""Hostile and unusual dataset / recording files: read back exactly, or refused with the file
and line named (a ``DatasetError``), never a crash in the middle of the loader.

JSON written with ``ensure_ascii=False`` (``add_case``, ``RecordingProvider``) keeps U+2028,
U+2029 and U+0085 raw inside strings: they are not line ends of a JSONL file.
"""

from __future__ import annotations

import json

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel
from bandoneon_evals import Case, DatasetError, RecordingProvider, ReplayProvider, add_case, load_dataset
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
