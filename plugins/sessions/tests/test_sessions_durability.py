"""Sessions lose nothing they said was saved (issue 13): the disk fails, tears or shortens a
write at every byte of a scripted session; SQLite transactions are aborted at every step;
damaged files are named with what to do."""

from __future__ import annotations

import json
import sqlite3
import zlib

import bandoneon
import pytest
from bandoneon import Message, ToolCall
from bandoneon.testing import FaultyDisk, ScriptedModel, WriteLog, reply
from bandoneon_sessions import JsonlStore, SessionDamaged, SessionError, Sessions, SqliteSessionStore
from bandoneon_sessions.cli import list_command

SESSION = "s1"
CALL = ToolCall("c1", "look", "{}")
BATCHES = [
    [Message.user("find")],
    [Message.assistant("", [CALL]), Message.tool(CALL, "hall is empty")],
    [Message.user("and?"), Message.assistant("no")],
]


def assert_valid_for_a_strict_server(messages) -> None:
    pending: set[str] = set()
    for message in messages:
        if message.role == "tool":
            assert message.tool_call_id in pending
            pending.discard(message.tool_call_id)
        else:
            assert not pending, f"unanswered calls {pending}"
            pending = {c.id for c in message.tool_calls} if message.role == "assistant" else set()
    assert not pending


def save_all(store, *, retry: bool) -> tuple[list[Message], list[Message]]:
    """Save the batches; returns (messages whose save returned, the batch that was cut)."""
    saved: list[Message] = []
    for batch in BATCHES:
        try:
            store.append(SESSION, batch)
        except (OSError, SessionError):
            if not retry:
                return saved, batch
            store.append(SESSION, batch)  # the app saves the same messages again, as Sessions does
        saved.extend(batch)
    return saved, []


def bytes_of_one_session(tmp_path) -> int:
    store = JsonlStore(tmp_path / "measure")
    with WriteLog() as disk:
        store.lock(SESSION)
        store.open_for_writing(SESSION)
        save_all(store, retry=False)
    return disk.written


@pytest.mark.parametrize("fault", ["fail", "tear", "short"])
def test_a_fault_at_every_byte_loses_no_saved_message(sweep_dir, fault):
    tmp_path = sweep_dir
    total = bytes_of_one_session(tmp_path)
    for at_byte in range(total):
        for crash in (False, True):
            folder = tmp_path / f"{fault}-{at_byte}-{crash}"
            store = JsonlStore(folder)
            lock = store.lock(SESSION)
            with FaultyDisk(at_byte, fault, crash=crash):
                try:
                    store.open_for_writing(SESSION)
                except OSError:
                    saved, cut = [], []  # the session was never created
                else:
                    saved, cut = save_all(store, retry=not crash)
            lock.release()
            with FaultyDisk(at_byte=10**12):  # a disk without faults that skips fsync: keeps the sweep fast
                check_reopened(folder, saved, cut, f"{fault} at byte {at_byte}, crash={crash}", crash=crash)


def check_reopened(folder, saved, cut, where, *, crash) -> None:
    """Every message whose save returned, in order; after them only whole records of the cut save."""
    reopened = JsonlStore(folder)
    loaded = reopened.load(SESSION)
    got = list(loaded.messages)
    assert got[: len(saved)] == saved, where
    rest = [m for m in got[len(saved) :] if "was interrupted" not in m.content]
    assert rest == cut[: len(rest)], where  # only whole records of the save that failed
    if not crash:
        assert got == saved and loaded.damage is None, where
    if loaded.exists:
        reopened.lock(SESSION)
        repaired = reopened.open_for_writing(SESSION)
        assert list(repaired.messages) == got, where
        assert_valid_for_a_strict_server(repaired.messages)
        assert reopened.load(SESSION).damage is None, where


def save_through_a_writer(store, *, crash: bool) -> list[Message]:
    """Save the batches through one writer (as Sessions does); returns the messages that a
    returned append put on disk. A failed batch stays with the writer and goes with the next."""
    saved: list[Message] = []
    handed: list[Message] = []
    writer = store.writer(SESSION)
    try:
        for batch in [*BATCHES, []]:  # the last, empty append writes what is still pending
            handed.extend(batch)
            try:
                writer.append(batch)
            except OSError:
                if crash:
                    break
                continue
            saved = list(handed)
    finally:
        writer.close()
    return saved


@pytest.mark.parametrize("fault", ["fail", "tear", "short"])
def test_a_fault_at_every_byte_of_a_held_open_writer_loses_no_saved_message(sweep_dir, fault):
    tmp_path = sweep_dir
    total = bytes_of_one_session(tmp_path)
    for at_byte in range(total):
        for crash in (False, True):
            folder = tmp_path / f"writer-{fault}-{at_byte}-{crash}"
            store = JsonlStore(folder)
            lock = store.lock(SESSION)
            with FaultyDisk(at_byte, fault, crash=crash):
                try:
                    store.open_for_writing(SESSION)
                except OSError:
                    saved = None  # the session was never created
                else:
                    saved = save_through_a_writer(store, crash=crash)
            lock.release()
            where = f"{fault} at byte {at_byte}, crash={crash}"
            with FaultyDisk(at_byte=10**12):
                if saved is None:
                    assert not JsonlStore(folder).load(SESSION).exists, where
                    continue
                check_reopened(folder, saved, [m for batch in BATCHES for m in batch][len(saved) :], where, crash=crash)
                if not crash:  # the failed batch was written by the next append: nothing lost at all
                    assert list(JsonlStore(folder).load(SESSION).messages) == [m for batch in BATCHES for m in batch], where


def run_two_calls_then_answer(folder, durability) -> list[Message]:
    """One agent run through every write of the plugin: the calls written ahead, each result
    as it comes, the answer at the turn's end, the usage at the run's end."""
    calls = [ToolCall("a", "look", '{"where": "hall"}'), ToolCall("b", "look", '{"where": "attic"}')]
    model = ScriptedModel(reply("", *calls), "both empty")
    plugin = Sessions(session_id=SESSION, store=JsonlStore(folder), durability=durability)
    try:
        agent = bandoneon.Agent(model, tools=[look], plugins=[plugin], context_files=False, max_tool_concurrency=1)
    except bandoneon.BandoneonError:
        return []  # the session could not be created
    try:
        agent.run_sync("look around")
    except bandoneon.BandoneonError:
        pass  # a save failed: the run fails, and says which plugin
    finally:
        agent.close()
    return list(agent.messages)


@bandoneon.tool
def look(where: str) -> str:
    """Look somewhere."""
    return f"{where} is empty"


@pytest.mark.parametrize("durability", ["turn", "os", "run"])
def test_a_fault_at_every_byte_of_an_agent_run_leaves_a_valid_prefix(sweep_dir, durability):
    with WriteLog() as disk:
        reference = run_two_calls_then_answer(sweep_dir / "reference", durability)
    for at_byte in disk.fault_points():
        for fault in ("fail", "tear", "short"):
            folder = sweep_dir / f"{durability}-{fault}-{at_byte}"
            with FaultyDisk(at_byte, fault, crash=True):
                run_two_calls_then_answer(folder, durability)
            with FaultyDisk(at_byte=10**12):
                loaded = JsonlStore(folder).load(SESSION)
                got = [m for m in loaded.messages if "was interrupted" not in m.content]
                where = f"{durability}: {fault} at byte {at_byte}"
                assert got == reference[: len(got)], where  # nothing out of order, nothing invented
                assert_valid_for_a_strict_server(loaded.messages)


def test_a_line_whose_bytes_changed_stops_the_replay_there(tmp_path):
    store = JsonlStore(tmp_path)
    store.lock(SESSION)
    store.open_for_writing(SESSION)
    for batch in BATCHES:
        store.append(SESSION, batch)
    lines = store.file(SESSION).read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b"hall is empty", b"hall is EMPTY")  # still valid JSON
    store.file(SESSION).write_bytes(b"\n".join(lines))
    loaded = store.load(SESSION)
    assert "line 4" in loaded.damage and "checksum" in loaded.damage
    assert [m.content for m in loaded.messages[:2]] == ["find", ""]
    assert "no" not in [m.content for m in loaded.messages]
    assert_valid_for_a_strict_server(loaded.messages)


def test_each_line_is_its_record_as_compact_json_with_text_kept_as_written_and_a_checksum(tmp_path):
    store = JsonlStore(tmp_path)
    store.lock(SESSION)
    store.open_for_writing(SESSION)
    call = ToolCall("c1", "roast", '{"bean": "café"}')
    store.append(SESSION, [Message.user("Roast the café beans ☕\t\"now\""), Message.assistant("", [call]), Message.tool(call, "done")])
    lines = store.file(SESSION).read_bytes().splitlines()
    for line in lines:
        body, _, checksum = line.rpartition(b"\t")
        assert checksum == b"%08x" % zlib.crc32(body)
        assert body == json.dumps(json.loads(body), ensure_ascii=False, separators=(",", ":")).encode()
    assert "☕".encode() in lines[1]
    assert [m.content for m in store.load(SESSION).messages] == ["Roast the café beans ☕\t\"now\"", "", "done"]


def test_a_missing_tool_result_in_the_middle_is_damage_and_repaired(tmp_path):
    store = JsonlStore(tmp_path)
    store.lock(SESSION)
    store.open_for_writing(SESSION)
    store.append(SESSION, [Message.user("go"), Message.assistant("", [CALL])])  # the result line never made it
    store.append(SESSION, [Message.assistant("done"), Message.tool(ToolCall("ghost", "x"), "stray")])
    loaded = store.load(SESSION)
    assert "had no saved result" in loaded.damage and "answering no call were dropped" in loaded.damage
    assert [m.role for m in loaded.messages] == ["user", "assistant", "tool", "assistant"]
    assert_valid_for_a_strict_server(loaded.messages)
    store.open_for_writing(SESSION)
    assert store.load(SESSION).damage is None


def test_a_deeply_nested_line_is_damage_not_a_crash(tmp_path):
    store = JsonlStore(tmp_path)
    store.lock(SESSION).release()
    store.open_for_writing(SESSION)
    store.append(SESSION, [Message.user("kept")])
    deep = b"[" * 10_000 + b"]" * 10_000
    with store.file(SESSION).open("ab") as file:
        file.write(deep + b"\t%08x\n" % zlib.crc32(deep))  # its checksum is right: only the depth is wrong
    store.append(SESSION, [Message.user("after garbage")])
    loaded = store.load(SESSION)
    assert [m.content for m in loaded.messages] == ["kept"]
    assert "line 3" in loaded.damage and "nested too deeply" in loaded.damage
    with pytest.warns(SessionDamaged, match="nested too deeply"):
        agent = bandoneon.Agent(ScriptedModel("ok"), plugins=[Sessions(session_id=SESSION, store=JsonlStore(tmp_path))], context_files=False)
    assert [m.content for m in agent.messages] == ["kept"]
    assert agent.run_sync("go on").text == "ok"
    agent.close()


@pytest.mark.parametrize("bad", ["abc\n", "abc\n.jsonl", "\nabc"])
def test_session_ids_with_a_newline_are_refused(tmp_path, bad):
    with pytest.raises(SessionError, match="session id"):
        JsonlStore(tmp_path).load(bad)


# ------------------------------------------------------------------ SQLite


class AbortingStore(SqliteSessionStore):
    """A SQLite store that aborts its work at VM step ``at_step`` (counted inside the store's
    statements, before COMMIT: an interrupted COMMIT may have taken effect, which no real
    fault reports as a failure)."""

    def __init__(self, path, at_step: int | None):
        super().__init__(path)
        self.at_step = at_step
        self.steps = 0
        self.armed = False

    def _connect(self) -> sqlite3.Connection:
        connection = super()._connect()

        def tick() -> int:
            if not self.armed:
                return 0
            self.steps += 1
            return 1 if self.at_step is not None and self.steps == self.at_step else 0

        connection.set_progress_handler(tick, 1)
        return connection

    def _run(self, work):
        def armed(connection):
            self.armed = True
            try:
                return work(connection)
            finally:
                self.armed = False

        return super()._run(armed)


def test_an_aborted_sqlite_write_at_every_step_loses_no_saved_message(sweep_dir):
    tmp_path = sweep_dir
    measure = AbortingStore(tmp_path / "measure.sqlite3", None)
    measure.open_for_writing(SESSION)
    first_write = measure.steps
    save_all(measure, retry=False)
    for at_step in range(first_write, measure.steps + 1):
        path = tmp_path / f"{at_step}.sqlite3"
        store = AbortingStore(path, None)
        store.open_for_writing(SESSION)
        store.at_step, store.steps = at_step, first_write
        saved, _ = save_all(store, retry=True)
        loaded = SqliteSessionStore(path).load(SESSION)
        assert list(loaded.messages) == saved and loaded.damage is None, f"aborted at step {at_step}"


class CommitTookEffectThenFailed(sqlite3.Connection):
    """A COMMIT that stores the transaction and then reports a failure (as an I/O error after
    the journal was synced does), at the ``fail_at``-th commit of the process."""

    commits = 0
    fail_at = 0

    def commit(self) -> None:
        super().commit()
        CommitTookEffectThenFailed.commits += 1
        if CommitTookEffectThenFailed.commits == CommitTookEffectThenFailed.fail_at:
            raise sqlite3.OperationalError("disk I/O error")


class FlakyCommitStore(SqliteSessionStore):
    connection_class = CommitTookEffectThenFailed


def two_runs_through_sessions(path) -> tuple[list[Message], int]:
    model = ScriptedModel(reply("", ToolCall("a", "look", '{"where": "hall"}')), "empty", "still empty")
    try:
        agent = bandoneon.Agent(model, tools=[look], plugins=[Sessions(session_id=SESSION, store=FlakyCommitStore(path))], context_files=False)
    except SessionError:
        return [], 0
    for prompt in ("look", "and now?"):
        try:
            agent.run_sync(prompt)
        except bandoneon.BandoneonError:
            pass  # the save failed (so it says); the writer writes the batch again with the next one
    agent.close()
    return list(agent.messages), len(model.requests)


def test_an_interrupted_commit_that_took_effect_and_is_retried_writes_each_record_once(tmp_path, monkeypatch):
    monkeypatch.setattr(CommitTookEffectThenFailed, "fail_at", 0)
    monkeypatch.setattr(CommitTookEffectThenFailed, "commits", 0)
    two_runs_through_sessions(tmp_path / "measure.sqlite3")
    commits = CommitTookEffectThenFailed.commits
    assert commits >= 4  # write-ahead, result, answer, usage...
    for fail_at in range(1, commits + 1):
        monkeypatch.setattr(CommitTookEffectThenFailed, "fail_at", fail_at)
        monkeypatch.setattr(CommitTookEffectThenFailed, "commits", 0)
        path = tmp_path / f"{fail_at}.sqlite3"
        history, requests = two_runs_through_sessions(path)
        loaded = SqliteSessionStore(path).load(SESSION)
        assert loaded.damage is None, f"commit {fail_at}"
        assert list(loaded.messages) == history, f"commit {fail_at}: a record written twice, or lost"
        assert loaded.usage.requests == requests, f"commit {fail_at}: each run's usage once"


@pytest.mark.parametrize(
    "damage",
    ["truncated", "header overwritten", "random bytes", "a text file"],
)
def test_a_damaged_sqlite_file_is_named_with_what_to_do(tmp_path, damage, capsys):
    path = tmp_path / "sessions.sqlite3"
    store = SqliteSessionStore(path)
    store.open_for_writing(SESSION)
    for batch in BATCHES:
        store.append(SESSION, batch)
    data = path.read_bytes()
    if damage == "truncated":
        data = data[:700]
    elif damage == "header overwritten":
        data = b"\0" * 100 + data[100:]
    elif damage == "random bytes":
        data = bytes((i * 7919) % 251 for i in range(len(data)))
    else:
        data = b"this is not a database\n" * 50
    path.write_bytes(data)
    with pytest.raises(SessionError) as caught:
        SqliteSessionStore(path).load(SESSION)
    message = str(caught.value)
    assert str(path) in message and "move it aside" in message and "\n" not in message

    class Args:
        pass

    args = Args()
    args.path = str(path)
    assert list_command(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "Traceback" not in err
