"""What a person is shown is shown, never obeyed: escapes in a call's arguments, a question or a
reason reach their terminal written out, and what they approve is the call as the model made it."""

from __future__ import annotations

import asyncio
import io
import json

import bandoneon
from bandoneon.cli import main
from bandoneon.testing import ScriptedModel, call
from bandoneon_human import Answer, ApprovalRequest, AuditLog, Callbacks, Human, Terminal, read_pending
from bandoneon_human.pending import shown_call
from hypothesis import given, settings
from hypothesis import strategies as st

# Terminal escapes a model could put in its text: the clipboard (OSC 52), erase a line and move
# up, a bidi override, an 8-bit CSI, a carriage return.
HOSTILE = "\x1b]52;c;SGVsbG8=\x07 \x1b[2K\x1b[1A \u202e \x9b31m \r"
WRITTEN_OUT = "\\x1b]52;c;SGVsbG8=\\x07 \\x1b[2K\\x1b[1A \\u202e \\x9b31m "
# The same text inside a shown call: its JSON already writes out the C0 controls.
IN_THE_CALL = "\\u001b]52;c;SGVsbG8=\\u0007 \\u001b[2K\\u001b[1A \\u202e \\x9b31m \\r"
OBEYED = ("\x1b", "\x07", "\u202e", "\x9b", "\r")
INSCRIPTION = f"to Tina {HOSTILE}with love"

ENGRAVED: list[str] = []


@bandoneon.tool(needs_approval=True)
def engrave(text: str) -> str:
    """Engrave the prize. Cannot be undone."""
    ENGRAVED.append(text)
    return "engraved"


def test_the_terminal_shows_the_real_call_and_question_without_obeying_them(tmp_path):
    ENGRAVED.clear()
    printed: list[str] = []
    terminal = Terminal(input=lambda prompt: "y" if prompt.startswith("Approve") else "the brown one", output=printed.append)
    model = ScriptedModel(call("engrave", text=INSCRIPTION), call("ask_human", question=f"Which bear {HOSTILE}now?"), "ok")
    human = Human(channel=terminal, audit_log=str(tmp_path / "audit.jsonl"))
    bandoneon.Agent(model, tools=[engrave], plugins=[human], context_files=False).run_sync("Engrave it")
    shown = "".join(printed)
    assert not any(char in shown for char in OBEYED)
    assert f'  engrave({{"text": "to Tina {IN_THE_CALL}with love"}})\n' in shown
    assert f"The agent asks: Which bear {WRITTEN_OUT}now?" in shown
    assert ENGRAVED == [INSCRIPTION] and model.requests[2].messages[-1].content == "the brown one"
    assert AuditLog(tmp_path / "audit.jsonl").records()[0]["arguments"] == {"text": INSCRIPTION}


def test_the_terminal_shows_a_reason_without_obeying_it():
    printed: list[str] = []
    request = ApprovalRequest("r1", "run-1", "engrave", {}, "engrave({})", f"the rule says {HOSTILE}so")
    answer = asyncio.run(Terminal(input=lambda prompt: "no, not now", output=printed.append).approve(request))
    assert answer == Answer(False, "terminal", "no, not now")
    assert printed[0].endswith(f"\nWhy it needs approval: the rule says {WRITTEN_OUT}so")


# Any text, with what a terminal obeys drawn often (a lone surrogate too: printing one raises).
arguments = st.text(st.characters() | st.sampled_from(["\x1b", "\x07", "\x7f", "\x9b", "\u202e", "\u2066", "\r", "\ud800"]))


@settings(max_examples=150, deadline=None)
@given(text=arguments, typed=st.sampled_from(["y", "n", "not the bear"]))
def test_whatever_the_arguments_the_terminal_obeys_nothing_and_the_answer_stands(text, typed):
    ENGRAVED.clear()
    printed: list[str] = []
    model = ScriptedModel(call("engrave", text=text), "ok")
    human = Human(channel=Terminal(input=lambda prompt: typed, output=printed.append), ask_tool=None)
    bandoneon.Agent(model, tools=[engrave], plugins=[human], context_files=False).run_sync("Engrave it")
    assert printed and all(bandoneon.for_terminal(out) == out for out in printed)
    # What no text can hold (a lone surrogate) is U+FFFD from the moment the call is parsed.
    assert ENGRAVED == ([bandoneon.as_unicode(text)] if typed == "y" else [])
    if typed == "not the bear":
        assert typed in model.requests[1].messages[-1].content


async def _never(request):
    await asyncio.Event().wait()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _paused(tmp_path):
    pause_file = tmp_path / "pending.json"
    human = Human(channel=Callbacks(approve=_never), timeout=0, pause_file=str(pause_file))
    bandoneon.Agent(ScriptedModel(call("engrave", text=INSCRIPTION)), tools=[engrave], plugins=[human], context_files=False).run_sync("Engrave it")
    return pause_file


def test_the_cli_shows_and_answers_a_paused_call_without_obeying_it(tmp_path, monkeypatch):
    pause_file = _paused(tmp_path)
    stored = pause_file.read_bytes()
    terminal = _Terminal()
    monkeypatch.setattr("sys.stdout", terminal)
    assert main(["human", "show", str(pause_file)]) == 0
    assert pause_file.read_bytes() == stored
    assert main(["human", "answer", str(pause_file), "--yes", "--by", "tina"]) == 0
    out = terminal.getvalue()
    assert not any(char in out for char in OBEYED)
    assert f'"text": "to Tina {IN_THE_CALL}with love"' in out  # the JSON of `show`
    assert f'approved: engrave({{"text": "to Tina {IN_THE_CALL}with love"}})\n' in out
    pending = read_pending(pause_file)
    assert pending.arguments == {"text": INSCRIPTION} and pending.shown == shown_call("engrave", {"text": INSCRIPTION}) and pending.approved


def test_human_show_piped_prints_the_pending_call_as_json(tmp_path, capsys):
    pause_file = _paused(tmp_path)
    assert main(["human", "show", str(pause_file)]) == 0
    assert json.loads(capsys.readouterr().out)["arguments"] == {"text": INSCRIPTION}