"""Installing the pack changes an existing agent's behaviour, without touching its code."""

from __future__ import annotations

import argparse
import importlib.metadata
import tomllib

import attrs
import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call, install_distribution
from bandoneon_guard import PolicyPack
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


def test_the_final_answer_reaches_the_caller_with_the_id_number_masked():
    agent, _ = existing_agent("Booked: DNI 30.123.456, train 7.")
    result = agent.run_sync("Book tourist.")
    assert result.text == "Booked: DNI ***, train 7."
    assert agent.messages[-1].content == result.text

    @attrs.frozen
    class Booking:
        passenger: str
        train: int

    typed = bandoneon.Agent(ScriptedModel(call("final_answer", passenger="DNI 30.123.456", train=7)), plugins=[], output_type=Booking, context_files=False)
    assert typed.run_sync("Book tourist.").output == Booking("DNI ***", 7)


def test_the_operator_can_switch_the_pack_off_and_agent_code_cannot(monkeypatch):
    monkeypatch.setenv("BANDONEON_DISABLED_PLUGINS", "policy-example")
    bandoneon.refresh_plugins()
    agent, _ = existing_agent(call("book_ticket", train=7, seat_class="first"), "ok")
    agent.run_sync("Book first.")
    assert BOOKED == [(7, "first")]


SECOND_PACK = '''
from bandoneon_guard import PolicyPack

class NoFirstClassEver(PolicyPack):
    name = "no-first-class"
    policy_package = "nofirst_pack"
'''


@pytest.fixture
def second_pack(tmp_path, monkeypatch):
    """A second policy pack, installed for real: a package with its policy.toml and an entry point."""
    policy = (
        '[[rule]]\nname = "never-first"\ntool = "book_ticket"\nargument = "seat_class"\none_of = ["tourist"]\n'
        'message = "First class is never booked"\n'
    )
    files = {"nofirst_pack/__init__.py": SECOND_PACK, "nofirst_pack/policy.toml": policy}
    install_distribution(tmp_path, "nofirst-pack", {"no-first-class": "nofirst_pack:NoFirstClassEver"}, files=files)
    monkeypatch.syspath_prepend(str(tmp_path))
    bandoneon.refresh_plugins()
    yield
    bandoneon.refresh_plugins()


def test_a_second_pack_that_disagrees_resolves_to_the_stricter_rule(second_pack):
    agent, model = existing_agent(call("book_ticket", train=7, seat_class="first"), "ok")
    agent.run_sync("Book first.")
    refusal = model.requests[1].messages[-1].content
    assert refusal.startswith("Blocked by policy (never-first") and BOOKED == []
    leader = next(p for p in agent.plugins if isinstance(p, PolicyPack) and p.enforced_policy is not None)
    assert {r.name for r in leader.enforced_policy.rules} == {"never-first", "first-class-needs-approval"}


def test_agent_code_cannot_quiet_the_pack_with_a_pack_of_its_own():
    from bandoneon_policy_example import RailwayPolicy

    class QuietRailway(RailwayPolicy):
        """Same policy package, another name, and it enforces nothing."""

        name = "quiet-railway"

        def check_tools(self, agent, tools):
            return None

    class Impostor(PolicyPack):
        name = "policy-example"
        policy_package = "bandoneon_policy_example"

    for plugins, match in (
        ([QuietRailway()], "not installed as one"),
        ([Impostor()], "installed policy pack"),
        ({"policy-example": {"policy_file": "empty.toml"}}, "installed policy pack"),
    ):
        with pytest.raises(bandoneon.ConfigError, match=match):
            bandoneon.Agent(ScriptedModel(), tools=[book_ticket], plugins=plugins, context_files=False)
    # What agent code may pass is the installed pack itself, which changes nothing.
    agent, model = existing_agent(call("book_ticket", train=7, seat_class="first"), "ok")
    again = bandoneon.Agent(model, tools=[book_ticket], plugins=["policy-example", *agent.plugins], context_files=False)
    again.run_sync("Book first.")
    assert BOOKED == [] and "First class needs a manager's approval" in model.requests[1].messages[-1].content


def test_unused_hooks_set_on_the_pack_class_do_not_quiet_it(monkeypatch):
    from bandoneon_policy_example import RailwayPolicy

    # Agent code can reach the installed class: the operator's pack is still called in full.
    monkeypatch.setattr(RailwayPolicy, "unused_hooks", frozenset({"before_tool_execution"}), raising=False)
    agent, model = existing_agent(call("book_ticket", train=7, seat_class="first"), "ok")
    assert agent.hooks.implements(bandoneon.hookspecs.before_tool_execution)
    agent.run_sync("Book first.")
    assert BOOKED == [] and "First class needs a manager's approval" in model.requests[1].messages[-1].content


def test_the_pack_checks_every_agent_for_the_trifecta_guard_or_no_guard():
    from bandoneon_guard import TrifectaWarning

    @bandoneon.tool(capabilities=["reads_private"])
    def read_payroll() -> str:
        """Read the payroll."""
        return "..."

    @bandoneon.tool(untrusted_output=True)
    def read_inbox() -> str:
        """Read the inbox."""
        return "..."

    @bandoneon.tool(capabilities=["sends_out"])
    def send_email(to: str) -> str:
        """Send an email."""
        return "sent"

    agent = bandoneon.Agent(ScriptedModel(), tools=[read_payroll, read_inbox], plugins=[], context_files=False)
    with pytest.warns(TrifectaWarning, match=r"policy packs \(policy-example\).*a way out: send_email"):
        agent.add_tool(send_email)


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
