"""Record a real model once, replay it forever: deterministic tests and evals of real runs.

``RecordingProvider(inner, path)`` passes every request to ``inner`` and appends the
request and the reply to ``path`` (JSONL, one exchange a line, one ``write`` each).
``ReplayProvider(path)`` answers from the file and *refuses* a request that is not in it,
raising ``ReplayMismatch`` with a unified diff against the closest recorded request — a
changed prompt or tool description shows up as a failing test, not as a silent re-record.

Matching is by content, not position, so concurrent cases replay correctly; identical
requests are answered in recorded order. ``stream`` is not compared (it depends on who
listens, not on what is asked).

``replay_model(case)`` replays the replies kept in a case made from a recorded run
(``add_case``) in order, without matching requests: the point is to re-run today's code
against the model's choices of that day.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

import bandoneon

from .dataset import DatasetError, jsonl_lines

__all__ = ["CaseReplay", "RecordingProvider", "ReplayMismatch", "ReplayProvider", "replay_model"]


class ReplayMismatch(bandoneon.BandoneonError):
    """The replayed run sent a request the recording does not have. Not a ``ProviderError``:
    retrying cannot fix it, so it is never retried."""


def _request_json(request: bandoneon.ModelRequest) -> dict[str, Any]:
    data = bandoneon.unstructure(request)
    data.pop("stream", None)
    return json.loads(json.dumps(data, default=str))


class RecordingProvider:
    """Wraps a provider; every exchange is appended to ``path``."""

    def __init__(self, inner: bandoneon.Provider | str, path: str | os.PathLike[str]):
        self.inner = bandoneon.resolve_model(inner)
        self.path = Path(path)
        self.name = getattr(self.inner, "name", "recording")
        self.model = getattr(self.inner, "model", "")

    async def complete(self, request: bandoneon.ModelRequest, *, on_delta: bandoneon.DeltaCallback | None = None) -> bandoneon.ModelReply:
        reply = await self.inner.complete(request, on_delta=on_delta)
        line = json.dumps({"model": self.model, "request": _request_json(request), "reply": bandoneon.unstructure(reply)}, ensure_ascii=False, default=str) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
        return reply

    async def context_window(self) -> int | None:
        return await self.inner.context_window()


class ReplayProvider:
    """Answers from a recording; refuses requests that differ from every recorded one."""

    name = "replay"

    def __init__(self, path: str | os.PathLike[str], *, model: str | None = None, context_window: int | None = None):
        self.path = Path(path)
        self._exchanges: list[tuple[dict[str, Any], bandoneon.ModelReply]] = []
        recorded_model: str | None = None
        try:
            lines = jsonl_lines(self.path)  # not splitlines(): a reply may hold a raw U+2028
        except DatasetError as exc:
            raise bandoneon.ConfigError(str(exc)) from None
        except FileNotFoundError:
            raise bandoneon.ConfigError(f"{self.path}: no such recording; record one with RecordingProvider") from None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:  # bounded (a hostile line may nest without end), each reply checked here, not mid-replay
                data = bandoneon.loads_bounded(line)
                self._exchanges.append((data["request"], bandoneon.structure(data["reply"], bandoneon.ModelReply)))
                recorded_model = recorded_model or data.get("model")
            except (ValueError, KeyError, TypeError) as exc:
                raise bandoneon.ConfigError(f"{self.path}:{number}: not a recorded exchange ({type(exc).__name__}: {exc})") from None
        self._used = [False] * len(self._exchanges)
        self.model = model or recorded_model or "replay"
        self._window = context_window

    @property
    def remaining(self) -> int:
        return self._used.count(False)

    async def complete(self, request: bandoneon.ModelRequest, *, on_delta: bandoneon.DeltaCallback | None = None) -> bandoneon.ModelReply:
        wanted = _request_json(request)
        for index, (recorded, reply) in enumerate(self._exchanges):
            if not self._used[index] and recorded == wanted:
                self._used[index] = True
                if on_delta is not None and reply.message.content:
                    await on_delta("text", reply.message.content)
                return reply
        raise ReplayMismatch(self._explain(wanted))

    def _explain(self, wanted: dict[str, Any]) -> str:
        unused = [recorded for (recorded, _), used in zip(self._exchanges, self._used, strict=True) if not used]
        if not unused:
            return f"{self.path}: the run sent a request the recording does not have (all {len(self._exchanges)} recorded requests were already used)"
        new = json.dumps(wanted, indent=1, sort_keys=True, ensure_ascii=False).splitlines()

        def similarity(recorded: dict[str, Any]) -> float:
            return difflib.SequenceMatcher(None, json.dumps(recorded, indent=1, sort_keys=True, ensure_ascii=False).splitlines(), new).ratio()

        closest = max(unused, key=similarity)
        old = json.dumps(closest, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
        diff = "\n".join(difflib.unified_diff(old, new, "recorded", "this run", lineterm="", n=2))
        return f"{self.path}: the run sent a request that differs from the recording:\n{diff}"

    async def context_window(self) -> int | None:
        return self._window


class CaseReplay:
    """Answers with the replies recorded in a case (``metadata.replies``, from ``add_case``), in
    order, whatever is asked: the model's recorded choices replayed against today's tools and
    plugins. A run that asks for more replies than were recorded gets ``ReplayMismatch``."""

    name = "replay"

    def __init__(self, case: Any, *, context_window: int | None = None):
        replies = (case.metadata or {}).get("replies")
        if not isinstance(replies, list):
            raise bandoneon.ConfigError(f"case {case.id!r} has no recorded replies (metadata.replies); make it with add_case / `bandoneon eval add-case`")
        self.case_id = case.id
        self._replies = [_recorded_reply(case.id, number, data) for number, data in enumerate(replies, 1)]
        self._next = 0
        self.model = next((r.model for r in self._replies if r.model), None) or "replay"
        self._window = context_window

    @property
    def remaining(self) -> int:
        return len(self._replies) - self._next

    async def complete(self, request: bandoneon.ModelRequest, *, on_delta: bandoneon.DeltaCallback | None = None) -> bandoneon.ModelReply:
        if self._next >= len(self._replies):
            raise ReplayMismatch(f"case {self.case_id!r}: the run asked for model reply #{self._next + 1}; the recorded run had {len(self._replies)}")
        reply = self._replies[self._next]
        self._next += 1
        if on_delta is not None and reply.message.content:
            await on_delta("text", reply.message.content)
        return reply

    async def context_window(self) -> int | None:
        return self._window


def _recorded_reply(case_id: str, number: int, data: Any) -> bandoneon.ModelReply:
    """A reply kept in a case (a dataset from anywhere): a ``ConfigError`` naming the case and the
    reply when it is not one, before the run starts."""
    try:
        return bandoneon.structure(data, bandoneon.ModelReply)
    except ValueError as exc:  # StructureError
        raise bandoneon.ConfigError(f"case {case_id!r}: recorded reply #{number} is not a model reply ({str(exc)[:200]})") from None


def replay_model(case: Any, *, context_window: int | None = None) -> CaseReplay:
    """A provider replaying ``case``'s recorded replies: ``Agent(replay_model(case), tools=...)``."""
    return CaseReplay(case, context_window=context_window)
