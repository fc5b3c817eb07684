"""The terminal channel with no one at a terminal (a script, cron, CI, a piped chat): nothing is
shown or read, every outcome is the one of a channel that reached no one, said in one log line."""

from __future__ import annotations

import asyncio
import io
import logging
import sys

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from hypothesis import given, settings
from hypothesis import strategies as st
from bandoneon_human import Human, NoOneToAsk, Question, Terminal

DROPPED: list[str] = []


@bandoneon.tool(needs_approval=True)
def drop_claw() -> str:
    """Drop the claw. Spends the last coin: cannot be undone."""
    DROPPED.append("drop")
    return "you got a prize"


class _EndedTerminal(io.StringIO):
    """A terminal where the person pressed Ctrl-D."""

    def isatty(self) -> bool:
        return True


def tool_text(model: ScriptedModel) -> str:
    return [m for m in model.requests[1].messages if m.role == "tool"][-1].content


@settings(max_examples=30, deadline=None)
@given(piped=st.text())
def test_whatever_a_pipe_holds_approves_nothing_and_is_not_read(piped):
    """``yes | script``, a chat's next message: a pipe is not a person."""
    DROPPED.clear()
    stdin = io.StringIO(piped)
    model = ScriptedModel(call("drop_claw"), "ok")
    agent = bandoneon.Agent(model, tools=[drop_claw], plugins=[Human(ask_tool=None)], context_files=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdin", stdin)
        assert agent.run_sync("Get me the bear!").ok
    assert DROPPED == [] and stdin.tell() == 0
    assert "could not reach a person (standard input is not a terminal" in tool_text(model)


def test_a_refused_approval_is_one_log_line_and_nothing_on_stdout(monkeypatch, capsys, caplog):
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    model = ScriptedModel(call("drop_claw"), "ok")
    agent = bandoneon.Agent(model, tools=[drop_claw], plugins=[Human(ask_tool=None)], context_files=False)
    with caplog.at_level(logging.WARNING, logger="bandoneon.human"):
        agent.run_sync("Get me the bear!")
    [record] = [r for r in caplog.records if r.name == "bandoneon.human"]
    assert record.exc_info is None and "standard input is not a terminal" in record.getMessage()
    assert capsys.readouterr().out == ""


def test_a_question_with_no_one_at_a_terminal_gets_the_default_answer(monkeypatch, caplog):
    monkeypatch.setattr(sys, "stdin", io.StringIO("blue\n"))
    model = ScriptedModel(call("ask_human", question="Which colour?"), "ok")
    agent = bandoneon.Agent(model, plugins=[Human(ask_default="Pick the safest.")], context_files=False)
    with caplog.at_level(logging.WARNING, logger="bandoneon.human"):
        agent.run_sync("Paint it")
    assert tool_text(model) == "No answer (the question could not reach a person). Pick the safest."
    assert all(r.exc_info is None for r in caplog.records if r.name == "bandoneon.human")


def test_a_review_with_no_one_at_a_terminal_stays_open(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    assert asyncio.run(Human().review_exhausted(["#18 has no paper"], task="the paper round", rounds=2)) is None


def test_an_input_that_ends_at_a_terminal_reaches_no_one(monkeypatch):
    monkeypatch.setattr(sys, "stdin", _EndedTerminal(""))
    with pytest.raises(NoOneToAsk, match="standard input ended"):
        asyncio.run(Terminal(output=lambda text: None).ask(Question("q1", "run", "Which colour?")))
