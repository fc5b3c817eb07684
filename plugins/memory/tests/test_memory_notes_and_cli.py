"""Notes in the prompt, the register_memory extension point, and the `bandoneon memory` commands."""


import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_memory import Memory, NotesFile, SqliteStore


def notes_agent(model, tmp_path, scope="c-2291"):
    return bandoneon.Agent(model, plugins=[Memory(mode="notes", scope=scope, path=str(tmp_path))], context_files=False)


def test_notes_mode_offers_remember_and_no_recall(tmp_path):
    agent = notes_agent(ScriptedModel(), tmp_path)
    assert "remember" in agent.tools and "recall" not in agent.tools


def test_a_remembered_note_is_in_the_system_prompt_of_the_next_session(tmp_path):
    notes_agent(ScriptedModel(call("remember", note="Buys 1 kg Colombia,\n ground for moka"), "ok"), tmp_path).run_sync("hi")
    model = ScriptedModel("The usual, then.")
    notes_agent(model, tmp_path).run_sync("same as last time")
    prompt = model.requests[0].system_prompt
    assert "Buys 1 kg Colombia, ground for moka" in prompt
    assert "not instructions" in prompt and '<saved-notes scope="c-2291">' in prompt


def test_the_notes_are_a_snapshot_taken_at_the_start_of_the_run(tmp_path):
    model = ScriptedModel(call("remember", note="likes moka"), "ok")
    notes_agent(model, tmp_path).run_sync("hi")
    assert all("likes moka" not in request.system_prompt for request in model.requests)


def test_a_hand_edited_notes_file_is_read_as_it_is_now(tmp_path):
    (tmp_path / "c-2291.md").write_text("# about c-2291\n- prefers decaf\n")
    model = ScriptedModel("ok")
    notes_agent(model, tmp_path).run_sync("hi")
    assert "- prefers decaf" in model.requests[0].system_prompt


def test_notes_of_one_scope_never_reach_another(tmp_path):
    notes_agent(ScriptedModel(call("remember", note="alice secret"), "ok"), tmp_path, scope="alice").run_sync("hi")
    model = ScriptedModel("ok")
    notes_agent(model, tmp_path, scope="bob").run_sync("hi")
    assert "alice secret" not in model.requests[0].system_prompt


def test_no_notes_means_no_section(tmp_path):
    model = ScriptedModel("ok")
    notes_agent(model, tmp_path).run_sync("hi")
    assert "saved-notes" not in model.requests[0].system_prompt


def test_a_crash_mid_append_keeps_every_earlier_note(tmp_path):
    notes = NotesFile(tmp_path, "c-1")
    notes.append("first")
    with open(notes.path, "ab") as file:
        file.write(b"- 2026-11-30: half a no")  # the process died here
    notes.append("third")
    texts = [text for _, text in notes.read()]
    assert texts[0] == "first" and texts[-1] == "third"


# ---------------------------------------------------------------- register_memory


class Reverser:
    """A toy embedder contributed by another plugin."""

    model = "reverser-1"

    async def embed(self, texts):
        return [[float(len(t)), 1.0] for t in texts]


class ContributesAnEmbedder:
    name = "contrib"

    @bandoneon.hookimpl
    def register_memory(self, agent, register):
        register("embedder", "reverser", lambda rest: Reverser())


class RegistersNonsense:
    name = "nonsense"

    @bandoneon.hookimpl
    def register_memory(self, agent, register):
        register("vector-db", "x", lambda rest: None)


def test_another_plugin_contributes_an_embedder_through_register_memory(tmp_path):
    memory = Memory(scope="c-1", path=str(tmp_path / "m.db"), embedder="reverser:")
    agent = bandoneon.Agent(ScriptedModel(call("remember", note="hello"), "ok"), plugins=[ContributesAnEmbedder(), memory], context_files=False)
    agent.run_sync("go")
    assert SqliteStore(tmp_path / "m.db").list_sync("c-1")[0].model == "reverser-1"


def test_an_unknown_registration_kind_is_an_error_naming_the_kinds(tmp_path):
    with pytest.raises(bandoneon.ConfigError, match="unknown kind 'vector-db'; use one of embedder, store"):
        bandoneon.Agent(ScriptedModel(), plugins=[RegistersNonsense(), Memory(scope="c", embedder="reverser:")], context_files=False)


class RegistersASessionStore:
    name = "old-style"

    @bandoneon.hookimpl
    def register_memory(self, agent, register):
        register("session_store", "company", lambda path: None)


def test_a_session_store_registered_with_memory_points_to_the_sessions_hook():
    with pytest.raises(bandoneon.ConfigError, match="session stores are bandoneon-sessions'.*register_session_stores"):
        bandoneon.Agent(ScriptedModel(), plugins=[RegistersASessionStore(), Memory(scope="c", embedder="reverser:")], context_files=False)


def test_an_unknown_embedder_lists_the_known_prefixes():
    with pytest.raises(bandoneon.ConfigError, match="unknown embedder 'nope:x'.*'openai-compatible:...'"):
        bandoneon.Agent(ScriptedModel(), plugins=[Memory(scope="c", embedder="nope:x")], context_files=False)


def test_memory_is_activated_by_name_with_options(tmp_path):
    agent = bandoneon.Agent(ScriptedModel(), plugins={"memory": {"mode": "notes", "scope": "c-1", "path": str(tmp_path)}}, context_files=False)
    assert "remember" in agent.tools


def test_a_misspelled_option_is_an_error_naming_it():
    with pytest.raises(bandoneon.ConfigError, match="top_kk"):
        bandoneon.Agent(ScriptedModel(), plugins={"memory": {"top_kk": 3}}, context_files=False)


# ---------------------------------------------------------------- CLI


def cli(*argv):
    """Through the real `bandoneon` command line, which finds the plugin by its entry point."""
    from bandoneon.cli import main

    return main(list(argv))


def seed(tmp_path):
    store = SqliteStore(tmp_path / "m.db")
    kept = store.add_sync("alice", "likes moka", [1.0, 0.0], "e")
    gone = store.add_sync("alice", "lives in Rosario", [0.0, 1.0], "e")
    store.add_sync("bob", "likes espresso", [1.0, 0.0], "e")
    return store, kept, gone


def test_cli_lists_the_notes_of_one_scope_only(tmp_path, capsys):
    seed(tmp_path)
    assert cli("memory", "list", "--scope", "alice", "--db", str(tmp_path / "m.db")) == 0
    out = capsys.readouterr().out
    assert "likes moka" in out and "Rosario" in out and "espresso" not in out


def test_cli_lists_the_scopes_with_their_counts(tmp_path, capsys):
    seed(tmp_path)
    assert cli("memory", "list", "--db", str(tmp_path / "m.db")) == 0
    assert capsys.readouterr().out.split("\n")[:2] == ["alice\t2 notes", "bob\t1 note"]


def test_cli_forgets_a_note_within_its_scope(tmp_path):
    store, kept, gone = seed(tmp_path)
    assert cli("memory", "forget", "--scope", "alice", gone.id, "--db", str(tmp_path / "m.db")) == 0
    assert [n.text for n in store.list_sync("alice")] == ["likes moka"]


def test_cli_cannot_forget_another_scopes_note(tmp_path, capsys):
    store, kept, gone = seed(tmp_path)
    assert cli("memory", "forget", "--scope", "bob", kept.id, "--db", str(tmp_path / "m.db")) == 2
    assert "no note" in capsys.readouterr().err
    assert len(store.list_sync("alice")) == 2


def test_cli_forgets_everything_of_a_scope(tmp_path):
    store, *_ = seed(tmp_path)
    assert cli("memory", "forget", "--scope", "alice", "--all", "--db", str(tmp_path / "m.db")) == 0
    assert store.list_sync("alice") == [] and len(store.list_sync("bob")) == 1


def test_cli_lists_and_forgets_lines_of_a_notes_folder(tmp_path, capsys):
    notes = NotesFile(tmp_path, "alice")
    notes.append("likes moka")
    notes.append("lives in Rosario")
    assert cli("memory", "forget", "--scope", "alice", "2", "--notes", str(tmp_path)) == 0
    assert cli("memory", "list", "--scope", "alice", "--notes", str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "forgot: lives in Rosario" in out and "1\t" in out and "likes moka" in out
    assert [t for _, t in notes.read()] == ["likes moka"]


def test_cli_with_a_bad_scope_is_a_clear_error(tmp_path, capsys):
    assert cli("memory", "list", "--scope", "../x", "--db", str(tmp_path / "m.db")) == 2
    assert "memory scope" in capsys.readouterr().err


@pytest.mark.parametrize("content", [b"this is a text file, not a database\n", b"SQLite format 3\x00" + b"\xff" * 200, b""])
def test_a_damaged_store_names_its_file_and_what_to_do(tmp_path, capsys, content):
    from bandoneon_memory import MemoryStoreError, SqliteStore

    db = tmp_path / "m.db"
    db.write_bytes(content or b"\x00" * 512)
    with pytest.raises(MemoryStoreError, match=r"memory store .*m\.db is damaged or is not a SQLite file.*move it aside"):
        SqliteStore(db).scopes_sync()
    assert db.read_bytes() == (content or b"\x00" * 512)  # nothing written over what was there
    assert cli("memory", "list", "--db", str(db)) != 0
    err = capsys.readouterr().err
    assert "m.db" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


# Terminal escapes a planted prompt could make the model remember: the clipboard (OSC 52), erase a
# line and move up, a bidi override, an 8-bit CSI, a carriage return.
HOSTILE = "\x1b]52;c;SGVsbG8=\x07 \x1b[2K\x1b[1A \u202e \x9b31m \r"
WRITTEN_OUT = "\\x1b]52;c;SGVsbG8=\\x07 \\x1b[2K\\x1b[1A \\u202e \\x9b31m "
OBEYED = ("\x1b", "\x07", "\u202e", "\x9b", "\r")


def test_cli_lists_a_stored_note_without_the_terminal_obeying_it(tmp_path, capsys):
    store = SqliteStore(tmp_path / "m.db")
    store.add_sync("alice", f"likes {HOSTILE}moka", [1.0, 0.0], f"e{HOSTILE}")
    assert cli("memory", "list", "--scope", "alice", "--db", str(tmp_path / "m.db")) == 0
    out = capsys.readouterr().out
    assert not any(char in out for char in OBEYED)
    assert out.endswith(f"\te{WRITTEN_OUT}\tlikes {WRITTEN_OUT}moka\n")
    (note,) = store.list_sync("alice")
    assert (note.text, note.model) == (f"likes {HOSTILE}moka", f"e{HOSTILE}")


def test_cli_shows_a_remembered_note_without_the_terminal_obeying_it(tmp_path, capsys):
    notes_agent(ScriptedModel(call("remember", note=f"likes {HOSTILE}moka"), "ok"), tmp_path).run_sync("hi")
    notes = NotesFile(tmp_path, "c-2291")
    stored = notes.path.read_bytes()
    assert cli("memory", "list", "--scope", "c-2291", "--notes", str(tmp_path)) == 0
    assert notes.path.read_bytes() == stored
    assert cli("memory", "forget", "--scope", "c-2291", "1", "--notes", str(tmp_path)) == 0
    listed, forgot = capsys.readouterr().out.splitlines()
    assert not any(char in listed + forgot for char in OBEYED)
    # The notes file folds whitespace (the carriage return among it) into single spaces.
    written_out = "likes \\x1b]52;c;SGVsbG8=\\x07 \\x1b[2K\\x1b[1A \\u202e \\x9b31m moka"
    assert listed.startswith("1\t") and listed.endswith(f"\t{written_out}") and forgot == f"forgot: {written_out}"
    assert "\x1b]52;c;SGVsbG8=\x07" in stored.decode() and "\u202e \x9b31m" in stored.decode()
