"""Agents that talk to one endpoint share one connection pool, bounded, and close it together."""

from __future__ import annotations

import asyncio
import sys
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
    pool = first.provider._http._pool()
    assert second.provider._http._pool() is pool  # one pool for both
    await first.aclose()
    assert not pool.is_closed  # the second agent still uses it
    assert (await second.run("c")).text == "hi"
    await second.aclose()
    assert pool.is_closed


async def test_concurrent_runs_spread_over_small_httpx_pools_and_sequential_runs_reuse_one(mock_llm, monkeypatch):
    """httpx's pool works in proportion to its connections and queue on every request: the
    shared pool keeps each httpx client at ``shard_size`` connections with nothing queued."""
    monkeypatch.setattr(HttpClient, "max_connections", 6)
    monkeypatch.setattr(HttpClient, "shard_size", 2)
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
    agents = [_agent(mock_llm) for _ in range(20)]
    results = await asyncio.gather(*(agent.run("go") for agent in agents))
    assert [r.text for r in results] == ["done"] * 20
    assert most <= 6
    pool = agents[0].provider._http._pool()
    assert len(pool._clients) == 3  # 6 connections in clients of 2
    for agent in agents:
        await agent.aclose()

    mock_llm.respond_with(lambda request: Reply(text="hi"))
    one_after_another = [_agent(mock_llm) for _ in range(5)]
    for agent in one_after_another:
        assert (await agent.run("again")).text == "hi"
    assert len(one_after_another[0].provider._http._pool()._clients) == 1
    for agent in one_after_another:
        await agent.aclose()


async def test_a_run_over_http_searches_for_no_module(mock_llm):
    """A failed import is not cached: a module looked for on every request (httpcore's sniffio,
    when it is not installed) costs a search of all of sys.path each time."""
    mock_llm.respond_with(lambda request: Reply(text="hi"))
    agent = _agent(mock_llm)
    await agent.run("warm-up")
    searched: list[str] = []

    class Spy:
        def find_spec(self, name, path=None, target=None):
            searched.append(name)

    sys.meta_path.insert(0, Spy())
    try:
        await agent.run("again")
    finally:
        sys.meta_path.pop(0)
    await agent.aclose()
    assert searched == []
