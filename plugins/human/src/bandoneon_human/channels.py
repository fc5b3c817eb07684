"""Approval channels: how a request reaches a person and how their answer comes back.

A channel has two coroutines, ``approve(request) -> Answer | bool`` and
``ask(question) -> str``. Three ship here: the terminal, callbacks (sync or async) for
apps, and a thread-safe queue that another thread or a web handler answers. The plugin
applies the timeout and turns every failure into a refusal; channels only deliver.
"""

from __future__ import annotations

import asyncio
import builtins
import inspect
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import attrs

import bandoneon

__all__ = ["Answer", "ApprovalRequest", "Callbacks", "Channel", "HumanQueue", "NoOneToAsk", "Question", "Terminal", "as_channel"]


class NoOneToAsk(Exception):
    """A channel that has no person to ask says so with this (the message says why): the
    plugin refuses the call, gives a question its default answer or leaves a review open,
    as for any failed channel, and logs the reason in one line, without a traceback."""


@attrs.frozen
class ApprovalRequest:
    """A call waiting for a person: ``shown`` is the exact call (tool and arguments).

    ``kind="review"``: work whose review rounds ran out (``tool`` is ``"review"``, ``arguments``
    hold the open ``findings``); yes accepts it as it is, no with a note is a correction."""

    id: str
    run_id: str
    tool: str
    arguments: dict[str, Any]
    shown: str
    reason: str
    kind: str = "approval"


@attrs.frozen
class Question:
    """The model asks a person (the ``ask_human`` tool)."""

    id: str
    run_id: str
    text: str
    kind: str = "question"


@attrs.frozen
class Answer:
    """A person's decision. ``by`` names who decided (for the audit log); ``note`` reaches the model."""

    approved: bool
    by: str = ""
    note: str = ""


@runtime_checkable
class Channel(Protocol):
    async def approve(self, request: ApprovalRequest) -> Answer | bool: ...

    async def ask(self, question: Question) -> str: ...


def as_answer(value: Any) -> Answer:
    if isinstance(value, Answer):
        return value
    if isinstance(value, bool):
        return Answer(value)
    raise TypeError(f"an approval must be True, False or an Answer, got {value!r}")


async def _call(function: Callable[..., Any], argument: Any) -> Any:
    """Async callbacks are awaited; sync ones run on a worker thread so a slow dialog
    cannot freeze the event loop (and the timeout can still end the wait)."""
    if inspect.iscoroutinefunction(function):
        return await function(argument)
    result = await asyncio.to_thread(function, argument)
    return await result if inspect.isawaitable(result) else result


class Terminal:
    """Ask on the terminal: shows the call, reads y/N. ``input``/``output`` are injectable.

    Only a person at a terminal answers: with the default ``input`` and a standard input that
    is not a terminal (a pipe, a file, ``/dev/null``: a script, cron, CI, a piped chat whose
    next message a read would take), nothing is shown or read and it raises ``NoOneToAsk``;
    so does an input that ends (Ctrl-D).

    What it shows (the call's arguments, the reason, a question) is a model's or a rule's text:
    it goes out through ``bandoneon.for_terminal``, so an escape in it cannot rewrite or hide
    what the person approves.

    The read runs on a worker thread; when the timeout ends the wait, that thread stays
    blocked in ``input()`` until a line comes (a thread cannot be killed).
    """

    def __init__(self, input: Callable[[str], str] | None = None, output: Callable[[str], None] | None = None, who: str = "terminal"):
        self._input = input or builtins.input
        self._reads_stdin = input is None
        self._output = output or (lambda text: print(text, flush=True))
        self.who = who

    async def approve(self, request: ApprovalRequest) -> Answer:
        self._check_someone_is_there()
        if request.kind == "review":
            self._show(f"\nThe {request.shown}")
            typed = (await self._read("Accept it as it is? [y, or type what to fix] ")).strip()
        else:
            self._show(f"\nThe agent wants to run:\n  {request.shown}\nWhy it needs approval: {request.reason}")
            typed = (await self._read("Approve? [y/N] ")).strip()
        if typed.lower() in ("y", "yes"):
            return Answer(True, self.who)
        note = "" if typed.lower() in ("", "n", "no") else typed
        return Answer(False, self.who, note)

    async def ask(self, question: Question) -> str:
        self._check_someone_is_there()
        self._show(f"\nThe agent asks: {question.text}")
        return await self._read("> ")

    def _check_someone_is_there(self) -> None:
        if self._reads_stdin and (sys.stdin is None or not sys.stdin.isatty()):
            raise NoOneToAsk("standard input is not a terminal, so no one can answer there")

    async def _read(self, prompt: str) -> str:
        try:
            return await asyncio.to_thread(self._input, prompt)
        except EOFError:
            raise NoOneToAsk("standard input ended before an answer was typed") from None

    def _show(self, text: str) -> None:
        self._output(bandoneon.for_terminal(text))


class Callbacks:
    """Your app decides: ``approve(request) -> bool | Answer`` and ``ask(question) -> str``,
    each sync or async. A missing callback is an error the plugin turns into a refusal."""

    def __init__(self, approve: Callable[[ApprovalRequest], Any] | None = None, ask: Callable[[Question], Any] | None = None):
        self._approve = approve
        self._ask = ask

    async def approve(self, request: ApprovalRequest) -> Answer:
        if self._approve is None:
            raise RuntimeError("this channel has no approval callback")
        return as_answer(await _call(self._approve, request))

    async def ask(self, question: Question) -> str:
        if self._ask is None:
            raise RuntimeError("this channel has no callback for questions")
        return str(await _call(self._ask, question))


class HumanQueue:
    """Requests go into ``requests`` (a thread-safe ``queue.Queue``); any thread answers with
    ``answer(id, ...)``. An answer to a request that is no longer waiting (it timed out, the
    run was steered or cancelled) is refused: ``answer`` returns False and nothing happens.
    """

    def __init__(self) -> None:
        self.requests: queue.Queue[ApprovalRequest | Question] = queue.Queue()
        self._waiting: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], ApprovalRequest | Question]] = {}
        self._lock = threading.Lock()

    def next(self, timeout: float | None = None) -> ApprovalRequest | Question:
        """The next request for a person (blocks; ``queue.Empty`` after ``timeout``)."""
        return self.requests.get(timeout=timeout)

    def pending(self) -> list[ApprovalRequest | Question]:
        """Requests still waiting for an answer, oldest first."""
        with self._lock:
            return [item for _, _, item in self._waiting.values()]

    def answer(self, request_id: str, answer: Answer | bool | str, *, by: str = "", note: str = "") -> bool:
        """Answer a request from any thread: a bool or ``Answer`` for approvals, text for questions."""
        with self._lock:
            entry = self._waiting.pop(request_id, None)
        if entry is None:
            return False
        loop, future, item = entry
        if isinstance(item, ApprovalRequest):
            value: Any = answer if isinstance(answer, Answer) else Answer(bool(answer), by, note)
        else:
            value = str(answer)
        loop.call_soon_threadsafe(_resolve, future, value)
        return True

    async def approve(self, request: ApprovalRequest) -> Answer:
        return as_answer(await self._wait(request))

    async def ask(self, question: Question) -> str:
        return str(await self._wait(question))

    async def _wait(self, item: ApprovalRequest | Question) -> Any:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        with self._lock:
            self._waiting[item.id] = (loop, future, item)
        self.requests.put(item)
        try:
            return await future
        finally:
            with self._lock:
                self._waiting.pop(item.id, None)


def _resolve(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


class _DenyAll:
    """For unattended runs: every approval is no, every question goes unanswered."""

    async def approve(self, request: ApprovalRequest) -> Answer:
        return Answer(False, "nobody", "no one is attending this agent")

    async def ask(self, question: Question) -> str:
        raise NoOneToAsk("no one is attending this agent")


def as_channel(value: Any) -> Channel:
    """``"terminal"``, ``"queue"``, ``"deny"``, a channel object, or an approval callback."""
    if isinstance(value, str):
        named = {"terminal": Terminal, "queue": HumanQueue, "deny": _DenyAll}
        if value not in named:
            from bandoneon import ConfigError

            raise ConfigError(f"human: unknown channel {value!r}; use one of {', '.join(named)}, a channel object or a callback")
        return named[value]()
    if isinstance(value, Channel):
        return value
    if callable(value):
        return Callbacks(approve=value)
    from bandoneon import ConfigError

    raise ConfigError(f"human: 'channel' must be a name, a channel object (approve/ask) or a callback, got {value!r}")
