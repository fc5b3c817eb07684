"""The records written straight from the values are the records the core's converter writes, byte for byte.

``message_text`` and ``usage_text`` go through ``bandoneon.unstructure_json`` (generated
f-strings), ``tool_result_text`` is written by hand from a result (the session's hot path); the
on-disk format is ``encode(message_record(m))``, the converter's JSON. Any value, common or
not, must give the same text both ways, and a batch the same lines as ``frame`` of each record.
"""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

import bandoneon
from bandoneon_sessions.records import CLEAR, encode, frame, frame_batch, message_record, message_text, result_line, tool_result_text, usage_record, usage_text

text = st.text()  # any code point: quotes, backslashes, control characters, non-ASCII, surrogates
maybe_text = st.none() | text
calls = st.builds(bandoneon.ToolCall, text, text, text)


@attrs.frozen
class _MyMessage(bandoneon.Message):
    """A subclass: not the shape written by hand."""


class _MyStr(str):
    """A str subclass: the converter's way, not the hand's."""


@attrs.frozen
class _MyCall(bandoneon.ToolCall):
    """A tool call subclass: not the shape written by hand."""


# Every field of every kind, odd ones included (subclasses of the message's classes and of str):
# the record is the converter's whatever the shape.
odd_text = text | text.map(_MyStr)
odd_calls = st.builds(bandoneon.ToolCall, odd_text, odd_text, odd_text) | st.builds(_MyCall, text, text, text)
messages = st.builds(
    bandoneon.Message,
    st.sampled_from(["system", "user", "assistant", "tool"]) | text.map(_MyStr),
    odd_text,
    st.lists(odd_calls, max_size=3) | st.lists(calls, max_size=2).map(list),
    st.none() | odd_text,
    st.none() | odd_text,
    st.booleans(),
    st.lists(st.builds(bandoneon.Thinking, text, maybe_text, st.booleans()), max_size=1),
    st.lists(st.builds(bandoneon.TextPart, text), max_size=1),
)


@given(messages)
def test_message_text_is_the_converters_record(message: bandoneon.Message) -> None:
    assert message_text(message) == encode(message_record(message))


def test_message_text_of_other_shapes() -> None:
    call = bandoneon.ToolCall("c1", "roast", '{"bean": "café"}')
    for message in [
        _MyMessage("user", "hi"),
        bandoneon.Message("assistant", "", (call, attrs.evolve(call, id=_MyStr("c2")))),
        bandoneon.Message.tool(call, "done\n\t\"ok\" ☕", is_error=True),
    ]:
        assert message_text(message) == encode(message_record(message))


@given(st.builds(bandoneon.ToolResult, calls, text | text.map(_MyStr), st.booleans()))
def test_tool_result_text_is_its_messages_record(result: bandoneon.ToolResult) -> None:
    assert tool_result_text(result) == encode(message_record(result.to_message()))


counts = st.integers(min_value=0, max_value=2**70) | st.booleans()
costs = st.none() | st.floats(allow_nan=True, allow_infinity=True) | st.integers(max_value=10)


@given(counts, counts, counts, counts, counts, costs)
def test_usage_text_is_the_converters_record(a: int, b: int, c: int, d: int, e: int, cost: float | None) -> None:
    usage = bandoneon.Usage(a, b, c, d, e, cost)
    assert usage_text(usage) == encode(usage_record(usage))


# What a file holds is UTF-8: text without lone surrogates (which no encoder can write).
_utf8 = st.text(st.characters(blacklist_categories=("Cs",)))
_utf8_calls = st.builds(bandoneon.ToolCall, _utf8, _utf8, _utf8)
_utf8_messages = st.builds(bandoneon.Message, st.sampled_from(["user", "assistant", "tool"]), _utf8, st.lists(_utf8_calls, max_size=2), st.none() | _utf8, st.none() | _utf8, st.booleans())


@given(st.lists(_utf8_messages, max_size=3), st.none() | st.builds(bandoneon.Usage, counts, counts, counts, counts, counts, costs), st.booleans())
def test_a_batch_is_the_framed_records(batch: list[bandoneon.Message], usage: bandoneon.Usage | None, clear: bool) -> None:
    records = ([CLEAR] if clear else []) + [message_record(m) for m in batch] + ([] if usage is None else [usage_record(usage)])
    assert frame_batch(batch, usage, clear) == b"".join(frame(r) for r in records)


@given(st.builds(bandoneon.ToolResult, _utf8_calls, _utf8, st.booleans()))
def test_a_result_line_is_its_messages_framed_record(result: bandoneon.ToolResult) -> None:
    assert result_line(result) == frame(message_record(result.to_message()))
