"""bandoneon's tool protocol for the embedded model, without loading it: the reply schema, what
the model is shown, and the streaming decoder fed with hostile text cut at every point."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import bandoneon
import pytest
from bandoneon import BadResponse, Message, ModelRequest, ToolCall, ToolSpec
from bandoneon_local.protocol import ReplyDecoder, cap_strings, render_messages, reply_schema, reply_shape
from hypothesis import given, settings
from hypothesis import strategies as st

NOTE = ToolSpec("save_note", "Save a note.", {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": False})
SHORT = ToolSpec("tag", "Tag it.", {"type": "object", "properties": {"label": {"type": "string", "maxLength": 12}, "kind": {"type": "string", "enum": ["a", "b"]}}})


def decode(shape, pieces: list[str], finish: str = "stop") -> tuple[Message, list[tuple[str, Any]]]:
    deltas: list[tuple[str, Any]] = []

    async def on_delta(kind: str, payload: Any) -> None:
        deltas.append((kind, payload))

    async def go() -> Message:
        decoder = ReplyDecoder(shape, on_delta)
        for piece in pieces:
            await decoder.feed(piece)
        return decoder.message(finish)

    return asyncio.run(go()), deltas


def cut(text: str, points: list[int]) -> list[str]:
    points = sorted({p % (len(text) + 1) for p in points} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:], strict=False)]


# ---------------------------------------------------------------- the reply schema


def test_the_reply_is_a_call_to_an_offered_tool_or_an_answer():
    schema = reply_schema(reply_shape([NOTE, SHORT], "auto"), string_cap=50, answer_cap=300)
    variants = schema["oneOf"]
    assert [v["properties"].get("tool", {}).get("const") for v in variants] == ["save_note", "tag", None]
    assert variants[2]["properties"]["answer"] == {"type": "string", "maxLength": 300}
    assert all(v["additionalProperties"] is False for v in variants)


def test_every_free_string_argument_gets_a_max_length_and_declared_limits_stay():
    schema = reply_schema(reply_shape([NOTE, SHORT], "required"), string_cap=50, answer_cap=300)
    note, tag = (v["properties"]["arguments"] for v in schema["oneOf"])
    assert note["properties"]["text"]["maxLength"] == 50
    assert tag["properties"]["label"]["maxLength"] == 12
    assert "maxLength" not in tag["properties"]["kind"]
    assert NOTE.parameters["properties"]["text"] == {"type": "string"}, "the tool's own schema is not changed"


def test_tool_choice_decides_what_the_reply_may_be():
    assert reply_schema(reply_shape([NOTE], "none"), string_cap=9, answer_cap=9)["properties"].keys() == {"answer"}
    assert reply_schema(reply_shape([NOTE, SHORT], {"type": "function", "function": {"name": "tag"}}), string_cap=9, answer_cap=9)["properties"]["tool"] == {"const": "tag"}
    assert reply_schema(reply_shape([], None), string_cap=9, answer_cap=9) is None, "no tools: free text"


def test_a_typed_answer_is_kept_to_its_schema_with_and_without_tools():
    answer = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    with_tools = reply_schema(reply_shape([NOTE], None, answer), string_cap=20, answer_cap=99)
    assert with_tools["oneOf"][1]["properties"]["answer"]["properties"]["city"]["maxLength"] == 20
    assert reply_schema(reply_shape([], None, answer), string_cap=20, answer_cap=99)["properties"]["city"]["maxLength"] == 20


@pytest.mark.parametrize("choice", ["sometimes", {"type": "function"}, {"function": {"name": "nope"}}])
def test_a_tool_choice_it_cannot_honour_is_a_config_error(choice):
    with pytest.raises(bandoneon.ConfigError, match="tool_choice"):
        reply_shape([NOTE], choice)


def test_an_argument_named_like_a_keyword_is_capped_too():
    schema = {"type": "object", "properties": {name: {"type": "string"} for name in ("enum", "default", "required", "const")}}
    assert all(p["maxLength"] == 40 for p in cap_strings(schema, 40)["properties"].values())


schemas = st.recursive(
    st.sampled_from([{"type": "string"}, {"type": "integer"}, {"type": "string", "maxLength": 3}, {"type": ["string", "null"]}]),
    lambda inner: st.one_of(
        st.builds(lambda p: {"type": "object", "properties": p}, st.dictionaries(st.text(min_size=1, max_size=5), inner, max_size=3)),
        st.builds(lambda i: {"type": "array", "items": i}, inner),
        st.builds(lambda a: {"anyOf": a}, st.lists(inner, min_size=1, max_size=3)),
    ),
    max_leaves=8,
)


def strings_in(schema: Any) -> list[dict]:
    found = []
    if isinstance(schema, dict):
        kind = schema.get("type")
        if kind == "string" or (isinstance(kind, list) and "string" in kind):
            found.append(schema)
        for value in schema.values():
            found += strings_in(value)
    elif isinstance(schema, list):
        for value in schema:
            found += strings_in(value)
    return found


@given(schemas)
def test_no_string_anywhere_in_a_schema_is_left_unbounded(schema):
    capped = cap_strings(schema, 40)
    assert all(0 < s["maxLength"] <= 40 or s["maxLength"] == 3 for s in strings_in(capped))
    assert len(strings_in(capped)) == len(strings_in(schema))


# ---------------------------------------------------------------- what the model reads


def test_the_model_reads_the_tools_its_past_calls_and_results_in_the_reply_format():
    call = ToolCall("c1", "save_note", '{"text":"tango"}')
    request = ModelRequest(
        (Message.user("Note it"), Message.assistant("", [call]), Message.tool(call, "saved"), Message.assistant("Done."), Message.user("Again")),
        system_prompt="You keep notes.",
        tools=(NOTE,),
    )
    messages = render_messages(request, reply_shape(request.tools, None))
    system = messages[0]["content"]
    assert system.startswith("You keep notes.") and "save_note: Save a note." in system and '{"answer":' in system
    assert messages[2] == {"role": "assistant", "content": '{"tool":"save_note","arguments":{"text":"tango"}}'}
    assert messages[3] == {"role": "user", "content": "Result of save_note: saved"}
    assert messages[4] == {"role": "assistant", "content": '{"answer":"Done."}'}


def test_without_tools_the_conversation_is_plain():
    request = ModelRequest((Message.user("hi"), Message.assistant("hello"), Message.user("bye")))
    assert render_messages(request, reply_shape((), None)) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "bye"},
    ]


# ---------------------------------------------------------------- reading the reply as it streams


@settings(max_examples=200)
@given(st.text(max_size=60), st.lists(st.integers(min_value=0), max_size=12), st.booleans())
def test_an_answer_streams_as_text_that_joins_to_the_answer(answer, points, ascii_only):
    text = json.dumps({"answer": answer}, ensure_ascii=ascii_only)
    message, deltas = decode(reply_shape([NOTE], None), cut(text, points))
    assert message.content == answer and not message.tool_calls
    assert all(kind == "text" for kind, _ in deltas)
    assert "".join(piece for _, piece in deltas) == answer


arguments = st.dictionaries(st.text(max_size=6), st.one_of(st.text(max_size=12), st.integers(), st.lists(st.text(max_size=4), max_size=3)), max_size=4)


@settings(max_examples=200)
@given(arguments, st.lists(st.integers(min_value=0), max_size=12), st.sampled_from([(",", ":"), (", ", ": ")]))
def test_a_call_streams_its_name_then_arguments_that_join_to_the_call(args, points, separators):
    text = json.dumps({"tool": "save_note", "arguments": args}, separators=separators)
    message, deltas = decode(reply_shape([NOTE], None), cut(text, points))
    (call,) = message.tool_calls
    assert call.name == "save_note" and json.loads(call.arguments) == args
    assert deltas[0] == ("tool_call", (0, "save_note", ""))
    assert all(kind == "tool_call" and payload[1] == "save_note" for kind, payload in deltas)
    assert "".join(payload[2] for _, payload in deltas) == call.arguments


def test_calls_get_ids_unique_across_replies():
    text = '{"tool":"save_note","arguments":{"text":"x"}}'
    ids = {decode(reply_shape([NOTE], None), [text])[0].tool_calls[0].id for _ in range(20)}
    assert len(ids) == 20


def test_a_call_cut_by_the_token_limit_keeps_its_name_and_broken_arguments():
    message, _ = decode(reply_shape([NOTE], None), ['{"tool":"save_note","arguments":{"text":"I like ta'], finish="length")
    (call,) = message.tool_calls
    assert call.name == "save_note" and call.arguments == '{"text":"I like ta'


def test_an_answer_cut_by_the_token_limit_keeps_its_words():
    message, _ = decode(reply_shape([NOTE], None), ['{"answer":"It will rain \\u00e'], finish="length")
    assert message.content == "It will rain " and not message.tool_calls


def test_a_typed_answer_streams_its_json_as_text():
    answer = {"type": "object", "properties": {"city": {"type": "string"}}}
    message, deltas = decode(reply_shape([NOTE], None, answer), ['{"answer":{"ci', 'ty":"Lima"}}'])
    assert message.content == '{"city":"Lima"}'
    assert "".join(p for k, p in deltas if k == "text") == '{"city":"Lima"}'


def test_text_that_breaks_the_protocol_is_a_bad_response_not_an_answer():
    with pytest.raises(BadResponse, match="tool protocol"):
        decode(reply_shape([NOTE], None), ["functions.save_note:\n{\"text\": \"x\"}"])



@pytest.mark.parametrize("text", ['{"', '{"tool":"save', '{"tool":"save_note","argu', '{"answer":"It'])
def test_a_reply_cut_anywhere_by_the_token_limit_is_still_a_message(text):
    message, _ = decode(reply_shape([NOTE], None), [text], finish="length")
    assert message.role == "assistant"
