"""``bandoneon.unstructure_json`` writes the same text as JSON of ``bandoneon.unstructure``."""

from __future__ import annotations

import json
from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

import bandoneon


def _reference(value: Any) -> str:
    return json.dumps(bandoneon.unstructure(value), ensure_ascii=False, separators=(",", ":"))


texts = st.text(max_size=30)  # any character but lone surrogates: quotes, controls, non-ASCII
optional_texts = st.none() | texts
tool_calls = st.builds(bandoneon.ToolCall, texts, texts, texts)
thinking = st.builds(bandoneon.Thinking, texts, optional_texts, st.booleans())
parts = st.one_of(
    st.builds(bandoneon.TextPart, texts),
    st.builds(bandoneon.ImagePart.from_bytes, st.binary(max_size=20), st.sampled_from(["image/png", "image/jpeg"])),
    st.builds(bandoneon.ImagePart.from_url, st.just("https://example.org/a.png")),
    st.builds(bandoneon.FilePart.from_bytes, st.binary(max_size=20), st.just("application/pdf"), texts),
)
messages = st.builds(
    bandoneon.Message,
    st.sampled_from(["system", "user", "assistant", "tool"]),
    texts,
    st.lists(tool_calls, max_size=3),
    optional_texts,
    optional_texts,
    st.booleans(),
    st.lists(thinking, max_size=2),
    st.lists(parts, max_size=2),
)
costs = st.none() | st.floats(allow_nan=True, allow_infinity=True)
usages = st.builds(bandoneon.Usage, st.integers(0, 2**40), st.integers(0, 2**40), st.integers(0, 9), st.integers(0, 9), st.integers(0, 9), costs)


@given(messages)
def test_a_message_is_written_as_json_of_its_unstructured_form(message):
    assert bandoneon.unstructure_json(message) == _reference(message)


@given(usages)
def test_usage_is_written_as_json_of_its_unstructured_form(usage):
    assert bandoneon.unstructure_json(usage) == _reference(usage)


@given(st.builds(bandoneon.ToolResult, tool_calls, texts, st.booleans(), st.none() | st.dictionaries(texts, st.integers()), st.floats(0, 10)))
def test_a_class_with_a_mapping_field_is_written_as_json_of_its_unstructured_form(result):
    assert bandoneon.unstructure_json(result) == _reference(result)


def test_values_of_undeclared_types_take_the_converters_way():
    # attrs does not check types: whatever the fields hold, the text is what the converter gives.
    odd = bandoneon.Message("user", 3, tool_calls=[bandoneon.ToolCall("a", "b")], tool_call_id=7, is_error=1)  # type: ignore[arg-type]
    assert bandoneon.unstructure_json(odd) == _reference(odd)
    assert bandoneon.unstructure_json(bandoneon.Usage(True, 2.5)) == _reference(bandoneon.Usage(True, 2.5))  # type: ignore[arg-type]


def test_private_fields_are_written_under_their_alias_and_plain_values_pass_through():
    @attrs.frozen
    class Hidden:
        _secret: str
        shown: int = 1

    assert bandoneon.unstructure_json(Hidden("x")) == _reference(Hidden("x")) == '{"secret":"x","shown":1}'
    assert bandoneon.unstructure_json({"a": [1, "é"]}) == '{"a":[1,"é"]}'


def test_a_class_whose_annotations_cannot_be_resolved_goes_the_converters_way():
    @attrs.frozen
    class Later:
        value: NotDefinedAnywhere  # type: ignore[name-defined]  # noqa: F821

    try:
        expected: Any = _reference(Later(1))
    except Exception as exc:
        expected = type(exc)
    try:
        got: Any = bandoneon.unstructure_json(Later(1))
    except Exception as exc:
        got = type(exc)
    assert got == expected
