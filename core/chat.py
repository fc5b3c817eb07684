"""``bandoneon chat``: a conversation in the terminal.

The reply streams as it comes; each tool call is one dim line; Ctrl-C stops the reply (the
run ends ``cancelled``, the history stays valid) and returns to the prompt, where a second
Ctrl-C or Ctrl-D leaves. A provider error is one line and the chat goes on with its history.
Lines are edited and recalled with ``readline`` where Python has it. Commands start with ``/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from .errors import BandoneonError
from .events import ProviderRetry, RunEnd, TextDelta, ToolRefused, ToolStart
from .text import for_terminal, markdown_code

__all__ = ["Chat"]

HELP = """\
/help           these commands
/clear          forget the conversation (start afresh)
/save [FILE]    write the conversation to FILE (.md, or .json for the messages); default chat-<time>.md
/model [MODEL]  show the model, or switch to MODEL keeping the conversation
Ctrl-C stops a reply; Ctrl-C or Ctrl-D at the prompt leaves."""


class _Style:
    """ANSI styles, or nothing when the output is not a terminal (or ``NO_COLOR`` is set).
    What is styled is shown as text (``for_terminal``): an error or a tool call may carry
    a model's or a server's words."""

    def __init__(self, stream: TextIO):
        self.enabled = stream.isatty() and not os.environ.get("NO_COLOR")

    def dim(self, text: str) -> str:
        text = for_terminal(text)
        return f"\x1b[2m{text}\x1b[0m" if self.enabled else text

    def red(self, text: str) -> str:
        text = for_terminal(text)
        return f"\x1b[31m{text}\x1b[0m" if self.enabled else text


def _call_line(name: str, arguments: Any) -> str:
    shown = json.dumps(arguments, ensure_ascii=False, default=str) if arguments not in (None, {}) else ""
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"  → {name}({shown})"


class Chat:
    """One chat session over ``agent``; ``switch_model(agent, model)`` returns the agent ``/model``
    switches to (the same setup and conversation on another model)."""

    def __init__(self, agent: Any, *, switch_model: Callable[[Any, str], Any], out: TextIO | None = None, err: TextIO | None = None):
        self.agent = agent
        self.switch_model = switch_model
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.style = _Style(self.out)
        self._loop = asyncio.new_event_loop()
        self._interrupts = 0
        self._waiting = False
        self._at_line_start = True
        self._waiting = False

    # ---------------------------------------------------------------- the prompt

    def run(self) -> int:
        _enable_line_editing()
        self._say(f"bandoneon chat · {self._model_name()} · /help for commands · Ctrl-C stops a reply, Ctrl-D leaves")
        # Input from a pipe or a file has no one to prompt: stdout holds the replies alone.
        prompt = "> " if sys.stdin.isatty() else ""
        if isinstance(sys.stdin, io.TextIOWrapper):  # bytes that are not UTF-8 (a file in Latin-1) are U+FFFD, not the end of the chat
            sys.stdin.reconfigure(errors="replace")
        try:
            while True:
                try:
                    line = input(prompt)
                except (EOFError, KeyboardInterrupt):
                    if prompt:
                        self.out.write("\n")  # never leave the shell's prompt glued to ours
                    return 0
                line = line.strip()
                if not line:
                    continue
                if line.startswith("/"):
                    self._command(line)
                    continue
                if self._reply(line) == "leave":
                    return 0
        finally:
            self.out.flush()
            try:
                self._loop.run_until_complete(self.agent.aclose())
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            finally:
                self._loop.close()

    def _say(self, text: str) -> None:
        print(self.style.dim(text), file=self.err, flush=True)

    def _model_name(self) -> str:
        provider = self.agent.provider
        model = getattr(provider, "model", "") or ""
        return f"{getattr(provider, 'name', type(provider).__name__)}:{model}"

    # ---------------------------------------------------------------- commands

    def _command(self, line: str) -> None:
        name, _, argument = line.partition(" ")
        argument = argument.strip()
        if name == "/help":
            print(HELP, file=self.out)
        elif name == "/clear":
            self.agent.clear()
            self._say("(the conversation is forgotten; the next message starts afresh)")
        elif name == "/save":
            self._save(argument)
        elif name == "/model":
            if not argument:
                print(for_terminal(self._model_name()), file=self.out)
                return
            try:
                self.agent = self.switch_model(self.agent, argument)
            except BandoneonError as exc:
                print(self.style.red(f"bandoneon: {exc}"), file=self.err)
                return
            self._say(f"(now talking to {self._model_name()}; the conversation is kept)")
        else:
            print(self.style.red(f"unknown command {name}; /help lists them"), file=self.err)

    def _save(self, argument: str) -> None:
        from .files import write_atomically
        from .structuring import unstructure

        path = Path(argument or time.strftime("chat-%Y%m%d-%H%M%S.md")).expanduser()  # ~/chat.md as a shell reads it
        messages = self.agent.transcript
        if path.suffix == ".json":
            text = json.dumps(unstructure(messages), indent=2, ensure_ascii=False)
        else:
            text = "".join(_markdown(message) for message in messages)
        try:
            write_atomically(path, text)
        except OSError as exc:
            print(self.style.red(f"bandoneon: cannot write {path}: {exc.strerror or exc}"), file=self.err)
            return
        self._say(f"(saved {len(messages)} message{'s' if len(messages) != 1 else ''} to {path})")

    # ---------------------------------------------------------------- one reply

    def _reply(self, prompt: str) -> str | None:
        """Stream one reply. Ctrl-C cancels it; a second Ctrl-C during the same reply leaves."""
        self._interrupts = 0
        task = self._loop.create_task(self._stream(prompt))

        def interrupted() -> None:
            self._interrupts += 1
            if self._interrupts == 1:
                self.agent.cancel()
            else:
                task.cancel()

        self._loop.add_signal_handler(signal.SIGINT, interrupted)
        try:
            self._loop.run_until_complete(task)
        except asyncio.CancelledError:
            self.out.write("\n")
            return "leave"
        except BandoneonError as exc:  # a provider or plugin error: one line, the chat goes on
            self._end_line()
            print(self.style.red(f"bandoneon: {exc}"), file=self.err, flush=True)
        finally:
            self._loop.remove_signal_handler(signal.SIGINT)
        return None

    async def _stream(self, prompt: str) -> None:
        self._at_line_start = True
        self._waiting = self.style.enabled  # a dim "…" until the first word, on a terminal
        if self._waiting:
            self.out.write(self.style.dim("…"))
            self.out.flush()
        streamed = False
        # Closed here when showing an event fails (a reader that left, `| head`): the run is
        # cancelled in this loop, not left to a finalizer the closing loop never runs.
        async with contextlib.aclosing(self.agent.stream(prompt)) as events:
            async for event in events:
                if isinstance(event, TextDelta) and event.text:
                    streamed = True
                    self._write(for_terminal(event.text))
                elif isinstance(event, ToolStart):
                    self._line(self.style.dim(_call_line(event.call.name, event.arguments)))
                elif isinstance(event, ToolRefused):
                    self._line(self.style.dim(_call_line(event.call.name, None) + " refused"))
                elif isinstance(event, ProviderRetry):
                    self._line(self.style.dim(f"  (retrying in {event.delay:.1f}s: {event.error})"))
                elif isinstance(event, RunEnd):
                    self._finish(event, streamed)

    def _finish(self, event: RunEnd, streamed: bool) -> None:
        if not streamed and event.error is None:
            text = next((m.content for m in reversed(self.agent.messages) if m.role == "assistant" and m.content), "")
            if event.reason in ("end_turn", "terminal_tool") and text:
                self._write(for_terminal(text))
        self._end_line()
        if event.reason == "cancelled":
            self._say("(reply stopped)")
        elif event.reason not in ("end_turn", "terminal_tool") and event.error is None:
            self._say(f"(the run ended without an answer: {event.reason})")
        self.out.flush()

    def _write(self, text: str) -> None:
        if self._waiting:
            self._waiting = False
            self.out.write("\r\x1b[K")  # the "…" goes as the reply comes
        self.out.write(text)
        self.out.flush()
        self._at_line_start = text.endswith("\n")

    def _line(self, text: str) -> None:
        self._end_line()
        self._write(text + "\n")

    def _end_line(self) -> None:
        if self._waiting:
            self._waiting = False
            self.out.write("\r\x1b[K")
        if not self._at_line_start:
            self._write("\n")


def _markdown(message: Any) -> str:
    """One message of a saved chat. Its words, tool calls and results are code blocks: shown as
    they are in a Markdown viewer, never rendered (an image a model was led to write there would
    be fetched, with whatever its address carries, by whoever opens the file)."""
    if message.role == "tool":
        return f"**tool result**\n\n{markdown_code(message.content)}\n\n"
    words = markdown_code(message.content) if message.content else ""
    calls = "".join(f"\n\n→ tool call\n\n{markdown_code(f'{call.name}({call.arguments})')}" for call in message.tool_calls)
    return f"**{message.role}**\n\n{words}{calls}\n\n"


def _enable_line_editing() -> None:
    """Arrow keys, editing and history at the prompt, where Python was built with readline."""
    try:
        import readline  # noqa: F401  (importing it is what makes input() use it)
    except ImportError:
        pass
