"""What the first walk through the `bandoneon` command left open: a piped chat whose runs
failed, an approval asked of a terminal that is not there, messages that speak only to Python
code, a bad `bandoneon.toml` that is not named, `--model NAME` beside `$BANDONEON_BASE_URL`.
Each is shown through the command (in-process through `main`) against the loopback mock server."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from bandoneon.cli import main
from bandoneon.testing import Fault, MockLLMServer, Reply

#: The keys a person may write at the top of bandoneon.toml, in the order the error lists them.
USER_KEYS = ("model", "base_url", "api_key_env", "context_window", "system_prompt", "max_turns", "run_timeout", "tool_timeout", "context_windows", "plugins")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@contextlib.contextmanager
def typed_in(lines: list[str], *, on_a_terminal: bool = False) -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """``sys.stdin`` holds ``lines`` (from a pipe, or typed at a terminal); stdout and stderr are captured."""
    text = "".join(f"{line}\n" for line in lines)
    saved, sys.stdin = sys.stdin, (_Terminal(text) if on_a_terminal else io.StringIO(text))
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
            yield out, err
    finally:
        sys.stdin = saved


def command(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``bandoneon ARGV`` in a child process, with no model, server or configuration from this environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BANDONEON_MODEL", "BANDONEON_BASE_URL", "BANDONEON_CONFIG", "OPENAI_"))}
    return subprocess.run([sys.executable, "-m", "bandoneon.cli", *argv], cwd=cwd, env={**env, "NO_COLOR": "1"}, capture_output=True, text=True, timeout=120)


def model_requests(server: MockLLMServer) -> list[dict]:
    """The bodies of the model calls the server received (not the look-ups of its window)."""
    return [request.json for request in server.requests if request.path.endswith("/chat/completions")]


@pytest.fixture
def window_known(here):
    """``./bandoneon.toml`` that sets only the window, so no warning about an unknown one."""
    (here / "bandoneon.toml").write_text("context_window = 8192\n")
    return here


# ---------------------------------------------------------------- a piped chat says whether it worked


PING_TOOL = 'import bandoneon\n\n@bandoneon.tool\ndef ping() -> str:\n    """Ping."""\n    return "pong"\n'
OUTCOMES = {"answer": 0, "limit": 2, "error": 1}


def _by_message(outcomes: list[str]):
    """Each ``message N`` gets ``outcomes[N]``: an answer, a tool call every turn (a limit), or an HTTP 400."""

    def respond(request):
        last = [m["content"] for m in request.json["messages"] if m["role"] == "user"][-1]
        n = int(last.removeprefix("message "))
        return {"answer": Reply(text=f"reply {n}"), "limit": Reply(tool_calls=[("ping", {})]), "error": Fault(status=400)}[outcomes[n]]

    return respond


@settings(max_examples=15, deadline=None)
@given(outcomes=st.lists(st.sampled_from(sorted(OUTCOMES)), min_size=1, max_size=4))
def test_a_piped_chat_exits_as_run_would_for_its_worst_message(tmp_path_factory, outcomes):
    """A script reads the exit code: 0 when every piped message was answered, 2 when one ended
    without an answer, 1 when one ended in an error (as `bandoneon run` says for one)."""
    folder = tmp_path_factory.mktemp("chat")
    (folder / "ping.py").write_text(PING_TOOL)
    with MockLLMServer() as server, typed_in([f"message {n}" for n in range(len(outcomes))]) as (out, err), pytest.MonkeyPatch.context() as env:
        env.chdir(folder)
        server.respond_with(_by_message(outcomes))
        code = main(["chat", "--base-url", server.base_url, "--tools", "ping.py", "--max-turns", "2"])
    expected = 1 if "error" in outcomes else max(OUTCOMES[outcome] for outcome in outcomes)
    assert code == expected, err.getvalue()
    replies = [line for line in out.getvalue().splitlines() if not line.lstrip().startswith("→")]
    assert replies == [f"reply {n}" for n, outcome in enumerate(outcomes) if outcome == "answer"]
    asked = {int(m["content"].removeprefix("message ")) for body in model_requests(server) for m in body["messages"] if m["role"] == "user"}
    assert asked == set(range(len(outcomes)))  # no ending stopped the chat early


def test_a_chat_at_a_terminal_still_leaves_with_0_after_a_failed_reply(mock_llm, window_known):
    mock_llm.add(Fault(status=400), Reply(text="fine now"))
    with typed_in(["hello", "again"], on_a_terminal=True) as (out, err):
        assert main(["chat", "--base-url", mock_llm.base_url]) == 0
    assert "fine now" in out.getvalue() and "HTTP 400" in err.getvalue()


# ---------------------------------------------------------------- an approval with no one at a terminal


def test_an_approval_with_stdin_not_a_terminal_is_a_refusal_the_model_reads_not_a_traceback(mock_llm, here, capsys, monkeypatch):
    (here / "bandoneon.toml").write_text("context_window = 8192\n[plugins.human]\n")
    (here / "claw.py").write_text(
        'import bandoneon\n\n@bandoneon.tool(needs_approval=True)\ndef drop_claw() -> str:\n    """Drop the claw."""\n    open("dropped", "w").close()\n    return "a prize"\n'
    )
    mock_llm.add(Reply(tool_calls=[("drop_claw", {})]), Reply(text="It needs your approval."))
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # stdin from /dev/null, a cron job, CI
    assert main(["run", "get me a prize", "--base-url", mock_llm.base_url, "--tools", "claw.py"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "standard input is not a terminal" in err and err.count("\n") == 1, err
    assert not (here / "dropped").exists()
    refusal = [m["content"] for m in model_requests(mock_llm)[1]["messages"] if m["role"] == "tool"]
    assert len(refusal) == 1 and "no one" in refusal[0] and "did not run" in refusal[0], refusal


# ---------------------------------------------------------------- messages a command-line user can act on


def test_an_unknown_window_tells_a_command_line_user_where_to_set_it(mock_llm, tmp_path):
    mock_llm.add(Reply(text="hi"))
    done = command("run", "hello", "--base-url", mock_llm.base_url, cwd=tmp_path)  # the warning is once a process
    assert done.returncode == 0, done.stderr
    warning = done.stderr
    assert "WindowUnknownWarning" in warning
    assert "context_window = TOKENS" in warning and "--config FILE" in warning, warning


def test_a_missing_api_key_says_the_variable_and_bandoneon_toml_not_only_an_argument(here, capsys, monkeypatch):
    for variable in ("OPENAI_API_KEY", "BANDONEON_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    assert main(["run", "hello", "--model", "openai:gpt-4o-mini"]) == 1
    said = capsys.readouterr().err
    assert "set OPENAI_API_KEY" in said and "api_key_env = " in said and "bandoneon.toml" in said, said


# ---------------------------------------------------------------- --model NAME beside $BANDONEON_BASE_URL

model_names = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters=":\x00"), min_size=1)


@settings(max_examples=20, deadline=None)
@given(name=model_names)
def test_a_bare_model_on_the_command_line_goes_where_bandoneon_model_would(tmp_path_factory, name):
    folder = tmp_path_factory.mktemp("run")
    (folder / "bandoneon.toml").write_text("context_window = 8192\n")
    with MockLLMServer() as server, pytest.MonkeyPatch.context() as env:
        env.chdir(folder)
        env.setenv("BANDONEON_BASE_URL", server.base_url)
        env.delenv("BANDONEON_MODEL", raising=False)
        server.add(Reply(text="by flag"), Reply(text="by variable"))
        with typed_in([]):
            assert main(["run", "hello", f"--model={name}"]) == 0
            env.setenv("BANDONEON_MODEL", name)
            assert main(["run", "hello"]) == 0
    assert [body["model"] for body in model_requests(server)] == [name, name]


def test_model_in_a_chat_finds_a_bare_name_at_bandoneon_base_url(mock_llm, window_known, monkeypatch):
    monkeypatch.setenv("BANDONEON_BASE_URL", mock_llm.base_url)
    mock_llm.respond_with(lambda request: Reply(text=f"I am {request.json['model']}."))
    with typed_in(["hello", "/model qwen", "hello again"]) as (out, err):
        assert main(["chat", "--model", "mistral"]) == 0
    assert out.getvalue() == "I am mistral.\nI am qwen.\n", err.getvalue()


def test_a_bare_model_without_any_server_is_still_a_clear_error(here, capsys):
    assert main(["run", "hello", "--model", "qwen"]) == 1
    assert "has no provider prefix" in capsys.readouterr().err


# ---------------------------------------------------------------- a bad bandoneon.toml is named, and lists what a user may write


@settings(max_examples=40, deadline=None)
@given(key=st.text(min_size=1).filter(lambda key: key not in USER_KEYS) | st.just("source"))
def test_an_unknown_key_lists_only_the_keys_a_user_may_write(tmp_path_factory, key):
    folder = tmp_path_factory.mktemp("typo")
    (folder / "bandoneon.toml").write_text(tomli_w.dumps({key: "local:"}), encoding="utf-8")
    with typed_in([]) as (out, err), pytest.MonkeyPatch.context() as env:
        env.chdir(folder)
        assert main(["run", "hello", "--model", "openai-compatible:m@http://127.0.0.1:9/v1"]) == 1
    said = err.getvalue()
    assert said.startswith("bandoneon: bandoneon.toml: Unknown field "), said
    assert said.rstrip().endswith(f"(allowed: {', '.join(USER_KEYS)}).")


@pytest.mark.parametrize("model", ["qwen", "nosuch:qwen"])
def test_a_bad_model_in_bandoneon_toml_names_the_file(here, capsys, model):
    (here / "bandoneon.toml").write_text(f'model = "{model}"\n')
    assert main(["run", "hello"]) == 1
    assert capsys.readouterr().err.startswith(f"bandoneon: {Path('bandoneon.toml')}: ")
