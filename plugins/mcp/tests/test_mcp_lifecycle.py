"""One session per server, shared by the agents of a process; closed with its last user;
a server that dies is restarted once per run; cancellation reaches the server."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import bandoneon
import bandoneon_mcp.config
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_mcp import McpPlugin, McpServerRestarted, McpServerWarning
from mcp_helpers import mcp_children, server, tool_results


def own_box(case: str, **options: object) -> dict[str, object]:
    """The toolbox server with options of its own, so it is a process of its own."""
    return server("toolbox.py", env={"CASE": case}, **options)


def agent_with(servers: dict[str, object], *replies: object, **options: object) -> bandoneon.Agent:
    return bandoneon.Agent(ScriptedModel(*replies), plugins=[McpPlugin(servers=servers)], context_files=False, **options)



async def wait_for(predicate, what: str) -> None:
    for _ in range(600):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def test_agents_of_a_process_share_one_session_and_concurrent_calls_are_multiplexed():
    first = agent_with({"box": own_box("shared")}, call("pid"), "ok")
    calls = [call("echo", text=f"n{i}") for i in range(20)]
    second = agent_with({"box": own_box("shared")}, [call("pid"), *calls], "ok")
    try:
        one = tool_results(first.run_sync("pid"))
        two = tool_results(second.run_sync("pid and echoes"))
    finally:
        first.close()
        second.close()
    assert one[0][0] == two[0][0]  # the same server process answered both agents
    assert [content for content, _ in two[1:]] == [f"n{i}" for i in range(20)]


def test_the_server_closes_with_its_last_user_and_no_process_is_left():
    before = set(mcp_children())
    first = agent_with({"box": own_box("closing")})
    second = agent_with({"box": own_box("closing")})
    started = set(mcp_children()) - before
    assert len(started) == 1
    first.close()
    assert started <= set(mcp_children())  # still used by the second agent
    second.close()
    assert not started & set(mcp_children())


def test_an_agent_closed_and_run_again_gets_its_server_back():
    agent = agent_with({"box": own_box("reopen")}, call("echo", text="again"), "ok")
    agent.close()
    try:
        assert tool_results(agent.run_sync("echo")) == [("again", False)]
    finally:
        agent.close()


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"command": "/nonexistent/mcp-server"}, "the command was not found"),
        (server("exits.py"), "cannot open the database: permission denied"),
        (server("exits.py", str(20 * 2**20)), "warming up | cannot open the database: permission denied"),
        (server("garbage.py", startup_timeout=3), "not JSON-RPC (first: "),
        (server("hangs.py", startup_timeout=2), "did not finish starting within 2 s"),
    ],
    ids=["no-such-command", "exits-at-start", "exits-after-20-MiB-of-logs", "garbage-on-stdout", "hangs-in-initialize"],
)
def test_a_server_that_does_not_start_is_a_clear_warning_and_the_run_goes_on(options, said):
    with pytest.warns(McpServerWarning, match="MCP server 'bad'") as warned:
        agent = agent_with({"bad": options, "box": server("toolbox.py", allow=["echo"])}, call("echo", text="still here"), "done")
    try:
        assert said in str(warned[0].message)
        assert sorted(agent.tools) == ["echo"]
        result = agent.run_sync("go on")
    finally:
        agent.close()
    assert result.ok and tool_results(result) == [("still here", False)]


def test_what_a_running_server_logs_takes_bounded_room_and_does_not_stop_it():
    """A server that logs 20 MiB before it answers starts and answers, and where its stderr
    goes holds at most the README's 64 KiB of it (not a file that grows while it runs)."""
    agent = agent_with({"chatty": server("chatty.py", str(20 * 2**20))}, call("pid"), "ok")
    try:
        [(pid, is_error)] = tool_results(agent.run_sync("pid"))
        held = os.stat(f"/proc/{pid}/fd/2").st_size
    finally:
        agent.close()
    assert not is_error and held <= 64 * 1024


def test_a_required_server_that_does_not_start_stops_the_agent_being_built():
    with pytest.raises(bandoneon.ConfigError, match="permission denied.*marked required"):
        agent_with({"bad": server("exits.py", required=True)})


async def test_a_server_killed_mid_call_is_restarted_once_per_run_then_calls_fail(tmp_path):
    marker = tmp_path / "marker"
    before = set(mcp_children())
    agent = agent_with(
        {"box": own_box("killed")},
        call("slow", seconds=60, marker=str(marker)),
        call("echo", text="after the restart"),
        call("slow", seconds=60, marker=str(marker)),
        call("echo", text="after the second death"),
        "done",
    )
    restarts: list[McpServerRestarted] = []
    agent.on("mcp_server_restarted", restarts.append)
    try:
        run = asyncio.create_task(agent.run("work"))
        for starts in (1, 2):
            await wait_for(lambda starts=starts: lines(marker).count("started") == starts, f"call {starts} started")
            [pid] = set(mcp_children()) - before
            os.kill(pid, signal.SIGKILL)
        result = await run
    finally:
        await agent.aclose()
    first, after_restart, second, after_second = tool_results(result)
    assert first[1] and "stopped" in first[0] and "was restarted" in first[0]
    assert after_restart == ("after the restart", False)
    assert second[1] and "stopped" in second[0]
    assert after_second[1] and "already restarted once in this run" in after_second[0]
    assert [event.server for event in restarts] == ["box"]
    assert result.ok


async def test_tool_timeout_cancels_the_call_on_the_server(tmp_path):
    marker = tmp_path / "marker"
    agent = agent_with({"box": own_box("timeout")}, call("slow", seconds=60, marker=str(marker)), "gave up", tool_timeout=2)
    try:
        result = await agent.run("slow")
        await wait_for(lambda: "cancelled" in lines(marker), "the server saw the cancellation")
    finally:
        await agent.aclose()
    [(content, is_error)] = tool_results(result)
    assert is_error and "took longer than 2 seconds" in content


async def test_a_call_the_server_never_answers_ends_at_the_default_limit_and_the_next_run_works(tmp_path, monkeypatch):
    """Neither call_timeout nor tool_timeout: the call still ends (after DEFAULT_CALL_TIMEOUT,
    60 s, made 2 here), with a sentence that says so, and the server saw it cancelled."""
    monkeypatch.setattr(bandoneon_mcp.config, "DEFAULT_CALL_TIMEOUT", 2)
    marker = tmp_path / "marker"
    replies = (call("slow", seconds=3600, marker=str(marker)), "gave up", call("echo", text="next run"), "ok")
    # run_timeout only keeps a regression from hanging the suite; the call must end well before.
    agent = agent_with({"box": own_box("default-limit")}, *replies, run_timeout=120)
    try:
        first = await agent.run("slow")
        await wait_for(lambda: "cancelled" in lines(marker), "the server saw the cancellation")
        second = await agent.run("echo")
    finally:
        await agent.aclose()
    assert first.ok, first.detail
    [(content, is_error)] = tool_results(first)
    assert is_error and "MCP server 'box' did not answer slow within 2 s; the call was cancelled" in content
    assert tool_results(second) == [("next run", False)]


async def test_agent_cancel_cancels_the_call_on_the_server(tmp_path):
    marker = tmp_path / "marker"
    agent = agent_with({"box": own_box("cancel")}, call("slow", seconds=60, marker=str(marker)))
    try:
        run = asyncio.create_task(agent.run("slow"))
        await wait_for(lambda: "started" in lines(marker), "the call started")
        agent.cancel()
        result = await run
        await wait_for(lambda: "cancelled" in lines(marker), "the server saw the cancellation")
    finally:
        await agent.aclose()
    assert result.stop == "cancelled"


async def test_run_timeout_cancels_the_call_on_the_server(tmp_path):
    marker = tmp_path / "marker"
    agent = agent_with({"box": own_box("run-timeout")}, call("slow", seconds=60, marker=str(marker)), run_timeout=2)
    try:
        result = await agent.run("slow")
        await wait_for(lambda: "cancelled" in lines(marker), "the server saw the cancellation")
    finally:
        await agent.aclose()
    assert result.stop == "timeout"
