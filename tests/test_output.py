"""Typed answers (``output_type``): asked for natively or with a final-answer tool, checked with
the core's cattrs structuring, repaired a bounded number of times, through the loopback server."""

from __future__ import annotations

import dataclasses
import json
from typing import Literal, TypedDict

import attrs
import bandoneon
import pytest
from bandoneon import ConfigError, NoAnswer
from bandoneon.partial_json import NOTHING, parse_partial
from bandoneon.testing import MockLLMServer, Reply, assert_history_valid
from hypothesis import given
from hypothesis import strategies as st


@attrs.frozen
class City:
    """A city and how many people live there."""

    name: str
    population: int


@dataclasses.dataclass
class Invoice:
    number: str
    total: float
    lines: list[str] = dataclasses.field(default_factory=list)


class Person(TypedDict):
    name: str
    age: int


@attrs.frozen
class Refund:
    order: str
    amount: float


@attrs.frozen
class Escalate:
    reason: str


def agent_on(server: MockLLMServer, model: str = "m", prefix: str = "openai-compatible", **kwargs) -> bandoneon.Agent:
    kwargs.setdefault("plugins", [])
    return bandoneon.Agent(f"{prefix}:{model}@{server.base_url}", context_files=False, **kwargs)


# ---------------------------------------------------------------- native mode


def test_a_native_answer_is_one_model_call_and_a_checked_object(mock_llm):
    mock_llm.add(Reply(text='{"name": "Oslo", "population": 709000}'))
    result = agent_on(mock_llm, output_type=City).run_sync("Largest city of Norway?")
    assert (result.stop, result.ok, result.output) == ("end_turn", True, City("Oslo", 709000))
    assert result.unwrap() == City("Oslo", 709000)
    assert len(mock_llm.requests) == 1
    response_format = mock_llm.requests[0].json["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "City"
    assert response_format["json_schema"]["strict"] is True
    assert response_format["json_schema"]["schema"]["required"] == ["name", "population"]
    assert response_format["json_schema"]["description"] == "A city and how many people live there."


def test_an_answer_that_does_not_fit_is_sent_back_with_the_field_named(mock_llm):
    mock_llm.add(Reply(text='{"name": "Oslo", "population": "about 700k"}'), Reply(text='```json\n{"name": "Oslo", "population": 709000}\n```'))
    result = agent_on(mock_llm, output_type=City).run_sync("Largest city of Norway?")
    assert result.output == City("Oslo", 709000)
    repair = mock_llm.requests[1].json["messages"][-1]
    assert repair["role"] == "user"
    assert "Field 'population' must be an integer, got \"about 700k\" (a string)." in repair["content"]
    assert "Reply again with only the corrected JSON." in repair["content"]


def test_after_output_retries_the_run_ends_with_invalid_output_and_the_last_error(mock_llm):
    mock_llm.add(Reply(text="Oslo, I think"), Reply(text='{"name": "Oslo"}'))
    agent = agent_on(mock_llm, output_type=City, output_retries=1)
    result = agent.run_sync("Largest city of Norway?")
    assert (result.stop, result.ok, result.output) == ("invalid_output", False, None)
    assert "no valid answer after 2 tries" in result.detail
    assert "Missing required field 'population' (an integer)." in result.detail
    with pytest.raises(NoAnswer, match="invalid_output"):
        result.unwrap()
    assert len(mock_llm.requests) == 2
    mock_llm.add(Reply(text='{"name": "Bergen", "population": 291000}'))
    assert agent.run_sync("And the second?").output == City("Bergen", 291000)  # the history still works


def test_output_retries_zero_means_the_first_answer_must_fit(mock_llm):
    mock_llm.add(Reply(text="[]"))
    result = agent_on(mock_llm, output_type=City, output_retries=0).run_sync("?")
    assert result.stop == "invalid_output"
    assert "The answer must be an object with the fields name, population, got [] (a list)." in result.detail


# ---------------------------------------------------------------- the shapes


@pytest.mark.parametrize(
    ("output_type", "text", "expected"),
    [
        (Invoice, '{"number": "A-1", "total": 12.5}', Invoice("A-1", 12.5, [])),
        (Person, '{"name": "Ana", "age": 31}', {"name": "Ana", "age": 31}),
        (int, '{"answer": 42}', 42),
        (list[City], '{"answer": [{"name": "Oslo", "population": 1}]}', [City("Oslo", 1)]),
        (Literal["yes", "no"], '{"answer": "no"}', "no"),
        (Refund | Escalate, '{"answer": {"reason": "angry customer"}}', Escalate("angry customer")),
        (Refund | Escalate, '{"answer": {"order": "o-1", "amount": 3}}', Refund("o-1", 3.0)),
    ],
    ids=["dataclass", "typeddict", "int", "list", "literal", "union-second", "union-first"],
)
def test_every_supported_shape_is_asked_for_and_checked(mock_llm, output_type, text, expected):
    mock_llm.add(Reply(text=text))
    result = agent_on(mock_llm, output_type=output_type).run_sync("?")
    assert result.output == expected, result.detail
    schema = mock_llm.requests[0].json["response_format"]["json_schema"]["schema"]
    assert schema["type"] == "object"


def test_a_wrong_literal_and_a_union_that_fits_nowhere_say_what_was_expected(mock_llm):
    mock_llm.add(Reply(text='{"answer": "maybe"}'), Reply(text='{"answer": {"order": "o-1"}}'))
    agent = agent_on(mock_llm, output_retries=0)
    literal = agent.run_sync("?", output_type=Literal["yes", "no"])
    assert "The answer must be one of 'yes', 'no', got \"maybe\" (a string)." in literal.detail
    union = agent.run_sync("?", output_type=Refund | Escalate)
    assert "Missing required field 'amount' (a number)." in union.detail


def test_the_output_type_of_one_run_overrides_the_agents(mock_llm):
    mock_llm.add(Reply(text="plain"), Reply(text='{"answer": 7}'))
    agent = agent_on(mock_llm)
    assert agent.run_sync("?").output == "plain"
    assert agent.run_sync("?", output_type=int).output == 7
    assert "response_format" not in mock_llm.requests[0].json


def test_an_output_type_a_model_cannot_fill_in_fails_when_the_agent_is_made(mock_llm):
    with pytest.raises(ConfigError, match="cannot be asked of a model"):
        agent_on(mock_llm, output_type=complex)
    with pytest.raises(ConfigError, match="output_mode must be one of"):
        agent_on(mock_llm, output_type=City, output_mode="json")


# ---------------------------------------------------------------- tool mode


@bandoneon.tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: 709000 people"


def test_a_server_that_cannot_mix_a_schema_with_tools_gets_a_final_answer_tool(mock_llm):
    mock_llm.add(
        Reply(tool_calls=[("lookup", {"city": "Oslo"})]),
        Reply(tool_calls=[("final_answer", {"name": "Oslo", "population": 709000})]),
    )
    agent = agent_on(mock_llm, prefix="llamacpp", tools=[lookup], output_type=City)
    result = agent.run_sync("Population of Oslo?")
    assert (result.stop, result.output, result.turns) == ("end_turn", City("Oslo", 709000), 2)
    assert json.loads(result.text) == {"name": "Oslo", "population": 709000}
    first = mock_llm.requests[0].json
    assert "response_format" not in first
    assert [t["function"]["name"] for t in first["tools"]] == ["lookup", "final_answer"]
    assert_history_valid(agent.messages)
    with pytest.raises(ConfigError, match="cannot enforce a JSON schema together with tools"):
        agent_on(mock_llm, prefix="llamacpp", tools=[lookup], output_type=City, output_mode="native")


def test_in_tool_mode_plain_text_and_a_bad_answer_are_both_repaired(mock_llm):
    mock_llm.add(
        Reply(text="Oslo has about 709k people."),
        Reply(tool_calls=[("final_answer", {"name": "Oslo", "population": 709000.5})]),
        Reply(tool_calls=[("final_answer", {"name": "Oslo", "population": 709000})]),
    )
    agent = agent_on(mock_llm, output_type=City, output_mode="tool")
    result = agent.run_sync("?")
    assert result.output == City("Oslo", 709000)
    second = mock_llm.requests[1].json["messages"][-1]
    assert "calling the final_answer tool with an object with the fields name, population" in second["content"]
    third = mock_llm.requests[2].json["messages"][-1]
    assert third["role"] == "tool" and "Field 'population' must be an integer, got 709000.5 (a number)." in third["content"]
    assert_history_valid(agent.messages)


def test_a_terminal_tool_input_is_checked_against_the_output_type(mock_llm):
    @bandoneon.tool(terminal=True)
    def submit(name: str, population: int) -> str:
        """Hand in the answer."""
        return "submitted"

    mock_llm.add(Reply(tool_calls=[("submit", {"name": "Oslo", "population": 709000})]))
    stop = pytest.importorskip("bandoneon_stop").StopRules()
    result = agent_on(mock_llm, tools=[submit], output_type=City, plugins=[stop]).run_sync("?")
    assert (result.stop, result.ok, result.output) == ("terminal_tool", True, City("Oslo", 709000))
    assert result.answer == {"name": "Oslo", "population": 709000}


def test_a_terminal_tool_with_structured_parameters_gives_the_typed_answer(mock_llm):
    """The tool gets ``City`` instances for its own parameter; the answer is checked from their
    JSON shape (it was refused as "must be an object with the fields name, population")."""

    @attrs.define
    class Cities:
        cities: list[City]

    @bandoneon.tool(terminal=True)
    def submit(cities: list[City]) -> str:
        """Hand in the cities."""
        return f"{len(cities)} submitted"

    mock_llm.add(Reply(tool_calls=[("submit", {"cities": [{"name": "Oslo", "population": 709000}]})]))
    stop = pytest.importorskip("bandoneon_stop").StopRules()
    result = agent_on(mock_llm, tools=[submit], output_type=Cities, plugins=[stop]).run_sync("?")
    assert (result.stop, result.ok, result.output) == ("terminal_tool", True, Cities([City("Oslo", 709000)])), result.detail
    assert len(mock_llm.requests) == 1


def test_a_wrap_up_that_writes_a_fitting_answer_gives_the_output_of_a_limited_run(mock_llm):
    stop = pytest.importorskip("bandoneon_stop").StopRules(wrap_up_on=("max_turns",))
    mock_llm.add(Reply(tool_calls=[("lookup", {"city": "Oslo"})]), Reply(text='{"name": "Oslo", "population": 709000}'))
    result = agent_on(mock_llm, tools=[lookup], output_type=City, plugins=[stop], max_turns=1).run_sync("?")
    assert (result.stop, result.ok, result.output) == ("max_turns", False, City("Oslo", 709000))
    assert mock_llm.requests[1].json["response_format"]["json_schema"]["name"] == "City"
    assert "tools" not in mock_llm.requests[1].json


# ---------------------------------------------------------------- streaming


async def test_a_streamed_answer_comes_as_growing_partial_objects(mock_llm):
    mock_llm.add(Reply(text='{"answer": [{"name": "Oslo", "population": 709000}, {"name": "Bergen", "population": 291000}]}'))
    agent = agent_on(mock_llm, output_type=list[City])
    partials = []
    async for event in agent.stream("Two cities?"):
        if event.name == "output_delta":
            partials.append(event.output)
    assert partials[-1] == [City("Oslo", 709000), City("Bergen", 291000)]
    assert [City("Oslo", 709000)] in partials  # the first item, checked, before the second was complete
    assert mock_llm.requests[0].json["stream"] is True


# ---------------------------------------------------------------- partial JSON


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@given(json_values)
def test_every_prefix_of_a_json_document_parses_and_the_whole_parses_exactly(value):
    document = json.dumps(value)
    for end in range(len(document)):
        parse_partial(document[:end])  # never raises on a prefix of valid JSON
    if isinstance(value, (dict, list)):
        assert parse_partial(document) == value


def test_a_prefix_that_is_not_json_is_an_error_and_a_cut_scalar_is_left_out():
    assert parse_partial('{"a": 12') == {}
    assert parse_partial('{"a": tr') == {}
    assert parse_partial('[1, "ab') == [1, "ab"]
    assert parse_partial("") is NOTHING
    with pytest.raises(ValueError):
        parse_partial('{"a": nope}')


def test_an_answer_nested_too_deeply_is_refused_not_a_crash(mock_llm):
    deep = "[" * 5000 + "]" * 5000
    mock_llm.add(Reply(text=deep))
    result = agent_on(mock_llm, output_type=list[int], output_retries=0).run_sync("?")
    assert result.stop == "invalid_output" and "nested too deeply" in result.detail
    with pytest.raises(ValueError, match="nested deeper than 100 levels"):
        parse_partial(deep)


def test_llama_cpp_python_gets_the_schema_in_its_own_response_format(mock_llm):
    mock_llm.add(Reply(text='{"name": "Oslo", "population": 709000}'))
    agent_on(mock_llm, prefix="llama-cpp-python", output_type=City).run_sync("?")
    assert mock_llm.requests[0].json["response_format"]["type"] == "json_object"
    assert mock_llm.requests[0].json["response_format"]["schema"]["required"] == ["name", "population"]


@attrs.define
class Ticket:
    """An answer class with state of its own: ``seen`` is no field of the answer."""

    title: str
    seen: bool = attrs.field(init=False, default=False)


def test_a_field_the_class_sets_itself_is_not_asked_of_the_model(mock_llm):
    mock_llm.add(Reply(text='{"title": "Printer on fire"}'))
    result = agent_on(mock_llm, output_type=Ticket).run_sync("File it.")
    schema = mock_llm.requests[0].json["response_format"]["json_schema"]["schema"]
    assert set(schema["properties"]) == {"title"}
    assert (result.ok, result.output) == (True, Ticket("Printer on fire"))
