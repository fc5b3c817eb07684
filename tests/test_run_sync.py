"""``run_sync`` as scripts use it: Ctrl-C cancels the run and raises ``KeyboardInterrupt`` with
the history valid, the thread's loop is left clean for the next run, and a run that waits on
real I/O (the loop's queue, a timer) still runs to its end."""

from __future__ import annotations

import asyncio
import signal
import threading

import bandoneon
import pytest
from bandoneon import tool
from bandoneon.testing import ScriptedModel, call

pytestmark = pytest.mark.usefixtures("only_the_core")


@tool
async def wait(seconds: float) -> str:
    """Wait, then say so."""
    await asyncio.sleep(seconds)
    return f"waited {seconds}"


@tool
async def interrupt_me() -> str:
    """Deliver a Ctrl-C to this process soon, then wait for it."""
    asyncio.get_running_loop().call_later(0.05, signal.raise_signal, signal.SIGINT)
    await asyncio.sleep(30)
    return "never"


def make_agent(model: ScriptedModel) -> bandoneon.Agent:
    return bandoneon.Agent(model, tools=[wait, interrupt_me], plugins=[], context_files=False)


@pytest.fixture
def default_sigint():
    """Python's own SIGINT handler, as in a script (a test worker may start with it ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_cancels_the_run_then_raises_keyboard_interrupt(default_sigint):
    agent = make_agent(ScriptedModel(call("interrupt_me"), "never sent", call("wait", seconds=0.01), "after"))
    with pytest.raises(KeyboardInterrupt):
        agent.run_sync("go")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    tool_messages = [m for m in agent.messages if m.role == "tool"]
    assert len(tool_messages) == 1 and tool_messages[0].is_error  # the call is answered: the history is valid
    # The loop holds nothing of the cancelled run: the next run waits on its timer and ends normally.
    again = make_agent(ScriptedModel(call("wait", seconds=0.01), "after"))
    assert again.run_sync("again").text == "after"


def test_runs_that_wait_on_the_loop_run_to_their_end_one_after_another(default_sigint):
    for _ in range(20):
        agent = make_agent(ScriptedModel(call("wait", seconds=0.001), "done"))
        result = agent.run_sync("go")
        assert (result.text, result.stop) == ("done", "end_turn")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_run_sync_in_another_thread_leaves_sigint_alone(default_sigint):
    results: list[str] = []

    def work() -> None:
        results.append(make_agent(ScriptedModel(call("wait", seconds=0.001), "done")).run_sync("go").text)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(10)
    assert results == ["done"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_application_sigint_handler_is_left_alone():
    def mine(signum, frame):
        raise AssertionError("not delivered in this test")

    previous = signal.signal(signal.SIGINT, mine)
    try:
        assert make_agent(ScriptedModel("hello")).run_sync("hi").text == "hello"
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, previous)


def test_run_sync_inside_a_running_loop_is_a_clear_error():
    async def main() -> None:
        with pytest.raises(RuntimeError, match="cannot be called from a running event loop"):
            make_agent(ScriptedModel("hello")).run_sync("hi")

    asyncio.run(main())
