"""``bandoneon mcp serve``: another bandoneon process (or any MCP client) uses our tools and agents.

The round trip: an agent here calls, through the MCP client, tools and an agent served by a
second bandoneon process over streamable HTTP on 127.0.0.1.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_mcp import McpPlugin
from mcp_helpers import tool_results
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).parent
SERVE = "import sys; from bandoneon.cli import main; sys.exit(main(sys.argv[1:]))"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve_over_http(*arguments: str, env: dict[str, str] | None = None):
    port = free_port()
    environment = {**os.environ, "PYTHONPATH": str(HERE), **(env or {})}
    process = subprocess.Popen(
        [sys.executable, "-c", SERVE, "mcp", "serve", *arguments, "--transport", "http", "--port", str(port)],
        env=environment,
        stderr=subprocess.PIPE,
        text=True,
    )
    for _ in range(600):
        if process.poll() is not None:
            raise AssertionError(f"mcp serve exited: {process.stderr.read()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    return process, f"http://127.0.0.1:{port}/mcp"


def run_against_served(served: list[str], model: ScriptedModel, *, env: dict[str, str] | None = None, tools=(), plugins=()) -> bandoneon.RunResult:
    """One run of an agent whose MCP server ``rail`` is ``mcp serve --tools *served*`` over HTTP."""
    process, url = serve_over_http(*(a for target in served for a in ("--tools", target)), env=env)
    try:
        servers = {"rail": {"url": url, "trusted": True}}
        agent = bandoneon.Agent(model, tools=list(tools), plugins=[McpPlugin(servers=servers), *plugins], context_files=False)
        try:
            return agent.run_sync("go")
        finally:
            agent.close()
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def served():
    process, url = serve_over_http("--tools", "served", "--agent", "served:make_agent")
    yield url
    process.terminate()
    process.wait(timeout=30)


def test_an_agent_calls_tools_and_an_agent_served_by_another_bandoneon_process(served):
    model = ScriptedModel([call("add", a=40, b=2), call("ask_agent", brief="Add two and three.")], "Both done.")
    agent = bandoneon.Agent(model, plugins=[McpPlugin(servers={"peer": {"url": served, "trusted": True}})], context_files=False)
    try:
        assert sorted(agent.tools) == ["add", "ask_agent", "book_ticket", "open_ledger", "wait_for_the_printer"]
        assert agent.tools["add"].parameters["required"] == ["a", "b"]
        result = agent.run_sync("Use the peer.")
    finally:
        agent.close()
    added, asked = (text for text, _ in tool_results(result))
    assert added == "42"
    assert asked == "The sum is 5."


async def test_the_served_agent_reports_progress_after_each_turn(served):
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    async with streamable_http_client(served) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("ask_agent", {"brief": "Add two and three."}, progress_callback=progress)
        empty = await session.call_tool("ask_agent", {"brief": "  "})
    assert result.content[0].text == "The sum is 5." and not result.is_error
    assert [value for value, _, _ in seen] == [1, 2]
    assert seen[0][1] == 25 and seen[0][2] == "turn 1 of at most 25 done"
    assert empty.is_error and "brief" in empty.content[0].text


def test_policy_packs_apply_to_what_is_served():
    pytest.importorskip("bandoneon_policy_example", reason="needs the example policy pack installed (not in alone-mcp)")
    model = ScriptedModel([call("book_ticket", train=7, seat_class="first"), call("book_ticket", train=7, seat_class="tourist")], "ok")
    result = run_against_served(["served"], model, env={"BANDONEON_DISABLED_PLUGINS": ""})
    first, tourist = tool_results(result)
    assert first[1] and "manager's approval" in first[0]
    assert not tourist[1] and "DNI ***" in tourist[0] and "30.123.456" not in tourist[0]


def test_serving_nothing_is_a_clear_error(capsys):
    from bandoneon.cli import main

    assert main(["mcp", "serve"]) == 1
    assert "nothing to serve" in capsys.readouterr().err


def test_tools_served_over_stdio_are_used_by_an_agent_as_a_stdio_server():
    serve = {
        "command": sys.executable,
        "args": ["-c", SERVE, "mcp", "serve", "--tools", "served:add"],
        "env": {"PYTHONPATH": str(HERE), "BANDONEON_DISABLED_PLUGINS": "policy-example"},
    }
    model = ScriptedModel(call("add", a=1, b=2), call("add", a="one", b=2), "3")
    agent = bandoneon.Agent(model, plugins=[McpPlugin(servers={"peer": serve})], context_files=False)
    try:
        result = agent.run_sync("add")
    finally:
        agent.close()
    right, wrong = tool_results(result)
    assert right == ("3", False)
    assert wrong[1] and "a: 'one' is not of type 'integer'" in wrong[0]


def test_a_served_tool_that_raises_tells_the_client_without_paths_or_passwords():
    """An exception's message is for developers: like an agent's own tools, a served tool's
    failure reaches the client with the password of a DSN and the folders of a path masked."""
    result = run_against_served(["served:open_ledger"], ScriptedModel(call("open_ledger"), "ok"))
    ((text, is_error),) = tool_results(result)
    assert is_error and "open_ledger failed: could not connect to postgres://app:***@db/prod" in text
    assert "hunter2" not in text and str(HERE) not in text


def test_a_policy_rule_about_a_servers_tool_holds_when_the_agent_offers_it_under_another_name():
    """The agent has a ``book_ticket`` of its own, so the server's is offered as
    ``rail_book_ticket``; a rule about ``book_ticket`` still holds for it, and for the local one,
    and a redaction about it still masks what it returns. (The server serves with no policy.)"""
    guard = pytest.importorskip("bandoneon_guard", reason="needs bandoneon-guard (not in alone-mcp)")

    @bandoneon.tool
    def book_ticket(train: int, seat_class: str) -> str:
        """Book one seat on our own trains."""
        return "booked locally"

    rules = [{"name": "tourist-only", "tool": "book_ticket", "argument": "seat_class", "one_of": ["tourist"], "action": "deny"}]
    redactions = [{"name": "national-id", "pattern": r"DNI\s*[\d.]+", "replacement": "DNI ***", "tools": ["book_ticket"]}]
    model = ScriptedModel([call("rail_book_ticket", train=7, seat_class="first"), call("rail_book_ticket", train=7, seat_class="tourist")], "ok")
    plugins = [guard.Guard(rules=rules, redactions=redactions)]
    result = run_against_served(["served:book_ticket"], model, env={"BANDONEON_DISABLED_PLUGINS": "policy-example"}, tools=[book_ticket], plugins=plugins)
    assert [c.name for m in result.messages for c in m.tool_calls] == ["rail_book_ticket", "rail_book_ticket"]
    (first, first_failed), (tourist, tourist_failed) = tool_results(result)
    # Refused by the guard's rule, or first by the example pack's about book_ticket when it runs.
    assert first_failed and ("Blocked by policy" in first or "first-class-needs-approval" in first) and "Booked" not in first
    assert not tourist_failed and "DNI ***" in tourist and "30.123.456" not in tourist


def test_a_served_tool_is_stopped_at_its_own_timeout_and_the_server_answers_the_next_call():
    serve = {
        "command": sys.executable,
        "args": ["-c", SERVE, "mcp", "serve", "--tools", "served:wait_for_the_printer", "--tools", "served:add"],
        "env": {"PYTHONPATH": str(HERE), "BANDONEON_DISABLED_PLUGINS": "policy-example"},
        "call_timeout": 20,  # the client's limit, far above the tool's own two seconds
    }
    model = ScriptedModel(call("wait_for_the_printer"), call("add", a=1, b=2), "ok")
    agent = bandoneon.Agent(model, plugins=[McpPlugin(servers={"peer": serve})], context_files=False)
    try:
        result = agent.run_sync("print, then add")
    finally:
        agent.close()
    waited, added = tool_results(result)
    assert waited == ("wait_for_the_printer took longer than 2 seconds and was stopped. Try a smaller request.", True)
    assert added == ("3", False)


def test_serving_a_module_serves_the_tools_it_defines_not_the_ones_it_imports():
    serve = {
        "command": sys.executable,
        "args": ["-c", SERVE, "mcp", "serve", "--tools", "served_reexports"],
        "env": {"PYTHONPATH": str(HERE), "BANDONEON_DISABLED_PLUGINS": "policy-example"},
    }
    agent = bandoneon.Agent(ScriptedModel(), plugins=[McpPlugin(servers={"peer": serve})], context_files=False)
    try:
        assert sorted(agent.tools) == ["multiply"]
    finally:
        agent.close()
