"""A server's tool list as a hostile (or merely unusual) server writes it: a tool changed in
place after ``tools/list_changed``, names that differ only past the 64th character, an empty
name."""

from __future__ import annotations

import bandoneon
from bandoneon.testing import ScriptedModel, call
from bandoneon_mcp import McpPlugin, McpToolsChanged, Server
from bandoneon_mcp.tools import bandoneon_name
from hypothesis import given
from hypothesis import strategies as st
from mcp_helpers import server, tool_results


def test_a_tool_the_server_changes_in_place_is_offered_and_checked_with_its_new_schema():
    model = ScriptedModel(call("reshape"), call("seats", count=3), "Booked.")
    agent = bandoneon.Agent(model, plugins=[McpPlugin(servers={"re": server("reshaping.py")})], context_files=False)
    changes: list[McpToolsChanged] = []
    agent.on("mcp_tools_changed", changes.append)
    try:
        result = agent.run_sync("book three")
    finally:
        agent.close()
    assert tool_results(result) == [("reshaped", False), ("booked 3", False)]
    offered = {spec.name: spec for spec in model.requests[1].tools}
    assert offered["seats"].parameters["properties"]["count"]["type"] == "integer"
    assert [(c.added, c.removed) for c in changes] == [(("seats",), ("seats",))]


def test_names_that_differ_only_past_the_64th_character_stay_two_tools():
    agent = bandoneon.Agent(ScriptedModel(), plugins=[McpPlugin(servers={"re": server("reshaping.py")})], context_files=False)
    try:
        long_names = [name for name in agent.tools if name.startswith("read_the_quarterly")]
        assert len(long_names) == 2 and all(len(name) <= 64 for name in long_names)
        assert sorted(agent.tools[name].description for name in long_names) == ["The north office. (from MCP server 're')", "The south office. (from MCP server 're')"]
    finally:
        agent.close()


SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


@given(first=st.text(max_size=130), second=st.text(max_size=130), server_name=st.text(min_size=1, max_size=20), prefix=st.none() | st.text(max_size=10))
def test_any_two_names_from_any_server_become_two_names_model_apis_accept(first, second, server_name, prefix):
    """Empty names, prefixes and server names with any characters, names up to MCP's 128."""
    options = Server(command="x", prefix=prefix)
    one = bandoneon_name(server_name, options, first, taken=set())
    try:
        two = bandoneon_name(server_name, options, second, taken={one})
    except bandoneon.ConfigError:
        two = None  # still taken after the server's name: the error says to set a prefix
    for made in (one, two):
        assert made is None or (1 <= len(made) <= 64 and set(made) <= SAFE)
    assert one != two
