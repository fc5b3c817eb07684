"""The `bandoneon` command as a new user first meets it: the model they configured, streams
they closed or piped, Ctrl-C while it starts, `init` and `/save` where they point them, and the
examples run the way their docstrings say. Each defect is shown through the command itself
(in-process through `main`, or a child process where the process's own streams are the point)
against the loopback mock server."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bandoneon
from bandoneon.cli import main
from bandoneon.testing import Fault, MockLLMServer, RecordedRequest, Reply, ScriptedModel, install_distribution

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def command(*argv: str, cwd: Path, closed: str = "", stdin: str = "", home: Path | None = None, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``bandoneon ARGV`` in a child process, with the shell's ``<&-``, ``>&-`` or ``2>&-`` for the
    standard streams named in ``closed`` (``"0"``, ``"1"``, ``"2"``)."""
    closing = " ".join(f"{fd}>&-" if fd != "0" else "<&-" for fd in closed)
    shell = ["sh", "-c", f'exec "$@" {closing}', "sh", sys.executable, "-m", "bandoneon.cli", *argv]
    return subprocess.run(shell, cwd=cwd, env=_environment(home, pythonpath), input=stdin, capture_output=True, text=True, timeout=120)


def into_a_reader_that_left(*argv: str, cwd: Path, stdin: str) -> tuple[int, str]:
    """``bandoneon ARGV | head -c 0``: whoever read stdout has gone. The exit code and stderr."""
    child = subprocess.Popen([sys.executable, "-m", "bandoneon.cli", *argv], cwd=cwd, env=_environment(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None
    child.stdout.close()
    _, err = child.communicate(stdin, timeout=120)
    return child.returncode, err


def _environment(home: Path | None = None, pythonpath: Path | None = None) -> dict[str, str]:
    """This environment without a model, a server or a configuration chosen for the child."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BANDONEON_MODEL", "BANDONEON_BASE_URL", "BANDONEON_CONFIG", "OPENAI_"))}
    env.update(PYTHONIOENCODING="utf-8", NO_COLOR="1")
    if home is not None:
        env["HOME"] = str(home)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def chat_requests(server: MockLLMServer) -> list[RecordedRequest]:
    """The model calls the server received (not the look-ups of its context window)."""
    return [request for request in server.requests if request.path.endswith("/chat/completions")]


def sent_model(server: MockLLMServer) -> str:
    return chat_requests(server)[0].json["model"]


# ---------------------------------------------------------------- --base-url and the configured model


@pytest.mark.parametrize("configured", ["openai-compatible:qwen", "ollama:qwen", "openai-compatible:qwen@http://127.0.0.1:9/v1", "qwen"])
def test_base_url_sends_the_model_that_bandoneon_toml_names(mock_llm, here, configured):
    (here / "bandoneon.toml").write_text(f'model = "{configured}"\ncontext_window = 8192\n')
    mock_llm.add(Reply(text="hi"))
    assert main(["run", "hello", "--base-url", mock_llm.base_url]) == 0
    assert sent_model(mock_llm) == "qwen"


def test_base_url_sends_the_model_that_bandoneon_model_names(mock_llm, here, monkeypatch):
    monkeypatch.setenv("BANDONEON_MODEL", "vllm:qwen")
    mock_llm.add(Reply(text="hi"))
    assert main(["run", "hello", "--base-url", mock_llm.base_url]) == 0
    assert sent_model(mock_llm) == "qwen"


def test_base_url_replaces_the_address_a_model_string_carries(mock_llm, here):
    mock_llm.add(Reply(text="hi"))
    assert main(["run", "hello", "--model", "openai-compatible:qwen@http://127.0.0.1:9/v1", "--base-url", mock_llm.base_url]) == 0
    assert sent_model(mock_llm) == "qwen"


def test_base_url_without_any_model_asks_for_the_servers_default(mock_llm, here):
    mock_llm.add(Reply(text="hi"))
    assert main(["run", "hello", "--base-url", mock_llm.base_url]) == 0
    assert sent_model(mock_llm) == "default"


def test_model_in_a_chat_started_with_base_url_is_a_model_of_that_server(mock_llm, here):
    mock_llm.respond_with(lambda request: Reply(text=f"I am {request.json['model']}."))
    with _piped(["hello", "/model qwen", "hello again", "/model ollama:llama3.1", "and again"]) as (out, err):
        assert main(["chat", "--base-url", mock_llm.base_url, "--model", "mistral"]) == 0
    assert out.getvalue() == "I am mistral.\nI am qwen.\nI am llama3.1.\n", err.getvalue()


@pytest.mark.parametrize(("table", "named"), [("[plugins.nosuch]\n", "[plugins.nosuch]"), ("[plugins.retry]\nmax_atempts = 3\n", "max_atempts")], ids=["unknown-plugin", "option-typo"])
def test_plugins_lists_and_then_says_what_an_agent_here_would_refuse(here, capsys, table, named):
    (here / "bandoneon.toml").write_text(table)
    assert main(["plugins"]) == 1
    captured = capsys.readouterr()
    assert "plugins installed" in captured.out
    assert captured.err.startswith("bandoneon: bandoneon.toml: ") and named in captured.err and captured.err.count("\n") == 1
    with pytest.raises(bandoneon.ConfigError, match=re.escape(named)):  # as the agent itself says
        bandoneon.Agent(ScriptedModel("x"), context_files=False)


def test_a_session_path_without_a_session_id_is_refused_before_anything_is_said(mock_llm, here, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("remember this\n"))
    assert main(["chat", "--base-url", mock_llm.base_url, "--session-path", str(here / "kept")]) == 1
    assert "--session-path needs --session ID" in capsys.readouterr().err
    assert chat_requests(mock_llm) == []  # nothing was said that would not have been kept


@pytest.mark.parametrize("command_name", ["run", "chat"])
def test_tools_from_a_file_without_any_is_an_error_not_an_agent_without_tools(mock_llm, here, capsys, monkeypatch, command_name):
    (here / "helpers.py").write_text('def ping(host: str) -> str:\n    """Ping a host."""\n    return "pong"\n')
    monkeypatch.setattr(sys, "stdin", io.StringIO("ping db1\n"))
    argv = [command_name, *(["ping db1"] if command_name == "run" else []), "--base-url", mock_llm.base_url, "--tools", "helpers.py"]
    assert main(argv) == 1
    assert "no tools found in 'helpers.py'" in capsys.readouterr().err
    assert chat_requests(mock_llm) == []


# ---------------------------------------------------------------- closed and piped streams


@pytest.mark.parametrize("argv", [["run", "hello"], ["chat"]], ids=["run", "chat"])
def test_a_closed_stdout_is_one_line_and_exit_1_not_a_traceback(mock_llm, tmp_path, argv):
    mock_llm.respond_with(lambda request: Reply(text="an answer nobody can read"))
    done = command(*argv, "--base-url", mock_llm.base_url, cwd=tmp_path, closed="1", stdin="hello\n")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "bandoneon: standard output is closed" in done.stderr
    assert chat_requests(mock_llm) == []  # nothing was asked whose answer would be lost


def test_a_closed_stdin_ends_the_chat_as_end_of_input_does(mock_llm, tmp_path):
    done = command("chat", "--base-url", mock_llm.base_url, cwd=tmp_path, closed="0")
    assert (done.returncode, done.stdout) == (0, "")
    assert "Traceback" not in done.stderr


def test_a_closed_stderr_keeps_the_error_off_stdout(tmp_path):
    done = command("run", "hello", "--model", "nosuch:model", cwd=tmp_path, closed="2")
    assert (done.returncode, done.stdout) == (1, "")


def test_a_piped_chat_prints_the_replies_and_no_prompts(mock_llm, tmp_path):
    mock_llm.add(Reply(text="Hello Ana."), Reply(text="You are Ana."))
    done = command("chat", "--base-url", mock_llm.base_url, cwd=tmp_path, stdin="I am Ana\nwho am I?\n")
    assert (done.returncode, done.stdout) == (0, "Hello Ana.\nYou are Ana.\n")


def test_a_chat_whose_reader_left_ends_quietly(mock_llm, tmp_path):
    mock_llm.respond_with(lambda request: Reply(text="word " * 100_000))
    code, err = into_a_reader_that_left("chat", "--base-url", mock_llm.base_url, cwd=tmp_path, stdin="tell me everything\n")
    assert code == 141
    assert "Traceback" not in err and "Task was destroyed" not in err and "never awaited" not in err


# Lines a person or a file could send: any text, controls and lone surrogates (bytes that were
# not UTF-8) included, that is a message (not blank, not a /command).
message_lines = st.lists(
    st.text(st.characters(blacklist_characters="\n"), min_size=1).filter(lambda line: line.strip() and not line.strip().startswith("/")),
    min_size=1,
    max_size=4,
)


@pytest.fixture(scope="module")
def window_only(tmp_path_factory):
    """A configuration that sets only the window, so no warning about an unknown one."""
    path = tmp_path_factory.mktemp("config") / "bandoneon.toml"
    path.write_text("context_window = 8192\n")
    return str(path)


def _numbered_reply(request):
    return Reply(text=f"reply {sum(m['role'] == 'user' for m in request.json['messages'])}")


@settings(max_examples=25)
@given(lines=message_lines)
def test_whatever_is_piped_in_stdout_holds_one_reply_per_message_and_nothing_else(window_only, lines):
    with MockLLMServer() as server, _piped(lines) as (out, err):
        server.respond_with(_numbered_reply)
        code = main(["chat", "--base-url", server.base_url, "--config", window_only])
    assert code == 0, err.getvalue()
    assert out.getvalue() == "".join(f"reply {n}\n" for n in range(1, len(lines) + 1))
    sent = [m["content"] for m in server.requests[-1].json["messages"] if m["role"] == "user"]
    assert sent == [bandoneon.as_unicode(line.strip()) for line in lines]  # every message arrived, whole


def _is_a_message(line: bytes) -> bool:
    text = line.decode("utf-8", errors="replace").strip()
    return bool(text) and not text.startswith("/")


@settings(max_examples=25)
@given(lines=st.lists(st.binary(min_size=1).map(lambda b: b.replace(b"\n", b" ").replace(b"\r", b" ")).filter(_is_a_message), min_size=1, max_size=4))
def test_bytes_that_are_not_utf8_on_stdin_are_read_as_replacement_characters(window_only, lines):
    with MockLLMServer() as server, _piped(lines) as (out, err):
        server.respond_with(_numbered_reply)
        assert main(["chat", "--base-url", server.base_url, "--config", window_only]) == 0, err.getvalue()
    assert out.getvalue() == "".join(f"reply {n}\n" for n in range(1, len(lines) + 1))
    sent = [m["content"] for m in server.requests[-1].json["messages"] if m["role"] == "user"]
    assert sent == [line.decode("utf-8", errors="replace").strip() for line in lines]


# ---------------------------------------------------------------- JSON a model wrote, on a terminal

NOTE_TOOL = '''
import bandoneon


@bandoneon.tool(terminal=True)
def note(text: str) -> str:
    """Write down the answer."""
    return "noted"
'''

#: What a terminal would obey rather than show (as ``bandoneon.for_terminal`` lists it).
OBEYED = set(map(chr, [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]))


@pytest.fixture(scope="module")
def note_tool(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tools")
    (folder / "note.py").write_text(NOTE_TOOL)
    (folder / "bandoneon.toml").write_text("context_window = 8192\n")
    return folder


@settings(max_examples=40)
@given(text=st.text(), as_answer=st.booleans())
def test_json_a_model_wrote_is_shown_on_a_terminal_never_obeyed(note_tool, text, as_answer):
    reply = Reply(tool_calls=[("note", {"text": text})]) if as_answer else Reply(text=text)
    argv = ["--tools", str(note_tool / "note.py")] if as_answer else ["--json"]
    with MockLLMServer() as server, _on_a_terminal() as out:
        server.add(reply)
        assert main(["run", "write it down", "--base-url", server.base_url, "--config", str(note_tool / "bandoneon.toml"), *argv]) == 0
    shown = out.getvalue()
    assert not OBEYED & set(shown)
    data = json.loads(shown)
    assert (data if as_answer else {"text": data["text"] or ""}) == {"text": bandoneon.as_unicode(text)}


# ---------------------------------------------------------------- Ctrl-C while the command starts

INTERRUPTING = '''
import os
import signal

import bandoneon


class Interrupting(bandoneon.Plugin):
    """Ctrl-C arrives while the plugins' commands are being added (the slow part of start-up)."""

    name = "interrupting"

    @staticmethod
    @bandoneon.hookimpl
    def register_commands(subparsers):
        os.kill(os.getpid(), signal.SIGINT)
'''


def test_ctrl_c_while_the_command_starts_is_one_word_not_a_traceback(tmp_path):
    site = tmp_path / "site"
    install_distribution(site, "bandoneon-interrupting", {"interrupting": "fake_interrupting:Interrupting"}, files={"fake_interrupting.py": INTERRUPTING})
    done = command("plugins", cwd=tmp_path, pythonpath=site)
    assert (done.returncode, done.stdout, done.stderr.splitlines()[-1:]) == (130, "", ["interrupted"])
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------- files a user names


def test_save_writes_under_the_home_folder_for_a_tilde(mock_llm, tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    mock_llm.add(Reply(text="Noted."))
    done = command("chat", "--base-url", mock_llm.base_url, cwd=work, home=home, stdin="remember the milk\n/save ~/milk.md\n")
    assert done.returncode == 0, done.stderr
    assert "remember the milk" in (home / "milk.md").read_text()
    assert not (work / "~").exists()


@settings(max_examples=10)
@given(said=st.text(st.characters(blacklist_characters="\r\x00"), min_size=1))
def test_a_saved_chat_shows_what_the_model_said_as_code_never_rendered(window_only, tmp_path_factory, said):
    markdown_it = pytest.importorskip("markdown_it")
    saved = tmp_path_factory.mktemp("saved") / "talk.md"
    with MockLLMServer() as server, _piped(["tell me", f"/save {saved}"]) as (out, err):
        server.add(Reply(text=said))
        assert main(["chat", "--base-url", server.base_url, "--config", window_only]) == 0, err.getvalue()
    tokens = markdown_it.MarkdownIt("commonmark").parse(saved.read_text(encoding="utf-8"))
    kinds = {t.type for t in tokens} | {c.type for t in tokens for c in t.children or ()}
    assert not kinds & {"image", "link_open", "html_inline", "html_block", "heading_open"}
    fences = [t.content for t in tokens if t.type == "fence"]
    assert fences[-1] == bandoneon.as_unicode(said) + "\n"


@settings(max_examples=40)
@given(model=st.text(min_size=1).map(lambda name: f"openai-compatible:{name}"), max_turns=st.integers(1, 10**6), crlf=st.booleans())
def test_a_bandoneon_toml_saved_with_a_byte_order_mark_reads_as_without(tmp_path_factory, model, max_turns, crlf):
    import tomli_w

    text = tomli_w.dumps({"model": model, "max_turns": max_turns})
    folder = tmp_path_factory.mktemp("bom")
    plain, marked = folder / "plain.toml", folder / "marked.toml"
    newline = "\r\n" if crlf else "\n"
    plain.write_text(text, encoding="utf-8", newline=newline)
    marked.write_text("\ufeff" + text, encoding="utf-8", newline=newline)  # as Notepad's "UTF-8 with BOM" saves it
    assert bandoneon.load_config(marked) == bandoneon.load_config(plain)
    assert (bandoneon.load_config(marked).model, bandoneon.load_config(marked).max_turns) == (model, max_turns)


def test_an_empty_bandoneon_config_variable_is_no_variable(mock_llm, here, monkeypatch, capsys):
    monkeypatch.setenv("BANDONEON_CONFIG", "")  # `export BANDONEON_CONFIG=`: the shell's way to clear it
    mock_llm.add(Reply(text="hi"))
    assert main(["run", "hello", "--base-url", mock_llm.base_url]) == 0, capsys.readouterr().err
    (here / "bandoneon.toml").write_text("max_turns = 7\n")
    assert bandoneon.load_config().max_turns == 7  # ./bandoneon.toml is read as usual


def test_init_where_no_file_can_be_written_is_one_line(here, capsys):
    (here / "notes.txt").write_text("a file, not a folder")
    assert main(["init", "--path", "notes.txt/bandoneon.toml"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bandoneon: cannot write notes.txt/bandoneon.toml: ") and err.count("\n") == 1


def test_init_refuses_a_model_without_a_provider_prefix_and_writes_nothing(here, capsys):
    assert main(["init", "--model", "gpt-4o"]) == 1
    assert "'gpt-4o' has no provider prefix" in capsys.readouterr().err
    assert not (here / "bandoneon.toml").exists()


def test_a_config_path_that_is_a_folder_says_it_is_not_a_file(mock_llm, here, capsys):
    assert main(["run", "hello", "--base-url", mock_llm.base_url, "--config", str(here)]) == 1
    assert f"configuration file {str(here)!r} is not a file" in capsys.readouterr().err
    assert chat_requests(mock_llm) == []


# ---------------------------------------------------------------- the examples as documented


def test_fallback_models_runs_on_the_models_given_on_its_command_line(mock_llm):
    with MockLLMServer() as backup:
        mock_llm.respond_with(lambda request: Fault(status=503))
        backup.add(Reply(text="Montevideo."))
        models = [f"vllm:big@{mock_llm.base_url}", f"ollama:small@{backup.base_url}"]
        done = subprocess.run([sys.executable, str(EXAMPLES / "fallback_models.py"), *models], env=_environment(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "answer: Montevideo." in done.stdout


# ---------------------------------------------------------------- helpers


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@contextlib.contextmanager
def _on_a_terminal() -> Iterator[io.StringIO]:
    """``sys.stdout`` is a terminal (captured)."""
    with contextlib.redirect_stdout(_Terminal()) as out:
        yield out


@contextlib.contextmanager
def _piped(lines: list[str] | list[bytes]) -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """``sys.stdin`` is ``lines`` from a pipe (bytes are read as UTF-8, strictly, as Python
    reads stdin under a UTF-8 locale such as en_US.UTF-8); stdout and stderr are captured."""
    stdin: io.TextIOBase
    if all(isinstance(line, bytes) for line in lines):
        data = b"".join(line + b"\n" for line in lines if isinstance(line, bytes))
        stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="strict")
    else:
        stdin = io.StringIO("".join(f"{line}\n" for line in lines))
    saved, sys.stdin = sys.stdin, stdin
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
            yield out, err
    finally:
        sys.stdin = saved
