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
import functools
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
            raise AssertionError(f"the job {getattr(function, '__name__', function)}{args} hung")
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
        self.step()

    def step(self) -> None:
        """A step boundary: an event, or a point a job marks inside a tool."""
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


def careful_model() -> FunctionModel:
    """For the latest task: call ``record`` (ids ``call-<task>-<n>``), then answer ``done <task>``.
    Told that a call was interrupted (whether it took effect is unknown), it asks ``check``
    first and records again only if the work is not there, as a careful model would."""

    def answer(request: bandoneon.ModelRequest):
        task = next(m.content for m in reversed(request.messages) if m.role == "user" and m.content.startswith("task"))
        number = task.split()[-1]
        results = {m.tool_call_id: m for m in request.messages if m.role == "tool"}
        calls = [c for m in request.messages if m.role == "assistant" for c in m.tool_calls if json.loads(c.arguments)["task"] == task]
        if any(c.name == "record" and c.id in results and not results[c.id].is_error for c in calls):
            return f"done {number}"
        last = results.get(calls[-1].id) if calls else None
        if last is not None and last.name == "check" and not last.is_error and last.content == "yes":
            return f"done {number}"
        name = "check" if last is not None and last.is_error and "was interrupted" in last.content else "record"
        call_id = f"{name}-{number}-{len(calls) + 1}"
        arguments = {"task": task, "ref": call_id} if name == "record" else {"task": task}
        return reply("", ToolCall(call_id, name, json.dumps(arguments)))

    return FunctionModel(answer)


def careful_tools(folder: Path, killer: Killer) -> list[bandoneon.Tool]:
    @bandoneon.tool
    def record(task: str, ref: str) -> str:
        """Record that the work for a task was done (ref: this call's reference)."""
        fd = os.open(folder / "ledger.txt", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{task}|{ref}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        killer.step()  # a step boundary inside the call: the work is done, its result not yet returned
        return f"recorded {task}"

    @bandoneon.tool
    def check(task: str) -> str:
        """Whether the work for a task was recorded: yes or no."""
        return "yes" if any(line.split("|")[0] == task for line in ledger(folder)) else "no"

    return [record, check]


def session_path(folder: Path, store: str) -> Path:
    return folder / ("sessions.sqlite3" if store == "sqlite" else "sessions")


def sessions_job(folder: Path, crash_at: int | None, durability: str = "turn", store: str = "jsonl") -> None:
    from bandoneon_sessions import Sessions

    killer = Killer(folder, crash_at)
    plugin = Sessions(session_id="job", path=str(session_path(folder, store)), durability=durability)
    agent = bandoneon.Agent(careful_model(), tools=careful_tools(folder, killer), plugins=[plugin], context_files=False)
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


def saved_session(folder: Path, store: str) -> tuple[bandoneon.Message, ...]:
    from bandoneon_sessions import open_store

    path = session_path(folder, store)
    return open_store(path).load("job").messages if path.exists() else ()


def recorded_refs(messages) -> set[str]:
    """The record calls whose (successful) result the session holds."""
    return {m.tool_call_id for m in messages if m.role == "tool" and m.name == "record" and not m.is_error}


@pytest.mark.parametrize(("durability", "store"), [("turn", "jsonl"), ("os", "jsonl"), ("turn", "sqlite")])
def test_sessions_resume_after_a_kill_at_every_step_runs_no_call_twice_and_loses_none(tmp_path, durability, store):
    def check(reference, reference_folder, folder, saved_at_crash, where):
        outcome = json.loads((folder / "outcome.json").read_text())
        assert outcome["outcome"] == reference["outcome"] == ["done 1", "done 2"], where  # same answers
        runs = [line.split("|") for line in ledger(folder)]
        assert sorted(task for task, _ in runs) == TASKS, f"{where}: the work of each task done once, none lost: {runs}"
        refs = [ref for _, ref in runs]
        assert len(refs) == len(set(refs)), f"{where}: a call ran twice: {refs}"
        assert not saved_at_crash - set(refs), where
        messages = saved_session(folder, store)
        for index, message in enumerate(messages):  # no call lost: every call has exactly one result
            following = []
            for later in messages[index + 1 :]:
                if later.role != "tool":
                    break
                following.append(later.tool_call_id)
            for call in message.tool_calls:
                assert following.count(call.id) == 1, f"{where}: call {call.id} has {following.count(call.id)} results"
        assert set(refs) <= {m.tool_call_id for m in messages if m.role == "tool"}, f"{where}: a call that ran has no result"

    job = functools.partial(sessions_job, durability=durability, store=store)
    events = matrix(tmp_path, job, check, inspect=lambda folder: recorded_refs(saved_session(folder, store)))
    assert events >= 12


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
