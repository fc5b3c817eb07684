"""Hostile input at the boundaries: any arguments a model writes, any names a server uses;
and the guard's trifecta check seeing MCP tools when the agent is built."""

from __future__ import annotations

import asyncio
import json

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel
from bandoneon_mcp import McpPlugin, Server
from bandoneon_mcp.tools import bandoneon_name
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_helpers import server, unmarked

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def echo_tool():
    agent = bandoneon.Agent(ScriptedModel(), plugins=[McpPlugin(servers={"box": server("toolbox.py", allow=["echo"])})], context_files=False)
    yield agent.tools["echo"]
    agent.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments=st.dictionaries(st.sampled_from(["text", "other", "bandoneon run", ""]), JSON, max_size=3))
def test_any_arguments_are_sent_or_refused_in_one_sentence(echo_tool, arguments):
    try:
        answer = asyncio.run(echo_tool.invoke(echo_tool.validate(json.dumps(arguments)), None))
    except bandoneon.ToolError as exc:
        assert str(exc).startswith("Invalid arguments for echo: ") and "Nothing was sent" in str(exc)
    else:  # the server's schema requires a string 'text' and allows other fields
        assert isinstance(arguments.get("text"), str) and unmarked(answer) == arguments["text"]


@given(name=st.text(min_size=1, max_size=100))
def test_any_server_tool_name_becomes_a_name_model_apis_accept(name):
    made = bandoneon_name("box", Server(command="x"), name, taken=set())
    assert 1 <= len(made) <= 64 and all(c.isascii() and (c.isalnum() or c in "_-") for c in made)


def test_the_guards_trifecta_check_sees_the_mcp_tools():
    guard = pytest.importorskip("bandoneon_guard")

    @bandoneon.tool(capabilities=["sends_out"])
    def send_mail(to: str, body: str) -> str:
        """Send an email."""
        return "sent"

    private_box = server("toolbox.py", allow=["echo"], capabilities=["reads_private"])
    with pytest.warns(guard.TrifectaWarning, match="private data: echo; outside text: echo; a way out: send_mail"):
        agent = bandoneon.Agent(ScriptedModel(), tools=[send_mail], plugins=[McpPlugin(servers={"box": private_box}), guard.Guard()], context_files=False)
    agent.close()
    with pytest.raises(bandoneon.ConfigError, match="lethal trifecta"):
        bandoneon.Agent(ScriptedModel(), tools=[send_mail], plugins=[McpPlugin(servers={"box": private_box}), guard.Guard(trifecta="refuse")], context_files=False)
