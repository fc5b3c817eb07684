"""Session files someone else wrote: a header no clock can read, records before any header, a
file in the folder that is not a session, a fork onto a damaged session. Each is damage or is
left alone; none crashes a load or a listing, and none is overwritten without a copy kept."""

from __future__ import annotations

import json
import sqlite3
import warnings
import zlib
from pathlib import Path

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bandoneon_sessions import JsonlStore, SessionDamaged, SessionError, Sessions, SqliteSessionStore
from bandoneon_sessions.records import frame, header_record, message_record


def cli(*argv: str) -> int:
    from bandoneon.cli import main

    return main(list(argv))


def line(record: object) -> bytes:
    """A framed line with a right checksum, whatever the record holds (JSON ``NaN`` included)."""
    body = json.dumps(record, separators=(",", ":")).encode()
    return b"%s\t%08x\n" % (body, zlib.crc32(body))


# Any JSON value a hand (or another program) could put where the creation time goes.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**500), max_value=10**500) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(created_at=json_values)
def test_any_creation_time_in_a_header_is_read_or_is_damage_never_a_crash(tmp_path_factory, created_at, capsys):
    folder = tmp_path_factory.mktemp("sessions")
    store = JsonlStore(folder)
    header = {"type": "session", "version": 2, "id": "s-1", "created_at": created_at}
    store.file("s-1").write_bytes(line(header) + frame(message_record(bandoneon.Message.user("kept"))))

    loaded = store.load("s-1")  # an int past float range, NaN, a string: damage or a time, not an exception
    assert loaded.damage is not None or [m.content for m in loaded.messages] == ["kept"]
    assert cli("sessions", "list", "--path", str(folder)) == 0
    assert "s-1" in capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SessionDamaged)
        agent = bandoneon.Agent(ScriptedModel("ok"), plugins=[Sessions(session_id="s-1", store=store)], context_files=False)
    try:
        assert agent.run_sync("go on").text == "ok"
    finally:
        agent.close()


def _sqlite_rows(path: Path, session_id: str, texts: list[str]) -> None:
    SqliteSessionStore(path).load("x")  # makes the file and its schema
    with sqlite3.connect(path) as connection:
        connection.executemany("INSERT INTO records VALUES (?, ?, ?)", [(session_id, n, text) for n, text in enumerate(texts)])
    connection.close()


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_records_with_no_session_header_are_kept_aside_not_overwritten(tmp_path, kind):
    precious = [bandoneon.Message.user("the whole roast log"), bandoneon.Message.assistant("noted")]
    if kind == "jsonl":
        store: JsonlStore | SqliteSessionStore = JsonlStore(tmp_path)
        store.file("s-1").write_bytes(b"".join(frame(message_record(m)) for m in precious))
    else:
        store = SqliteSessionStore(tmp_path / "s.sqlite3")
        _sqlite_rows(store.path, "s-1", [json.dumps(message_record(m)) for m in precious])

    assert store.load("s-1").damage is not None
    with pytest.warns(SessionDamaged, match="kept"):
        agent = bandoneon.Agent(ScriptedModel("ok"), plugins=[Sessions(session_id="s-1", store=store)], context_files=False)
    agent.close()
    if kind == "jsonl":
        [kept] = tmp_path.glob("s-1.jsonl.damaged-*")
        assert b"the whole roast log" in kept.read_bytes()
    else:
        with sqlite3.connect(store.path) as connection:
            kept_rows = connection.execute("SELECT data FROM damaged_records WHERE session_id = 's-1'").fetchall()
        connection.close()
        assert any("the whole roast log" in data for (data,) in kept_rows)


@pytest.mark.parametrize("stray", ["my notes.jsonl", "café.jsonl", ".hidden.jsonl", "-x.jsonl"])
def test_a_file_in_the_folder_that_no_session_id_names_does_not_stop_the_listing(tmp_path, stray, capsys):
    store = JsonlStore(tmp_path)
    store.file("s-1").write_bytes(frame(header_record("s-1", 1.0)))
    (tmp_path / stray).write_text("not a session")
    assert [s.session_id for s in store.list()] == ["s-1"]
    assert cli("sessions", "list", "--path", str(tmp_path)) == 0
    assert "s-1" in capsys.readouterr().out


def test_a_sqlite_row_under_an_id_no_session_has_does_not_stop_the_listing(tmp_path, capsys):
    store = SqliteSessionStore(tmp_path / "s.sqlite3")
    _sqlite_rows(store.path, "s-1", [json.dumps(header_record("s-1", 1.0))])
    _sqlite_rows(store.path, "../other tool", [json.dumps(header_record("x", 1.0))])
    assert [s.session_id for s in store.list()] == ["s-1"]
    assert cli("sessions", "list", "--path", str(store.path)) == 0


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_forking_onto_a_damaged_session_refuses_and_leaves_it_whole(tmp_path, kind):
    store: JsonlStore | SqliteSessionStore = JsonlStore(tmp_path) if kind == "jsonl" else SqliteSessionStore(tmp_path / "s.sqlite3")
    agent = bandoneon.Agent(ScriptedModel("one kilo"), plugins=[Sessions(session_id="src", store=store)], context_files=False)
    agent.run_sync("weigh")
    agent.close()
    # "dst" lost its header to a flipped bit: it does not exist as a session, but its records are there.
    records = [header_record("dst", 1.0), message_record(bandoneon.Message.user("the other log"))]
    if kind == "jsonl":
        assert isinstance(store, JsonlStore)
        lines = [frame(r) for r in records]
        lines[0] = lines[0].replace(b'"dst"', b'"dsu"')  # its checksum no longer matches
        store.file("dst").write_bytes(b"".join(lines))
        before = store.file("dst").read_bytes()
    else:
        _sqlite_rows(tmp_path / "s.sqlite3", "dst", ["{not json", json.dumps(records[1])])
    assert not store.load("dst").exists and store.load("dst").damage

    with pytest.raises(SessionError, match="already exists|damaged"):
        store.fork("src", "dst")
    if kind == "jsonl":
        assert isinstance(store, JsonlStore)
        assert store.file("dst").read_bytes() == before
    else:
        with sqlite3.connect(tmp_path / "s.sqlite3") as connection:
            rows = connection.execute("SELECT data FROM records WHERE session_id = 'dst'").fetchall()
        connection.close()
        assert any("the other log" in data for (data,) in rows)


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_session_written_by_a_newer_version_is_refused_not_cut_and_rewritten(tmp_path, kind):
    # Format 3 brings a record type this version does not know; its messages come after it.
    records = [
        header_record("s-1", 1.0) | {"version": 3},
        message_record(bandoneon.Message.user("weigh it")),
        {"type": "bookmark", "at": 1},
        message_record(bandoneon.Message.assistant("one kilo")),
    ]
    if kind == "jsonl":
        store: JsonlStore | SqliteSessionStore = JsonlStore(tmp_path)
        assert isinstance(store, JsonlStore)
        store.file("s-1").write_bytes(b"".join(frame(r) for r in records))
        before: object = store.file("s-1").read_bytes()
    else:
        store = SqliteSessionStore(tmp_path / "s.sqlite3")
        _sqlite_rows(store.path, "s-1", [json.dumps(r) for r in records])
        before = store.load("s-1")

    with pytest.raises(SessionError, match="newer bandoneon-sessions"):
        bandoneon.Agent(ScriptedModel("ok"), plugins=[Sessions(session_id="s-1", store=store)], context_files=False)
    if kind == "jsonl":
        assert isinstance(store, JsonlStore)
        assert store.file("s-1").read_bytes() == before and not list(tmp_path.glob("*.damaged-*"))
    else:
        assert store.load("s-1") == before
    # and the lock went with the refusal: a newer version can open it at once
    store.lock("s-1").release()


def test_a_lock_file_planted_as_a_symlink_is_refused_and_its_target_untouched(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("a file the lock must not truncate\n")
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "s-1.lock").symlink_to(victim)
    with pytest.raises(SessionError, match="symbolic link"):
        bandoneon.Agent(ScriptedModel("ok"), plugins=[Sessions(session_id="s-1", path=str(folder))], context_files=False)
    assert victim.read_text() == "a file the lock must not truncate\n"
