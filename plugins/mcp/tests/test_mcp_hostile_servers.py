"""What a broken or hostile MCP server can do to an agent: answers no SDK would send, errors
that look like a dead connection, a tool list that never comes, schemas that are not schemas;
and an agent closed while a call is under way."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import warnings
from pathlib import Path

import bandoneon
import bandoneon_mcp.config
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_mcp import McpPlugin, McpServerRestarted, McpServerWarning
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_helpers import SERVERS, mcp_children, server, tool_results, unmarked

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
BLOCK = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image", "audio", "resource", "resource_link", "hologram"]) | st.text(max_size=8)},
    optional={
        "text": JSON,
        "data": JSON,
        "mimeType": JSON,
        "uri": st.sampled_from(["notes://a", "not a uri"]) | JSON,
        "name": JSON,
        "resource": st.dictionaries(st.sampled_from(["uri", "text", "blob", "mimeType"]), JSON, max_size=4),
    },
)
RESULT = st.fixed_dictionaries(
    {}, optional={"content": st.lists(BLOCK, max_size=3) | JSON, "structuredContent": JSON, "isError": JSON}
)
ERROR = st.fixed_dictionaries({"code": st.sampled_from([-32000, -32001, -32603, -32602, 1]), "message": st.text(max_size=40)})
REPLY = st.builds(lambda result: {"result": result}, RESULT) | st.builds(lambda error: {"error": error}, ERROR)


def agent_with(servers: dict[str, object], *replies: object, **options: object) -> bandoneon.Agent:
    return bandoneon.Agent(ScriptedModel(*replies), plugins=[McpPlugin(servers=servers)], context_files=False, **options)


def raw(**options: object) -> dict[str, object]:
    return server("raw.py", **options)


@pytest.fixture
def raw_tools():
    agent = agent_with({"raw": raw()})
    yield agent.tools["reflect"], agent.tools["pid"]
    agent.close()


def invoke(tool: bandoneon.Tool, arguments: dict[str, object]) -> str:
    return unmarked(asyncio.run(tool.invoke(tool.validate(json.dumps(arguments)), None)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reply=REPLY)
def test_any_reply_a_server_sends_is_text_or_one_clear_error_and_the_server_keeps_running(raw_tools, reply):
    reflect, pid = raw_tools
    before = invoke(pid, {})
    try:
        text = invoke(reflect, {"reply": reply})
    except bandoneon.ToolError as exc:
        message = str(exc)
        assert message.startswith("MCP server 'raw' ") and "validation error" not in message and "pydantic" not in message
        assert len(message) < 600
    else:
        assert isinstance(text, str)
    assert invoke(pid, {}) == before  # an answer, however odd, is not a dead server: no restart


def test_a_server_error_with_the_code_of_a_closed_connection_is_the_servers_error_not_a_death():
    quota = {"error": {"code": -32000, "message": "quota exceeded for today"}}
    agent = agent_with({"raw": raw(env={"CASE": "quota"})}, call("pid"), call("reflect", reply=quota), call("reflect", reply=quota), call("pid"), "ok")
    restarts: list[McpServerRestarted] = []
    agent.on("mcp_server_restarted", restarts.append)
    try:
        result = agent.run_sync("use it")
    finally:
        agent.close()
    first_pid, first, second, last_pid = tool_results(result)
    assert first == second == ("MCP server 'raw' refused the request: quota exceeded for today", True)
    assert first_pid == last_pid and restarts == []


def test_a_server_that_announces_new_tools_and_never_lists_them_does_not_hold_the_run():
    hangs = server("treacherous.py", "relist-hangs", startup_timeout=2)
    # run_timeout only keeps a regression from hanging the suite; the run must end well before.
    agent = agent_with({"t": hangs}, call("poke"), call("echo", text="still here"), "done", run_timeout=120)
    try:
        with pytest.warns(McpServerWarning, match="MCP server 't' did not list its tools within 2 s .*its tools stay as they were"):
            result = agent.run_sync("poke it")
    finally:
        agent.close()
    assert result.ok, result.detail
    assert tool_results(result)[1] == ("still here", False)


SCHEMA = st.recursive(
    st.dictionaries(st.sampled_from(["type", "$schema", "$ref", "required", "enum", "items", "properties"]), JSON, max_size=3),
    lambda children: st.fixed_dictionaries({"type": st.just("object"), "properties": st.dictionaries(st.text(max_size=5), children, max_size=2)}),
    max_leaves=4,
) | st.sampled_from([{"$ref": "#"}, {"type": "object", "$ref": "#"}, {"$schema": []}, {"properties": {"a": {"$ref": "http://127.0.0.1:9/x"}}}])


@settings(max_examples=25, deadline=None)
@given(schema=SCHEMA, arguments=st.dictionaries(st.sampled_from(["a", "text"]), JSON, max_size=2))
def test_any_input_schema_a_server_lists_leaves_an_agent_that_is_built_and_answers(schema, arguments):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a tool left out says so in a McpServerWarning (tested above)
        agent = agent_with({"raw": raw(args=[str(SERVERS / "raw.py"), json.dumps(schema)])})
    try:
        if "reflect" in agent.tools:
            try:
                invoke(agent.tools["reflect"], arguments)
            except bandoneon.ToolError as exc:
                assert "Nothing was sent" in str(exc) or str(exc).startswith("MCP server 'raw' ")
    finally:
        agent.close()


@settings(max_examples=20, deadline=None)
@given(said=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30) | st.sampled_from(["\x1b]52;c;cm0gLXJmIH4=\x07", "\x1b[2K\rall fine", "a\u202etxt.exe"]))
def test_what_a_server_that_does_not_start_says_reaches_the_terminal_shown_not_obeyed(said):
    dies = {"command": sys.executable, "args": ["-c", "import sys; print(sys.argv[1]); print(sys.argv[1], file=sys.stderr); sys.exit(3)", said]}
    with pytest.warns(McpServerWarning) as warned:
        agent_with({"dies": dies}).close()
    message = str(warned[0].message)
    assert bandoneon.for_terminal(message) == message


def test_a_tool_whose_schema_is_not_a_schema_is_left_out_and_the_agent_is_built():
    with pytest.warns(McpServerWarning, match="MCP server 't': tool 'broken' has an invalid input schema: .*The tool was left out"):
        agent = agent_with({"t": server("treacherous.py", "bad-schema")}, call("echo", text="fine"), "ok")
    try:
        assert sorted(agent.tools) == ["echo"]
        result = agent.run_sync("echo")
    finally:
        agent.close()
    assert tool_results(result) == [("fine", False)]


def test_a_tool_whose_schema_would_fill_the_models_context_is_left_out_and_the_agent_is_built():
    """Descriptions are cut (test_mcp_descriptions); the rest of a schema (enums, property names)
    cannot be, so a tool whose schema is above the README's 64 KiB is not offered at all."""
    huge = {"type": "object", "properties": {"city": {"enum": [f"city number {n:06d}" for n in range(4000)]}}}
    with pytest.warns(McpServerWarning, match=r"MCP server 'raw': tool 'reflect' has an input schema of \d+ characters .*The tool was left out"):
        agent = agent_with({"raw": raw(args=[str(SERVERS / "raw.py"), json.dumps(huge)])}, call("pid"), "ok")
    try:
        assert sorted(agent.tools) == ["pid"]
        result = agent.run_sync("pid")
    finally:
        agent.close()
    assert result.ok and not tool_results(result)[0][1]


async def test_a_resource_the_server_never_sends_is_given_up_at_the_default_limit(monkeypatch):
    """Not only tool calls: a request of the Python API (and of the resource tools) waits
    call_timeout, else DEFAULT_CALL_TIMEOUT (60 s, made 2 here), and the server is still used."""
    monkeypatch.setattr(bandoneon_mcp.config, "DEFAULT_CALL_TIMEOUT", 2)
    mcp = McpPlugin(servers={"raw": raw(env={"CASE": "unread"})})
    agent = bandoneon.Agent(ScriptedModel(), plugins=[mcp], context_files=False)
    try:
        with pytest.raises(TimeoutError, match="MCP server 'raw' did not answer resources/read within 2 s"):
            await mcp.read_resource("notes://never", server="raw")
        assert [tool.name for tool in (await mcp.list_tools())["raw"]] == ["reflect", "pid"]
    finally:
        await agent.aclose()


async def test_an_agent_closed_during_a_call_leaves_no_server_running(tmp_path):
    marker = tmp_path / "marker"
    before = set(mcp_children())
    agent = agent_with({"box": server("toolbox.py", env={"CASE": "closed-mid-call"})}, call("slow", seconds=60, marker=str(marker)), "done")
    run = asyncio.create_task(agent.run("slow"))
    for _ in range(600):
        if marker.exists():
            break
        await asyncio.sleep(0.05)
    await agent.aclose()
    result = await run
    await agent.aclose()
    [(content, is_error)] = tool_results(result)
    assert is_error and "was closed" in content
    assert set(mcp_children()) - before == set()


def test_needs_approval_for_every_tool_covers_the_resource_tools():
    agent = agent_with({"box": server("toolbox.py", allow=["echo"], resources=True, needs_approval=["*"])})
    try:
        assert {name: tool.needs_approval for name, tool in agent.tools.items()} == {"echo": True, "list_resources": True, "read_resource": True}
    finally:
        agent.close()


def test_serving_tools_serves_only_those_tools_whatever_bandoneon_toml_configures(tmp_path):
    (tmp_path / "bandoneon.toml").write_text(
        f"""
[plugins.mcp.servers.time]
command = {json.dumps(sys.executable)}
args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
"""
    )
    serve = {
        "command": sys.executable,
        "args": ["-c", "import sys; from bandoneon.cli import main; sys.exit(main(sys.argv[1:]))", "mcp", "serve", "--tools", "served:add"],
        "env": {"PYTHONPATH": str(Path(__file__).parent), "PATH": os.environ.get("PATH", "")},
        "cwd": str(tmp_path),
    }
    agent = agent_with({"peer": serve})
    try:
        assert sorted(agent.tools) == ["add"]
    finally:
        agent.close()
