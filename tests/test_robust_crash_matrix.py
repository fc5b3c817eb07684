"""Crash and resume (issue 13): a scripted job is killed at every step boundary (every event
of its run, one after the other, never at random), then a new process resumes it; the
resumed job must end as the uncrashed one did. The process is a fork of the test, killed
with ``os._exit`` (nothing flushed, no ``finally``), so each kill costs milliseconds.

Step boundaries are the loop's events (run_start, turn_start, provider_request,
assistant_message, tool_start, tool_end, turn_end, run_end, ...): every hook that saves
(after_turn, after_run, the laps and heartbeat state, the pause file) runs between two of them.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

import bandoneon
import pytest
from bandoneon import ToolCall
from bandoneon.testing import FunctionModel, reply

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="the matrix forks a process per kill"),
    pytest.mark.usefixtures("only_the_core"),
]

KILLED = 77


def in_child(function, *args) -> int:
    """Run ``function(*args)`` in a forked process; its exit code (KILLED when it was killed)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        outcome = [1]

        def work() -> None:
            try:
                function(*args)
                outcome[0] = 0
            except BaseException:
                traceback.print_exc()

        # A new thread: the parent's per-thread event loop and its executor's threads did not
        # survive the fork, and a run on them would wait for threads that are not there.
        worker = threading.Thread(target=work)
        worker.start()
        worker.join()
        os._exit(outcome[0])
    deadline = time.monotonic() + 120  # a hung child fails the test instead of hanging the suite
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"the job {function.__name__}{args} hung")
        time.sleep(0.002)


class Killer:
    """Counts the events of every agent it is attached to; the ``crash_at``-th kills the process."""

    def __init__(self, folder: Path, crash_at: int | None):
        self.folder = folder
        self.crash_at = crash_at
        self.seen = 0

    def attach(self, agent: bandoneon.Agent) -> bandoneon.Agent:
        agent.on("*", self.event)
        return agent

    def event(self, event: bandoneon.Event) -> None:
        self.seen += 1
        if self.crash_at is not None and self.seen == self.crash_at:
            os._exit(KILLED)

    def finished(self, outcome: object) -> None:
        (self.folder / "outcome.json").write_text(json.dumps({"events": self.seen, "outcome": outcome}))


def ledger_tool(folder: Path):
    """A tool whose every run is written to disk at once: the record of calls actually run."""

    @bandoneon.tool
    def record(task: str) -> str:
        """Record that the work for a task was done."""
        fd = os.open(folder / "ledger.txt", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{task}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return f"recorded {task}"

    return record


def ledger(folder: Path) -> list[str]:
    path = folder / "ledger.txt"
    return path.read_text().splitlines() if path.exists() else []


def matrix(tmp_path: Path, job, check, inspect=lambda folder: None) -> int:
    """Run ``job`` once to the end (the reference), then once per event, killed there and
    resumed by a second run of ``job``; ``check(reference, reference_folder, folder, at_crash,
    where)`` judges each, ``at_crash`` being what ``inspect(folder)`` saw right after the kill."""
    reference_folder = tmp_path / "reference"
    reference_folder.mkdir()
    assert in_child(job, reference_folder, None) == 0
    reference = json.loads((reference_folder / "outcome.json").read_text())
    for crash_at in range(1, reference["events"] + 1):
        folder = tmp_path / f"killed-at-{crash_at}"
        folder.mkdir()
        assert in_child(job, folder, crash_at) == KILLED, f"not killed at event {crash_at}"
        at_crash = inspect(folder)
        assert in_child(job, folder, None) == 0, f"the resume after a kill at event {crash_at} failed"
        check(reference, reference_folder, folder, at_crash, f"killed at event {crash_at}")
    return reference["events"]


# ------------------------------------------------------------------ sessions

TASKS = ["task 1", "task 2"]


def task_model() -> FunctionModel:
    """For the latest task: call record once (id ``call-<task>``), then answer ``done <task>``."""

    def answer(request: bandoneon.ModelRequest):
        task = next(m.content for m in reversed(request.messages) if m.role == "user" and m.content.startswith("task"))
        number = task.split()[-1]
        recorded = any(m.role == "tool" and m.tool_call_id == f"call-{number}" and not m.is_error for m in request.messages)
        if recorded:
            return f"done {number}"
        return reply("", ToolCall(f"call-{number}", "record", json.dumps({"task": task})))

    return FunctionModel(answer)


def sessions_job(folder: Path, crash_at: int | None) -> None:
    from bandoneon_sessions import Sessions

    killer = Killer(folder, crash_at)
    agent = bandoneon.Agent(
        task_model(), tools=[ledger_tool(folder)], plugins=[Sessions(session_id="job", path=str(folder / "sessions"))], context_files=False
    )
    killer.attach(agent)
    for task in TASKS:
        number = task.split()[-1]
        history = agent.messages
        if any(m.role == "assistant" and m.content == f"done {number}" for m in history):
            continue  # answered before the crash
        asked = any(m.role == "user" and m.content == task for m in history)
        agent.run_sync("Go on with the task." if asked else task)  # the app resumes an interrupted task
    answers = [m.content for m in agent.messages if m.role == "assistant" and m.content]
    agent.close()
    killer.finished(answers)


def saved_results(folder: Path) -> set[str]:
    """The tasks whose record call has a saved result in the session."""
    from bandoneon_sessions import JsonlStore

    loaded = JsonlStore(folder / "sessions").load("job")
    return {f"task {m.tool_call_id.rsplit('-', 1)[-1]}" for m in loaded.messages if m.role == "tool" and not m.is_error}


def test_sessions_resume_after_a_kill_at_every_step(tmp_path):
    def check(reference, reference_folder, folder, saved_at_crash, where):
        outcome = json.loads((folder / "outcome.json").read_text())
        assert outcome["outcome"] == reference["outcome"] == ["done 1", "done 2"], where  # same answers
        runs = ledger(folder)
        assert saved_results(folder) == set(runs) == set(TASKS), where  # no call lost
        for task in saved_at_crash:
            assert runs.count(task) == 1, f"{where}: {task} ran again although its result was saved"

    assert matrix(tmp_path, sessions_job, check, inspect=lambda folder: saved_results(folder) if (folder / "sessions").exists() else set()) >= 10


# ------------------------------------------------------------------ laps


def laps_job(folder: Path, crash_at: int | None) -> None:
    from bandoneon_laps import run_goal_loop_sync

    killer = Killer(folder, crash_at)

    def make_agent():
        lap = len(ledger(folder)) + 1

        def answer(request):
            if any(m.role == "tool" for m in request.messages):
                return f"lap work {lap} done"
            return reply("", ToolCall(f"call-{lap}", "record", json.dumps({"task": f"lap {lap}"})))

        return killer.attach(bandoneon.Agent(FunctionModel(answer), tools=[ledger_tool(folder)], plugins=[], context_files=False))

    result = run_goal_loop_sync("Build it.", make_agent, lambda: len(ledger(folder)) >= 2, max_laps=5, state_file=folder / "laps.json")
    killer.finished({"done": result.done, "stop": result.stop, "last": result.last_text})


def test_laps_resume_after_a_kill_at_every_step(tmp_path):
    def check(reference, reference_folder, folder, at_crash, where):
        outcome = json.loads((folder / "outcome.json").read_text())["outcome"]
        assert outcome["done"] and outcome["stop"] == "done", where
        runs = ledger(folder)
        assert len(runs) == 2 and len(set(runs)) == 2, where  # each piece of work done once, none lost
        state = json.loads((folder / "laps.json").read_text())
        assert not state["in_progress"] and state["laps"] <= 3, where  # at most the killed lap counts twice

    assert matrix(tmp_path, laps_job, check) >= 10


# ------------------------------------------------------------------ heartbeat


def heartbeat_job(folder: Path, crash_at: int | None) -> None:
    from bandoneon_heartbeat import Heartbeat

    killer = Killer(folder, crash_at)
    agent = killer.attach(bandoneon.Agent(FunctionModel(lambda request: "all fine"), plugins=[], context_files=False))
    clock = [1_000.0]

    async def sleep(seconds: float) -> None:
        clock[0] += seconds

    beat = Heartbeat(agent, interval=60, check_prompt="Check.", max_ticks=3, state_file=folder / "beat.json", clock=lambda: clock[0], sleep=sleep)
    agent.on("heartbeat_tick", lambda event: None)
    outcomes = []
    while True:
        outcome = asyncio.run(beat.tick_once())
        if isinstance(outcome, str):
            break
        outcomes.append(outcome.outcome)
        clock[0] += 60
    killer.finished({"ticks": beat.ticks})


def test_heartbeat_resumes_after_a_kill_at_every_step(tmp_path):
    def check(reference, reference_folder, folder, at_crash, where):
        outcome = json.loads((folder / "outcome.json").read_text())["outcome"]
        assert outcome == reference["outcome"] == {"ticks": 3}, where  # the fuse counts every tick once, across the kill
        state = json.loads((folder / "beat.json").read_text())
        assert state["ticks"] == 3, where

    assert matrix(tmp_path, heartbeat_job, check) >= 6


# ------------------------------------------------------------------ paused approvals


def approvals_job(folder: Path, crash_at: int | None) -> None:
    """The app: ask for the penguin; when the run pauses for approval, the person says yes
    (in a real deployment, another process does); resume with the human's prompt."""
    from bandoneon_human import Callbacks, Human, answer_pending, read_pending
    from bandoneon_sessions import Sessions

    @bandoneon.tool(needs_approval=True)
    def drop_claw(prize: str) -> str:
        """Drop the claw over a prize. Cannot be undone."""
        return ledger_tool(folder).function(task=f"drop {prize}")

    def answer(request: bandoneon.ModelRequest):
        if any(m.role == "tool" and m.content.startswith("recorded") for m in request.messages):
            return "got it"
        turn = sum(m.role == "assistant" for m in request.messages)
        return reply("", ToolCall(f"call-{turn}", "drop_claw", json.dumps({"prize": "penguin"})))

    async def never(request):
        await asyncio.Event().wait()

    killer = Killer(folder, crash_at)
    pause_file = folder / "pending.json"
    human = Human(channel=Callbacks(approve=never), timeout=0, pause_file=str(pause_file))
    agent = killer.attach(
        bandoneon.Agent(FunctionModel(answer), tools=[drop_claw], plugins=[human, Sessions(session_id="job", path=str(folder / "sessions"))], context_files=False)
    )
    for _ in range(6):
        if any(m.role == "assistant" and m.content == "got it" for m in agent.messages):
            break
        pending = read_pending(pause_file)
        if pending is not None and not pending.is_answered:
            answer_pending(pause_file, True, by="ops")
            continue
        asked = any(m.role == "user" for m in agent.messages)
        agent.run_sync(human.resume_prompt() or ("Go on." if asked else "Get me the penguin."))
    answers = [m.content for m in agent.messages if m.role == "assistant" and m.content]
    agent.close()
    killer.finished(answers[-1:])


def test_paused_approvals_resume_after_a_kill_at_every_step(tmp_path):
    def check(reference, reference_folder, folder, at_crash, where):
        outcome = json.loads((folder / "outcome.json").read_text())["outcome"]
        assert outcome == reference["outcome"] == ["got it"], where
        assert ledger(folder) == ["drop penguin"], where  # approved once, run once, never lost

    assert matrix(tmp_path, approvals_job, check) >= 10
