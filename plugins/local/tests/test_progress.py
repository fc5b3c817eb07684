"""The spinner: drawn on a terminal only, with tokens and tokens/s, never in --json output."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys

import bandoneon
from bandoneon_local import LocalModel, progress
from bandoneon_local.progress import Progress, progress_wanted


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_spinner_shows_tokens_and_tokens_per_second():
    spinner = Progress("SmolLM2", enabled=True, stream=Terminal())
    spinner._started = 100.0
    assert spinner.line(now=100.5).endswith("SmolLM2... 0.5 s")
    spinner.count(30)
    assert spinner.line(now=102.0).endswith("SmolLM2: 30 tokens, 15 tok/s")


def test_it_is_wanted_on_a_terminal_only_and_never_when_turned_off(monkeypatch):
    monkeypatch.delenv("BANDONEON_PROGRESS", raising=False)
    assert progress_wanted(Terminal()) and not progress_wanted(io.StringIO())
    monkeypatch.setenv("BANDONEON_PROGRESS", "0")
    assert not progress_wanted(Terminal())


def test_a_generation_on_a_terminal_draws_the_spinner_then_clears_it(monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 0.0)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.delenv("BANDONEON_PROGRESS", raising=False)
    model = LocalModel()
    reply = asyncio.run(model.complete(bandoneon.ModelRequest((bandoneon.Message.user("Write a story about a dragon."),), settings={"max_tokens": 60})))
    drawn = terminal.getvalue()
    assert reply.usage.output_tokens > 0
    assert "SmolLM2-135M-Instruct.Q4_1: " in drawn and "tok/s" in drawn
    assert drawn.endswith("\r\x1b[K"), "the line is cleared when the reply is done"


def test_not_on_a_terminal_nothing_is_drawn(monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 0.0)
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    asyncio.run(LocalModel().complete(bandoneon.ModelRequest((bandoneon.Message.user("Say hi."),), settings={"max_tokens": 8})))
    assert stream.getvalue() == ""


def test_bandoneon_run_json_turns_it_off(tmp_path):
    code = "import os, sys; from bandoneon import cli; cli.main(['run', 'Say hi.', '--json', '--model', 'local:']); print(os.environ.get('BANDONEON_PROGRESS'))"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "0"
    assert "tok/s" not in done.stderr
