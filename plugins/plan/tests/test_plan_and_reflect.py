import json
from pathlib import Path

import bandoneon
import pytest
from bandoneon.testing import FunctionModel, ScriptedModel, call, load_script
from bandoneon_plan import Plan, PlanItem, critic, plan_of, reflect, reflect_sync

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "level_12_plan_and_reflect.py"


def planner(*replies, **plan_options):
    model = ScriptedModel(*replies)
    agent = bandoneon.Agent(model, plugins=[Plan(**plan_options)], context_files=False)
    return agent, model


def results(agent):
    return [(m.content, m.is_error) for m in agent.messages if m.role == "tool"]


def test_the_whole_plan_is_in_every_request():
    agent, model = planner(
        [call("add_plan_item", description="Deliver to #12"), call("add_plan_item", description="Deliver to #14")],
        call("update_plan_item", id=1, status="completed"),
        "done",
    )
    agent.run_sync("Deliver the papers.")
    first, second, third = (r.system_prompt for r in model.requests)
    assert "(no plan yet)" in first
    assert "- [pending] Deliver to #12 (id 1)\n- [pending] Deliver to #14 (id 2)" in second
    assert "- [completed] Deliver to #12 (id 1)\n- [pending] Deliver to #14 (id 2)" in third


def test_agent_plan_reads_the_plan_and_it_carries_over_to_the_next_run():
    agent, model = planner(call("add_plan_item", description="Deliver to #12"), "planned", "still here")
    agent.run_sync("Plan it.")
    assert agent.plugin(Plan).plan == (PlanItem(1, "Deliver to #12", "pending"),)
    assert plan_of(agent) == agent.plugin(Plan).plan
    agent.run_sync("Go on.")
    assert "Deliver to #12 (id 1)" in model.requests[-1].system_prompt


def test_a_fork_gets_a_copy_of_the_plan_with_the_history():
    agent, _ = planner(call("add_plan_item", description="A"), "planned")
    agent.run_sync("Plan it.")
    fork = agent.fork()
    fork.provider = ScriptedModel(call("update_plan_item", id=1, status="completed"), "done")
    fork.run_sync("Do it.")
    assert fork.plugin(Plan).plan == (PlanItem(1, "A", "completed"),)
    assert agent.plugin(Plan).plan == (PlanItem(1, "A", "pending"),)  # a copy, not a shared plan


def test_items_can_be_inserted_removed_and_reordered():
    agent, _ = planner(
        [call("add_plan_item", description="A"), call("add_plan_item", description="C")],
        call("add_plan_item", description="B", after_id=1),
        call("remove_plan_item", id=2),
        call("reorder_plan", ids=[3, 1]),
        call("update_plan_item", id=1, description="A, but later"),
        "done",
    )
    agent.run_sync("go")
    assert [(i.id, i.description) for i in agent.plugin(Plan).plan] == [(3, "B"), (1, "A, but later")]


@pytest.mark.parametrize(
    ("bad_call", "message"),
    [
        (call("update_plan_item", id=9, status="completed"), "There is no task 9. Task ids: 1."),
        (call("remove_plan_item", id=9), "There is no task 9. Task ids: 1."),
        (call("reorder_plan", ids=[1, 1]), "reorder_plan needs every task id exactly once"),
        (call("reorder_plan", ids=[2]), "missing [1], unknown [2]"),
        (call("add_plan_item", description="  "), "The task description is empty"),
        (call("update_plan_item", id=1, status="finished"), "status"),
    ],
)
def test_bad_plan_calls_are_error_results_and_the_plan_is_unchanged(bad_call, message):
    agent, _ = planner(call("add_plan_item", description="A"), bad_call, "ok")
    agent.run_sync("go")
    content, is_error = results(agent)[-1]
    assert is_error and message in content
    assert agent.plugin(Plan).plan == (PlanItem(1, "A", "pending"),)


def test_the_plan_is_kept_on_disk_with_plan_file(tmp_path):
    path = tmp_path / "plan.json"
    agent, _ = planner(call("add_plan_item", description="Deliver to #12"), "ok", plan_file=str(path))
    agent.run_sync("go")
    assert json.loads(path.read_text())["items"][0]["description"] == "Deliver to #12"
    again, _ = planner(plan_file=str(path))
    assert plan_of(again) == (PlanItem(1, "Deliver to #12", "pending"),)


def test_a_broken_plan_file_is_a_clear_error(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text("{}")
    with pytest.raises(bandoneon.ConfigError, match="not a plan"):
        Plan(plan_file=str(path))
    assert path.read_text() == "{}"


def test_an_agent_without_the_plugin_has_no_plan():
    agent = bandoneon.Agent(ScriptedModel(), plugins=[], context_files=False)
    with pytest.raises(KeyError, match="plan"):
        plan_of(agent)
    with pytest.raises(KeyError, match="no Plan plugin is active"):
        agent.plugin(Plan)


def test_the_plugin_is_found_by_its_entry_point():
    assert bandoneon.load_plugin("plan") is Plan


# ---------------------------------------------------------------- reflect


def test_findings_go_back_to_the_same_agent_until_the_review_passes():
    world = {"fixed": False}

    def review(result):
        return [] if world["fixed"] else ["#14 has no paper on the porch"]

    def fix() -> str:
        """Fixes it."""
        world["fixed"] = True
        return "fixed"

    model = ScriptedModel("All delivered!", call("fix"), "Fixed #14.")
    agent = bandoneon.Agent(model, tools=[bandoneon.tool(fix)], plugins=[Plan()], context_files=False)
    outcome = reflect_sync(agent, "Deliver.", review)
    assert (outcome.passed, outcome.rounds, outcome.open) == (True, 1, ())
    assert outcome.result.text == "Fixed #14."
    fix_request = model.requests[1]
    assert [m.content for m in fix_request.messages][:3] == ["Deliver.", "All delivered!", "Review found: #14 has no paper on the porch. Fix it."]


def test_rounds_are_capped_and_the_result_says_what_is_still_open():
    model = ScriptedModel("done", "done again", "really done")
    agent = bandoneon.Agent(model, plugins=[], context_files=False)
    outcome = reflect_sync(agent, "Deliver.", lambda result: "#14 has no paper", max_rounds=2)
    assert (outcome.passed, outcome.rounds, outcome.open) == (False, 2, ("#14 has no paper",))
    assert len(outcome.reviews) == 3
    model.assert_all_used()


async def test_an_async_review_is_awaited():
    async def review(result):
        return None

    outcome = await reflect(bandoneon.Agent(ScriptedModel("ok"), plugins=[], context_files=False), "go", review)
    assert outcome.passed and outcome.rounds == 0


@pytest.mark.parametrize(("options", "message"), [({"max_rounds": -1}, "max_rounds"), ({"fix_prompt": "Fix it."}, "{findings}")])
def test_bad_reflect_options_are_refused_before_anything_runs(options, message):
    model = ScriptedModel()
    with pytest.raises(bandoneon.ConfigError, match=message):
        reflect_sync(bandoneon.Agent(model, plugins=[], context_files=False), "go", lambda r: None, **options)
    assert model.requests == []


def test_a_critic_model_reviews_against_a_checklist():
    def judge(request):
        answer = request.messages[-1].content
        assert "Checklist:\n- mentions the price\n- under 50 words" in answer
        return "PASS" if "$12" in answer else "- it does not mention the price"

    worker = ScriptedModel("The book is great.", "The book is great and costs $12.")
    agent = bandoneon.Agent(worker, plugins=[], context_files=False)
    outcome = reflect_sync(agent, "Write a blurb.", critic(FunctionModel(judge), ["mentions the price", "under 50 words"]))
    assert outcome.reviews == (("it does not mention the price",), ())
    assert outcome.passed and outcome.rounds == 1


def test_a_critic_needs_a_checklist():
    with pytest.raises(bandoneon.ConfigError, match="checklist"):
        critic(ScriptedModel(), [])


# ---------------------------------------------------------------- the example


def test_the_paper_round_review_catches_the_paper_in_the_bushes():
    example = load_script(EXAMPLE)
    script = ScriptedModel(
        [call("add_plan_item", description=f"Deliver to #{h}") for h in (12, 14, 18)],
        [call("deliver", house=h) for h in (12, 14, 18)],
        [call("update_plan_item", id=i, status="completed") for i in (1, 2, 3)],  # ticks #14 anyway
        "All three papers delivered!",
        call("deliver", house=14),
        "Re-delivered #14: it is on the porch now.",
    )
    outcome = example.main(script)
    assert outcome.passed and outcome.rounds == 1
    assert outcome.reviews[0] == ("#14 has no paper on the porch",)
    assert "Review found: #14 has no paper on the porch. Fix it." in [m.content for m in script.requests[4].messages]
    assert "- [completed] Deliver to #14 (id 2)" in script.requests[4].system_prompt  # the plan survived into the fix
    script.assert_all_used()


def test_the_locked_gate_goes_to_a_person_whose_correction_finishes_the_round(capsys):
    pytest.importorskip("bandoneon_human", reason="the escalation part of the example needs bandoneon-human")
    from bandoneon_human import Answer

    example = load_script(EXAMPLE)
    asked = []

    def editor(request):
        asked.append(request.arguments["findings"])
        return Answer(False, "editor", "The gate at #18 is locked: leave it in the mailbox.")

    script = ScriptedModel(
        [call("deliver", house=h) for h in (12, 14, 18)],
        "Delivered.",
        [call("deliver", house=14), call("deliver", house=18)],
        "Fixed.",
        call("deliver", house=18),
        "Tried again.",
        call("deliver", house=18, where="mailbox"),
        "#18's paper is in the mailbox.",
    )
    outcome = example.main_with_a_person(script, person=editor)
    assert asked == [["#18 has no paper on the porch"]]
    assert outcome.passed and outcome.accepted and outcome.rounds == 3
    assert "-> corrected: 'The gate at #18 is locked: leave it in the mailbox.'" in capsys.readouterr().out
    script.assert_all_used()
