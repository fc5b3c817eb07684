"""Text that no store can write — a lone surrogate, from a file name that is not UTF-8 or a JSON
``\\ud800`` escape without its pair — is replaced by U+FFFD where it enters a run: the prompt, a
tool's result, a reply parsed from a server, a reply from any other provider."""

from __future__ import annotations

import json
import os

import bandoneon
import pytest
from bandoneon.jsonlimits import loads_bounded
from bandoneon.testing import Reply, ScriptedModel, call
from hypothesis import given, settings
from hypothesis import strategies as st

NOT_UTF8_NAME = os.fsdecode(b"report-\xff.txt")  # what os.listdir gives for such a name: "report-\udcff.txt"


@bandoneon.tool
def list_reports(filter: str = "") -> str:
    """List the report files.

    Args:
        filter: only names that contain it
    """
    return f"{NOT_UTF8_NAME}\nsummary.txt"


def _writable(agent: bandoneon.Agent) -> str:
    """The history as a store writes it (raises if any text cannot be UTF-8)."""
    return json.dumps(bandoneon.unstructure(agent.transcript), ensure_ascii=False).encode("utf-8").decode()


def test_a_reply_and_arguments_from_the_server_with_lone_surrogates_are_kept_as_replacement_characters(mock_llm):
    mock_llm.add(Reply(tool_calls=[("list_reports", {"filter": "\ud800x"})]), Reply(text="Found report-\udcff.txt \ud83d\ude00"))
    agent = bandoneon.Agent(f"openai-compatible:mock@{mock_llm.base_url}", tools=[list_reports], context_files=False)
    result = agent.run_sync("Which reports are there?")
    assert result.ok and result.text == "Found report-\ufffd.txt 😀"
    assert "report-\ufffd.txt" in agent.transcript[2].content  # the tool's result
    assert json.loads(agent.transcript[1].tool_calls[0].arguments) == {"filter": "\ud800x"}  # as the model wrote it: an escape
    assert "\ud800" not in _writable(agent)


def test_any_provider_s_reply_and_a_tool_s_result_are_made_writable():
    model = ScriptedModel(call("list_reports"), "Found report-\udcff.txt")
    agent = bandoneon.Agent(model, tools=[list_reports], context_files=False)
    result = agent.run_sync(f"Which reports? I saw {NOT_UTF8_NAME}")
    assert result.text == "Found report-\ufffd.txt"
    assert agent.transcript[0].content == "Which reports? I saw report-\ufffd.txt"
    assert "\udcff" not in _writable(agent)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.booleans())
def test_what_loads_bounded_returns_can_always_be_written_as_utf8(value, as_bytes):
    text = json.dumps(value)  # lone surrogates travel as \\udxxx escapes, as a server sends them
    parsed = loads_bounded(text.encode() if as_bytes else text)
    json.dumps(parsed, ensure_ascii=False).encode("utf-8")
    if "\\ud" not in text.lower():
        assert parsed == json.loads(text)  # anything else comes back exactly


def test_parsed_arguments_are_bounded_like_any_json_from_outside():
    deep = bandoneon.ToolCall("c1", "x", "[" * 50_000 + "]" * 50_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        deep.parsed_arguments()
    assert bandoneon.ToolCall("c2", "x", '{"a": "\\udc80"}').parsed_arguments() == {"a": "\ufffd"}
