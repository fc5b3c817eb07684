"""Installing the pack changes an existing agent's behaviour, without touching its code."""

from __future__ import annotations

import argparse
import importlib.metadata
import tomllib

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_guard import PolicyPack, policy_from_text
from bandoneon_guard.cli import show_policy

try:
    importlib.metadata.distribution("bandoneon-policy-example")
except importlib.metadata.PackageNotFoundError:
    pytest.skip(
        "bandoneon-policy-example is not installed (pip install -e plugins/policy-example): these tests "
        "prove what installing it does",
        allow_module_level=True,
    )

BOOKED: list[tuple[int, str]] = []


@bandoneon.tool
def book_ticket(train: int, seat_class: str) -> str:
    """Book one seat on a train for the employee who is asking."""
    BOOKED.append((train, seat_class))
    return f"Booked train {train}, {seat_class} class, for Ana Pérez (DNI 30.123.456)."


def existing_agent(*replies) -> tuple[bandoneon.Agent, ScriptedModel]:
    """An agent whose code knows nothing of any policy: no plugins at all."""
    model = ScriptedModel(*replies)
    return bandoneon.Agent(model, tools=[book_ticket], plugins=[], context_files=False), model


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    BOOKED.clear()
    monkeypatch.delenv("BANDONEON_DISABLED_PLUGINS", raising=False)
    monkeypatch.delenv("BANDONEON_PLUGINS", raising=False)
    bandoneon.refresh_plugins()
    yield
    bandoneon.refresh_plugins()


def test_the_pack_is_discovered_as_an_installed_policy_pack():
    entry = bandoneon.installed_plugins()["policy-example"]
    assert entry.distribution == "bandoneon-policy-example"
    assert entry.load().is_policy_pack


def test_an_agent_built_with_no_plugins_still_obeys_the_pack():
    agent, model = existing_agent(call("book_ticket", train=7, seat_class="first"), "Booked nothing.")
    assert "policy-example" in [bandoneon.plugin_name(p) for p in agent.plugins]
    result = agent.run_sync("Book me the most comfortable seat to Mar del Plata on Friday.")
    assert BOOKED == []
    refusal = model.requests[1].messages[-1].content
    assert "First class needs a manager's approval" in refusal and "did not run" in refusal
    assert result.stop == "end_turn"


def test_tourist_books_and_the_id_number_never_reaches_the_model():
    agent, model = existing_agent(call("book_ticket", train=7, seat_class="tourist"), "Done.")
    agent.run_sync("Book tourist.")
    assert BOOKED == [(7, "tourist")]
    seen = model.requests[1].messages[-1].content
    assert "30.123.456" not in seen and "DNI ***" in seen
    assert "30.123.456" not in str(agent.transcript)


def test_the_operator_can_switch_the_pack_off_and_agent_code_cannot(monkeypatch):
    monkeypatch.setenv("BANDONEON_DISABLED_PLUGINS", "policy-example")
    bandoneon.refresh_plugins()
    agent, _ = existing_agent(call("book_ticket", train=7, seat_class="first"), "ok")
    agent.run_sync("Book first.")
    assert BOOKED == [(7, "first")]


def test_a_second_pack_that_disagrees_resolves_to_the_stricter_rule():
    class NoFirstClassEver(PolicyPack):
        name = "no-first-class"

        @classmethod
        def policy(cls):
            return policy_from_text(
                '[[rule]]\nname = "never-first"\ntool = "book_ticket"\nargument = "seat_class"\none_of = ["tourist"]\n'
                'message = "First class is never booked"\n',
                source="no-first-class (test)",
            )

    model = ScriptedModel(call("book_ticket", train=7, seat_class="first"), "ok")
    agent = bandoneon.Agent(model, tools=[book_ticket], plugins=[NoFirstClassEver()], context_files=False)
    agent.run_sync("Book first.")
    refusal = model.requests[1].messages[-1].content
    assert refusal.startswith("Blocked by policy (never-first") and BOOKED == []
    leader = next(p for p in agent.plugins if isinstance(p, PolicyPack) and p.enforced_policy is not None)
    assert {r.name for r in leader.enforced_policy.rules} == {"never-first", "first-class-needs-approval"}


def test_policy_show_prints_the_pack_rules_and_where_they_came_from(capsys):
    assert show_policy(argparse.Namespace(file=[])) == 0
    document = tomllib.loads(capsys.readouterr().out)
    rule = next(r for r in document["rule"] if r["name"] == "first-class-needs-approval")
    assert rule["action"] == "approve" and rule["source"].startswith("policy-example (bandoneon_policy_example/policy.toml)")
    assert document["redact"][0]["replacement"] == "DNI ***"


def test_with_a_person_to_ask_an_approved_first_class_ticket_is_booked():
    human = pytest.importorskip("bandoneon_human")
    asked = []

    def manager(request):
        asked.append(request.shown)
        return True

    model = ScriptedModel(call("book_ticket", train=7, seat_class="first"), "Booked.")
    agent = bandoneon.Agent(model, tools=[book_ticket], plugins=[human.Human(channel=manager, ask_tool=None)], context_files=False)
    agent.run_sync("Book first.")
    assert BOOKED == [(7, "first")]
    assert asked == ['book_ticket({"train": 7, "seat_class": "first"})']


def test_the_bandoneon_cli_runs_policy_show(capsys):
    from bandoneon.cli import main

    assert main(["policy", "show"]) == 0
    document = tomllib.loads(capsys.readouterr().out)
    assert any(r["name"] == "first-class-needs-approval" for r in document["rule"])


def test_bandoneon_plugins_shows_the_pack_in_force(capsys):
    from bandoneon.cli import main

    assert main(["plugins"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("policy-example "))
    assert "bandoneon-policy-example" in line and "  policy pack  " in line
