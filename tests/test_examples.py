"""The core's examples run end to end (against a scripted model), so they cannot rot."""

from __future__ import annotations

from pathlib import Path

from bandoneon.cli import main as cli
from bandoneon.testing import ScriptedModel, call, load_script

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name: str):
    module = load_script(EXAMPLES / f"{name}.py")
    return module


def test_quickstart_calls_the_tool_and_says_how_it_ended(capsys):
    model = ScriptedModel(call("get_forecast", city="Buenos Aires", date="2026-09-26"), "Rain likely tomorrow.")
    result = load("quickstart").main(model)
    out = capsys.readouterr().out
    assert result.ok and "tool call: get_forecast" in out and "stop=end_turn" in out


def test_level_00_remembers_the_city_across_runs():
    model = ScriptedModel("Noted.", call("get_forecast", city="Buenos Aires", date="2026-09-26"), "Rain, 70%.")
    result = load("level_00_toolkit").main(model)
    assert result.text == "Rain, 70%."
    assert model.requests[1].messages[0].content == "I'm in Buenos Aires."


def test_level_01_the_model_chooses_the_path(capsys):
    model = ScriptedModel(call("ask_villager", name="fisher"), call("search_area", place="old oak"), "It's in the crow's nest.")
    result = load("level_01_what_is_an_agent").main(model)
    assert result.ok and "ask_villager -> search_area" in capsys.readouterr().out


def test_level_02_the_loop_runs_until_end_turn():
    model = ScriptedModel(call("launch_red", angle=20), call("launch_bomb", angle=42), "The fort is cleared.")
    result = load("level_02_agent_loop").main(model)
    assert result.turns == 3 and "Boom" in model.requests[2].messages[-1].content


def test_level_03_a_wrong_type_gets_an_error_the_model_can_fix():
    model = ScriptedModel(call("identify_wild", creature="Splashy"), call("check_matchup", attack="grass", defend="Water!"), call("check_matchup", attack="grass", defend="water"), "Send grass.")
    load("level_03_designing_a_tool").main(model)
    assert "Call identify_wild" in model.requests[2].messages[-1].content
    assert model.requests[3].messages[-1].content == "grass vs water: 2x, super effective"


def test_level_03_tools_check_flags_crookys_tool(capsys):
    code = cli(["tools", "check", str(EXAMPLES / "level_03_designing_a_tool.py")])
    out = capsys.readouterr().out
    assert code == 0, "warnings alone do not fail the check"
    assert cli(["tools", "check", "--strict", str(EXAMPLES / "level_03_designing_a_tool.py")]) == 1
    assert "do_stuff: vague name" in out and "do_stuff: short description" in out and "parameter 'x'" in out
    assert "check_matchup:" not in out and "identify_wild:" not in out


def test_tools_check_fails_on_errors(tmp_path, capsys):
    (tmp_path / "bad.py").write_text(
        "import bandoneon\n"
        "bad = bandoneon.Tool(name='lookup', description='', parameters={'type': 'object', 'properties': {'q': {'type': 'string'}}}, function=print)\n"
    )
    assert cli(["tools", "check", str(tmp_path / "bad.py")]) == 1
    out = capsys.readouterr().out
    assert "ERROR   lookup: no description" in out and "no 'required' list" in out and "additionalProperties" in out


def test_typed_answers_repairs_an_answer_that_does_not_fit(capsys):
    model = ScriptedModel(
        call("get_forecast", city="Buenos Aires"),
        call("final_answer", city="Buenos Aires", rain_chance="80%", advice="umbrella"),
        call("final_answer", city="Buenos Aires", rain_chance=80, advice="umbrella"),
    )
    result = load("typed_answers").main(model)
    assert result.output.rain_chance == 80 and result.turns == 3
    assert "Buenos Aires: 80% -> bring umbrella" in capsys.readouterr().out
    repair = model.requests[2].messages[-1]
    assert repair.role == "tool" and "Field 'rain_chance' must be an integer" in repair.content


def test_level_03_tools_check_measures_crookys_whole_type_chart(capsys):
    assert cli(["tools", "check", str(EXAMPLES / "level_03_designing_a_tool.py")]) == 0
    out = capsys.readouterr().out
    chart = next(line for line in out.splitlines() if line.startswith("WARNING type_chart({})"))
    assert "of the window (limit 5%)" in chart and "paginate" in chart
    assert 'SIZE    check_matchup({"attack": "grass", "defend": "water"}): result of 35 characters' in out


def test_images_sends_the_picture_and_shows_its_digest_not_its_bytes(tmp_path, capsys):
    picture = tmp_path / "receipt.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n receipt")
    model = ScriptedModel("12.50 EUR at Panaderia Sol.")
    result = load("images").main(model, picture)
    assert result.text == "12.50 EUR at Panaderia Sol."
    assert model.requests[0].messages[0].parts[1].data == picture.read_bytes()
    out = capsys.readouterr().out
    assert "sent: image image/png 16 bytes sha256:" in out


async def test_reasoning_prints_the_thinking_apart_from_the_answer(mock_llm, capsys):
    from bandoneon.testing import Reply

    mock_llm.add(Reply(text="<think>1001 = 7 * 11 * 13.</think>No: 1001 = 7 x 11 x 13."))
    agent = await load("reasoning").main(f"openai-compatible:m@{mock_llm.base_url}")
    assert agent.messages[-1].thinking[0].text == "1001 = 7 * 11 * 13."
    out = capsys.readouterr().out
    assert "\033[2m1001 = 7 * 11 * 13.\033[0m" in out.replace("\033[0m\033[2m", "")
    assert "answered: 'No: 1001 = 7 x 11 x 13.'" in out


def test_fallback_models_says_which_model_answered(mock_llm, capsys):
    from bandoneon.testing import Fault, MockLLMServer, Reply

    with MockLLMServer() as backup:
        mock_llm.add(Fault(status=503), Fault(status=503))
        backup.add(Reply(text="Montevideo.", usage=(12, 3)))
        result = load("fallback_models").main([f"vllm:big@{mock_llm.base_url}", f"ollama:small@{backup.base_url}"])
    assert result.text == "Montevideo."
    out = capsys.readouterr().out
    assert "vllm:big failed (vllm: HTTP 503" in out and "ollama:small takes over" in out
    assert "ollama:small: 1 call(s), 15 tokens" in out
