import json
from pathlib import Path

import bandoneon
import pytest
from bandoneon.cli import main
from bandoneon.testing import (
    FunctionModel,
    MockLLMServer,
    Reply,
    ScriptedModel,
    call,
    load_script,
)
from bandoneon_laps import LAP_INSTRUCTIONS, Laps, progress_tools

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "level_10_fresh_laps.py"


def tools_by_name(path):
    return {t.name: t for t in progress_tools(path)}


async def test_the_progress_note_is_read_back_by_the_next_reader(tmp_path):
    tools = tools_by_name(tmp_path / "PROGRESS.md")
    assert "Nothing written yet" in await tools["read_progress"].invoke({}, None)
    await tools["write_progress"].invoke({"text": "Bricks 1-12 laid. Next: 13."}, None)
    assert await tools["read_progress"].invoke({}, None) == "Bricks 1-12 laid. Next: 13.\n"
    assert [p.name for p in tmp_path.iterdir()] == ["PROGRESS.md"]  # no temporary file left behind


def test_an_empty_note_is_refused_and_the_old_one_kept(tmp_path):
    note = tmp_path / "PROGRESS.md"
    note.write_text("Bricks 1-12 laid.\n")
    model = ScriptedModel(call("write_progress", text="  "), "ok")
    agent = bandoneon.Agent(model, tools=progress_tools(note), plugins=[], context_files=False)
    agent.run_sync("go")
    result = agent.messages[2]
    assert result.is_error and "The note is empty" in result.content
    assert note.read_text() == "Bricks 1-12 laid.\n"


def test_the_plugin_gives_the_progress_tools_and_the_lap_instructions(tmp_path):
    model = ScriptedModel("ok")
    agent = bandoneon.Agent(model, plugins=[Laps(progress_file=str(tmp_path / "P.md"))], context_files=False)
    assert {"read_progress", "write_progress"} <= set(agent.tools)
    agent.run_sync("go")
    assert LAP_INSTRUCTIONS in model.requests[0].system_prompt


def test_the_plugin_is_found_by_its_entry_point():
    assert bandoneon.load_plugin("laps") is Laps


# ---------------------------------------------------------------- the CLI


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BANDONEON_MODEL", raising=False)
    return tmp_path


def test_the_cli_runs_laps_until_the_command_succeeds(workdir, capsys):
    with MockLLMServer() as server:
        # Lap 1 writes the note; the --until command checks that the note exists.
        server.add(Reply(tool_calls=[("write_progress", {"text": "all done"})]), Reply(text="lap one"), Reply(text="lap two"))
        model = "openai-compatible:m@" + server.base_url
        code = main(["laps", "Write the note.", "--until", "test -f PROGRESS.md", "--max-laps", "3", "--model", model])
    out = capsys.readouterr().out
    assert code == 0
    assert "lap 1: end_turn · done · lap one" in out
    assert json.loads((workdir / ".bandoneon" / "laps.json").read_text())["laps"] == 1


def test_the_cli_exits_1_when_the_fuse_blows(workdir, capsys):
    with MockLLMServer() as server:
        server.add(Reply(text="not yet"), Reply(text="still not"))
        code = main(["laps", "Try.", "--until", "false", "--max-laps", "2", "--model", "openai-compatible:m@" + server.base_url])
    assert code == 1
    assert "max_laps: not done after 2 laps" in capsys.readouterr().out


def test_the_cli_reports_an_until_command_that_does_not_exist(workdir, capsys):
    code = main(["laps", "Try.", "--until", "no-such-command-xyz", "--max-laps", "2", "--model", "openai-compatible:m@http://127.0.0.1:9/v1"])
    assert code == 2
    assert "--until command not found" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("option", "message"),
    [(["--max-laps", "0"], "--max-laps must be at least 1"), (["--max-laps", "2", "--until-timeout", "0"], "--until-timeout must be a positive")],
)
def test_the_cli_refuses_bad_numbers(workdir, capsys, option, message):
    code = main(["laps", "Try.", "--until", "true", *option])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (workdir / ".bandoneon").exists()


# ---------------------------------------------------------------- the example


def load_example():
    module = load_script(EXAMPLE)
    return module


def test_the_bridge_example_is_built_in_three_fresh_laps(tmp_path):
    example = load_example()

    def lap(request):
        last = request.messages[-1]
        if last.role == "user":
            return call("read_progress")
        if last.name == "read_progress":
            start = example.bridge_length(tmp_path) + 1
            return call("lay_bricks", start=start, count=12)
        if last.name == "lay_bricks":
            return call("write_progress", text=f"{last.content} Next: brick {example.bridge_length(tmp_path) + 1}.")
        return f"Bridge at {example.bridge_length(tmp_path)} bricks."

    model = FunctionModel(lap)
    result = example.main(model, folder=tmp_path)
    assert (result.done, result.laps, result.stop) == (True, 3, "done")
    assert example.bridge_length(tmp_path) == 36
    first_requests = [r for r in model.requests if len(r.messages) == 1]
    assert len(first_requests) == 3  # every lap started from the goal alone
    assert "Next: brick 37" in (tmp_path / "PROGRESS.md").read_text()


def test_the_cli_shows_a_lap_s_words_without_obeying_their_escapes(workdir, capsys):
    with MockLLMServer() as server:
        server.add(Reply(text="done\x1b]52;c;SGVsbG8=\x07 \u202enot\x1b[1A"))
        code = main(["laps", "Try.", "--until", "false", "--max-laps", "1", "--model", "openai-compatible:m@" + server.base_url])
    out = capsys.readouterr().out
    assert code == 1
    assert "lap 1: end_turn · not done · done\\x1b]52;c;SGVsbG8=\\x07 \\u202enot\\x1b[1A" in out
    assert "\x1b" not in out and "\u202e" not in out
