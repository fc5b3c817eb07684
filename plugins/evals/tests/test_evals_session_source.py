"""A saved session becomes the case of what loading the session gives (with the sessions plugin
installed): each turn's results in the order of its calls, and a damaged file's valid part, its
damage named as a warning; never a reading of its own that disagrees with a resume."""

from __future__ import annotations

import bandoneon
import pytest
from bandoneon_evals import DatasetError, add_case, case_from_messages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sessions = pytest.importorskip("bandoneon_sessions")

FIXTURE_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def exchange(question: str, calls: list[tuple[str, str, bool]], order: list[int], answer: str) -> list[bandoneon.Message]:
    """A user message, a reply calling ``calls`` (id, name, fails?), their results written in
    ``order`` (the order they finished), and the answer."""
    tool_calls = [bandoneon.ToolCall(call_id, name, "{}") for call_id, name, _ in calls]
    results = [bandoneon.Message.tool(tool_calls[n], f"{calls[n][1]} done", is_error=calls[n][2]) for n in order]
    return [bandoneon.Message.user(question), bandoneon.Message.assistant("", tool_calls), *results, bandoneon.Message.assistant(answer)]


def save(folder, session_id: str, messages: list[bandoneon.Message]):
    store = sessions.JsonlStore(folder)
    lock = store.lock(session_id)
    try:
        store.open_for_writing(session_id)
        store.append(session_id, messages)
    finally:
        lock.release()
    return store.file(session_id)


def case_of_load(path, case_id: str):
    """The case of the session as the sessions plugin loads it: what evals must agree with."""
    loaded = sessions.JsonlStore(path.parent).load(path.stem)
    return case_from_messages(loaded.messages, case_id=case_id, evidence={"session": str(path.resolve())}), loaded.damage


CALLS = [("c1", "weather", True), ("c2", "units", False), ("c3", "clock", True)]


def test_results_written_out_of_call_order_are_read_in_call_order(tmp_path):
    messages = exchange("Plan a trip.", CALLS, [2, 0, 1], "Planned.") + exchange("Weather?", CALLS, [1, 2, 0], "Rain.")
    path = save(tmp_path, "s1", messages)
    case = add_case(path, tmp_path / "d.jsonl", case_id="s1")
    expected, _ = case_of_load(path, "s1")
    assert case == expected
    assert case.metadata["outcome"]["tool_errors"] == ["weather", "clock"]  # in call order, not file order
    assert [m.get("tool_call_id") for m in case.metadata["history"][2:5]] == ["c1", "c2", "c3"]


def test_a_damaged_session_gives_its_valid_part_and_says_so(tmp_path):
    path = save(tmp_path, "s1", exchange("Plan a trip.", CALLS, [0, 1, 2], "Planned."))
    with path.open("ab") as file:
        file.write(b'{"type": "message", "message": {"role": 7}}\n')
    case = add_case(path, tmp_path / "d.jsonl", case_id="s1")
    expected, damage = case_of_load(path, "s1")
    assert damage is not None and "line 8 cannot be read" in damage
    assert case.input == expected.input == "Plan a trip." and case.metadata["replies"] == expected.metadata["replies"]
    assert case.metadata["replay_warnings"] == [f"the session file is damaged: {damage}"]


def test_a_session_damaged_before_its_first_question_is_a_clear_error(tmp_path):
    path = save(tmp_path, "s1", exchange("Plan a trip.", CALLS, [0, 1, 2], "Planned."))
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"garbage\n" + b"".join(lines[1:]))
    with pytest.raises(DatasetError, match=r"s1\.jsonl: line 2 cannot be read .*nothing before it to make a case of"):
        add_case(path, tmp_path / "d.jsonl")


def test_a_session_file_not_named_for_its_id_is_a_clear_error(tmp_path):
    path = save(tmp_path, "s1", exchange("Plan a trip.", CALLS, [0, 1, 2], "Planned."))
    renamed = path.rename(tmp_path / "s1.ndjson")
    with pytest.raises(DatasetError, match=r"s1\.ndjson: .*<session id>\.jsonl"):
        add_case(renamed, tmp_path / "d.jsonl")
    spaced = renamed.rename(tmp_path / "my session.jsonl")
    with pytest.raises(DatasetError, match=r"my session\.jsonl: .*session id"):
        add_case(spaced, tmp_path / "d.jsonl")


@FIXTURE_SETTINGS
@given(
    first=st.permutations(range(3)),
    last=st.permutations(range(3)),
    cut=st.integers(0, 4000),
    junk=st.binary(max_size=40),
    flip=st.one_of(st.none(), st.integers(0, 4000)),
)
def test_evals_sees_exactly_what_a_session_load_gives(tmp_path_factory, first, last, cut, junk, flip):
    """Whatever the order the results were written in and whatever happened to the file (cut
    short, garbage after it, a byte changed), the case is the case of the loaded session (its
    damage as a warning), or a DatasetError when nothing of it is a case."""
    folder = tmp_path_factory.mktemp("sessions")
    path = save(folder, "s1", exchange("Plan a trip.", CALLS, list(first), "Planned.") + exchange("Weather?", CALLS, list(last), "Rain."))
    data = bytearray(path.read_bytes()[: max(cut, 80)] + junk)
    if flip is not None and flip < len(data):
        data[flip] ^= 0x20
    path.write_bytes(bytes(data))
    try:
        expected, damage = case_of_load(path, "s1")
    except DatasetError:
        with pytest.raises(DatasetError):
            add_case(path, folder / "d.jsonl", case_id="s1")
        return
    case = add_case(path, folder / "d.jsonl", case_id="s1")
    warnings = case.metadata.get("replay_warnings", [])
    assert warnings == ([f"the session file is damaged: {damage}"] if damage else [])
    assert {**case.metadata, "replay_warnings": None} == {**expected.metadata, "replay_warnings": None}
    assert (case.id, case.input) == (expected.id, expected.input)
