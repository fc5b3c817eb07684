"""Notes files under concurrent writers, and scopes that differ only in case.

``forget`` rewrites the whole file; a note appended meanwhile by another agent must survive.
On a case-insensitive file system (macOS, Windows) ``Alice.md`` and ``alice.md`` are one file,
so the file names of two scopes must differ in more than case.
"""

import os
import string
import threading

import bandoneon
from bandoneon.testing import ScriptedModel, call
from bandoneon_memory import Memory, NotesFile
from hypothesis import given, settings
from hypothesis import strategies as st

scopes = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._@:-]{0,20}", fullmatch=True)


def notes_agent(model, tmp_path, scope):
    return bandoneon.Agent(model, plugins=[Memory(mode="notes", scope=scope, path=str(tmp_path))], context_files=False)


def cli(*argv: str) -> int:
    from bandoneon.cli import main

    return main(list(argv))


def test_a_note_remembered_while_a_note_is_forgotten_is_not_lost(tmp_path, monkeypatch):
    NotesFile(tmp_path, "c-1").append("old address")
    NotesFile(tmp_path, "c-1").append("likes moka")
    write_atomically = bandoneon.write_atomically
    other_agent = notes_agent(ScriptedModel(call("remember", note="new address: 4 Rue Cler"), "ok"), tmp_path, "c-1")
    finished = threading.Event()

    def rewrite_while_another_agent_remembers(path, data):
        # Between forget's read and its rename, another agent saves a note.
        worker = threading.Thread(target=lambda: (other_agent.run_sync("I moved"), finished.set()))
        worker.start()
        finished.wait(1.0)  # with the lock it waits for forget instead
        write_atomically(path, data)
        rewrite_while_another_agent_remembers.worker = worker

    monkeypatch.setattr(bandoneon, "write_atomically", rewrite_while_another_agent_remembers)
    assert cli("memory", "forget", "--scope", "c-1", "1", "--notes", str(tmp_path)) == 0
    rewrite_while_another_agent_remembers.worker.join(10)
    assert [text for _, text in NotesFile(tmp_path, "c-1").read()] == ["likes moka", "new address: 4 Rue Cler"]


def test_concurrent_appends_and_forgets_lose_no_note(tmp_path):
    for number in range(20):
        NotesFile(tmp_path, "c-1").append(f"old {number}")

    def appender(name):
        for number in range(20):
            NotesFile(tmp_path, "c-1").append(f"{name} {number}")

    def forgetter():
        for _ in range(20):
            NotesFile(tmp_path, "c-1").forget(1)  # always one of the "old" notes

    threads = [threading.Thread(target=appender, args=(name,)) for name in "ab"] + [threading.Thread(target=forgetter)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(text for _, text in NotesFile(tmp_path, "c-1").read()) == sorted(f"{n} {i}" for n in "ab" for i in range(20))


@settings(max_examples=300, deadline=None)
@given(scopes, scopes)
def test_scopes_that_differ_get_file_names_that_differ_in_more_than_case(tmp_path_factory, first, second):
    folder = tmp_path_factory.getbasetemp()
    names = {NotesFile(folder, scope).path.name.casefold() for scope in (first, second)}
    assert len(names) == (1 if first == second else 2)


@given(st.text(string.ascii_lowercase + string.digits + "._@:-", min_size=1).filter(lambda s: s[0].isalnum()))
def test_a_lower_case_scope_keeps_its_file_name(tmp_path_factory, scope):
    assert NotesFile(tmp_path_factory.getbasetemp(), scope).path.name == f"{scope}.md"


def test_a_scope_in_other_case_does_not_write_the_lower_case_scopes_file(tmp_path):
    notes_agent(ScriptedModel(call("remember", note="Alice's card ends 4242"), "ok"), tmp_path, "Alice").run_sync("hi")
    assert "alice.md" not in {name.casefold() for name in os.listdir(tmp_path)}
    model = ScriptedModel("ok")
    notes_agent(model, tmp_path, "alice").run_sync("hi")
    assert "4242" not in model.requests[0].system_prompt
    model = ScriptedModel("ok")
    notes_agent(model, tmp_path, "Alice").run_sync("hi")
    assert "4242" in model.requests[0].system_prompt


def test_an_upper_case_scopes_file_from_before_is_moved_to_its_new_name(tmp_path):
    (tmp_path / "Alice.md").write_text("- 2025-01-02: prefers decaf\n")
    model = ScriptedModel("ok")
    notes_agent(model, tmp_path, "Alice").run_sync("hi")
    assert "prefers decaf" in model.requests[0].system_prompt
    assert not (tmp_path / "Alice.md").exists()
