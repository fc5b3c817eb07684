"""Hunted over loopback HTTP: a stream that opens with a byte-order mark, a typed answer that
is not finite (``NaN``, ``Infinity``, ``1e999``: Python's decoder takes them, JSON does not),
a typeless part of an output schema (``Any``) sent as strict; a provider's own TimeoutError;
a wrap-up that comes back with tool calls, or whose check raises."""

from __future__ import annotations

import json
import math
from typing import Any

import attrs
import bandoneon
import pytest
from bandoneon.testing import Fault, Reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.usefixtures("only_the_core")


def agent_for(server, **kwargs) -> bandoneon.Agent:
    kwargs.setdefault("plugins", [])
    return bandoneon.Agent(f"openai-compatible:mock@{server.base_url}", context_files=False, **kwargs)


def sse_body(*chunks: dict) -> bytes:
    return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()


def text_chunk(text: str) -> dict:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


@pytest.mark.parametrize("content_type", ["text/event-stream", "text/event-stream; charset=utf-8"])
def test_a_stream_that_starts_with_a_byte_order_mark_keeps_its_first_event(mock_llm, content_type):
    """The SSE format says a leading U+FEFF is ignored; it used to hide the first ``data:`` line."""
    body = b"\xef\xbb\xbf" + sse_body(text_chunk("Hello "), text_chunk("world."), {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    mock_llm.add(Fault(status=200, body=body, headers={"content-type": content_type}))
    agent = agent_for(mock_llm)
    shown: list[str] = []
    agent.on("text_delta", lambda event: shown.append(event.text))
    result = agent.run_sync("hi")
    assert result.text == "Hello world."
    assert "".join(shown) == "Hello world."
    agent.close()


@attrs.define
class Reading:
    value: float


@attrs.define
class Batch:
    readings: list[Reading]


NOT_FINITE = st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e400", "1" * 400 + ".5"])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token=NOT_FINITE, output_type=st.sampled_from([float, Reading, list[Any], dict[str, Any]]), mode=st.sampled_from(["native", "tool"]))
def test_a_non_finite_number_in_a_typed_answer_is_sent_back_for_repair(mock_llm, token, output_type, mode):
    mock_llm.reset()
    if output_type is Reading:
        bad, good, expected = f'{{"value": {token}}}', '{"value": 2.5}', Reading(2.5)
    elif output_type == list[Any]:
        bad, good, expected = f'{{"answer": [1, {{"x": {token}}}]}}', '{"answer": [1, {"x": 2.5}]}', [1, {"x": 2.5}]
    elif output_type == dict[str, Any]:
        bad, good, expected = f'{{"answer": {{"x": [{token}]}}}}', '{"answer": {"x": [2.5]}}', {"x": [2.5]}
    else:
        bad, good, expected = f'{{"answer": {token}}}', '{"answer": 2.5}', 2.5
    if mode == "native":
        mock_llm.add(Reply(text=bad), Reply(text=good))
    else:
        mock_llm.add(Reply(tool_calls=[("final_answer", bad)]), Reply(tool_calls=[("final_answer", good)]))
    agent = agent_for(mock_llm, output_type=output_type, output_mode=mode)
    result = agent.run_sync("measure")
    assert result.ok and result.output == expected, result.detail
    repair = mock_llm.requests[1].json["messages"][-1]["content"]
    assert "finite" in repair
    agent.close()


@pytest.mark.parametrize("token", ["NaN", "-Infinity", "1e999"])
def test_a_non_finite_number_in_a_terminal_tools_input_is_sent_back_for_repair(mock_llm, token):
    """A terminal tool's input is decoded by the tool's own argument reading, which takes what
    Python's decoder takes: as a typed answer it is held to JSON's finite numbers all the same."""

    @bandoneon.tool(terminal=True)
    def submit(value: float) -> str:
        """Hand in the reading."""
        return "submitted"

    @bandoneon.tool(terminal=True)
    def submit_all(readings: list[Reading]) -> str:
        """Hand in the readings."""
        return "submitted"

    stop = pytest.importorskip("bandoneon_stop").StopRules()
    mock_llm.add(Reply(tool_calls=[("submit", f'{{"value": {token}}}')]), Reply(tool_calls=[("submit", '{"value": 2.5}')]))
    agent = agent_for(mock_llm, tools=[submit], output_type=Reading, plugins=[stop])
    result = agent.run_sync("measure")
    assert (result.stop, result.ok, result.output) == ("terminal_tool", True, Reading(2.5)), result.detail
    assert "finite" in mock_llm.requests[1].json["messages"][-1]["content"]
    agent.close()

    mock_llm.reset()  # nested in the tool's own structured arguments
    mock_llm.add(
        Reply(tool_calls=[("submit_all", f'{{"readings": [{{"value": 1}}, {{"value": {token}}}]}}')]),
        Reply(tool_calls=[("submit_all", '{"readings": [{"value": 1}]}')]),
    )
    agent = agent_for(mock_llm, tools=[submit_all], output_type=Batch, plugins=[stop])
    result = agent.run_sync("measure")
    assert (result.stop, result.ok, result.output) == ("terminal_tool", True, Batch([Reading(1.0)])), result.detail
    assert "finite" in mock_llm.requests[1].json["messages"][-1]["content"]
    agent.close()


def test_a_finite_answer_that_only_looks_like_one_is_taken(mock_llm):
    """``"NaN"`` inside a string and a large finite exponent are fine."""
    mock_llm.add(Reply(text='{"answer": ["NaN", "Infinity", 1e300, -1e-400]}'))
    agent = agent_for(mock_llm, output_type=list[Any], output_mode="native")
    result = agent.run_sync("go")
    assert result.output == ["NaN", "Infinity", 1e300, -0.0] and all(not isinstance(v, float) or math.isfinite(v) for v in result.output)
    agent.close()


@attrs.define
class Loose:
    items: list[Any]
    extra: Any


@pytest.mark.parametrize("output_type", [list[Any], Loose, list[list[Any]], Any | None])
def test_an_output_schema_with_a_typeless_part_is_not_sent_as_strict(mock_llm, output_type):
    """OpenAI's strict mode refuses a schema with no ``type`` (``items: {}`` for ``Any``):
    "In context=(..., 'items'), schema must have a 'type' key". Sent as non-strict instead."""
    mock_llm.add(Reply(text='{"items": [1], "extra": 2}' if output_type is Loose else '{"answer": [[1]]}'))
    agent = agent_for(mock_llm, output_type=output_type, output_mode="native")
    agent.run_sync("go")
    assert mock_llm.requests[0].json["response_format"]["json_schema"]["strict"] is False
    agent.close()


@attrs.define
class Tight:
    name: str
    sizes: list[int]
    kind: Any = attrs.field(default=None)


def test_typed_schemas_stay_strict(mock_llm):
    mock_llm.add(Reply(text='{"answer": [1]}'))
    agent = agent_for(mock_llm, output_type=list[int], output_mode="native")
    agent.run_sync("go")
    assert mock_llm.requests[0].json["response_format"]["json_schema"]["strict"] is True
    agent.close()


# --- a TimeoutError that is not the run's own timer ---------------------------------------


def _raises_timeout(request):
    raise TimeoutError("the socket read timed out")  # what a provider on a blocking SDK may raise


@pytest.mark.parametrize("limits", [{}, {"run_timeout": 60}, {"turn_timeout": 60}])
def test_a_timeout_error_from_the_provider_is_an_error_not_a_run_timeout(limits):
    """Only the run's (or turn's) own timer is a ``timeout`` exit; a ``TimeoutError`` raised by a
    provider used to end the run quietly as "took longer than run_timeout=None"."""
    from bandoneon.testing import FunctionModel

    agent = bandoneon.Agent(FunctionModel(_raises_timeout), plugins=[], context_files=False, **limits)
    ends: list = []
    agent.on("run_end", ends.append)
    with pytest.raises(TimeoutError, match="socket read"):
        agent.run_sync("hi")
    assert ends[-1].reason == "error"


# --- a wrap-up that comes back with tool calls ---------------------------------------------


@bandoneon.tool
def ping() -> str:
    """Ping."""
    return "pong"


class NaiveWrapUp(bandoneon.Plugin):
    """Asks again with the last request as it was (tools still offered): the reply calls a tool."""

    name = "naive-wrap-up"

    @bandoneon.hookimpl
    async def wrap_up(self, run, stop):
        reply = await run.call_model(run.last_request)
        return reply.message


def test_a_wrap_up_with_tool_calls_leaves_no_call_without_a_result():
    from bandoneon.testing import ScriptedModel, call

    model = ScriptedModel(call("ping"), bandoneon.testing.reply("Best so far: pong.", call("ping")), "next run")
    agent = bandoneon.Agent(model, tools=[ping], plugins=[NaiveWrapUp()], context_files=False, max_turns=1)
    result = agent.run_sync("go")
    assert (result.stop, result.text) == ("max_turns", "Best so far: pong.")
    answered = {m.tool_call_id for m in agent.messages if m.role == "tool"}
    assert all(c.id in answered for m in agent.messages for c in m.tool_calls)
    assert agent.run_sync("again").text == "next run"  # the history the next run sends is valid


class Wraps(bandoneon.Plugin):
    name = "wraps"

    @bandoneon.hookimpl
    def wrap_up(self, run, stop):
        return bandoneon.Message.assistant("Best so far: pong.")


class BrokenCheck(bandoneon.Plugin):
    name = "broken-check"

    def __init__(self) -> None:
        self.after_runs: list = []

    @bandoneon.hookimpl
    def check_answer(self, run, answer):
        raise KeyError("lost the ledger")

    @bandoneon.hookimpl
    def after_run(self, run, result):
        self.after_runs.append(result)


def test_a_check_answer_that_raises_on_a_wrap_up_still_ends_the_run_with_run_end_and_after_run():
    """Every other failing hook ends the run through ``run_end`` (reason ``error``) and
    ``after_run``; on the wrap-up's check the run used to stop without either."""
    from bandoneon.testing import ScriptedModel, call

    checker = BrokenCheck()
    agent = bandoneon.Agent(ScriptedModel(call("ping")), tools=[ping], plugins=[Wraps(), checker], context_files=False, max_turns=1)
    ends: list = []
    agent.on("run_end", ends.append)
    with pytest.raises(bandoneon.PluginError, match="check_answer"):
        agent.run_sync("go")
    assert [e.reason for e in ends] == ["error"]
    assert [r.stop for r in checker.after_runs] == ["error"]


def test_a_string_is_not_a_list_of_strings():
    """Iterated, "urgent" became six one-letter tags and no repair was asked."""
    from bandoneon.testing import ScriptedModel, call

    model = ScriptedModel(call("final_answer", {"answer": "urgent"}), call("final_answer", {"answer": ["urgent"]}))
    agent = bandoneon.Agent(model, plugins=[], context_files=False, output_type=list[str])
    assert agent.run_sync("tags?").output == ["urgent"]  # after one repair


def test_a_string_or_an_object_given_for_a_list_argument_is_sent_back_not_iterated():
    from bandoneon.testing import ScriptedModel, call

    seen: list[list[str]] = []

    @bandoneon.tool
    def label(tags: list[str]) -> str:
        """Label the ticket."""
        seen.append(tags)
        return "labelled"

    model = ScriptedModel(call("label", tags="urgent"), call("label", tags={"urgent": True}), call("label", tags=["urgent"]), "done")
    agent = bandoneon.Agent(model, tools=[label], plugins=[], context_files=False)
    assert agent.run_sync("label it").text == "done"
    assert seen == [["urgent"]]
    errors = [m.content for m in agent.messages if m.role == "tool" and m.is_error]
    assert ["a string" in errors[0], "an object" in errors[1]] == [True, True]
