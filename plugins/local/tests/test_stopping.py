"""Stopping the embedded model: agent.cancel(), run and turn timeouts, Ctrl-C in the CLI.

Each asserts that generation stopped (few pieces came out of a reply allowed hundreds of
tokens, and the model serves the next request), never how many seconds it took.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import bandoneon
from bandoneon_local import LocalModel

LONG = "Write a very long story about a dragon who learns to dance the tango."
#: Enough tokens that a generation left to run would go on for many seconds.
MANY = {"max_tokens": 400, "temperature": 0.8}


def talker(**kwargs) -> bandoneon.Agent:
    kwargs.setdefault("settings", MANY)
    return bandoneon.Agent("local:", plugins=[], context_files=False, **kwargs)


async def test_cancel_stops_generation_at_the_next_token_and_frees_the_model():
    agent = talker()
    pieces: list[str] = []

    def on_text(event: bandoneon.TextDelta) -> None:
        pieces.append(event.text)
        if len(pieces) == 3:
            agent.cancel()

    agent.on("text_delta", on_text)
    result = await agent.run(LONG)
    assert result.stop == "cancelled"
    assert len(pieces) <= 5, "llama.cpp stopped within a couple of tokens of the cancel"
    follow_up = await talker(settings={"max_tokens": 8}).run("Say hi.")
    assert follow_up.stop == "end_turn"


async def test_a_run_timeout_stops_generation():
    await LocalModel().engine()  # the load is not what is being timed out
    agent = talker(run_timeout=0.5)
    pieces: list[str] = []
    agent.on("text_delta", lambda e: pieces.append(e.text))
    result = await agent.run(LONG)
    assert result.stop == "timeout"
    assert len(pieces) < MANY["max_tokens"]


async def test_a_turn_timeout_stops_generation():
    await LocalModel().engine()
    agent = talker(turn_timeout=0.5)
    result = await agent.run(LONG)
    assert result.stop == "timeout" and "turn_timeout" in result.detail


def test_cancel_from_another_thread_stops_a_run_sync():
    agent = talker()
    pieces: list[str] = []

    def on_text(event: bandoneon.TextDelta) -> None:
        pieces.append(event.text)
        if len(pieces) == 2:
            import threading

            threading.Thread(target=agent.cancel).start()

    agent.on("text_delta", on_text)
    assert agent.run_sync(LONG).stop == "cancelled"
    assert len(pieces) <= 6


def ctrl_c(command: str, cwd: object) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``bandoneon`` in a child that reports its first generated piece on stderr, send it
    SIGINT then, and return what it did and how many pieces it generated in all."""
    code = textwrap.dedent(
        f"""
        import atexit, signal, sys
        import bandoneon
        from bandoneon import cli
        # Ctrl-C as a terminal delivers it, however the suite was started (a background job
        # starts with SIGINT ignored, and so would this child).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        pieces = []
        original = bandoneon.Agent.__init__
        def init(self, *args, **kwargs):
            original(self, *args, **kwargs)
            def on_text(event):
                pieces.append(event.text)
                if len(pieces) == 1:
                    print("GENERATING", file=sys.stderr, flush=True)
            self.on("text_delta", on_text)
        bandoneon.Agent.__init__ = init
        atexit.register(lambda: print(f"PIECES {{len(pieces)}}", file=sys.stderr, flush=True))
        sys.exit(cli.main({command}))
        """
    )
    child = subprocess.Popen([sys.executable, "-c", code], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stderr is not None
    if "chat" in command:
        child.stdin.write(LONG + "\n")
        child.stdin.flush()
    seen = []
    for line in child.stderr:
        seen.append(line)
        if line.startswith("GENERATING"):
            child.send_signal(signal.SIGINT)
            break
    out, err = child.communicate(timeout=120)
    done = subprocess.CompletedProcess(child.args, child.returncode, out, "".join(seen) + err)
    pieces = int(next(line for line in done.stderr.splitlines() if line.startswith("PIECES")).split()[1])
    return done, pieces


def test_ctrl_c_in_bandoneon_run_stops_generation_prints_interrupted_and_exits_130(tmp_path):
    done, pieces = ctrl_c(f'["run", {LONG!r}, "--model", "local:"]', tmp_path)
    assert done.returncode == 130, done.stderr
    assert [line for line in done.stderr.splitlines() if line not in ("GENERATING",) and not line.startswith("PIECES")] == ["interrupted"]
    assert pieces < MANY["max_tokens"] // 4


def test_ctrl_c_in_bandoneon_chat_stops_the_generation(tmp_path):
    # what chat does next (keep the conversation, say the reply stopped) is the chat's own UX
    done, pieces = ctrl_c('["chat", "--model", "local:"]', tmp_path)
    assert "Traceback" not in done.stderr
    assert pieces < MANY["max_tokens"] // 4
