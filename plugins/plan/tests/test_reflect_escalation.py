"""When the review rounds run out with findings open, a person decides (level 12 → level 13)."""

import asyncio
import threading

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel
from bandoneon_plan import Escalation, Plan, reflect, reflect_sync

try:  # the person's side needs bandoneon-human; reflect's own checks and callables do not (tox env alone-plan)
    import bandoneon_human as human_plugin
    from bandoneon_human import Answer, AuditLog, Callbacks, Human, HumanQueue
except ImportError:
    human_plugin = None

needs_human = pytest.mark.skipif(human_plugin is None, reason="escalation to a person needs bandoneon-human")

STILL_OPEN = "#14 has no paper on the porch"


def agent_with(*replies, plugins):
    model = ScriptedModel(*replies)
    return bandoneon.Agent(model, plugins=plugins, context_files=False), model


def never_fixed(result):
    return [STILL_OPEN]


@needs_human
def test_the_person_accepts_the_work_as_it_is(tmp_path):
    asked = []

    def person(request):
        asked.append(request)
        return Answer(True, "tina")

    human = Human(channel=person, audit_log=str(tmp_path / "audit.jsonl"))
    agent, model = agent_with("done", "done again", plugins=[human])
    outcome = reflect_sync(agent, "Deliver.", never_fixed, max_rounds=1, on_exhausted="human")
    assert (outcome.passed, outcome.accepted, outcome.rounds, outcome.open) == (False, True, 1, (STILL_OPEN,))
    assert outcome.escalations == (Escalation((STILL_OPEN,), "accepted", by="tina"),)
    (request,) = asked
    assert request.kind == "review" and request.arguments["findings"] == [STILL_OPEN] and STILL_OPEN in request.shown
    model.assert_all_used()
    record = AuditLog(tmp_path / "audit.jsonl").records()[-1]
    assert (record["kind"], record["outcome"], record["by"], record["findings"]) == ("review", "accepted", "tina", [STILL_OPEN])


@needs_human
def test_a_correction_resumes_the_work_and_a_passing_review_ends_it():
    world = {"fixed": False}

    def review(result):
        world["fixed"] = world["fixed"] or "porch" in (result.text or "")
        return [] if world["fixed"] else [STILL_OPEN]

    human = Human(channel=lambda request: Answer(False, "tina", "Put it on the porch, not in the bushes."))
    agent, model = agent_with("done", "done again", "On the porch now.", plugins=[human])
    outcome = reflect_sync(agent, "Deliver.", review, max_rounds=1, on_exhausted="human")
    assert (outcome.passed, outcome.accepted, outcome.rounds) == (True, True, 2)
    assert [e.outcome for e in outcome.escalations] == ["corrected"]
    assert model.requests[2].messages[-1].content == f"The review still found: {STILL_OPEN}. A person looked at it and says: Put it on the porch, not in the bushes."


@needs_human
def test_the_plan_plugins_escalate_option_asks_the_person_through_the_queue():
    queue_channel = HumanQueue()
    answers = []

    def person():
        request = queue_channel.next(timeout=10)
        answers.append(request)
        queue_channel.answer(request.id, True, by="tina")

    thread = threading.Thread(target=person)
    thread.start()
    agent, _ = agent_with("done", "done again", plugins=[Plan(escalate=True), Human(channel=queue_channel)])
    outcome = reflect_sync(agent, "Deliver.", never_fixed, max_rounds=1)
    thread.join(timeout=10)
    assert outcome.accepted and answers[0].kind == "review"
    assert queue_channel.pending() == []


@needs_human
def test_without_escalate_the_rounds_end_with_the_findings_open():
    asked = []
    agent, _ = agent_with("done", "done again", plugins=[Plan(), Human(channel=lambda r: asked.append(r) or True)])
    outcome = reflect_sync(agent, "Deliver.", never_fixed, max_rounds=1)
    assert (outcome.accepted, outcome.escalations, asked) == (False, (), [])


@needs_human
def test_nobody_answering_leaves_the_work_open_never_accepted():
    never = asyncio.Event()

    async def wait_for_ever(request):
        await never.wait()

    agent, _ = agent_with("done", "done again", plugins=[Human(channel=Callbacks(approve=wait_for_ever), timeout=0.01)])
    outcome = reflect_sync(agent, "Deliver.", never_fixed, max_rounds=1, on_exhausted="human")
    assert (outcome.accepted, outcome.open) == (False, (STILL_OPEN,))
    assert outcome.escalations == (Escalation((STILL_OPEN,), "unanswered"),)


@needs_human
def test_a_broken_channel_leaves_the_work_open():
    def broken(request):
        raise ConnectionError("the approval service is down")

    agent, _ = agent_with("done", "done again", plugins=[Human(channel=broken)])
    outcome = reflect_sync(agent, "Deliver.", never_fixed, max_rounds=1, on_exhausted="human")
    assert not outcome.accepted and outcome.escalations[0].outcome == "unanswered"


@needs_human
def test_a_person_who_keeps_correcting_is_asked_at_most_max_escalations_times():
    asked = []
    agent, model = agent_with("r0", "r1", "r2", "r3", plugins=[Human(channel=lambda r: asked.append(r) or Answer(False, "tina", "try again"))])
    outcome = reflect_sync(agent, "Deliver.", never_fixed, max_rounds=1, on_exhausted="human", max_escalations=2)
    assert len(asked) == 2 and outcome.rounds == 3 and not outcome.accepted
    model.assert_all_used()


async def test_your_own_code_can_decide_sync_or_async():
    async def decide(so_far):
        return "Use the porch." if so_far.rounds == 0 else True

    agent, _ = agent_with("done", "fixed?", plugins=[])
    outcome = await reflect(agent, "Deliver.", never_fixed, max_rounds=0, on_exhausted=decide)
    assert [e.outcome for e in outcome.escalations] == ["corrected", "accepted"] and outcome.accepted


def test_a_decision_of_the_wrong_type_is_a_clear_error():
    agent, _ = agent_with("done", plugins=[])
    with pytest.raises(TypeError, match="return True \\(accept\\), a correction \\(text\\) or None"):
        reflect_sync(agent, "Deliver.", never_fixed, max_rounds=0, on_exhausted=lambda so_far: 42)
    assert agent.messages[-1].content == "done"  # the work is kept


@pytest.mark.parametrize(
    ("plugins", "options", "message"),
    [
        ([], {"on_exhausted": "human"}, "needs the human plugin"),
        ([Plan(escalate=True)], {}, "needs the human plugin"),
        ([], {"on_exhausted": "a person"}, "must be 'human', a callable or None"),
        ([], {"on_exhausted": "human", "max_escalations": 0}, "max_escalations"),
    ],
)
def test_escalation_without_a_person_is_refused_before_anything_runs(plugins, options, message):
    agent, model = agent_with(plugins=plugins)
    with pytest.raises(bandoneon.ConfigError, match=message):
        reflect_sync(agent, "Deliver.", never_fixed, **options)
    assert model.requests == []


@pytest.fixture
def policy_pack_on(monkeypatch):
    """The example policy pack, switched back on (the suite switches it off, as an operator would)."""
    pytest.importorskip("bandoneon_policy_example")
    monkeypatch.delenv("BANDONEON_DISABLED_PLUGINS", raising=False)
    bandoneon.refresh_plugins()
    yield
    monkeypatch.undo()
    bandoneon.refresh_plugins()


@needs_human
def test_escalation_composes_with_the_policy_pack(policy_pack_on):
    """The example policy pack (active in every agent when installed) does not stand between
    the review and the person."""
    agent, _ = agent_with("done", "done again", plugins=[Plan(escalate=True), Human(channel=lambda r: True)])
    assert any(bandoneon.plugin_name(p) == "policy-example" for p in agent.plugins)
    assert reflect_sync(agent, "Deliver.", never_fixed, max_rounds=1).accepted


@needs_human
def test_the_terminal_shows_the_findings_and_reads_a_correction():
    shown = []
    terminal = human_plugin.Terminal(input=lambda prompt: shown.append(prompt) or "leave it in the mailbox", output=shown.append, who="tina")
    agent, _ = agent_with("done", "done again", "mailbox used", plugins=[Human(channel=terminal)])
    outcome = reflect_sync(agent, "Deliver.", lambda r: [] if r.text == "mailbox used" else [STILL_OPEN], max_rounds=1, on_exhausted="human")
    assert outcome.escalations == (Escalation((STILL_OPEN,), "corrected", "leave it in the mailbox", "tina"),)
    assert STILL_OPEN in shown[0] and shown[1] == "Accept it as it is? [y, or type what to fix] "


@needs_human
def test_a_steering_correction_while_the_person_is_asked_is_their_answer():
    queue_channel = HumanQueue()
    human = Human(channel=queue_channel)

    def person():
        queue_channel.next(timeout=10)
        human.steer("Use the mailbox.")

    thread = threading.Thread(target=person)
    thread.start()
    agent, model = agent_with("done", "done again", "mailbox used", plugins=[human])
    outcome = reflect_sync(agent, "Deliver.", lambda r: [] if r.text == "mailbox used" else [STILL_OPEN], max_rounds=1, on_exhausted="human")
    thread.join(timeout=10)
    assert outcome.escalations == (Escalation((STILL_OPEN,), "corrected", "Use the mailbox.", "steering"),)
    assert outcome.passed and human.pending_corrections == []
    assert queue_channel.pending() == []
