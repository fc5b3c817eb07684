"""The session format: one JSON record per line/row, and the replay that rebuilds a history.

Records: ``{"type": "session", ...}`` (header), ``{"type": "message", "message": {...}}``,
``{"type": "usage", "usage": {...}}`` (what one run spent), ``{"type": "clear"}`` (the agent's
history was reset; what came before no longer counts). Messages go through
``bandoneon.unstructure`` / ``bandoneon.structure``, so the format follows the core's types.

Replay stops at the first record that cannot be read: the valid prefix is kept and the damage
is described, never silently skipped over (a record after a hole could answer a tool call
that is no longer there).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import attrs

import bandoneon

__all__ = ["LoadedSession", "SessionError", "SessionLocked", "check_session_id", "encode", "replay"]

FORMAT_VERSION = 1
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class SessionError(bandoneon.BandoneonError):
    """A session cannot be opened, read, forked or deleted as asked."""


class SessionLocked(SessionError):
    """Another process (or another agent in this one) has the session open for writing."""


def check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not _SESSION_ID.match(session_id):
        raise SessionError(
            f"a session id is 1-128 letters, digits and . _ - (starting with a letter or digit), got {session_id!r}"
        )
    return session_id


@attrs.frozen
class LoadedSession:
    """A session as read back. ``damage`` describes what could not be read (None: nothing)."""

    session_id: str
    messages: tuple[bandoneon.Message, ...] = ()
    usage: bandoneon.Usage = bandoneon.Usage()
    created_at: float | None = None
    forked_from: str | None = None
    damage: str | None = None
    valid_records: int = 0

    @property
    def exists(self) -> bool:
        return self.created_at is not None


def encode(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def message_record(message: bandoneon.Message) -> dict[str, Any]:
    return {"type": "message", "message": bandoneon.unstructure(message)}


def usage_record(usage: bandoneon.Usage) -> dict[str, Any]:
    return {"type": "usage", "usage": bandoneon.unstructure(usage)}


def header_record(session_id: str, created_at: float, forked_from: str | None = None) -> dict[str, Any]:
    return {"type": "session", "version": FORMAT_VERSION, "id": session_id, "created_at": created_at, "forked_from": forked_from}


def replay(session_id: str, lines: Iterable[tuple[str, str]], *, torn: str | None = None) -> LoadedSession:
    """Rebuild a session from ``(where, text)`` records; stop at the first bad one.

    ``where`` names a record for the damage report ("line 7", "row 7"); ``torn`` reports a
    last record cut short by a crash.
    """
    messages: list[bandoneon.Message] = []
    usage = bandoneon.Usage()
    created_at: float | None = None
    forked_from: str | None = None
    damage: str | None = None
    valid = 0
    for where, text in lines:
        try:
            record = json.loads(text)
            kind = record["type"]
            if kind == "session":
                created_at, forked_from = float(record["created_at"]), record.get("forked_from")
            elif kind == "message":
                messages.append(bandoneon.structure(record["message"], bandoneon.Message))
            elif kind == "usage":
                usage = usage + bandoneon.structure(record["usage"], bandoneon.Usage)
            elif kind == "clear":
                messages.clear()
            else:
                raise ValueError(f"unknown record type {kind!r}")
        except (ValueError, KeyError, TypeError) as exc:
            damage = f"{where} cannot be read ({type(exc).__name__}: {str(exc)[:120]})"
            break
        valid += 1
    else:
        damage = torn
    if damage is not None:
        messages, closed = close_open_calls(messages)
        if closed:
            damage += f"; {closed} tool call(s) left without a result were answered as interrupted"
    return LoadedSession(session_id, tuple(messages), usage, created_at, forked_from, damage, valid)


def close_open_calls(messages: list[bandoneon.Message]) -> tuple[list[bandoneon.Message], int]:
    """Answer the tool calls of the last assistant message that have no result, so the history
    is valid for the next model call (a provider rejects an unanswered call)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant":
            break
    else:
        return messages, 0
    answered = {m.tool_call_id for m in messages[index + 1 :] if m.role == "tool"}
    missing = [c for c in messages[index].tool_calls if c.id not in answered]
    closing = [
        bandoneon.Message.tool(c, f"{c.name} was interrupted: the session was cut off before its result was saved.", is_error=True)
        for c in missing
    ]
    return messages + closing, len(closing)


def valid_cut(messages: tuple[bandoneon.Message, ...] | list[bandoneon.Message], at: int) -> None:
    """``SessionError`` unless ``messages[:at]`` leaves no tool call without its result."""
    if not 0 <= at <= len(messages):
        raise SessionError(f"cannot branch at message {at}: the session has {len(messages)} messages")
    prefix = list(messages[:at])
    _, open_calls = close_open_calls(prefix)
    if open_calls:
        raise SessionError(
            f"cannot branch at message {at}: it would cut between a tool call and its result; "
            "choose a point right after the tool results or before the call"
        )
