"""`bandoneon eval run/compare` and record/replay."""

import json
from pathlib import Path

import bandoneon
import pytest
from bandoneon.cli import main
from bandoneon.testing import ScriptedModel, call
from bandoneon_evals import (
    Case,
    RecordingProvider,
    ReplayMismatch,
    ReplayProvider,
    contains,
    run_eval,
)

HERE = Path(__file__).parent


@pytest.fixture
def dataset(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    path = tmp_path / "d.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(c)
            for c in [
                {"id": "a", "input": "look at hole 1", "expected": {"contains": "hole 1", "tools": ["look"]}},
                {"id": "b", "input": "hole 2", "expected": {"contains": "hole 9", "tools": []}},
            ]
        )
        + "\n"
    )
    return path


def test_eval_run_prints_the_scorecard_and_writes_json(dataset, tmp_path, capsys):
    out = tmp_path / "r.json"
    code = main(["eval", "run", str(dataset), "--agent", "evals_factories:make_agent", "--scorer", "contains", "--scorer", "trajectory:set", "--json", str(out), "--no-progress"])
    assert code == 0
    text = capsys.readouterr().out
    assert "pass rate 50%" in text
    assert json.loads(out.read_text())["totals"]["passed"] == 1


def test_min_pass_rate_fails_the_build_below_the_bar(dataset, capsys):
    assert main(["eval", "run", str(dataset), "--agent", "evals_factories:make_agent", "--min-pass-rate", "0.9", "--no-progress"]) == 1
    assert "below --min-pass-rate 90.0%" in capsys.readouterr().err
    assert main(["eval", "run", str(dataset), "--agent", "evals_factories:make_agent", "--min-pass-rate", "0.5", "--no-progress"]) == 0


def test_eval_without_a_command_shows_its_commands(capsys):
    assert main(["eval"]) == 1
    err = capsys.readouterr().err
    assert "run" in err and "compare" in err and "worker" in err


def test_min_pass_rate_outside_0_to_1_is_a_usage_error(dataset, capsys):
    assert main(["eval", "run", str(dataset), "--agent", "evals_factories:make_agent", "--min-pass-rate", "90", "--no-progress"]) == 2
    assert "between 0 and 1, got 90" in capsys.readouterr().err


def test_eval_compare_finds_the_regression_between_two_eval_runs(dataset, tmp_path, capsys):
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    common = ["--scorer", "contains", "--scorer", "trajectory:set", "--no-progress"]
    assert main(["eval", "run", str(dataset), "--agent", "evals_factories:make_agent", "--json", str(before), *common]) == 0
    assert main(["eval", "run", str(dataset), "--agent", "evals_factories:make_lazy_agent", "--json", str(after), *common]) == 0
    capsys.readouterr()
    assert main(["eval", "compare", str(before), str(after)]) == 1
    assert capsys.readouterr().out == "pass rate 50% -> 0%\nregressed:\n  a: 100% -> 0%\n"
    assert main(["eval", "compare", str(after), str(before)]) == 0
    assert capsys.readouterr().out == "pass rate 0% -> 50%\nimproved:\n  a: 0% -> 100%\nno case regressed\n"


def test_a_case_missing_from_the_new_report_counts_as_regressed(tmp_path, capsys):
    a = write_report(tmp_path / "a.json", {"hole-1": 1.0, "hole-2": 0.0})
    b = write_report(tmp_path / "b.json", {"hole-1": 1.0})
    assert main(["eval", "compare", a, b]) == 1
    assert "hole-2: missing from the new report" in capsys.readouterr().out


def test_eval_run_names_a_broken_dataset_line(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(HERE))
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "a", "input": "x"}\nnot json\n')
    assert main(["eval", "run", str(path), "--agent", "evals_factories:make_agent"]) == 2
    assert "d.jsonl:2: not JSON" in capsys.readouterr().err


def test_eval_run_with_an_unknown_agent_path_is_a_clear_error(dataset, capsys):
    assert main(["eval", "run", str(dataset), "--agent", "evals_factories:nope"]) == 1
    assert "--agent 'evals_factories:nope': module 'evals_factories' has no 'nope'" in capsys.readouterr().err


def write_report(path, rates):
    path.write_text(json.dumps({"totals": {"pass_rate": sum(rates.values()) / len(rates)}, "cases": [{"id": k, "pass_rate": v} for k, v in rates.items()]}))
    return str(path)


def test_eval_compare_lists_the_cases_that_regressed(tmp_path, capsys):
    a = write_report(tmp_path / "a.json", {"hole-1": 1.0, "hole-2": 1.0, "hole-3": 0.0})
    b = write_report(tmp_path / "b.json", {"hole-1": 1.0, "hole-2": 0.5, "hole-3": 1.0})
    assert main(["eval", "compare", a, b]) == 1
    out = capsys.readouterr().out
    assert "regressed:\n  hole-2: 100% -> 50%" in out and "improved:\n  hole-3: 0% -> 100%" in out
    assert main(["eval", "compare", a, a]) == 0
    assert "no case regressed" in capsys.readouterr().out


def test_eval_compare_refuses_a_file_that_is_not_a_report(tmp_path, capsys):
    (tmp_path / "x.json").write_text("[]")
    assert main(["eval", "compare", str(tmp_path / "x.json"), str(tmp_path / "x.json")]) == 2
    assert "not an eval report" in capsys.readouterr().err


# Terminal escapes a dataset, a model or a tool could carry: the clipboard (OSC 52), erase a line
# and move up, a bidi override, an 8-bit CSI, a carriage return.
HOSTILE = "\x1b]52;c;SGVsbG8=\x07 \x1b[2K\x1b[1A \u202e \x9b31m \r"
WRITTEN_OUT = "\\x1b]52;c;SGVsbG8=\\x07 \\x1b[2K\\x1b[1A \\u202e \\x9b31m "
OBEYED = ("\x1b", "\x07", "\u202e", "\x9b", "\r")


def test_eval_run_prints_case_ids_and_errors_without_the_terminal_obeying_them(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(HERE))
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"id": f"hole {HOSTILE}1", "input": f"drive {HOSTILE}far"}) + "\n")
    stored = path.read_bytes()
    assert main(["eval", "run", str(path), "--agent", "evals_factories:make_failing_agent", "--json", str(tmp_path / "r.json"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert not any(char in out for char in OBEYED)
    case_id, lines = f"hole {WRITTEN_OUT}1", out.splitlines()
    assert lines[2].startswith("-" * len(case_id) + "  ") and lines[3].startswith(case_id + "  0/1  ")  # columns fit what is shown
    assert f"errors:\n  {case_id}#0: RuntimeError: the server refused drive {WRITTEN_OUT}far\n" in out
    assert path.read_bytes() == stored
    assert json.loads((tmp_path / "r.json").read_text())["cases"][0]["id"] == f"hole {HOSTILE}1"  # the report keeps the data


def test_eval_compare_prints_case_ids_without_the_terminal_obeying_them(tmp_path, capsys):
    a = write_report(tmp_path / "a.json", {f"hole {HOSTILE}1": 1.0, "hole-2": 1.0})
    b = write_report(tmp_path / "b.json", {f"hole {HOSTILE}1": 0.0, "hole-2": 1.0})
    stored = (tmp_path / "a.json").read_bytes(), (tmp_path / "b.json").read_bytes()
    assert main(["eval", "compare", a, b]) == 1
    out = capsys.readouterr().out
    assert not any(char in out for char in OBEYED)
    assert out == f"pass rate 100% -> 50%\nregressed:\n  hole {WRITTEN_OUT}1: 100% -> 0%\n"
    assert ((tmp_path / "a.json").read_bytes(), (tmp_path / "b.json").read_bytes()) == stored


# ---------------------------------------------------------------- record and replay


@bandoneon.tool
def iron(meters: int) -> str:
    """Iron.

    Args:
        meters: how far
    """
    return f"{meters} m"


def test_a_recorded_run_replays_deterministically(tmp_path):
    path = tmp_path / "rec.jsonl"
    real = ScriptedModel(call("iron", meters=150), "Holed out in 2", model="caddie-1")
    first = bandoneon.Agent(RecordingProvider(real, path), tools=[iron], plugins=[], context_files=False).run_sync("Hole 1")
    replay = ReplayProvider(path)
    again = bandoneon.Agent(replay, tools=[iron], plugins=[], context_files=False).run_sync("Hole 1")
    assert again.text == first.text == "Holed out in 2"
    assert [m.tool_calls for m in again.messages] == [m.tool_calls for m in first.messages]
    assert replay.remaining == 0 and replay.model == "caddie-1"


def test_replay_refuses_a_request_that_differs_with_a_diff(tmp_path):
    path = tmp_path / "rec.jsonl"
    bandoneon.Agent(RecordingProvider(ScriptedModel("Holed out in 3"), path), plugins=[], context_files=False).run_sync("Hole 1: par 3")
    agent = bandoneon.Agent(ReplayProvider(path), plugins=[], context_files=False)
    with pytest.raises(ReplayMismatch) as info:
        agent.run_sync("Hole 1: par 4")
    message = str(info.value)
    assert "differs from the recording" in message
    assert '-   "content": "Hole 1: par 3"' in message and '+   "content": "Hole 1: par 4"' in message


async def test_a_replayed_eval_scores_like_the_recorded_one(tmp_path):
    path = tmp_path / "rec.jsonl"
    cases = [Case("a", "Hole 1", {"contains": "Holed"}), Case("b", "Hole 2", {"contains": "Holed"})]
    live = ScriptedModel("Holed out in 3", "Lost ball")
    recorded = await run_eval(cases, lambda: bandoneon.Agent(RecordingProvider(live, path), plugins=[], context_files=False), [contains()], concurrency=1, progress=False)
    replay = ReplayProvider(path)
    replayed = await run_eval(cases, lambda: bandoneon.Agent(replay, plugins=[], context_files=False), [contains()], progress=False)
    assert [r.output for r in replayed.runs] == [r.output for r in recorded.runs]


def test_a_missing_or_broken_recording_is_a_config_error(tmp_path):
    with pytest.raises(bandoneon.ConfigError, match="no such recording"):
        ReplayProvider(tmp_path / "none.jsonl")
    (tmp_path / "bad.jsonl").write_text('{"request": {}}\n')
    with pytest.raises(bandoneon.ConfigError, match="bad.jsonl:1: not a recorded exchange"):
        ReplayProvider(tmp_path / "bad.jsonl")


def test_built_in_cli_scorers_become_an_import_path_a_worker_can_load():
    from bandoneon_evals.celery_backend import load_scorers
    from bandoneon_evals.cli import celery_scorers_path

    path = celery_scorers_path(["contains", "trajectory:set:strict"])
    assert [s.name for s in load_scorers(path)] == ["contains", "trajectory"]
    assert celery_scorers_path(["evals_factories:SCORERS"]) == "evals_factories:SCORERS"
    with pytest.raises(bandoneon.ConfigError, match="either built-in scorers or one MODULE:ATTR"):
        celery_scorers_path(["contains", "evals_factories:SCORERS"])
