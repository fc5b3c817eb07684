"""Resources and prompts from Python and as tools; tools/list_changed; streamable HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_mcp import McpPlugin, McpServerWarning, McpToolsChanged
from mcp_helpers import SERVERS, server, tool_results


async def test_resources_and_prompts_are_readable_from_python():
    mcp = McpPlugin(servers={"box": server("toolbox.py"), "time": server("toolbox.py", env={"CASE": "second"})})
    agent = bandoneon.Agent(ScriptedModel(), plugins=[mcp], context_files=False)
    try:
        listed = await mcp.list_resources("box")
        [contents] = await mcp.read_resource("notes://today", server="box")
        prompt = await mcp.get_prompt("greet", {"name": "Ana"})
        prompts = await mcp.list_prompts()
        with pytest.raises(KeyError, match="no MCP server named 'nope'"):
            await mcp.list_tools("nope")
        with pytest.raises(KeyError, match="no configured MCP server has a prompt named 'farewell'"):
            await mcp.get_prompt("farewell")
    finally:
        await agent.aclose()
    assert [str(r.uri) for r in listed["box"]] == ["notes://today"]
    assert contents.text == "Milonga at nine."
    assert prompt.messages[0].content.text == "Greet Ana warmly."
    assert [p.name for p in prompts["box"]] == ["greet"]


def test_resources_are_offered_to_the_model_as_two_tools_when_asked():
    model = ScriptedModel(call("list_resources"), call("read_resource", uri="notes://today"), call("read_resource", uri="notes://nothing"), "At nine.")
    agent = bandoneon.Agent(model, plugins=[McpPlugin(servers={"box": server("toolbox.py", allow=["echo"], resources=True)})], context_files=False)
    try:
        assert sorted(agent.tools) == ["echo", "list_resources", "read_resource"]
        result = agent.run_sync("When is the milonga?")
    finally:
        agent.close()
    listing, reading, missing = tool_results(result)
    assert listing == ("notes://today — today (text/plain): Today's note", False)
    assert reading == ("[resource notes://today (text/plain)]\nMilonga at nine.", False)
    assert missing[1] and "notes://nothing" in missing[0]


def test_new_tools_announced_by_the_server_are_offered_from_the_next_turn():
    model = ScriptedModel(call("grow"), call("extra"), "Grown.")
    agent = bandoneon.Agent(model, plugins=[McpPlugin(servers={"box": server("toolbox.py", env={"CASE": "grow"})})], context_files=False)
    changes: list[McpToolsChanged] = []
    agent.on("mcp_tools_changed", changes.append)
    try:
        result = agent.run_sync("grow")
    finally:
        agent.close()
    grown, extra = tool_results(result)
    assert grown == ("grown", False) and extra == ("extra here", False)
    assert "extra" not in [spec.name for spec in model.requests[0].tools]
    assert "extra" in [spec.name for spec in model.requests[1].tools]
    assert [(c.server, c.added, c.removed) for c in changes] == [("box", ("extra",), ())]


def test_tools_the_server_stops_listing_are_taken_off_from_the_next_turn():
    model = ScriptedModel(call("vanish"), call("vanish"), "Done.")
    agent = bandoneon.Agent(model, plugins=[McpPlugin(servers={"box": server("toolbox.py", env={"CASE": "grow"})})], context_files=False)
    changes: list[McpToolsChanged] = []
    agent.on("mcp_tools_changed", changes.append)
    try:
        result = agent.run_sync("vanish")
        assert "vanish" not in agent.tools
    finally:
        agent.close()
    first, second = tool_results(result)
    assert first == ("gone", False)
    assert second[1] and "vanish" in second[0]  # a call the model still makes is an unknown tool
    assert "vanish" in [spec.name for spec in model.requests[0].tools]
    assert "vanish" not in [spec.name for spec in model.requests[1].tools]
    assert [(c.server, c.added, c.removed) for c in changes] == [("box", (), ("vanish",))]


@pytest.fixture
def http_toolbox():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, str(SERVERS / "toolbox.py"), "--http", str(port)], stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(timeout=30)


def test_a_server_over_streamable_http(http_toolbox):
    model = ScriptedModel([call("echo", text="over HTTP"), call("weather", city="Salta")], "ok")
    servers = {"box": {"url": http_toolbox, "headers": {"X-Client": "bandoneon-tests"}, "allow": ["echo", "weather"]}}
    agent = bandoneon.Agent(model, plugins=[McpPlugin(servers=servers)], context_files=False)
    try:
        result = agent.run_sync("echo")
    finally:
        agent.close()
    assert tool_results(result) == [
        ("over HTTP", False),
        ('{\n  "city": "Salta",\n  "celsius": 21\n}', False),
    ]


def test_an_http_server_that_is_not_there_is_a_clear_warning():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.warns(McpServerWarning, match=f"MCP server .gone. could not be started at http://127.0.0.1:{port}/mcp: .*The agent has none of its tools"):
        agent = bandoneon.Agent(ScriptedModel(), plugins=[McpPlugin(servers={"gone": {"url": f"http://127.0.0.1:{port}/mcp", "startup_timeout": 5}})], context_files=False)
    agent.close()
    assert agent.tools == {}
