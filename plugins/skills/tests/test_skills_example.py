"""The level 8 example runs end to end with a scripted model, so it cannot rot."""

from __future__ import annotations

from pathlib import Path

from bandoneon.testing import ScriptedModel, call, load_script

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "level_08_skills.py"


def load_example():
    module = load_script(EXAMPLE)
    return module


def test_the_bakery_loads_the_cake_skill_and_checks_the_calendar(capsys):
    example = load_example()
    model = ScriptedModel(
        call("load_skill", name="custom-cake-order"),
        call("check_calendar", day="Friday", line="nut-free"),
        "A 24 cm chocolate cake from the nut-free line, baked Friday morning. The deposit is 50%. Shall I book it?",
    )
    result = example.main(model)
    model.assert_all_used()
    assert result.ok and "nut-free" in result.text
    prompt = model.requests[0].system_prompt
    for name in ("custom-cake-order", "catering-quote", "allergen-info"):
        assert f"`{name}`" in prompt
    assert "Nut allergy" not in prompt  # bodies stay on the shelf until loaded
    tool_results = [m.content for m in result.messages if m.role == "tool"]
    assert "Nut allergy → the nut-free line" in tool_results[0]
    assert tool_results[1].startswith("07:00-11:00 free")
    assert "loaded: <skill name=\"custom-cake-order\">" in capsys.readouterr().out


def test_the_cake_skill_keeps_the_model_to_its_tools():
    example = load_example()
    sent = []

    def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return "sent"

    model = ScriptedModel(call("load_skill", name="custom-cake-order"), call("send_email", to="baker"), "ok")
    agent = example.build_agent(model)
    agent.add_tool(send_email)
    result = agent.run_sync(example.PROMPT)
    refusal = [m for m in result.messages if m.role == "tool"][1]
    assert refusal.is_error and "custom-cake-order allows check_calendar" in refusal.content
    assert sent == [] and result.ok
