"""A state file's lap count is the fuse's memory: a hand-written one cannot widen the fuse.

``laps`` must be a whole number (JSON integer, not a bool or a float) between 0 and a sane
bound; anything else is a damaged state file: ``ConfigError``, the file untouched, no lap run.
"""

from __future__ import annotations

import json

import bandoneon
import pytest
from bandoneon.testing import FunctionModel, reply
from bandoneon_laps import run_goal_loop_sync
from hypothesis import given
from hypothesis import strategies as st

GOAL = "Build the thing."


class TooManyLaps(BaseException):
    """Raised past any fair count, so a test of a widened fuse ends instead of looping on."""


def counting_agents(models, limit=3):
    def make_agent():
        if len(models) >= limit:
            raise TooManyLaps(f"lap {len(models) + 1} ran: the fuse allowed at most {limit}")
        model = FunctionModel(lambda request: reply("Done!"))
        models.append(model)
        return bandoneon.Agent(model, plugins=[], context_files=False)

    return make_agent


def written_state(laps) -> str:
    return json.dumps({"goal": GOAL, "laps": laps, "in_progress": False, "records": [], "version": 1})


@pytest.mark.parametrize("laps", [-1000, -1, True, False, 1.5, 2.0, 1e300, 10**30, "3", None])
def test_a_state_file_with_a_bad_lap_count_is_refused_and_kept(tmp_path, laps):
    state = tmp_path / "laps.json"
    state.write_text(text := written_state(laps))
    models = []
    with pytest.raises(bandoneon.ConfigError, match="not a laps state file"):
        run_goal_loop_sync(GOAL, counting_agents(models), lambda: False, max_laps=3, state_file=state)
    assert models == [] and state.read_text() == text


# Property: whatever JSON value stands for the lap count, the loop never runs more laps than
# max_laps minus the laps the file records (a value that is not a fair count is refused).
hostile_counts = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.text(max_size=5),
)


@given(laps=hostile_counts)
def test_no_state_file_lets_more_laps_run_than_the_fuse_allows(tmp_path_factory, laps):
    state = tmp_path_factory.mktemp("laps") / "laps.json"
    state.write_text(written_state(laps))
    models = []
    try:
        result = run_goal_loop_sync(GOAL, counting_agents(models), lambda: False, max_laps=3, state_file=state)
    except bandoneon.ConfigError:
        assert models == []
        return
    assert type(laps) is int and 0 <= laps
    assert len(models) == max(0, 3 - laps) and result.laps == laps + len(models)  # the file's laps, then this call's
