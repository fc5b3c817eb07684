"""The worker threads a flush waits on when it may not wait on the loop (``threads``): they
report write errors to the run, serve several loops at once, survive a closed loop, and end
with the sessions that used them (agent closed, plugin collected, interpreter exit)."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import textwrap
import threading

import bandoneon
import pytest
from bandoneon.testing import FaultyDisk, FunctionModel, call
from bandoneon_sessions import JsonlStore, SessionError, Sessions, threads


@bandoneon.tool
def weigh(grams: int) -> str:
    """Weigh a bag of coffee."""
    return f"{grams} g"


def model() -> FunctionModel:
    return FunctionModel(lambda request: call("weigh", grams=1) if request.messages[-1].role == "user" else "Done.")


@pytest.fixture
def every_flush_on_a_worker(monkeypatch):
    """No flush is fast enough to wait on the loop: every synced save goes to a worker."""
    import bandoneon_sessions.plugin

    monkeypatch.setattr(bandoneon_sessions.plugin, "INLINE_SYNC_LIMIT", 0.0)


class ThreadDisk(FaultyDisk):
    """A disk that never fails and notes the thread of each flush."""

    def __init__(self) -> None:
        super().__init__(at_byte=10**12)
        self.threads: list[threading.Thread] = []

    def datasync(self, fd: int) -> None:
        self.threads.append(threading.current_thread())
        super().datasync(fd)


def ended(workers: list[threading.Thread]) -> bool:
    gc.collect()  # plugins of earlier tests left in reference cycles hold their use of the workers until collected
    for thread in workers:
        thread.join(timeout=30)
    return not any(thread.is_alive() for thread in workers)


def test_a_flush_that_may_not_wait_on_the_loop_runs_on_a_worker_that_ends_when_the_agent_closes(tmp_path, every_flush_on_a_worker):
    agent = bandoneon.Agent(model(), tools=[weigh], plugins=[Sessions(session_id="s-1", store=JsonlStore(tmp_path))], context_files=False)
    with ThreadDisk() as disk:
        for _ in range(3):
            agent.run_sync("Weigh it.")
    workers = list(set(disk.threads))
    assert len(disk.threads) == 6 and all(t.name == "bandoneon-sessions-flush" for t in workers)
    assert all(t.is_alive() for t in workers)  # long-lived: the same worker serves the next flushes
    agent.close()
    assert ended(workers)
    assert len(JsonlStore(tmp_path).load("s-1").messages) == 12


def test_the_worker_ends_when_a_plugin_left_open_is_garbage_collected(tmp_path, every_flush_on_a_worker):
    agent = bandoneon.Agent(model(), tools=[weigh], plugins=[Sessions(session_id="s-1", store=JsonlStore(tmp_path))], context_files=False)
    with ThreadDisk() as disk:
        agent.run_sync("Weigh it.")
    workers = list(set(disk.threads))
    del agent
    gc.collect()
    assert ended(workers)


def test_a_write_error_on_a_worker_reaches_the_run_and_the_batch_is_written_by_the_next_save(tmp_path, every_flush_on_a_worker):
    store = JsonlStore(tmp_path)
    plugin = Sessions(session_id="s-1", store=store, durability="run")
    agent = bandoneon.Agent(model(), tools=[weigh], plugins=[plugin], context_files=False)
    with FaultyDisk(at_byte=0, fault="fail"), pytest.raises(bandoneon.PluginError, match="OSError: .*FaultyDisk"):
        agent.run_sync("Weigh it.")
    agent.run_sync("Again.")
    agent.close()
    assert [m.content for m in store.load("s-1").messages if m.role == "user"] == ["Weigh it.", "Again."]


def test_several_agents_on_loops_of_their_own_share_the_workers(tmp_path, every_flush_on_a_worker):
    errors: list[BaseException] = []

    def work(number: int) -> None:
        try:
            agent = bandoneon.Agent(model(), tools=[weigh], plugins=[Sessions(session_id=f"s-{number}", store=JsonlStore(tmp_path))], context_files=False)
            for _ in range(5):
                agent.run_sync("Weigh it.")
            agent.close()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    runners = [threading.Thread(target=work, args=(n,)) for n in range(2 * threads.LIMIT)]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join(timeout=60)
    assert not any(r.is_alive() for r in runners), "a run never got its flush back"
    assert errors == []
    store = JsonlStore(tmp_path)
    assert all(len(store.load(f"s-{n}").messages) == 20 for n in range(len(runners)))


def test_a_worker_whose_loop_was_closed_drops_the_outcome_and_serves_the_next_job():
    threads.acquire()
    try:
        started, go_on = threading.Event(), threading.Event()

        def blocked() -> str:
            started.set()
            go_on.wait(10)
            return "late"

        first = asyncio.new_event_loop()
        future = threads.run(first, blocked)
        assert started.wait(10)
        first.close()  # its run ended (cancelled, interrupted) while the flush was under way
        go_on.set()

        async def after() -> str:
            return await threads.run(asyncio.get_running_loop(), lambda: "served")

        async def both() -> list[str]:  # more jobs than workers: the backlog is served too
            return await asyncio.gather(*(after() for _ in range(3 * threads.LIMIT)))

        assert asyncio.run(asyncio.wait_for(both(), 10)) == ["served"] * (3 * threads.LIMIT)
        assert not future.done()
    finally:
        threads.release()


def test_an_outcome_for_a_cancelled_wait_is_dropped():
    async def main() -> None:
        threads.acquire()
        try:
            release = threading.Event()
            future = threads.run(asyncio.get_running_loop(), release.wait, 10)
            future.cancel()
            release.set()
            assert await threads.run(asyncio.get_running_loop(), lambda: 7) == 7
        finally:
            threads.release()

    asyncio.run(main())


def test_a_session_left_open_does_not_hold_the_interpreter_at_exit(tmp_path):
    script = textwrap.dedent(
        f"""
        import bandoneon, bandoneon_sessions.plugin
        from bandoneon.testing import FunctionModel, call
        from bandoneon_sessions import JsonlStore, Sessions, threads

        bandoneon_sessions.plugin.INLINE_SYNC_LIMIT = 0.0

        @bandoneon.tool
        def weigh(grams: int) -> str:
            "Weigh a bag of coffee."
            return f"{{grams}} g"

        model = FunctionModel(lambda request: call("weigh", grams=1) if request.messages[-1].role == "user" else "Done.")
        agent = bandoneon.Agent(model, tools=[weigh], plugins=[Sessions(session_id="s-1", store=JsonlStore({str(tmp_path)!r}))], context_files=False)
        agent.run_sync("Weigh it.")
        assert threads.workers(), "the flushes ran on a worker"
        print("ran")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ran\n" and "Exception" not in done.stderr
    assert len(JsonlStore(tmp_path).load("s-1").messages) == 4


def test_a_save_after_close_still_raises(tmp_path, every_flush_on_a_worker):
    plugin = Sessions(session_id="s-1", store=JsonlStore(tmp_path))
    agent = bandoneon.Agent(model(), tools=[weigh], plugins=[plugin], context_files=False)
    agent.run_sync("Weigh it.")
    plugin.close()
    with pytest.raises(SessionError, match="closed"):
        agent.run_sync("Again.")


def test_a_worker_that_cannot_start_is_an_error_for_the_caller_not_a_wait_forever(monkeypatch):
    def refuse(self):
        raise RuntimeError("can't start new thread")

    async def main() -> None:
        threads.acquire()
        try:
            with monkeypatch.context() as patched:
                patched.setattr(threads, "LIMIT", len(threads._live) + 1)
                patched.setattr(threads, "_idle", [])
                patched.setattr(threading.Thread, "start", refuse)
                with pytest.raises(RuntimeError, match="start new thread"):
                    await asyncio.wait_for(threads.run(asyncio.get_running_loop(), lambda: 1), 10)
            assert await asyncio.wait_for(threads.run(asyncio.get_running_loop(), lambda: 2), 10) == 2
        finally:
            threads.release()

    asyncio.run(main())


class HeldDisk(FaultyDisk):
    """A disk whose first write on a worker thread waits until ``release`` is set: a flush
    still under way when the run that waited for it is cancelled."""

    def __init__(self) -> None:
        super().__init__(at_byte=10**12)
        self.holding = threading.Event()
        self.release = threading.Event()

    def write(self, fd: int, data: bytes) -> int:
        if threading.current_thread().name == "bandoneon-sessions-flush" and not self.holding.is_set():
            self.holding.set()
            assert self.release.wait(30), "the held write was never released"
        return super().write(fd, data)


async def held_then_cancelled(agent: bandoneon.Agent, disk: HeldDisk) -> asyncio.Future[bandoneon.RunResult]:
    """A run of ``agent`` cancelled while its first flush is held on a worker; the held write
    goes on in its own time (whatever the session does next must come after it)."""
    run = asyncio.ensure_future(agent.run("Weigh it."))
    while not disk.holding.is_set():
        await asyncio.sleep(0.001)
    threading.Timer(0.3, disk.release.set).start()
    run.cancel()
    return run


@pytest.mark.parametrize("durability", ["turn", "run"])
def test_a_run_cancelled_while_its_flush_is_on_a_worker_leaves_the_next_writes_after_it(tmp_path, every_flush_on_a_worker, durability):
    store = JsonlStore(tmp_path)
    agent = bandoneon.Agent(model(), tools=[weigh], plugins=[Sessions(session_id="s-1", store=store, durability=durability)], context_files=False)

    async def main() -> None:
        with HeldDisk() as disk:
            run = await held_then_cancelled(agent, disk)
            with pytest.raises(asyncio.CancelledError):
                await run  # its own last flush waits for the held one
            await agent.run("Again.")

    asyncio.run(main())
    agent.close()
    assert list(store.load("s-1").messages) == agent.messages  # every message, in the history's order


def test_closing_while_a_cancelled_runs_flush_is_on_a_worker_waits_for_that_write(tmp_path, every_flush_on_a_worker):
    store = JsonlStore(tmp_path)
    agent = bandoneon.Agent(model(), tools=[weigh], plugins=[Sessions(session_id="s-1", store=store)], context_files=False)

    async def main() -> None:
        with HeldDisk() as disk:
            run = await held_then_cancelled(agent, disk)
            await agent.aclose()  # before the cancelled run got to its last flush
            assert disk.release.is_set()
            await asyncio.gather(run, return_exceptions=True)

    asyncio.run(main())
    # The held batch, whole (the loader answers the call it holds no result for).
    assert list(store.load("s-1").messages)[:2] == agent.messages[:2]
