"""@tool: the card the model reads, and one clear sentence for every bad input."""

from __future__ import annotations

import enum
from typing import Annotated, Literal

import attrs
import bandoneon
import pytest
from bandoneon import RunContext, ToolError, tool
from bandoneon.testing import ScriptedModel, call
from bandoneon.tools import ArgumentsError


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen
class Seat:
    """A seat.

    Args:
        row: row number, from 1
    """

    row: int
    letter: str = "A"


@tool
def book(
    passenger: Annotated[str, "Full name as on the ID"],
    seats: list[Seat],
    seat_class: Literal["tourist", "first"] = "tourist",
    color: Color | None = None,
    notes: dict[str, str] | None = None,
    price: float = 0.0,
    run: RunContext | None = None,
) -> dict:
    """Book seats on a train.

    Args:
        seats: the seats to book
        price: the most the passenger will pay, in pesos
    """
    return {"passenger": passenger, "rows": [s.row for s in seats], "class": seat_class, "color": color.value if color else None, "has_run": run is not None}


def test_the_schema_comes_from_the_signature_and_the_docstring():
    assert book.name == "book"
    assert book.description == "Book seats on a train."
    schema = book.parameters
    assert schema["required"] == ["passenger", "seats"]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["passenger"] == {"type": "string", "description": "Full name as on the ID"}
    assert props["seat_class"]["enum"] == ["tourist", "first"]
    assert props["color"] == {"anyOf": [{"enum": ["red", "blue"]}, {"type": "null"}]}
    assert props["price"] == {"type": "number", "description": "the most the passenger will pay, in pesos"}
    seat = props["seats"]["items"]
    assert seat["required"] == ["row"] and seat["additionalProperties"] is False
    assert seat["properties"]["row"]["description"] == "row number, from 1"
    assert props["notes"]["type"] == ["object", "null"]
    assert "run" not in props


def test_valid_arguments_are_structured_before_the_function_runs():
    args = book.validate('{"passenger": "Ana", "seats": [{"row": 3}], "color": "blue", "price": 10}')
    assert args["seats"] == [Seat(3, "A")] and args["color"] is Color.BLUE and args["price"] == 10.0


@pytest.mark.parametrize(
    "raw, message",
    [
        ('{"passenger": "Ana", "seats": ', "The arguments for book are not valid JSON (Expecting value at character 30). Send one JSON object with the fields passenger, seats, seat_class, color, notes, price."),
        ("[1, 2]", "The arguments for book must be a JSON object, got [1, 2] (a list)."),
        ('{"seats": []}', "Missing required field 'passenger' (a string)."),
        ('{"passenger": 7, "seats": []}', "Field 'passenger' must be a string, got 7 (an integer)."),
        ('{"passenger": "Ana", "seats": [], "seat_class": "luxury"}', "Field 'seat_class' must be one of 'tourist', 'first', got \"luxury\" (a string)."),
        ('{"passenger": "Ana", "seats": [], "pasenger": "x"}', "Unknown field 'pasenger'"),
        ('{"passenger": "Ana", "seats": [{"row": "3"}]}', "Field 'seats[0].row' must be an integer, got \"3\" (a string)."),
        ('{"passenger": "Ana", "seats": [], "price": true}', "Field 'price' must be a number, got true (a boolean)."),
    ],
)
def test_each_bad_input_gets_one_sentence_naming_the_field(raw, message):
    with pytest.raises(ArgumentsError) as caught:
        book.validate(raw)
    assert message in str(caught.value)
    assert "Traceback" not in str(caught.value)


def test_a_tool_that_raises_sends_the_message_only():
    @tool
    def open_door(key: str) -> str:
        """Use a key with the temple door."""
        raise RuntimeError("the lock is rusted shut. Oil it first")

    model = ScriptedModel(call("open_door", key="brass"), "ok")
    bandoneon.Agent(model, tools=[open_door], plugins=[], context_files=False).run_sync("open it")
    result = model.requests[1].messages[-1]
    assert result.is_error and result.content == "open_door failed: the lock is rusted shut. Oil it first"
    assert "Traceback" not in result.content and ".py" not in result.content


def test_tool_error_messages_reach_the_model_as_written():
    @tool
    def check_matchup(attack: str, defend: str) -> str:
        """Type effectiveness of one attack type against one defending type."""
        raise ToolError("defend must be one lowercase type, like water. Call identify_wild to get it.")

    model = ScriptedModel(call("check_matchup", attack="grass", defend="Water!"), "ok")
    bandoneon.Agent(model, tools=[check_matchup], plugins=[], context_files=False).run_sync("go")
    assert model.requests[1].messages[-1].content == "defend must be one lowercase type, like water. Call identify_wild to get it."


def test_a_run_context_parameter_receives_the_run():
    model = ScriptedModel(call("book", passenger="Ana", seats=[{"row": 1}]), "ok")
    bandoneon.Agent(model, tools=[book], plugins=[], context_files=False).run_sync("go")
    assert '"has_run": true' in model.requests[1].messages[-1].content


def test_async_tools_and_options_work():
    @tool(name="mark_star", terminal=True, needs_approval=True, capabilities=["changes_world"], rerunnable=False, timeout=2)
    async def mark(x: int, y: int) -> str:
        """Mark the star's position on the level map."""
        return f"{x},{y}"

    assert (mark.name, mark.terminal, mark.needs_approval, mark.rerunnable, mark.timeout) == ("mark_star", True, True, False, 2)
    assert mark.capabilities == {"changes_world"}


def test_unknown_capabilities_and_unsupported_types_fail_at_definition():
    with pytest.raises(ValueError, match="unknown tool capabilities"):
        tool(capabilities=["reads_minds"])(lambda: "")
    with pytest.raises(TypeError, match="cannot be described to a model"):

        @tool
        def bad(when: complex) -> str:
            """Bad."""
            return ""


def test_plain_functions_become_tools_when_given_to_an_agent():
    def get_time(zone: str) -> str:
        """Current time in an IANA time zone like Europe/Paris."""
        return "12:00"

    agent = bandoneon.Agent(ScriptedModel(), tools=[get_time], plugins=[], context_files=False)
    assert agent.tools["get_time"].parameters["required"] == ["zone"]


def test_two_tools_with_one_name_are_refused():
    with pytest.raises(bandoneon.ConfigError, match="two tools are named 'book'"):
        bandoneon.Agent(ScriptedModel(), tools=[book, book], plugins=[], context_files=False)


def test_non_string_results_are_sent_as_json():
    model = ScriptedModel(call("book", passenger="Ana", seats=[{"row": 2}]), "ok")
    bandoneon.Agent(model, tools=[book], plugins=[], context_files=False).run_sync("go")
    assert model.requests[1].messages[-1].content.startswith('{"passenger": "Ana", "rows": [2]')


def _counter_tools(start: int, label: str) -> bandoneon.Tool:
    """Built anew per call, as plugins build their tools for every agent."""

    def bump(by: int = start) -> str:
        """Add to the counter."""
        return f"{label}: {by}"

    return tool(bump)


def test_tools_made_from_one_def_keep_their_own_defaults_and_closures():
    first, second = _counter_tools(1, "first"), _counter_tools(5, "second")
    assert first.parameters == second.parameters
    for made, expected in ((first, "first: 1"), (second, "second: 5")):
        model = ScriptedModel(call("bump"), "ok")
        bandoneon.Agent(model, tools=[made], plugins=[], context_files=False).run_sync("go")
        assert model.requests[1].messages[-1].content == expected


def test_a_bound_method_tool_calls_its_own_instance_without_self_in_the_schema():
    class Counter:
        def __init__(self, name: str):
            self.name = name

        def read(self, shout: bool = False) -> str:
            """Read the counter."""
            return self.name.upper() if shout else self.name

    a, b = tool(Counter("a").read), tool(Counter("b").read)
    assert list(a.parameters["properties"]) == ["shout"] and a.description == "Read the counter."
    model = ScriptedModel(call("read", shout=True), "ok")
    bandoneon.Agent(model, tools=[b], plugins=[], context_files=False).run_sync("go")
    assert model.requests[1].messages[-1].content == "B"
    with pytest.raises(TypeError, match="\\*args"):
        tool(lambda *items: None)


def test_a_tool_without_parameters_refuses_arguments_it_does_not_take_as_any_tool_does():
    calls = []

    @bandoneon.tool
    def ping() -> str:
        """Ping the server."""
        calls.append(1)
        return "pong"

    agent = bandoneon.Agent(ScriptedModel(call("ping", x=1), call("ping"), "ok"), tools=[ping], plugins=[], context_files=False)
    assert agent.run_sync("go").text == "ok"
    results = [m for m in agent.transcript if m.role == "tool"]
    assert results[0].content == "Invalid arguments for ping: Unknown field 'x' (allowed: none)." and results[0].is_error
    assert results[1].content == "pong" and calls == [1]  # the refused call never ran
