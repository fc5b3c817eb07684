"""Save the whole history under a session id and load it back, in JSONL and in SQLite."""

import subprocess
import sys
import textwrap

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call, reply
from bandoneon_sessions import (
    JsonlStore,
    SessionDamaged,
    SessionError,
    SessionLocked,
    Sessions,
    SqliteSessionStore,
    open_session_plugin,
)


@bandoneon.tool
def weigh(grams: int) -> str:
    """Weigh a bag of coffee."""
    return f"{grams} g"


@pytest.fixture(params=["jsonl", "sqlite"])
def store(request, tmp_path):
    return JsonlStore(tmp_path / "sessions") if request.param == "jsonl" else SqliteSessionStore(tmp_path / "sessions.sqlite3")


def agent_on(store, model, session_id="s-1"):
    plugin = Sessions(session_id=session_id, store=store)
    return bandoneon.Agent(model, tools=[weigh], plugins=[plugin], context_files=False), plugin


def test_a_new_process_resumes_the_whole_history(store):
    first, plugin = agent_on(store, ScriptedModel(call("weigh", grams=1000), "One kilo."))
    first.run_sync("Weigh my Colombia.")
    plugin.close()
    model = ScriptedModel("Yes, one kilo of Colombia.")
    second, _ = agent_on(store, model)
    assert second.messages == first.messages
    second.run_sync("How much was it?")
    assert [m.content for m in model.requests[0].messages][:2] == ["Weigh my Colombia.", ""]


def test_messages_are_saved_after_every_turn_not_only_at_the_end(store):
    model = ScriptedModel(call("weigh", grams=250), RuntimeError("the model server died"))
    agent, plugin = agent_on(store, model)
    with pytest.raises(RuntimeError):
        agent.run_sync("weigh it")
    saved = store.load("s-1").messages
    assert [m.role for m in saved[:3]] == ["user", "assistant", "tool"] and saved[2].content == "250 g"


def test_usage_is_persisted_with_the_session(store):
    model = ScriptedModel(reply("hi", usage=bandoneon.Usage(10, 5, requests=1)))
    agent, plugin = agent_on(store, model)
    agent.run_sync("hello")
    plugin.close()
    again, _ = agent_on(store, ScriptedModel())
    assert (again.usage.input_tokens, again.usage.output_tokens) == (10, 5)


def test_a_cleared_history_is_saved_as_cleared(store):
    agent, plugin = agent_on(store, ScriptedModel("a", "b"))
    agent.run_sync("first")
    agent.clear()
    agent.run_sync("second")
    assert [m.content for m in store.load("s-1").messages] == ["second", "b"]


def test_a_second_opener_of_the_same_session_gets_a_clear_error(store):
    agent, plugin = agent_on(store, ScriptedModel("saved"))
    agent.run_sync("hello")
    with pytest.raises(SessionLocked, match="already open for writing"):
        agent_on(store, ScriptedModel())
    assert len(store.load("s-1").messages) == 2  # the first writer's work is intact
    plugin.close()
    agent_on(store, ScriptedModel())  # free again once closed


def test_another_process_holding_the_session_locks_this_one_out(tmp_path):
    folder = tmp_path / "sessions"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from bandoneon_sessions import JsonlStore
            lock = JsonlStore({str(folder)!r}).lock("shared")
            print("locked", flush=True)
            sys.stdin.readline()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(SessionLocked, match=f"pid {holder.pid}"):
            open_session_plugin("shared", folder).agent_created(bandoneon.Agent(ScriptedModel(), plugins=[], context_files=False))
    finally:
        holder.stdin.close()
        holder.wait()


def test_one_plugin_instance_cannot_serve_two_agents(store):
    agent, plugin = agent_on(store, ScriptedModel())
    with pytest.raises(SessionError, match="already open in another agent"):
        bandoneon.Agent(ScriptedModel(), plugins=[plugin], context_files=False)


@pytest.mark.parametrize("bad", ["", "../x", "a/b", "x" * 200])
def test_a_bad_session_id_is_refused(bad):
    with pytest.raises(SessionError, match="session id"):
        Sessions(session_id=bad)


def test_open_session_plugin_picks_the_store_from_the_path(tmp_path):
    assert isinstance(open_session_plugin("a", tmp_path / "db.sqlite3").store, SqliteSessionStore)
    assert isinstance(open_session_plugin("a", tmp_path / "folder").store, JsonlStore)


def test_sessions_is_activated_by_name_with_options(tmp_path):
    agent = bandoneon.Agent(ScriptedModel("ok"), plugins={"sessions": {"session_id": "n-1", "path": str(tmp_path)}}, context_files=False)
    agent.run_sync("hi")
    assert (tmp_path / "n-1.jsonl").exists()
    agent.plugin("sessions").close()


# ---------------------------------------------------------------- damage


def write_then_tear(tmp_path):
    store = JsonlStore(tmp_path)
    agent, plugin = agent_on(store, ScriptedModel("one", "two"))
    agent.run_sync("first")
    agent.run_sync("second")
    plugin.close()
    return store, store.file("s-1")


def test_a_torn_last_line_is_detected_and_the_valid_prefix_recovered(tmp_path):
    store, file = write_then_tear(tmp_path)
    content = file.read_bytes()
    file.write_bytes(content[: len(content) - 30])  # the crash cut the last record
    loaded = store.load("s-1")
    assert "incomplete" in loaded.damage
    assert [m.content for m in loaded.messages] == ["first", "one", "second", "two"]


def test_a_corrupt_line_stops_the_replay_and_is_reported(tmp_path):
    store, file = write_then_tear(tmp_path)
    lines = file.read_bytes().split(b"\n")
    lines[4] = b"{not json"
    file.write_bytes(b"\n".join(lines))
    with pytest.warns(SessionDamaged, match="line 5 cannot be read"):
        agent, plugin = agent_on(store, ScriptedModel())
    assert [m.content for m in agent.messages] == ["first", "one"]  # line 5 was "second"
    assert "damaged original saved as" in plugin.damage


def test_a_repaired_session_keeps_the_damaged_original_and_takes_new_messages(tmp_path):
    store, file = write_then_tear(tmp_path)
    original = file.read_bytes()[:-10]
    file.write_bytes(original)
    with pytest.warns(SessionDamaged):
        agent, plugin = agent_on(store, ScriptedModel("three"))
    agent.run_sync("third")
    [kept] = tmp_path.glob("s-1.jsonl.damaged-*")
    assert kept.read_bytes() == original
    assert store.load("s-1").damage is None
    assert [m.content for m in store.load("s-1").messages][-2:] == ["third", "three"]


def test_a_tool_call_cut_from_its_result_is_answered_as_interrupted(tmp_path):
    store = JsonlStore(tmp_path)
    agent, plugin = agent_on(store, ScriptedModel(call("weigh", grams=5), "done"))
    agent.run_sync("weigh")
    plugin.close()
    file = store.file("s-1")
    lines = file.read_bytes().split(b"\n")
    file.write_bytes(b"\n".join(lines[:3]) + b"\n" + lines[3][:20])  # the tool result was torn
    loaded = store.load("s-1")
    assert loaded.messages[-1].role == "tool" and "interrupted" in loaded.messages[-1].content
    assert "answered as interrupted" in loaded.damage


def test_a_damaged_sqlite_row_is_recovered_like_a_torn_line(tmp_path):
    import sqlite3

    store = SqliteSessionStore(tmp_path / "s.sqlite3")
    agent, plugin = agent_on(store, ScriptedModel("one", "two"))
    agent.run_sync("first")
    agent.run_sync("second")
    plugin.close()
    with sqlite3.connect(store.path) as connection:
        connection.execute("UPDATE records SET data = 'garbage' WHERE seq = 4")
    with pytest.warns(SessionDamaged, match="row 4 cannot be read"):
        agent, plugin = agent_on(store, ScriptedModel())
    assert [m.content for m in agent.messages] == ["first", "one"]
    with sqlite3.connect(store.path) as connection:
        assert connection.execute("SELECT count(*) FROM damaged_records").fetchone()[0] > 0


# ---------------------------------------------------------------- fork, list, show, delete


def test_fork_branches_from_a_message_and_leaves_the_source_alone(store):
    agent, plugin = agent_on(store, ScriptedModel(call("weigh", grams=1000), "a kilo", "ok"))
    agent.run_sync("weigh")
    agent.run_sync("thanks")
    branch_plugin = plugin.fork("s-2", at=4)
    branch = bandoneon.Agent(ScriptedModel(), plugins=[branch_plugin], context_files=False)
    assert [m.content for m in branch.messages] == [m.content for m in agent.messages[:4]]
    assert len(store.load("s-1").messages) == 6
    assert store.load("s-2").forked_from == "s-1"


def test_fork_refuses_to_cut_between_a_call_and_its_result(store):
    agent, plugin = agent_on(store, ScriptedModel(call("weigh", grams=1000), "a kilo"))
    agent.run_sync("weigh")
    with pytest.raises(SessionError, match="between a tool call and its result"):
        store.fork("s-1", "s-2", at=2)
    assert not store.exists("s-2")


def test_fork_of_an_unknown_session_or_into_an_existing_one_is_an_error(store):
    agent, plugin = agent_on(store, ScriptedModel("ok"))
    agent.run_sync("hi")
    with pytest.raises(SessionError, match="no such session"):
        store.fork("nope", "s-3")
    with pytest.raises(SessionError, match="already exists"):
        store.fork("s-1", "s-1")


def cli(*argv):
    """Through the real `bandoneon` command line, which finds the plugin by its entry point."""
    from bandoneon.cli import main

    return main(list(argv))


def location(store):
    return str(store.folder if isinstance(store, JsonlStore) else store.path)


def test_cli_lists_shows_forks_and_deletes(store, capsys):
    agent, plugin = agent_on(store, ScriptedModel(reply("One kilo.", usage=bandoneon.Usage(7, 3, requests=1))))
    agent.run_sync("A kilo of Colombia")
    plugin.close()
    assert cli("sessions", "list", "--path", location(store)) == 0
    assert "s-1" in capsys.readouterr().out
    assert cli("sessions", "show", "s-1", "--path", location(store)) == 0
    shown = capsys.readouterr().out
    assert "0\tuser\tA kilo of Colombia" in shown and "7 in, 3 out" in shown
    assert cli("sessions", "fork", "s-1", "s-2", "--at", "1", "--path", location(store)) == 0
    assert cli("sessions", "delete", "s-1", "--path", location(store)) == 0
    assert not store.exists("s-1") and len(store.load("s-2").messages) == 1


def test_cli_refuses_to_delete_an_open_session(store, capsys):
    agent, plugin = agent_on(store, ScriptedModel("ok"))
    agent.run_sync("hi")
    assert cli("sessions", "delete", "s-1", "--path", location(store)) == 2
    assert "already open" in capsys.readouterr().err
    assert store.exists("s-1")


def test_cli_show_of_an_unknown_session_is_a_clear_error(store, capsys):
    assert cli("sessions", "show", "ghost", "--path", location(store)) == 2
    assert "no session 'ghost'" in capsys.readouterr().err


# ---------------------------------------------------------------- write-ahead: no call runs twice


def test_a_turns_calls_are_saved_before_they_run_and_each_result_as_it_comes(store):
    on_disk: list[list[str]] = []

    @bandoneon.tool
    def weigh(grams: int) -> str:
        """Weigh a bag of coffee."""
        on_disk.append([m.role for m in store.load("s-1").messages if "was interrupted" not in m.content])
        return f"{grams} g"

    model = ScriptedModel(reply("", bandoneon.ToolCall("a", "weigh", '{"grams": 1}'), bandoneon.ToolCall("b", "weigh", '{"grams": 2}')), "done")
    plugin = Sessions(session_id="s-1", store=store)
    agent = bandoneon.Agent(model, tools=[weigh], plugins=[plugin], context_files=False, max_tool_concurrency=1)
    agent.run_sync("weigh both")
    plugin.close()
    # the call (and the prompt) were saved before the first tool ran; the first result before the second ran
    assert on_disk == [["user", "assistant"], ["user", "assistant", "tool"]]
    assert [m.role for m in store.load("s-1").messages] == ["user", "assistant", "tool", "tool", "assistant"]


def test_a_call_running_when_the_process_stopped_is_answered_as_unknown_and_never_run_again(store):
    runs: list[int] = []

    @bandoneon.tool
    def weigh(grams: int) -> str:
        """Weigh a bag of coffee."""
        runs.append(grams)
        return f"{grams} g"

    store.lock("s-1").release()
    store.open_for_writing("s-1")
    # what a process killed while weigh ran leaves: the call, written ahead, and no result
    store.append("s-1", [bandoneon.Message.user("weigh it"), bandoneon.Message.assistant("", [bandoneon.ToolCall("c1", "weigh", '{"grams": 5}')])])
    model = ScriptedModel("It may have been weighed; I will check first.")
    agent, plugin = agent_on(store, model)
    assert plugin.damage is None  # an expected state after a crash, not damage
    answer = agent.messages[-1]
    assert answer.role == "tool" and answer.is_error and "whether it took effect is unknown" in answer.content
    agent.run_sync("go on")
    plugin.close()
    assert runs == []  # the model read the answer; the call itself never ran again
    loaded = store.load("s-1")
    assert loaded.interrupted == 0 and loaded.damage is None  # the answer was saved with the session
    assert [m.role for m in loaded.messages] == ["user", "assistant", "tool", "user", "assistant"]


# Terminal escapes a model, a tool or a hand in the file could plant: the clipboard (OSC 52), erase a
# line and move up, a bidi override, an 8-bit CSI, a carriage return.
HOSTILE = "\x1b]52;c;SGVsbG8=\x07 \x1b[2K\x1b[1A \u202e \x9b31m \r"
WRITTEN_OUT = "\\x1b]52;c;SGVsbG8=\\x07 \\x1b[2K\\x1b[1A \\u202e \\x9b31m "
OBEYED = ("\x1b", "\x07", "\u202e", "\x9b", "\r")


def test_cli_shows_what_a_session_holds_without_the_terminal_obeying_it(tmp_path, capsys):
    from bandoneon_sessions.records import frame, header_record, message_record

    store = JsonlStore(tmp_path / "sessions")
    store.folder.mkdir()
    weighing = bandoneon.ToolCall("c1", "weigh", f'{{"grams": 250, "note": "{HOSTILE}"}}')
    records = [
        header_record("s-1", 1.0, forked_from=f"s-0 {HOSTILE}"),
        message_record(bandoneon.Message("user", f"weigh it {HOSTILE}please")),
        message_record(bandoneon.Message("assistant", "", (weighing,))),
        {"type": "message", "message": {"role": "\u202e\x9b31m", "content": ""}},  # damage that quotes the file
    ]
    store.file("s-1").write_bytes(b"".join(frame(r) for r in records))
    stored = store.file("s-1").read_bytes()

    assert cli("sessions", "list", "--path", location(store)) == 0
    listed = capsys.readouterr().out
    assert cli("sessions", "show", "s-1", "--path", location(store)) == 0
    shown = capsys.readouterr()

    for printed in (listed, shown.out, shown.err):
        assert not any(char in printed for char in OBEYED)
    assert f"\tforked from s-0 {WRITTEN_OUT}\tDAMAGED" in listed
    assert f"0\tuser\tweigh it {WRITTEN_OUT}please\n" in shown.out
    assert f'1\tassistant\t -> weigh({{"grams": 250, "note": "{WRITTEN_OUT}"}})\n' in shown.out
    assert shown.err.startswith("damage: line 4 cannot be read") and "\\u202e" in shown.err and "\\x9b31m" in shown.err
    assert store.file("s-1").read_bytes() == stored
    assert store.load("s-1").messages[0].content == f"weigh it {HOSTILE}please"


@bandoneon.tool
def list_beans() -> str:
    """List the bean files."""
    return "colombia-\udcff.txt"  # a name that is not UTF-8, as os.listdir gives it


def test_a_result_or_a_reply_holding_text_no_file_can_hold_is_saved_and_loads_back(store):
    agent = bandoneon.Agent(ScriptedModel(call("list_beans"), "Only colombia-\ud800."), tools=[list_beans], plugins=[Sessions(session_id="s-1", store=store)], context_files=False)
    result = agent.run_sync("Which beans \udcff?")
    assert result.ok and result.text == "Only colombia-\ufffd."
    saved = store.load("s-1").messages
    assert list(saved) == agent.messages
    assert [m.content for m in saved] == ["Which beans \ufffd?", "", "colombia-\ufffd.txt", "Only colombia-\ufffd."]
