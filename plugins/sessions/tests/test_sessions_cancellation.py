"""A run cancelled anywhere (while the model answers, a tool runs, or a flush waits on the disk
or on a worker) leaves the session holding exactly the agent's history, once the next run and
``close`` are done: nothing lost, nothing twice, in order."""

from __future__ import annotations

import asyncio

import bandoneon
from bandoneon.testing import FunctionModel, call
from bandoneon_sessions import JsonlStore, Sessions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@bandoneon.tool
async def weigh(grams: int) -> str:
    """Weigh a bag of coffee."""
    for _ in range(3):  # a few steps of the loop: a cancellation may land inside the tool
        await asyncio.sleep(0)
    return f"{grams} g"


async def answer(request: bandoneon.ModelRequest) -> bandoneon.Message:
    await asyncio.sleep(0)
    if request.messages[-1].role == "user":
        return call("weigh", grams=len(request.messages))
    return bandoneon.Message.assistant("Done.")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(durability=st.sampled_from(["turn", "run", "os"]), on_worker=st.booleans(), steps=st.integers(0, 40))
def test_a_run_cancelled_at_any_step_leaves_the_session_equal_to_the_history(tmp_path_factory, monkeypatch, durability, on_worker, steps):
    import bandoneon_sessions.plugin

    monkeypatch.setattr(bandoneon_sessions.plugin, "INLINE_SYNC_LIMIT", 0.0 if on_worker else 1e9)
    store = JsonlStore(tmp_path_factory.mktemp("sessions"))
    agent = bandoneon.Agent(FunctionModel(answer), tools=[weigh], plugins=[Sessions(session_id="s-1", store=store, durability=durability)], context_files=False)

    async def main() -> None:
        await agent.run("Weigh the first bag.")
        cancelled = asyncio.ensure_future(agent.run("Weigh the second bag."))
        for _ in range(steps):
            await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.gather(cancelled, return_exceptions=True)
        await agent.run("Weigh the third bag.")
        await agent.aclose()

    asyncio.run(main())
    assert list(store.load("s-1").messages) == agent.messages
