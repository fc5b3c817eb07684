"""Outside text on a terminal is shown, never obeyed: ``bandoneon.for_terminal`` and the core
commands that print a model's or a server's words (``bandoneon run``, ``bandoneon chat``)."""

from __future__ import annotations

import io
import re
import unicodedata

import bandoneon
from bandoneon.cli import main as cli
from bandoneon.testing import Fault, Reply
from hypothesis import given, settings
from hypothesis import strategies as st

#: Every character a terminal acts on rather than draws (see ``bandoneon.text``).
OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
HOSTILE = "Rain\x1b]52;c;SGVsbG8=\x07 tomorrow\x1b[2K\x1b[1A, \u202eno\u202c umbrella\x9b31m\r\n"

#: Text weighted towards what an attacker would send: escapes, C1, bidi, surrogates.
hostile_text = st.text(
    st.one_of(
        st.characters(),
        st.sampled_from(["\x1b", "\x07", "\r", "\n", "\t", "\x08", "\x7f", "\x9b", "\x85", "\u202e", "\u2066", "\u2069", "\ud800", "\udfff", "\\"]),
    )
)


@settings(max_examples=500, deadline=None)
@given(hostile_text)
def test_nothing_a_terminal_would_obey_survives(text):
    shown = bandoneon.for_terminal(text)
    assert OBEYED.search(shown) is None
    assert bandoneon.for_terminal(shown) == shown  # safe text is left as it is
    shown.encode("utf-8")  # printable on a UTF-8 terminal: no lone surrogate left to raise


@settings(max_examples=500, deadline=None)
@given(hostile_text)
def test_every_other_character_is_kept_in_order_and_each_obeyed_one_is_written_out(text):
    shown = bandoneon.for_terminal(text)
    rebuilt = re.sub(r"\\x([0-9a-f]{2})|\\u([0-9a-f]{4})", lambda m: chr(int(m.group(1) or m.group(2), 16)), shown)
    # Reading the escapes back gives the text without its carriage returns, unless the text
    # itself held something that reads like an escape (then the comparison says nothing).
    if not re.search(r"\\x[0-9a-f]{2}|\\u[0-9a-f]{4}", text.replace("\r", "")):
        assert rebuilt == text.replace("\r", "")


def test_ordinary_text_is_returned_as_it_is():
    text = "Línea 1\tcolumna\nשלום עולם — 東京 🌧️ \u200f"
    assert bandoneon.for_terminal(text) is text or bandoneon.for_terminal(text) == text


def test_the_hostile_sample_is_written_out_where_a_person_can_read_it():
    assert bandoneon.for_terminal(HOSTILE) == "Rain\\x1b]52;c;SGVsbG8=\\x07 tomorrow\\x1b[2K\\x1b[1A, \\u202eno\\u202c umbrella\\x9b31m\n"
    assert all(unicodedata.category(c) not in ("Cc", "Cs") or c in "\n\t" for c in bandoneon.for_terminal(HOSTILE))


# ---------------------------------------------------------------- bandoneon run


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_run_shows_a_hostile_answer_on_a_terminal(mock_llm, here, monkeypatch):
    mock_llm.add(Reply(text=HOSTILE))
    terminal = _Terminal()
    monkeypatch.setattr("sys.stdout", terminal)
    assert cli(["run", "rain?", "--base-url", mock_llm.base_url, "--model", "mock"]) == 0
    shown = terminal.getvalue()
    assert OBEYED.search(shown) is None
    assert "Rain\\x1b]52;c;SGVsbG8=\\x07 tomorrow" in shown and "\\u202eno\\u202c umbrella\\x9b31m" in shown


def test_run_writes_the_answer_as_it_is_to_a_pipe(mock_llm, here, capsys):
    mock_llm.add(Reply(text=HOSTILE))
    assert cli(["run", "rain?", "--base-url", mock_llm.base_url, "--model", "mock"]) == 0
    assert "Rain\x1b]52;c;SGVsbG8=\x07 tomorrow\x1b[2K\x1b[1A, \u202eno" in capsys.readouterr().out  # the data itself


def test_an_error_quoting_a_server_is_shown_not_obeyed(mock_llm, here, capsys):
    mock_llm.add(Fault(status=400, body='{"error": {"message": "bad \\u001b]0;pwned\\u0007 request \\u202eevil"}}'))
    assert cli(["run", "rain?", "--base-url", mock_llm.base_url, "--model", "mock"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bandoneon: ") and "HTTP 400" in err
    assert "\\x1b]0;pwned\\x07 request \\u202eevil" in err
    assert OBEYED.search(err.replace("\n", "")) is None


def test_tools_check_shows_the_error_of_a_sample_run_written_out(here, capsys):
    (here / "shady.py").write_text(
        "import bandoneon\n\n@bandoneon.tool\ndef look_up_city(city: str) -> str:\n"
        '    """Look up a city by name and return its forecast for tomorrow, in one line of text."""\n'
        "    raise ValueError(city)\n"
    )
    assert cli(["tools", "check", "--sample", "shady:look_up_city", '{"city": "Rosa\\u001b]0;x\\u0007rio"}']) == 1
    out = capsys.readouterr().out
    assert "ValueError: Rosa\\x1b]0;x\\x07rio" in out
    assert OBEYED.search(out.replace("\n", "")) is None


def test_a_logged_tool_failure_quoting_hostile_text_is_shown_not_obeyed(mock_llm, here, capsys):
    (here / "shady_tools.py").write_text(
        "import bandoneon\n\n@bandoneon.tool\ndef fetch_page(url: str) -> str:\n"
        '    """Fetch a web page and return its text, or say why it could not be fetched."""\n'
        "    raise RuntimeError('the page said \\x1b]52;c;SGVsbG8=\\x07')\n"
    )
    mock_llm.add(Reply(tool_calls=[("fetch_page", {"url": "https://example.com"})]), Reply(text="It failed."))
    assert cli(["run", "go", "--base-url", mock_llm.base_url, "--model", "mock", "--tools", "shady_tools.py"]) == 0
    err = capsys.readouterr().err
    assert "tool fetch_page raised" in err and "the page said \\x1b]52;c;SGVsbG8=\\x07" in err
    assert OBEYED.search(err.replace("\n", "")) is None
