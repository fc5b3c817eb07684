"""Red-team findings on typed answers, image parts and streamed tool calls, each through the
public API or the loopback server: the text of a run answered by several ``final_answer`` calls,
streamed tool calls that carry no ``index``, ``data:`` image URLs, and media types that the
bytes contradict."""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import os
from typing import Literal, get_args

import attrs
import bandoneon
import pytest
from bandoneon import ConfigError, ImagePart
from bandoneon.testing import Fault, MockLLMServer, Reply, assert_history_valid
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FIXTURE_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@attrs.frozen
class City:
    name: str
    population: int


def agent_on(server: MockLLMServer, **kwargs) -> bandoneon.Agent:
    kwargs.setdefault("plugins", [])
    return bandoneon.Agent(f"openai-compatible:m@{server.base_url}", context_files=False, **kwargs)


def sse(*chunks: object) -> Fault:
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return Fault(status=200, body=body, headers={"content-type": "text/event-stream"})


# ---------------------------------------------------------------- several final_answer calls

BAD_CITY = st.one_of(
    st.fixed_dictionaries({"name": st.integers(), "population": st.integers()}),
    st.fixed_dictionaries({"name": st.text(max_size=5), "population": st.text(max_size=5)}),
    st.fixed_dictionaries({"name": st.text(max_size=5)}),
)
GOOD_CITY = st.fixed_dictionaries({"name": st.text(max_size=8), "population": st.integers(-(10**6), 10**6)})


@FIXTURE_SETTINGS
@given(before=st.lists(BAD_CITY, max_size=3), taken=GOOD_CITY, after=st.lists(GOOD_CITY | BAD_CITY, max_size=2))
def test_the_text_of_a_reply_with_several_final_answers_is_the_answer_taken(mock_llm, before, taken, after):
    """The first call that fits is the answer: the run's text is its JSON, not that of a call
    before it that did not fit (the text and the output disagreed)."""
    mock_llm.reset()
    calls = [("final_answer", arguments) for arguments in (*before, taken, *after)]
    mock_llm.add(Reply(tool_calls=calls))
    agent = agent_on(mock_llm, output_type=City, output_mode="tool")
    result = agent.run_sync("Which city?")
    assert (result.stop, result.output) == ("end_turn", City(taken["name"], taken["population"]))
    assert json.loads(result.text) == taken
    assert_history_valid(agent.messages)
    assert [m.tool_call_id for m in agent.messages if m.role == "tool"] == [c.id for c in agent.messages[1].tool_calls]


# ---------------------------------------------------------------- streamed calls without an index


def _cuts(text: str) -> st.SearchStrategy[list[str]]:
    return st.lists(st.integers(1, max(1, len(text) - 1)), max_size=6, unique=True).map(
        lambda points: [text[a:b] for a, b in zip([0, *sorted(points)], [*sorted(points), len(text)], strict=True)]
    )


@st.composite
def unindexed_stream(draw) -> tuple[list[dict], list[tuple[str, str, str]]]:
    """Two calls streamed as pieces with no ``index`` (as some servers send them): each call's
    first piece has its id and name, the rest only more of its arguments."""
    expected, chunks = [], []
    for number in range(draw(st.integers(1, 3))):
        arguments = json.dumps({"city": draw(st.text(max_size=10))})
        call_id = f"call-{number}"
        for position, piece in enumerate(draw(_cuts(arguments))):
            head = {"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": piece}}
            chunks.append({"choices": [{"delta": {"tool_calls": [head if position == 0 else {"function": {"arguments": piece}}]}}]})
        expected.append((call_id, "lookup", arguments))
    chunks.append({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]})
    return chunks, expected


@FIXTURE_SETTINGS
@given(stream=unindexed_stream())
def test_streamed_tool_calls_without_an_index_are_assembled_by_their_ids(mock_llm, stream):
    chunks, expected = stream
    mock_llm.reset()
    mock_llm.add(sse(*chunks), Reply(text="done"))
    seen: list[str] = []

    @bandoneon.tool
    def lookup(city: str) -> str:
        """Look a city up."""
        seen.append(city)
        return "found"

    agent = agent_on(mock_llm, tools=[lookup])
    agent.on("text_delta", lambda event: None)
    result = agent.run_sync("?")
    assert result.ok, result.detail
    assert [(c.id, c.name, c.arguments) for c in agent.messages[1].tool_calls] == expected
    assert seen == [json.loads(arguments)["city"] for _, _, arguments in expected]
    assert_history_valid(agent.messages)


# ---------------------------------------------------------------- data: URLs


@given(data=st.binary(min_size=1, max_size=200), media_type=st.sampled_from(["image/png", "image/jpeg", "image/gif", "image/webp"]))
def test_a_data_url_image_is_its_bytes_and_a_description_never_shows_them(data, media_type):
    encoded = base64.b64encode(data).decode()
    image = ImagePart.from_url(f"data:{media_type};base64,{encoded}")
    assert (image.data, image.url) == (data, None)
    assert image.media_type == (_real_type(data) or media_type)
    described = bandoneon.describe_part(image)
    assert encoded not in described and image.digest in described


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except ValueError:  # binascii.Error, or text that is not ASCII
        return False
    return True


@given(body=st.text(min_size=1, max_size=40).filter(lambda text: not _is_base64(text)))
def test_a_data_url_that_is_not_base64_is_a_config_error(body):
    with pytest.raises(ConfigError, match="base64"):
        ImagePart.from_url(f"data:image/png;base64,{body}")
    with pytest.raises(ConfigError, match="must be base64"):
        ImagePart.from_url(f"data:image/png,{body}")


@pytest.mark.parametrize("url", ["data:text/html;base64,PGgxPg==", "data:image/svg+xml;base64,PHN2Zz4="])
def test_a_data_url_that_is_not_an_image_bandoneon_can_send_is_a_config_error(url):
    with pytest.raises(ConfigError, match="an image must be one of"):
        ImagePart.from_url(url)


@given(query=st.text(st.characters(codec="ascii", exclude_characters="#"), min_size=1, max_size=30))
def test_the_description_of_an_image_url_leaves_out_its_query(query):
    """A signed URL's query is a credential: logs and traces keep its digest instead."""
    image = ImagePart.from_url(f"https://bucket.example/cat.png?{query}")
    described = bandoneon.describe_part(image)
    assert described.startswith("image https://bucket.example/cat.png") and image.digest in described
    assert f"?{query}" not in described


# ---------------------------------------------------------------- media types the bytes contradict

SIGNATURES = {
    "image/png": b"\x89PNG\r\n\x1a\n",
    "image/jpeg": b"\xff\xd8\xff",
    "image/gif": b"GIF89a",
    "image/webp": b"RIFF\x00\x00\x00\x00WEBP",
}


def _real_type(data: bytes) -> str | None:
    if data[:6] == b"GIF87a":
        return "image/gif"
    return next((kind for kind, head in SIGNATURES.items() if data[: len(head)] == head or (kind == "image/webp" and data[:4] == b"RIFF" and data[8:12] == b"WEBP")), None)


@given(real=st.sampled_from(sorted(SIGNATURES)), claimed=st.sampled_from(sorted(SIGNATURES)), tail=st.binary(max_size=30))
def test_an_image_whose_bytes_say_another_type_is_sent_as_what_it_is(tmp_path_factory, real, claimed, tail):
    """``from_bytes`` defaults to PNG and ``from_path`` guesses from the name; a server that
    checks (Anthropic) answers 400 to a JPEG labelled PNG. The bytes decide."""
    data = SIGNATURES[real] + tail
    assert ImagePart.from_bytes(data, claimed).media_type == real
    extension = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}[claimed]
    path = tmp_path_factory.mktemp("images") / f"photo{extension}"
    path.write_bytes(data)
    assert ImagePart.from_path(path).media_type == real


def test_the_image_sent_over_the_wire_carries_the_type_of_its_bytes(mock_llm):
    jpeg = SIGNATURES["image/jpeg"] + b"\x00\x10JFIF"
    mock_llm.add(Reply(text="a cat"))
    agent_on(mock_llm).run_sync(["What is this?", ImagePart.from_bytes(jpeg)])
    sent = mock_llm.requests[0].json["messages"][-1]["content"][1]["image_url"]["url"]
    assert sent.startswith("data:image/jpeg;base64,")


# ---------------------------------------------------------------- strict shapes: literals, fixed tuples, a class's own checks

JSON_SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.5, 2.0]) | st.floats(-3, 3, allow_nan=False) | st.sampled_from(["1", "a", "true", ""])
CHOICES = [Literal[1, 2], Literal[True], Literal["a", 0], Literal[0.5, "b"], Literal[2.0, None]]


def _fits(value: object, choice: object) -> bool:
    """A literal's value in JSON: the same kind of value (a boolean is not a number); numbers
    match across int and float, as for an ``int`` field."""
    if {type(choice), type(value)} == {int, float}:
        return value == choice
    return type(value) is type(choice) and value == choice


@given(value=JSON_SCALARS, literal=st.sampled_from(CHOICES))
def test_a_literal_takes_only_its_own_values_of_their_own_kind(value, literal):
    fitting = [choice for choice in get_args(literal) if _fits(value, choice)]
    if fitting:
        structured = bandoneon.structure(value, literal)
        assert structured == fitting[0] and type(structured) is type(fitting[0])
    else:
        with pytest.raises(bandoneon.StructureError, match="must be one of"):
            bandoneon.structure(value, literal)


def test_a_literal_answer_of_the_wrong_kind_is_sent_back(mock_llm):
    mock_llm.add(Reply(text='{"answer": true}'), Reply(text='{"answer": 1}'))
    result = agent_on(mock_llm, output_type=Literal[1, 2]).run_sync("One or two?")
    assert (result.output, type(result.output)) == (1, int)
    assert "must be one of 1, 2, got true (a boolean)" in mock_llm.requests[1].json["messages"][-1]["content"]


@given(value=st.text(min_size=2, max_size=2) | st.dictionaries(st.text(max_size=2), st.integers(), min_size=2, max_size=2))
def test_a_fixed_tuple_is_never_built_from_a_string_or_an_object(value):
    with pytest.raises(bandoneon.StructureError, match=r"must be a list of 2 items \(a string, a string\)"):
        bandoneon.structure(value, tuple[str, str])


@given(items=st.lists(st.integers(), max_size=4))
def test_a_fixed_tuple_of_the_wrong_length_says_how_many_items(items):
    if len(items) == 2:
        assert bandoneon.structure(items, tuple[int, int]) == tuple(items)
    else:
        with pytest.raises(bandoneon.StructureError, match=r"must be a list of 2 items \(an integer, an integer\)"):
            bandoneon.structure(items, tuple[int, int])


def test_a_fixed_tuple_names_the_item_that_does_not_fit():
    with pytest.raises(bandoneon.StructureError, match=r"Field '\[1\]' must be a string, got 2 \(an integer\)\."):
        bandoneon.structure([1, 2], tuple[int, str])


@attrs.frozen
class Stock:
    item: str
    count: int = attrs.field(validator=attrs.validators.ge(0))


@dataclasses.dataclass
class Order:
    stock: Stock
    note: str = ""

    def __post_init__(self) -> None:
        if len(self.note) > 3:
            raise ValueError("note must be at most 3 characters")


@given(count=st.integers(max_value=-1))
def test_what_a_class_s_own_check_says_is_what_the_model_reads(count):
    with pytest.raises(bandoneon.StructureError) as refused:
        bandoneon.structure({"stock": {"item": "x", "count": count}}, Order, subject="The answer")
    assert refused.value.problems == [f"Field 'stock' is not accepted: 'count' must be >= 0: {count}."]
    with pytest.raises(bandoneon.StructureError) as refused:
        bandoneon.structure({"stock": {"item": "x", "count": 1}, "note": "long"}, Order, subject="The answer")
    assert refused.value.problems == ["The answer is not accepted: note must be at most 3 characters."]


def test_an_answer_a_validator_refuses_is_repaired_with_the_validator_s_words(mock_llm):
    mock_llm.add(Reply(text='{"item": "pens", "count": -2}'), Reply(text='{"item": "pens", "count": 2}'))
    result = agent_on(mock_llm, output_type=Stock).run_sync("How many pens?")
    assert result.output == Stock("pens", 2)
    assert "'count' must be >= 0: -2" in mock_llm.requests[1].json["messages"][-1]["content"]


# ---------------------------------------------------------------- a long streamed answer


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=st.integers(2, 6), count=st.integers(150, 300))
async def test_a_long_streamed_answer_is_not_parsed_again_for_every_piece(mock_llm, size, count):
    """Every piece re-parsed the whole answer so far (in Python) and checked it: 25 KB in
    4-character pieces held the event loop for 21 s. The last event still has all of it."""
    mock_llm.reset()
    cities = [{"name": f'city {number} "quoted" [x] \\ {{', "population": number} for number in range(count)]
    document = json.dumps({"answer": cities})
    pieces = [document[start : start + size] for start in range(0, len(document), size)]
    mock_llm.add(sse(*({"choices": [{"delta": {"content": piece}}]} for piece in pieces), {"choices": [{"delta": {}, "finish_reason": "stop"}]}))
    agent = agent_on(mock_llm, output_type=list[City])
    outputs = [event.output async for event in agent.stream("Cities?") if event.name == "output_delta"]
    expected = [City(c["name"], c["population"]) for c in cities]
    assert outputs[-1] == expected
    assert len(outputs) < len(pieces) // 5
    assert all(expected[: len(output)] == output for output in outputs if output is not None)


# ---------------------------------------------------------------- files that are not files


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("read", [ImagePart.from_path, bandoneon.FilePart.from_path])
def test_a_path_to_a_pipe_or_a_folder_is_a_config_error_not_a_hang(tmp_path, read):
    """Opening a named pipe waited for a writer for ever (``/dev/zero`` would read without end)."""
    pipe = tmp_path / "photo.png"
    os.mkfifo(pipe)
    with pytest.raises(ConfigError, match="not a regular file"):
        read(pipe)
    folder = tmp_path / "album.png"
    folder.mkdir()
    with pytest.raises(ConfigError, match="cannot read .*album.png"):
        read(folder)


# ---------------------------------------------------------------- a literal of enum members


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen
class Pick:
    colour: Literal[Colour.RED]


def test_a_literal_of_enum_members_is_asked_for_by_their_values(mock_llm):
    """The schema held the members themselves: the request failed with a raw TypeError (not
    JSON serializable) on every run."""
    mock_llm.add(Reply(text='{"colour": "blue"}'), Reply(text='{"colour": "red"}'))
    result = agent_on(mock_llm, output_type=Pick).run_sync("Which colour?")
    assert result.output == Pick(Colour.RED)
    assert mock_llm.requests[0].json["response_format"]["json_schema"]["schema"]["properties"]["colour"] == {"enum": ["red"]}
    assert "Field 'colour' must be one of 'red', got \"blue\" (a string)." in mock_llm.requests[1].json["messages"][-1]["content"]
