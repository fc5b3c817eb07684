"""Steering and escalation: the person interrupts, or the model asks."""

from __future__ import annotations

import asyncio
import threading

import bandoneon
import pytest
from bandoneon.testing import FunctionModel, ScriptedModel, call
from bandoneon_human import AuditLog, Callbacks, Human, HumanQueue, Steering

MOVES: list[str] = []


@bandoneon.tool
def move_claw(to: str) -> str:
    """Move the claw over a prize."""
    MOVES.append(to)
    return f"the claw is over the {to}"


@bandoneon.tool(needs_approval=True)
def drop_claw() -> str:
    """Drop the claw. Cannot be undone."""
    MOVES.append("drop")
    return "you got a prize"


@pytest.fixture(autouse=True)
def _fresh():
    MOVES.clear()


def test_a_correction_cancels_the_next_call_and_the_model_reads_it(tmp_path):
    human = Human(channel=lambda r: True, audit_log=str(tmp_path / "a.jsonl"))
    model = ScriptedModel(call("move_claw", to="bear"), call("move_claw", to="bear"), "ok")
    agent = bandoneon.Agent(model, tools=[move_claw], plugins=[human], context_files=False)
    events: list[Steering] = []
    agent.on("steering", events.append)
    agent.on("tool_end", lambda e: human.steer("No, wait! The penguin!") if not events else None)
    agent.run_sync("Get me the bear!")
    assert MOVES == ["bear"]  # the second call was cancelled
    seen = model.requests[2].messages[-1].content
    assert seen == "Cancelled before it ran: the person interrupted. They say: No, wait! The penguin!"
    assert [e.text for e in events] == ["No, wait! The penguin!"] and events[0].call.name == "move_claw"
    assert AuditLog(tmp_path / "a.jsonl").records()[0]["kind"] == "steering"


def test_steering_from_another_thread_is_safe():
    human = Human(channel=lambda r: True)
    thread = threading.Thread(target=human.steer, args=("the penguin",))
    thread.start()
    thread.join()
    model = ScriptedModel(call("move_claw", to="bear"), "ok")
    bandoneon.Agent(model, tools=[move_claw], plugins=[human], context_files=False).run_sync("go")
    assert MOVES == [] and "the penguin" in model.requests[1].messages[-1].content


def test_a_correction_also_cancels_the_other_calls_of_that_reply():
    human = Human(channel=lambda r: True)
    human.steer("stop, the penguin")
    model = ScriptedModel([call("move_claw", to="bear"), call("move_claw", to="duck")], "ok")
    bandoneon.Agent(model, tools=[move_claw], plugins=[human], context_files=False).run_sync("go")
    assert MOVES == []
    results = [m.content for m in model.requests[1].messages if m.role == "tool"]
    assert "stop, the penguin" in results[0] and results[1].startswith("Cancelled before it ran")


def test_a_correction_waits_while_the_model_only_writes_text():
    human = Human(channel=lambda r: True)
    human.steer("the penguin")
    agent = bandoneon.Agent(ScriptedModel("Hello!"), tools=[move_claw], plugins=[human], context_files=False)
    agent.run_sync("hi")
    assert human.pending_corrections == ["the penguin"]


def test_a_correction_ends_a_pending_approval_and_cancels_that_call():
    queue_channel = HumanQueue()
    human = Human(channel=queue_channel)
    model = ScriptedModel(call("drop_claw"), "ok")
    agent = bandoneon.Agent(model, tools=[drop_claw], plugins=[human], context_files=False)

    def tina():
        request = queue_channel.next(timeout=10)
        human.steer("No! Move to the penguin first.")
        return request

    thread = threading.Thread(target=tina)
    thread.start()
    agent.run_sync("drop it")
    thread.join(timeout=10)
    assert MOVES == []
    assert "Move to the penguin first" in model.requests[1].messages[-1].content
    assert queue_channel.pending() == []


def test_empty_corrections_are_refused():
    with pytest.raises(ValueError, match="non-empty"):
        Human().steer("   ")


def test_a_policy_refuses_before_a_person_is_asked():
    guard_plugin = pytest.importorskip("bandoneon_guard", reason="bandoneon-guard is not installed")
    Guard, Rule = guard_plugin.Guard, guard_plugin.Rule
    asked = []
    human = Human(channel=lambda r: asked.append(r) or True)
    guard = Guard(rules=[Rule(name="no-drops", tool="drop_claw", message="The machine is closed")])
    model = ScriptedModel(call("drop_claw"), "ok")
    bandoneon.Agent(model, tools=[drop_claw], plugins=[human, guard], context_files=False).run_sync("go")
    assert asked == [] and MOVES == []
    assert model.requests[1].messages[-1].content.startswith("Blocked by policy (no-drops")


def test_a_guard_approval_rule_asks_the_person_once_even_if_the_tool_also_needs_approval():
    guard_plugin = pytest.importorskip("bandoneon_guard", reason="bandoneon-guard is not installed")
    Guard, Rule = guard_plugin.Guard, guard_plugin.Rule
    asked = []
    human = Human(channel=lambda r: asked.append(r.reason) or True)
    guard = Guard(rules=[Rule(name="drops-need-tina", tool="drop_claw", action="approve", message="Tina decides")])
    model = ScriptedModel(call("drop_claw"), "ok")
    bandoneon.Agent(model, tools=[drop_claw], plugins=[guard, human], context_files=False).run_sync("go")
    assert MOVES == ["drop"] and len(asked) == 1 and "Tina decides" in asked[0]


# ---------------------------------------------------------------- ask_human


def ask_agent(human: Human) -> tuple[bandoneon.Agent, ScriptedModel]:
    model = ScriptedModel(call("ask_human", question="Which bear, brown or white?"), "ok")
    return bandoneon.Agent(model, tools=[move_claw], plugins=[human], context_files=False), model


def test_ask_human_waits_for_the_answer(tmp_path):
    human = Human(channel=Callbacks(ask=lambda q: f"The brown one ({q.text})"), audit_log=str(tmp_path / "a.jsonl"))
    agent, model = ask_agent(human)
    agent.run_sync("Get me the bear!")
    assert model.requests[1].messages[-1].content == "The brown one (Which bear, brown or white?)"
    record = AuditLog(tmp_path / "a.jsonl").records()[0]
    assert record["kind"] == "question" and record["answer"].startswith("The brown one")


def test_ask_human_is_offered_to_the_model_under_its_configured_name():
    model = ScriptedModel("hi")
    bandoneon.Agent(model, plugins=[Human(ask_tool="ask_kid")], context_files=False).run_sync("hi")
    assert [t.name for t in model.requests[0].tools] == ["ask_kid"]
    model = ScriptedModel("hi")
    bandoneon.Agent(model, plugins=[Human(ask_tool=None)], context_files=False).run_sync("hi")
    assert model.requests[0].tools == ()


def test_an_unanswered_question_times_out_to_the_default():
    async def never(question):
        await asyncio.Event().wait()

    agent, model = ask_agent(Human(channel=Callbacks(ask=never), ask_timeout=0.02, ask_default="Pick the brown bear."))
    agent.run_sync("go")
    seen = model.requests[1].messages[-1].content
    assert "no one answered within 0.02 seconds" in seen and "Pick the brown bear." in seen


def test_a_question_channel_that_fails_gives_the_default():
    agent, model = ask_agent(Human(channel=Callbacks(approve=lambda r: True)))  # no ask callback
    agent.run_sync("go")
    assert "could not reach a person" in model.requests[1].messages[-1].content


def test_a_queue_answers_questions_too():
    queue_channel = HumanQueue()

    def tina():
        question = queue_channel.next(timeout=10)
        queue_channel.answer(question.id, "the white one")

    thread = threading.Thread(target=tina)
    thread.start()
    agent, model = ask_agent(Human(channel=queue_channel))
    agent.run_sync("go")
    thread.join(timeout=10)
    assert model.requests[1].messages[-1].content == "the white one"


def test_steering_is_a_result_even_under_a_function_model():
    human = Human(channel=lambda r: True)

    def model_fn(request):
        if len(request.messages) == 1:
            human.steer("change of plan")
            return call("move_claw", to="bear")
        return "ok"

    result = bandoneon.Agent(FunctionModel(model_fn), tools=[move_claw], plugins=[human], context_files=False).run_sync("go")
    assert result.ok and MOVES == []


def test_steering_through_the_typed_accessor_reaches_the_human_plugin():
    human = Human(channel=lambda r: True)
    model = ScriptedModel(call("move_claw", to="bear"), "ok")
    agent = bandoneon.Agent(model, tools=[move_claw], plugins=[human], context_files=False)
    agent.plugin(Human).steer("the penguin, please")
    agent.run_sync("go")
    assert MOVES == [] and "the penguin, please" in model.requests[1].messages[-1].content


def test_steering_without_the_human_plugin_is_a_key_error_naming_it():
    agent = bandoneon.Agent(ScriptedModel(), tools=[move_claw], plugins=[], context_files=False)
    with pytest.raises(KeyError, match="no Human plugin is active"):
        agent.plugin(Human).steer("x")
