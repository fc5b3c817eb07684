"""A tracing JSONL trace with any field of any span replaced (a hand-edited, cut or hostile
file): ``add_case`` makes a case that replays, or refuses the trace with a ``DatasetError``
naming it; never a raw ``TypeError``, a case that cannot be replayed, or a walk up or down the
spans that never ends (an empty span id made a span its own child: the reader filled the memory;
parents in a circle made it loop for ever)."""

from __future__ import annotations

import json

import bandoneon
import pytest
from bandoneon.testing import json_paths, replaced_at
from bandoneon_evals import DatasetError, add_case, replay_model
from hypothesis import given, settings
from hypothesis import strategies as st

TRACE = "3e74f871d6fc273b37bd21d99372fc76"
SPANS = [
    {"name": "invoke_agent agent", "kind": "run", "trace_id": TRACE, "span_id": "9da97127aa7e6010", "parent_id": None, "start": 1.0, "status": "ok", "error": None,
     "attributes": {"bandoneon.prompt": "Weather?", "bandoneon.tools": ["weather"], "bandoneon.stop_reason": "end_turn", "bandoneon.turns": 2}},
    {"name": "turn 1", "kind": "turn", "trace_id": TRACE, "span_id": "30602e77ec5dc968", "parent_id": "9da97127aa7e6010", "start": 1.1, "status": "ok", "error": None,
     "attributes": {"bandoneon.turn": 1}},
    {"name": "chat scripted", "kind": "model", "trace_id": TRACE, "span_id": "b18c1c2cada093bc", "parent_id": "30602e77ec5dc968", "start": 1.2, "status": "ok", "error": None,
     "attributes": {"bandoneon.turn": 1, "gen_ai.response.model": "scripted", "gen_ai.response.finish_reasons": ["tool_calls"], "bandoneon.tool_calls": ["weather"],
                    "gen_ai.usage.input_tokens": 7, "gen_ai.usage.output_tokens": 3}},
    {"name": "execute_tool weather", "kind": "tool", "trace_id": TRACE, "span_id": "4da9625159a937a8", "parent_id": "30602e77ec5dc968", "start": 1.3, "status": "error", "error": "unknown city",
     "attributes": {"gen_ai.tool.name": "weather", "gen_ai.tool.call.id": "call_1", "bandoneon.tool.arguments": "{\"city\": \"Lima\"}"}},
    {"name": "turn 2", "kind": "turn", "trace_id": TRACE, "span_id": "68c3887744a59e24", "parent_id": "9da97127aa7e6010", "start": 1.4, "status": "ok", "error": None,
     "attributes": {"bandoneon.turn": 2}},
    {"name": "chat scripted", "kind": "model", "trace_id": TRACE, "span_id": "28d58259dca7559b", "parent_id": "68c3887744a59e24", "start": 1.5, "status": "ok", "error": None,
     "attributes": {"bandoneon.turn": 2, "gen_ai.response.model": "scripted", "gen_ai.response.finish_reasons": ["stop"], "bandoneon.output": "Sunny."}},
]  # fmt: skip

SPAN_IDS = [s["span_id"] for s in SPANS]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=2) | st.dictionaries(st.text(max_size=4), children, max_size=2),
    max_leaves=4,
)


def test_the_trace_as_written_becomes_a_case(tmp_path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(s) + "\n" for s in SPANS))
    case = add_case(trace, tmp_path / "d.jsonl")
    assert case.input == "Weather?" and [r["message"]["content"] for r in case.metadata["replies"]] == ["", "Sunny."]
    assert case.metadata["replies"][0]["usage"]["input_tokens"] == 7


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(list(json_paths(SPANS))), value=JSON | st.sampled_from(["", *SPAN_IDS]), span=st.none() | st.sampled_from(SPAN_IDS))
def test_a_trace_with_any_field_replaced_is_a_case_or_a_dataset_error(tmp_path_factory, path, value, span):
    folder = tmp_path_factory.mktemp("t")
    trace = folder / "trace.jsonl"
    trace.write_text("".join(json.dumps(s) + "\n" for s in replaced_at(SPANS, path, value)))
    try:
        case = add_case(trace, folder / "d.jsonl", span=span)
    except DatasetError as exc:
        assert str(trace) in str(exc)
        return
    assert isinstance(case.input, str) and isinstance(replay_model(case), bandoneon.Provider)


def write(tmp_path, spans):
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(s) + "\n" for s in spans))
    return trace


def test_a_span_with_an_empty_id_is_refused_not_read_as_its_own_child(tmp_path):
    spans = replaced_at(SPANS, (0, "span_id"), "")
    with pytest.raises(DatasetError, match=r"trace\.jsonl:1: not a span of a tracing JSONL trace: its span_id is \"\""):
        add_case(write(tmp_path, spans), tmp_path / "d.jsonl")


def test_two_spans_with_one_id_are_refused(tmp_path):
    spans = replaced_at(SPANS, (4, "span_id"), SPAN_IDS[1])
    with pytest.raises(DatasetError, match=r"trace\.jsonl:5: .*its span_id '30602e77ec5dc968' is another span's too"):
        add_case(write(tmp_path, spans), tmp_path / "d.jsonl")


def test_a_span_whose_parents_go_round_in_a_circle_is_in_no_run(tmp_path):
    spans = replaced_at(SPANS, (3, "parent_id"), SPAN_IDS[3])  # the tool span is its own parent
    with pytest.raises(DatasetError, match="span '4da9625159a937a8' is not inside a run"):
        add_case(write(tmp_path, spans), tmp_path / "d.jsonl", span=SPAN_IDS[3])


def test_a_run_inside_a_circle_of_parents_is_read_once(tmp_path):
    spans = replaced_at(SPANS, (0, "parent_id"), SPAN_IDS[1])  # the run's parent is its own first turn
    case = add_case(write(tmp_path, spans), tmp_path / "d.jsonl", span=SPAN_IDS[2])
    assert [r["message"]["content"] for r in case.metadata["replies"]] == ["", "Sunny."]
