"""Robustness of the core loop (issue 13): hostile JSON, malformed replies, duplicate call ids,
tools that raise BaseException or hang. Each case: a typed result or error, a valid history,
an agent that keeps working."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from typing import Any

import bandoneon
import pytest
from hypothesis import given
from hypothesis import strategies as st
from bandoneon import BadResponse, JsonLimitError, JsonLimits, ServerError, loads_bounded, tool
from bandoneon.testing import Fault, Reply, ScriptedModel, assert_history_valid, call, reply

pytestmark = pytest.mark.usefixtures("only_the_core")

DEEP = 10_000


def make_agent(model, **kwargs) -> bandoneon.Agent:
    kwargs.setdefault("plugins", [])
    kwargs.setdefault("context_files", False)
    return bandoneon.Agent(model, **kwargs)


@tool
def echo(value: Any = None) -> str:
    """Echo the value back as JSON text."""
    return json.dumps(value)


# ------------------------------------------------------------------ bounded JSON


@pytest.mark.parametrize("opening, closing", [("[", "]"), ('{"a":', "}")])
def test_deeply_nested_tool_arguments_are_a_sentence_for_the_model(opening, closing):
    deep = '{"value": ' + opening * DEEP + "1" + closing * DEEP + "}"
    model = ScriptedModel(call("echo", deep), "done")
    agent = make_agent(model, tools=[echo])
    result = agent.run_sync("go")
    assert result.stop == "end_turn" and result.text == "done"
    answer = [m for m in agent.messages if m.role == "tool"][0]
    assert answer.is_error and "nested too deeply" in answer.content
    assert_history_valid(agent.messages)


def test_json_limits_are_configurable_per_agent():
    model = ScriptedModel(call("echo", value=[[[1]]]), call("echo", value=[1]), "done")
    agent = make_agent(model, tools=[echo], json_limits=JsonLimits(max_depth=3))
    agent.run_sync("go")
    first, second = [m for m in agent.messages if m.role == "tool"]
    assert first.is_error and "limit is 3 levels" in first.content
    assert not second.is_error and second.content == "[1]"


def test_loads_bounded_refuses_size_and_depth_and_accepts_what_fits():
    assert loads_bounded('{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}
    with pytest.raises(JsonLimitError, match="over the limit of 10"):
        loads_bounded('"' + "x" * 20 + '"', JsonLimits(max_bytes=10))
    with pytest.raises(JsonLimitError, match="nested too deeply"):
        loads_bounded("[" * 5 + "]" * 5, JsonLimits(max_depth=4))
    assert loads_bounded("[" * 4 + "]" * 4, JsonLimits(max_depth=4)) == [[[[]]]]
    assert loads_bounded('["[[[[[[", {"x": "{{{{{{"}]', JsonLimits(max_depth=2)) == ["[[[[[[", {"x": "{{{{{{"}]
    with pytest.raises(ValueError):
        JsonLimits(max_depth=0)


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(st.characters(blacklist_categories=["Cs"])),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(
    st.dictionaries(st.text(max_size=5), _JSON_VALUES, max_size=4),
    st.sampled_from(["", " ", "\n", "\t "]),
    st.sampled_from(["", " ", "\n", "}", "{}", ",", "x", "\x00", "]"]),
    st.integers(min_value=0, max_value=3),
)
def test_loads_bounded_reads_what_json_loads_reads_and_fails_as_it_does(document, before, after, cut):
    """Objects go straight to the scanner (the fast path): whatever surrounds or breaks them,
    the value or the error message is json.loads's own."""
    text = before + json.dumps(document, indent=cut or None) + after
    text = text[: len(text) - cut] if cut and not after else text
    try:
        expected: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        with pytest.raises(json.JSONDecodeError) as raised:
            loads_bounded(text)
        assert str(raised.value) == str(exc)
    else:
        assert loads_bounded(text) == expected


@pytest.mark.parametrize("status, error", [(200, BadResponse), (500, ServerError)])
def test_a_deeply_nested_reply_body_is_a_typed_error(mock_llm, status, error):
    mock_llm.add(Fault(status=status, body='{"error": ' + "[" * DEEP + "]" * DEEP + "}"), Reply(text="fine again"))
    agent = make_agent(f"openai-compatible:m@{mock_llm.base_url}")
    with pytest.raises(error):
        agent.run_sync("hi")
    assert_history_valid(agent.messages)
    assert agent.run_sync("again").text == "fine again"


def test_reply_size_limit_is_configurable_on_the_provider(mock_llm):
    mock_llm.add(Reply(text="x" * 5000))
    provider = bandoneon.OpenAICompatible("m", base_url=mock_llm.base_url, json_limits=JsonLimits(max_bytes=1000))
    with pytest.raises(BadResponse, match="over the limit of 1000"):
        make_agent(provider).run_sync("hi")


# ------------------------------------------------------------------ malformed 200 bodies

MALFORMED = {
    "choices null entry": {"choices": [None]},
    "choices a string": {"choices": "abc"},
    "message a string": {"choices": [{"message": "hello"}]},
    "content a number": {"choices": [{"message": {"role": "assistant", "content": 12345}}]},
    "usage not a count": {"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": "many"}},
    "usage a list": {"choices": [{"message": {"content": "hi"}}], "usage": [1, 2]},
    "tool_calls a dict": {"choices": [{"message": {"tool_calls": {"id": "x"}}}]},
    "tool call without function": {"choices": [{"message": {"tool_calls": [{"id": "x", "function": "f"}]}}]},
    "finish_reason a number": {"choices": [{"message": {"content": "hi"}, "finish_reason": 3}]},
    "top level a list": [1, 2, 3],
}


@pytest.mark.parametrize("body", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_200_body_is_bad_response_and_the_agent_goes_on(mock_llm, body):
    mock_llm.add(Fault(status=200, body=json.dumps(body)), Reply(text="fine again"))
    agent = make_agent(f"openai-compatible:m@{mock_llm.base_url}")
    with pytest.raises(BadResponse) as caught:
        agent.run_sync("hi")
    assert "\n" not in str(caught.value)
    assert_history_valid(agent.messages)
    assert agent.run_sync("again").text == "fine again"


# ------------------------------------------------------------------ duplicate call ids


def test_duplicate_call_ids_in_one_message_are_made_unique_before_running(mock_llm):
    mock_llm.add(
        Reply(tool_calls=[("dup", "echo", {"value": [1]}), ("dup", "echo", {"value": [2]}), ("dup_2", "echo", {"value": [3]})]),
        Reply(text="done"),
    )
    agent = make_agent(f"openai-compatible:m@{mock_llm.base_url}", tools=[echo])
    assert agent.run_sync("go").text == "done"
    assert_history_valid(agent.messages)
    sent = mock_llm.requests[1].json["messages"]
    ids = [c["id"] for c in sent[1]["tool_calls"]]
    assert len(set(ids)) == 3 and ids[0] == "dup"
    assert [m["tool_call_id"] for m in sent[2:5]] == ids
    assert [m["content"] for m in sent[2:5]] == ["[1]", "[2]", "[3]"]


def test_ids_reused_across_turns_still_get_their_results_when_the_run_is_cut():
    @tool
    def slow() -> str:
        """Wait for a long time, then say done."""
        threading.Event().wait(30)
        return "late"

    model = ScriptedModel(reply("", bandoneon.ToolCall("call_0", "echo", "{}")), reply("", bandoneon.ToolCall("call_0", "slow", "{}")))
    agent = make_agent(model, tools=[echo, slow], run_timeout=0.5)
    result = agent.run_sync("go")
    assert result.stop == "timeout"
    assert_history_valid(agent.messages)


# ------------------------------------------------------------------ BaseException from tools


@pytest.mark.parametrize("raised", [SystemExit(3), KeyboardInterrupt()], ids=["SystemExit", "KeyboardInterrupt"])
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_tool_raising_base_exception_ends_the_run_cleanly_then_propagates(raised, kind):
    sibling_started = threading.Event()

    async def quit_async() -> str:
        """Stop the whole program."""
        sibling_started.wait(5)
        raise raised

    def quit_sync() -> str:
        """Stop the whole program."""
        sibling_started.wait(5)
        raise raised

    async def sibling() -> str:
        """A long call running beside the one that quits."""
        sibling_started.set()
        import asyncio

        await asyncio.sleep(30)
        return "never"

    quitter = tool(quit_async if kind == "async" else quit_sync, name="quit")
    model = ScriptedModel([call("quit"), call("sibling")], "after", "fresh")
    agent = make_agent(model, tools=[quitter, tool(sibling)])
    with pytest.raises(type(raised)):
        agent.run_sync("go")
    assert_history_valid(agent.messages)
    assert [m.is_error for m in agent.messages if m.role == "tool"] == [True, True]
    assert agent.run_sync("again").text == "after"  # the agent is reusable
    other = make_agent(ScriptedModel("fresh"))  # and nothing leaked into the thread's loop
    assert other.run_sync("new").text == "fresh"


# ------------------------------------------------------------------ time bounds on tools


def test_run_timeout_bounds_a_single_sync_tool():
    release = threading.Event()

    @tool
    def hang() -> str:
        """Hang until released."""
        release.wait(60)
        return "released"

    agent = make_agent(ScriptedModel(call("hang"), "unreached"), tools=[hang], run_timeout=0.5)
    try:
        result = agent.run_sync("go")
    finally:
        release.set()
    assert result.stop == "timeout" and "run_timeout" in result.detail
    assert_history_valid(agent.messages)


def test_a_sync_tool_past_its_timeout_never_keeps_the_process_alive(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text(
        textwrap.dedent(
            """
            import time, bandoneon
            from bandoneon.testing import ScriptedModel, call

            @bandoneon.tool
            def hang() -> str:
                \"\"\"Hang for ten minutes.\"\"\"
                time.sleep(600)
                return "late"

            for options in ({"tool_timeout": 0.2}, {"run_timeout": 0.3}):
                agent = bandoneon.Agent(ScriptedModel(call("hang"), "done"), tools=[hang], plugins=[], context_files=False, **options)
                result = agent.run_sync("go")
                print(result.stop, [m.content[:40] for m in agent.messages if m.role == "tool"])
            """
        )
    )
    finished = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env={"BANDONEON_PLUGINS": "", "PATH": ""})
    assert finished.returncode == 0, finished.stderr
    first, second = finished.stdout.splitlines()
    assert first.startswith("end_turn") and "took longer than 0.2 seconds" in first
    assert second.startswith("timeout")
