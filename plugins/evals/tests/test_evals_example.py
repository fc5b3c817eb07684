"""The level 11 example runs end to end with a caddie that plays from the request alone."""

import json
import re
from pathlib import Path

import pytest
from bandoneon.testing import FunctionModel, call, load_script

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "level_11_observability.py"

PLANS = {
    "1": [("iron", 150), ("putt", None)],
    "2": [("drive", 250), ("iron", 110), ("putt", None)],
    "3": [("drive", 250), ("iron", 160), ("iron", 160), ("putt", None)],  # finds the water
}


def caddie(request):
    """Plays each hole's plan, one club per turn, from the prompt and the results so far."""
    hole = re.search(r"Hole (\d)", request.messages[0].content).group(1)
    shots = [m for m in request.messages if m.role == "tool"]
    plan = PLANS[hole]
    if len(shots) < len(plan):
        club, meters = plan[len(shots)]
        return call(club) if meters is None else call(club, meters=meters)
    if shots[-1].is_error:
        return "The putter says the ball is too far away. I could not hole out."
    return re.search(r"Holed out in \d+", shots[-1].content).group(0) + "."


def load_example():
    pytest.importorskip("bandoneon_tracing", reason="the level 11 example also needs bandoneon-tracing")
    module = load_script(EXAMPLE)
    return module


def test_the_example_traces_hole_3_and_scores_the_three_holes(capsys):
    example = load_example()
    report = example.main(FunctionModel(caddie))
    out = capsys.readouterr().out
    assert "execute_tool drive" in out and "!" in out  # the ball in the water is a red span
    assert [c.pass_rate for c in report.cases] == [1.0, 1.0, 0.0]
    hole3 = report.case("hole-3").runs[0]
    scores = {s.scorer: s for s in hole3.scores}
    assert scores["contains"].passed and scores["trajectory"].passed  # extras allowed: iron, iron, putt is in there
    assert not scores["par"].passed and "5 strokes" in scores["par"].detail
    assert hole3.tool_calls == ("drive", "iron", "iron", "putt")
    assert "pass rate 67%" in out
    json.dumps(report.to_json())


def test_a_strict_trajectory_catches_the_driver_on_hole_3():
    from bandoneon_evals import evaluate, trajectory

    example = load_example()
    report = evaluate(example.DATASET, example.make_golfer_for(FunctionModel(caddie)), [trajectory(mode="ordered", allow_extras=False)], progress=False)
    assert [c.pass_rate for c in report.cases] == [1.0, 1.0, 0.0]
    assert "extra: ['drive']" in report.case("hole-3").runs[0].scores[0].detail


def test_a_reported_failure_becomes_a_case_that_fails_until_the_putter_is_fixed(capsys):
    example = load_example()
    example.main(FunctionModel(caddie))
    out = capsys.readouterr().out
    assert "case 'putter-on-hole-1' added to" in out
    assert "regression case with the first putter: pass rate 0%" in out
    assert "regression case with the fixed putter: pass rate 100%" in out
