"""Agents that talk to one endpoint share one connection pool, bounded, and close it together."""

from __future__ import annotations

import asyncio
import threading

import bandoneon
from bandoneon.providers.http import HttpClient
from bandoneon.testing import Reply


def _agent(server) -> bandoneon.Agent:
    return bandoneon.Agent(f"openai-compatible:mock@{server.base_url}", plugins=[], context_files=False, context_window=8000)


async def test_concurrent_runs_beyond_the_pool_wait_for_a_connection_and_all_finish(mock_llm, monkeypatch):
    monkeypatch.setattr(HttpClient, "max_connections", 3)
    in_flight, most, lock = 0, 0, threading.Lock()

    async def slow_answer(request):
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        await asyncio.sleep(0.02)
        with lock:
            in_flight -= 1
        return Reply(text="done")

    mock_llm.respond_with(slow_answer)
    agents = [_agent(mock_llm) for _ in range(12)]
    results = await asyncio.gather(*(agent.run("go") for agent in agents))
    assert [r.text for r in results] == ["done"] * 12
    assert most <= 3  # never more connections than the pool allows, though 12 runs were at once
    for agent in agents:
        await agent.aclose()


async def test_the_shared_client_is_closed_when_its_last_agent_closes(mock_llm):
    mock_llm.respond_with(lambda request: Reply(text="hi"))
    first, second = _agent(mock_llm), _agent(mock_llm)
    await first.run("a")
    await second.run("b")
    client = first.provider._http.client()
    assert second.provider._http.client() is client  # one pool for both
    await first.aclose()
    assert not client.is_closed  # the second agent still uses it
    assert (await second.run("c")).text == "hi"
    await second.aclose()
    assert client.is_closed
