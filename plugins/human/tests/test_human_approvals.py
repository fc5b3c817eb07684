"""Approvals: the person sees the real call; every outcome is a result the model reads."""

from __future__ import annotations

import asyncio
import logging
import threading

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_human import Answer, AuditLog, Callbacks, Human, HumanQueue, Terminal

DROPPED: list[str] = []


@bandoneon.tool
def move_claw(to: str) -> str:
    """Move the claw over a prize. Free, and can be undone."""
    return f"the claw is over the {to}"


@bandoneon.tool(needs_approval=True)
def drop_claw() -> str:
    """Drop the claw. Spends the last coin: cannot be undone."""
    DROPPED.append("drop")
    return "you got a prize"


@pytest.fixture(autouse=True)
def _fresh():
    DROPPED.clear()


def run(human: Human, *replies, tools=(move_claw, drop_claw)) -> tuple[bandoneon.RunResult, ScriptedModel, bandoneon.Agent]:
    model = ScriptedModel(*replies)
    agent = bandoneon.Agent(model, tools=list(tools), plugins=[human], context_files=False)
    return agent.run_sync("Get me the bear!"), model, agent


def last_tool_text(model: ScriptedModel, request: int = 1) -> str:
    return [m for m in model.requests[request].messages if m.role == "tool"][-1].content


def test_an_approved_call_runs_and_the_person_saw_the_exact_call(tmp_path):
    shown = []
    human = Human(channel=lambda request: shown.append(request.shown) or True, audit_log=str(tmp_path / "audit.jsonl"))
    result, model, _ = run(human, call("drop_claw"), "Got it!")
    assert DROPPED == ["drop"] and result.text == "Got it!"
    assert shown == ["drop_claw({})"]
    record = AuditLog(tmp_path / "audit.jsonl").records()[0]
    assert record["kind"] == "approval" and record["outcome"] == "approved" and record["shown"] == "drop_claw({})"


def test_a_denied_call_never_runs_and_the_model_reads_the_note():
    human = Human(channel=lambda request: Answer(False, "tina", "not the bear, the penguin"))
    _, model, _ = run(human, call("drop_claw"), "ok")
    assert DROPPED == []
    seen = last_tool_text(model)
    assert "The person said no to drop_claw({})" in seen and "not the bear, the penguin" in seen


def test_an_async_callback_is_awaited():
    async def approve(request):
        await asyncio.sleep(0)
        return True

    run(Human(channel=Callbacks(approve=approve)), call("drop_claw"), "ok")
    assert DROPPED == ["drop"]


def test_free_tools_are_not_asked_about():
    asked = []
    run(Human(channel=lambda r: asked.append(r) or True), call("move_claw", to="bear"), "ok")
    assert asked == []


def test_name_patterns_in_the_options_need_approval_too():
    asked = []
    run(Human(channel=lambda r: asked.append(r.shown) or False, approve=["move_*"]), call("move_claw", to="bear"), "ok")
    assert asked == ['move_claw({"to": "bear"})']


def test_a_queue_is_answered_from_another_thread(tmp_path):
    queue_channel = HumanQueue()

    def person():
        request = queue_channel.next(timeout=10)
        queue_channel.answer(request.id, True, by="tina")

    thread = threading.Thread(target=person)
    thread.start()
    run(Human(channel=queue_channel, audit_log=str(tmp_path / "a.jsonl")), call("drop_claw"), "ok")
    thread.join(timeout=10)
    assert DROPPED == ["drop"]
    assert AuditLog(tmp_path / "a.jsonl").records()[0]["by"] == "tina"
    assert queue_channel.pending() == []


def test_an_approval_that_never_comes_times_out_as_a_no_with_a_reason(tmp_path):
    never = asyncio.Event()

    async def wait_for_ever(request):
        await never.wait()

    human = Human(channel=Callbacks(approve=wait_for_ever), timeout=0.05, audit_log=str(tmp_path / "a.jsonl"))
    result, model, _ = run(human, call("drop_claw"), "I will wait.")
    assert DROPPED == [] and result.stop == "end_turn"
    assert "No one answered the approval request for drop_claw({}) within 0.05 seconds" in last_tool_text(model)
    assert AuditLog(tmp_path / "a.jsonl").records()[0]["outcome"] == "timeout"


def test_a_late_answer_to_a_timed_out_queue_request_is_ignored():
    queue_channel = HumanQueue()
    run(Human(channel=queue_channel, timeout=0.01), call("drop_claw"), "ok")
    late = queue_channel.next(timeout=1)
    assert queue_channel.answer(late.id, True) is False
    assert DROPPED == []


def test_a_callback_that_raises_denies_and_is_logged(tmp_path, caplog):
    def broken(request):
        raise ConnectionError("the approval service is down")

    human = Human(channel=broken, audit_log=str(tmp_path / "a.jsonl"))
    with caplog.at_level(logging.ERROR, logger="bandoneon.human"):
        result, model, agent = run(human, call("drop_claw"), "ok")
    assert DROPPED == [] and result.stop == "end_turn"
    assert "could not reach a person" in last_tool_text(model)
    assert "the approval service is down" in caplog.text
    record = AuditLog(tmp_path / "a.jsonl").records()[0]
    assert record["outcome"] == "error" and "ConnectionError" in record["error"]
    assert [m.role for m in agent.messages] == ["user", "assistant", "tool", "assistant"]


def test_a_callback_answering_nonsense_denies():
    _, model, _ = run(Human(channel=lambda r: "sure"), call("drop_claw"), "ok")
    assert DROPPED == [] and "could not reach a person" in last_tool_text(model)


def test_the_terminal_shows_the_call_and_reads_yes():
    printed = []
    terminal = Terminal(input=lambda prompt: "y", output=printed.append)
    run(Human(channel=terminal), call("drop_claw"), "ok")
    assert DROPPED == ["drop"] and "drop_claw({})" in printed[0]


def test_the_terminal_reads_a_no_with_words_as_a_note():
    terminal = Terminal(input=lambda prompt: "no, the penguin!", output=lambda text: None)
    _, model, _ = run(Human(channel=terminal), call("drop_claw"), "ok")
    assert DROPPED == [] and '"no, the penguin!"' in last_tool_text(model)


def test_a_terminal_with_no_input_denies():
    def closed(prompt):
        raise EOFError

    _, model, _ = run(Human(channel=Terminal(input=closed, output=lambda t: None)), call("drop_claw"), "ok")
    assert DROPPED == [] and "could not reach a person" in last_tool_text(model)


def test_the_channel_is_configured_by_name():
    model = ScriptedModel(call("drop_claw"), "ok")
    agent = bandoneon.Agent(model, tools=[drop_claw], plugins={"human": {"channel": "deny", "ask_tool": None}}, context_files=False)
    agent.run_sync("go")
    assert DROPPED == [] and "said no" in model.requests[1].messages[-1].content


def test_a_bad_channel_name_and_a_negative_timeout_are_config_errors():
    with pytest.raises(bandoneon.ConfigError, match="unknown channel 'telepathy'"):
        Human(channel="telepathy")
    with pytest.raises(bandoneon.ConfigError, match="human: timeout must be at least 0 seconds, got -1"):
        Human(timeout=-1)


async def test_cancelling_the_run_while_it_waits_withdraws_the_request():
    queue_channel = HumanQueue()
    model = ScriptedModel(call("drop_claw"))
    agent = bandoneon.Agent(model, tools=[drop_claw], plugins=[Human(channel=queue_channel)], context_files=False)
    task = asyncio.create_task(agent.run("go"))
    request = await asyncio.to_thread(queue_channel.next, 10)
    agent.cancel()
    result = await task
    assert result.stop == "cancelled" and DROPPED == []
    assert queue_channel.pending() == [] and queue_channel.answer(request.id, True) is False
    assert agent.messages[-1].role == "tool"  # the history stays valid


def test_approval_events_tell_a_ui_what_to_show_and_how_it_ended():
    model = ScriptedModel(call("drop_claw"), "ok")
    agent = bandoneon.Agent(model, tools=[drop_claw], plugins=[Human(channel=lambda r: True)], context_files=False)
    seen = []
    agent.on("approval_requested", lambda e: seen.append(("asked", e.shown)))
    agent.on("approval_answered", lambda e: seen.append(("answered", e.outcome)))
    agent.run_sync("go")
    assert seen == [("asked", "drop_claw({})"), ("answered", "approved")]
