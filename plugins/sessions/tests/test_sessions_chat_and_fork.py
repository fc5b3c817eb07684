"""`bandoneon chat --session ID` end to end, and what agent.fork() means for a session."""

import gc
import io

import bandoneon
import pytest
from bandoneon.cli import main
from bandoneon.testing import Reply, ScriptedModel
from bandoneon_sessions import (
    JsonlStore,
    SessionError,
    SessionLocked,
    Sessions,
    SessionStore,
    open_store,
)


def chat(monkeypatch, server, *lines):
    """One `bandoneon chat --session s1` command over the loopback server, typing ``lines``."""
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{line}\n" for line in lines)))
    return main(["chat", "--session", "s1", "--base-url", server.base_url])


def test_chat_takes_the_session_folder_from_the_command_line(mock_llm, tmp_path, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("hello\n"))
    mock_llm.add(Reply("hi"))
    assert main(["chat", "--session", "s2", "--session-path", str(tmp_path / "kept"), "--base-url", mock_llm.base_url]) == 0
    assert [m.content for m in JsonlStore(tmp_path / "kept").load("s2").messages] == ["hello", "hi"]


def test_closing_the_agent_releases_the_session(tmp_path):
    agent = bandoneon.Agent(ScriptedModel("hi"), plugins=[Sessions(session_id="s1", store=JsonlStore(tmp_path))], context_files=False)
    agent.run_sync("hello")
    agent.close()
    again = bandoneon.Agent(ScriptedModel(), plugins=[Sessions(session_id="s1", store=JsonlStore(tmp_path))], context_files=False)
    assert [m.content for m in again.messages] == ["hello", "hi"]


@pytest.mark.parametrize("where", ["sessions", "sessions.sqlite3"])
def test_a_second_chat_with_the_same_session_sees_the_first(mock_llm, tmp_path, monkeypatch, capsys, where):
    monkeypatch.setenv("BANDONEON_SESSIONS_PATH", str(tmp_path / where))
    mock_llm.add(Reply("Noted: a kilo of Colombia, ground for moka."), Reply("A kilo of Colombia, ground for moka."))
    assert chat(monkeypatch, mock_llm, "A kilo of Colombia, ground for moka.") == 0  # closes its agent: the lock is free
    assert chat(monkeypatch, mock_llm, "What did I order?") == 0
    assert "A kilo of Colombia, ground for moka." in capsys.readouterr().out
    second = [(m["role"], m["content"]) for m in mock_llm.requests[-1].json["messages"] if m["role"] != "system"]
    assert second == [
        ("user", "A kilo of Colombia, ground for moka."),
        ("assistant", "Noted: a kilo of Colombia, ground for moka."),
        ("user", "What did I order?"),
    ]
    saved = open_store(tmp_path / where).load("s1")
    assert [m.content for m in saved.messages][-1] == "A kilo of Colombia, ground for moka."
    assert saved.usage.requests == 2


def test_a_chat_on_a_session_open_elsewhere_is_refused_and_changes_nothing(mock_llm, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BANDONEON_SESSIONS_PATH", str(tmp_path))
    holder = Sessions(session_id="s1", store=JsonlStore(tmp_path))
    bandoneon.Agent(ScriptedModel("hi"), plugins=[holder], context_files=False).run_sync("hello")
    assert chat(monkeypatch, mock_llm, "anyone there?") == 1
    assert "already open for writing" in capsys.readouterr().err
    assert mock_llm.requests == [] and len(JsonlStore(tmp_path).load("s1").messages) == 2
    holder.close()


def test_forking_an_agent_does_not_let_two_agents_write_one_session(tmp_path):
    sessions = Sessions(session_id="s1", store=JsonlStore(tmp_path))
    agent = bandoneon.Agent(ScriptedModel("hi"), plugins=[sessions], context_files=False)
    agent.run_sync("hello")
    with pytest.raises(SessionLocked, match=r"another agent in this process \(agent.fork\(\) copies"):
        agent.fork()
    branch = bandoneon.Agent(ScriptedModel("again"), plugins=[sessions.fork("s1-b")], context_files=False)
    branch.run_sync("and now?")
    store = JsonlStore(tmp_path)
    assert [m.content for m in store.load("s1").messages] == ["hello", "hi"]
    assert [m.content for m in store.load("s1-b").messages] == ["hello", "hi", "and now?", "again"]


def test_a_session_whose_agent_is_gone_can_be_opened_again(tmp_path):
    agent = bandoneon.Agent(ScriptedModel("hi"), plugins=[Sessions(session_id="s1", store=JsonlStore(tmp_path))], context_files=False)
    agent.run_sync("hello")
    del agent
    gc.collect()
    again = bandoneon.Agent(ScriptedModel(), plugins=[Sessions(session_id="s1", store=JsonlStore(tmp_path))], context_files=False)
    assert [m.content for m in again.messages] == ["hello", "hi"]


def test_a_closed_session_refuses_further_turns_with_a_clear_error(tmp_path):
    sessions = Sessions(session_id="s1", store=JsonlStore(tmp_path))
    agent = bandoneon.Agent(ScriptedModel("hi", "unsaved"), plugins=[sessions], context_files=False)
    agent.run_sync("hello")
    sessions.close()
    with pytest.raises(SessionError, match="was closed; build a new agent"):
        agent.run_sync("still there?")


class CompanyStores(bandoneon.Plugin):
    """Another plugin offering a session store by name, through the sessions plugin's hook."""

    name = "company-stores"

    def __init__(self, folder):
        self.folder = folder

    @bandoneon.hookimpl
    def register_session_stores(self, register):
        register("company", lambda path: JsonlStore(self.folder))


def test_a_session_store_registered_by_another_plugin_is_chosen_by_name(tmp_path):
    agent = bandoneon.Agent(
        ScriptedModel("hi"),
        plugins=[CompanyStores(tmp_path / "company"), Sessions(session_id="s1", store="company")],
        context_files=False,
    )
    agent.run_sync("hello")
    assert isinstance(agent.plugin("sessions")._store, SessionStore)
    assert [m.content for m in JsonlStore(tmp_path / "company").load("s1").messages] == ["hello", "hi"]


def test_with_memory_active_too_each_registration_hook_runs_once_per_agent(tmp_path):
    memory_plugin = pytest.importorskip("bandoneon_memory", reason="bandoneon-memory is not installed")
    calls = []

    class Both:
        @bandoneon.hookimpl
        def register_session_stores(self, register):
            calls.append("session_stores")

        @bandoneon.hookimpl
        def register_memory(self, register):
            calls.append("memory")

    bandoneon.Agent(
        ScriptedModel("hi"),
        plugins=[Both(), memory_plugin.Memory(mode="notes", path=str(tmp_path / "notes")), Sessions(session_id="s2", path=str(tmp_path))],
        context_files=False,
    ).close()
    assert sorted(calls) == ["memory", "session_stores"]


def test_an_unknown_store_name_lists_the_known_ones():
    with pytest.raises(bandoneon.ConfigError, match="unknown store 'nope'; known: jsonl, sqlite"):
        bandoneon.Agent(ScriptedModel(), plugins=[Sessions(store="nope")], context_files=False)
