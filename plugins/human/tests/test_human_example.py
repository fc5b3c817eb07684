"""The level 13 example runs with a scripted model: ask, steer, approve."""

from __future__ import annotations

from pathlib import Path

from bandoneon.testing import ScriptedModel, call, load_script

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "level_13_human.py"


def load():
    module = load_script(EXAMPLE)
    return module


def test_level_13_the_claw_machine(capsys):
    example = load()
    model = ScriptedModel(
        call("ask_kid", question="Which bear, the brown or the white one?"),
        call("move_claw", to="bear"),
        call("drop_claw"),  # cancelled: Tina shouted
        call("move_claw", to="penguin"),
        call("drop_claw"),  # approved: the penguin
        "Got it! Tina wins the penguin.",
    )
    result = example.main(model)
    assert result.ok and "penguin" in result.text
    tool_texts = [m.content for m in model.requests[-1].messages if m.role == "tool"]
    assert tool_texts[0].startswith("The brown bear")
    assert tool_texts[2] == "Cancelled before it ran: the person interrupted. They say: No, wait! The penguin!"
    assert tool_texts[4] == "Got it! Tina wins the penguin."
    assert "Tina: 'No, wait! The penguin!'" in capsys.readouterr().out
