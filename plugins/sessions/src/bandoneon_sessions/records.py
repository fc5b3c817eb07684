"""The session format: one JSON record per line/row, and the replay that rebuilds a history.

Records: ``{"type": "session", ...}`` (header), ``{"type": "message", "message": {...}}``,
``{"type": "usage", "usage": {...}}`` (what one run spent), ``{"type": "clear"}`` (the agent's
history was reset; what came before no longer counts). Messages go through
``bandoneon.unstructure`` / ``bandoneon.structure``, so the format follows the core's types.

Replay stops at the first record that cannot be read: the valid prefix is kept and the damage
is described, never silently skipped over (a record after a hole could answer a tool call
that is no longer there). A history whose records all read but which would be refused by a
strict server (a tool call in the middle with no result, a result for no call) is damage too,
repaired the same way: the missing results are written as interrupted, stray results dropped.
A session that ends with tool calls and not all their results is not damage: the sessions
plugin writes a turn's calls before they run, and a process that stopped while they ran
leaves exactly that; those calls are answered as interrupted (``LoadedSession.interrupted``),
never run again.

In a JSONL file (format 2) every line carries its own checksum: ``<json>\t<crc32 hex>``. A
line whose bytes changed after it was written (a torn or overwritten record, a flipped bit)
fails it, so nothing after garbage is ever read as valid, even garbage that happens to parse.
Each line stands alone, so any number of records can be written in one call. Format 1 files
(no checksums) still load.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from json.encoder import encode_basestring as _string  # C: a JSON string, non-ASCII kept as written
from typing import Any

import attrs

import bandoneon

__all__ = ["CLEAR", "LoadedSession", "SessionError", "SessionLocked", "answer_gaps", "check_session_id", "encode", "frame", "frame_batch", "frame_text", "is_session_id", "message_text", "replay", "result_line", "tool_result_text", "unframe", "usage_text"]

FORMAT_VERSION = 2
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")  # \Z: "$" would let a trailing newline through


class SessionError(bandoneon.BandoneonError):
    """A session cannot be opened, read, forked or deleted as asked."""


class SessionLocked(SessionError):
    """Another process (or another agent in this one) has the session open for writing."""


def is_session_id(name: object) -> bool:
    """Could ``name`` be a session's id? A listing skips files and rows that no id names (a
    ``my notes.jsonl`` dropped in the folder is not a session, and must not stop the listing)."""
    return isinstance(name, str) and _SESSION_ID.match(name) is not None


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
    #: How many of the last messages answer tool calls that were running when the process
    #: stopped (written ahead, their results never came): added on load, never run again.
    interrupted: int = 0
    #: The format its header names (``FORMAT_VERSION`` when it was written by this version).
    version: int | None = None

    @property
    def exists(self) -> bool:
        return self.created_at is not None


#: The JSON text of one record, as ``json.dumps(record, ensure_ascii=False, separators=(",", ":"))``.
encode = bandoneon.dumps_compact

CLEAR: dict[str, Any] = {"type": "clear"}
CLEAR_TEXT = encode(CLEAR)
_json = bandoneon.unstructure_json
_crc32 = zlib.crc32


def frame(record: dict[str, Any]) -> bytes:
    """One JSONL line: the record, a tab, its CRC-32 (JSON text never holds a raw tab)."""
    return frame_text(encode(record))


def frame_text(text: str) -> bytes:
    """``frame`` of a record already written as JSON text (``message_text``, ``usage_text``)."""
    body = text.encode()
    return b"%s\t%08x\n" % (body, zlib.crc32(body))


CLEAR_LINE = frame_text(CLEAR_TEXT)


def unframe(line: bytes) -> tuple[bytes, bool]:
    """The record's JSON and whether it was framed; ``ValueError`` if its checksum is wrong."""
    body, tab, checksum = line.rpartition(b"\t")
    if not tab:
        return line, False
    if len(checksum) != 8 or b"%08x" % zlib.crc32(body) != checksum:
        raise ValueError("its checksum does not match (the record was torn or overwritten)")
    return body, True


def message_record(message: bandoneon.Message) -> dict[str, Any]:
    return {"type": "message", "message": bandoneon.unstructure(message)}


def usage_record(usage: bandoneon.Usage) -> dict[str, Any]:
    return {"type": "usage", "usage": bandoneon.unstructure(usage)}


# The same records as JSON text, written straight from the values: ``message_text(m) ==
# encode(message_record(m))`` and ``usage_text(u) == encode(usage_record(u))``, byte for byte
# (tests/test_sessions_records.py holds them to it): ``bandoneon.unstructure_json`` writes the
# value's JSON without the dicts in between, as the converter would.

_MESSAGE = '{"type":"message","message":'
_USAGE = '{"type":"usage","usage":'


def message_text(message: bandoneon.Message) -> str:
    return _MESSAGE + _json(message) + "}"


def usage_text(usage: bandoneon.Usage) -> str:
    return _USAGE + _json(usage) + "}"


def tool_result_text(result: bandoneon.ToolResult) -> str:
    """``message_text(result.to_message())`` without building the message: the loop builds its
    own from the result, and a second one cost more than this record's text. Written by hand
    (the fields of a tool's ``Message``, in their order) for the usual shape, a result of
    strings; any other through the message."""
    call, content, error = result.call, result.content, result.is_error
    call_id, name = call.id, call.name
    if result.__class__ is not bandoneon.ToolResult or content.__class__ is not str or call_id.__class__ is not str or name.__class__ is not str or error.__class__ is not bool:
        return message_text(result.to_message())
    return (
        f'{_MESSAGE}{{"role":"tool","content":{_string(content)},"tool_calls":[],"tool_call_id":{_string(call_id)},'
        f'"name":{_string(name)},"is_error":{"true" if error else "false"},"thinking":[],"parts":[]}}}}'
    )


def result_line(result: bandoneon.ToolResult) -> bytes:
    """``frame_text(tool_result_text(result))``: the JSONL line of a tool result."""
    body = tool_result_text(result).encode()
    return b"%s\t%08x\n" % (body, _crc32(body))


def frame_batch(messages: Iterable[bandoneon.Message] = (), usage: bandoneon.Usage | None = None, clear: bool = False) -> bytes:
    """The JSONL lines of one append: a ``clear`` first if asked, the messages, then the usage
    (``b"".join(frame(r) for r in batch)``, written straight from the values)."""
    lines = [CLEAR_LINE] if clear else []
    for message in messages:
        body = (_MESSAGE + _json(message) + "}").encode()
        lines.append(b"%s\t%08x\n" % (body, _crc32(body)))
    if usage is not None:
        body = (_USAGE + _json(usage) + "}").encode()
        lines.append(b"%s\t%08x\n" % (body, _crc32(body)))
    return b"".join(lines)


def header_record(session_id: str, created_at: float, forked_from: str | None = None) -> dict[str, Any]:
    return {"type": "session", "version": FORMAT_VERSION, "id": session_id, "created_at": created_at, "forked_from": forked_from}


def replay(session_id: str, lines: Iterable[tuple[str, str | bytes]], *, torn: str | None = None) -> LoadedSession:
    """Rebuild a session from ``(where, text)`` records; stop at the first bad one.

    ``where`` names a record for the damage report ("line 7", "row 7"); ``torn`` reports a
    last record cut short by a crash. Bytes are JSONL lines (checksums verified), text is a
    SQLite row.
    """
    messages: list[bandoneon.Message] = []
    usage = bandoneon.Usage()
    created_at: float | None = None
    forked_from: str | None = None
    version: int | None = None
    damage: str | None = None
    valid = 0
    framed_file = False
    for where, text in lines:
        try:
            if isinstance(text, bytes):
                text, framed = unframe(text)
                if framed_file and not framed:
                    raise ValueError("it has no checksum in a file whose records all carry one")
                framed_file = framed_file or framed
            record = bandoneon.loads_bounded(text)
            if not isinstance(record, dict):
                raise TypeError(f"a record is a JSON object, not {type(record).__name__}")
            kind = record["type"]
            if kind == "session":
                created_at, forked_from = _timestamp(record["created_at"]), record.get("forked_from")
                version = record.get("version", 1)
                if type(version) is not int:
                    raise ValueError(f"its format version {str(version)[:40]!r} is not a number")
            elif created_at is None:
                # Records with no header before them (a file cut or written by hand) are damage,
                # not an empty session: opening it for writing keeps them aside, never overwrites them.
                raise ValueError("it comes before the session's header (a session's first record)")
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
    messages, gaps = answer_gaps(messages)
    if gaps:
        damage = f"{damage}; {gaps}" if damage else gaps
    # The loop never leaves a call unanswered, so a saved history that does was cut short
    # between a call and its result (a crash at a record boundary): damage, even with every
    # record intact.
    # Sessions writes a turn's tool calls before they run (write-ahead), so a session that
    # ends with calls and no results is what a process that stopped mid-call leaves: not damage.
    # The calls are answered as interrupted, never run again (they may have taken effect).
    messages, closed = close_open_calls(messages)
    if closed and damage:
        damage = f"{damage}; {closed} tool call(s) left without a result were answered as interrupted"
    messages = _in_call_order(messages)
    return LoadedSession(session_id, tuple(messages), usage, created_at, forked_from, damage, valid, 0 if damage else closed, version)


#: The latest creation time a header may carry (9999-12-30 UTC: what a clock in any time zone
#: can show). Past it (or not a number: an int past float range, NaN, a string) it is damage.
_LAST_TIME = 253402128000.0


def _timestamp(value: Any) -> float:
    """A header's creation time; ``ValueError`` unless a finite time a clock can show (``float``
    of a huge int raises ``OverflowError``, and ``time.localtime`` of NaN or 1e300 fails in
    ``sessions list``: a hostile header would stop the load or the listing instead of being damage)."""
    if type(value) not in (int, float) or not 0 <= value < _LAST_TIME:  # NaN compares False
        raise ValueError(f"its creation time {str(value)[:40]!r} is not a time")
    return float(value)


def answer_gaps(messages: list[bandoneon.Message]) -> tuple[list[bandoneon.Message], str | None]:
    """Make the middle of a history valid for a strict server: a call whose result never came
    is answered as interrupted right where its result belongs; a result that answers no call
    is dropped. The end of the history is ``close_open_calls``'s.
    Returns the history and a description of what was repaired (None: nothing)."""
    repaired: list[bandoneon.Message] = []
    pending: dict[str, bandoneon.ToolCall] = {}
    missing = stray = 0
    for message in messages:
        if message.role == "tool":
            if pending.pop(message.tool_call_id or "", None) is None:
                stray += 1
                continue
        else:
            if pending:
                missing += len(pending)
                repaired.extend(_interrupted(call) for call in pending.values())
                pending = {}
            if message.role == "assistant":
                pending = {call.id: call for call in message.tool_calls}
        repaired.append(message)
    if not missing and not stray:
        return messages, None
    parts = []
    if missing:
        parts.append(f"{missing} tool call(s) in the middle had no saved result and were answered as interrupted")
    if stray:
        parts.append(f"{stray} tool result(s) answering no call were dropped")
    return repaired, "; ".join(parts)


def _in_call_order(messages: list[bandoneon.Message]) -> list[bandoneon.Message]:
    """Each turn's results in the order of its calls, as the agent's history has them. A result
    is written as its call finishes, so the file has them in the order they finished: a call
    answered without running (bad arguments, a refusal) before an earlier one that ran."""
    for index, message in enumerate(messages):
        if len(message.tool_calls) < 2:
            continue
        end = index + 1
        while end < len(messages) and messages[end].role == "tool":
            end += 1
        position = {call.id: number for number, call in enumerate(message.tool_calls)}
        results = messages[index + 1 : end]
        ordered = sorted(results, key=lambda result: position.get(result.tool_call_id or "", len(position)))
        if any(a is not b for a, b in zip(ordered, results, strict=True)):
            messages = [*messages[: index + 1], *ordered, *messages[end:]]
    return messages


def _interrupted(call: bandoneon.ToolCall) -> bandoneon.Message:
    return bandoneon.Message.tool(
        call,
        f"{call.name} was interrupted: the process stopped while this call ran, so whether it took effect is unknown; "
        "check before calling it again.",
        is_error=True,
    )


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
    closing = [_interrupted(c) for c in missing]
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
