"""Pause and resume: an approval that outlives the process, kept in a small JSON file.

When an approval times out and the plugin has a ``pause_file``, the request is written
there and the run ends with ``stop="paused"``. The person answers later by editing the
file's ``answer`` (``bandoneon human answer FILE --yes``, or ``answer_pending``); a later
process with the same ``pause_file`` honours the answer when the model asks for the very
same call again (same tool, same arguments), once.

The file binds the answer to the exact call: it keeps a digest of the tool's name and its
canonical arguments, what the person is shown is rendered from that same call, and the
answer records the digest it approved. A file whose call, rendering or answer no longer
matches its digest is refused (``PendingTampered``) and nothing runs, so editing ``tool`` or
``arguments`` on disk cannot turn an approved ``drop_claw("penguin")`` into another call.

The digest alone is no protection against whoever can write the file: anyone can compute a
SHA-256, so a model with a file-writing tool could write a whole file, digests and an
``approved`` answer included, and then make the call. So an answer is sealed: an HMAC
(``answer["seal"]``) under a key kept outside the workspace, in this user's state folder
(``$BANDONEON_HUMAN_KEY``, else ``$XDG_STATE_HOME/bandoneon/human-approvals.key``, made
readable by this user only). An answer without a valid seal is refused. An approved answer is
used once: its seal is recorded beside the key when the call starts, so writing an old copy
of the file back cannot run the call again.

What this is not: the run's memory. The history has to come back some other way (the
sessions plugin, or your app), and the model has to call the tool again; ``resume_prompt``
writes the message that asks it to.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

import attrs

import bandoneon

__all__ = [
    "Pending",
    "claim_once",
    "PendingTampered",
    "answer_pending",
    "call_digest",
    "consume_pending",
    "now",
    "read_pending",
    "seal",
    "shown_call",
    "write_pending",
]

VERSION = 2


class PendingTampered(bandoneon.ConfigError):
    """A pending approval file whose call no longer matches the digest it was written with."""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def call_digest(tool: str, arguments: dict[str, Any]) -> str:
    """SHA-256 of the tool name and its canonical (key-sorted) JSON arguments."""
    return "sha256:" + hashlib.sha256(_canonical({"tool": tool, "arguments": arguments}).encode()).hexdigest()


def shown_call(tool: str, arguments: dict[str, Any]) -> str:
    """The call as a person is shown it: ``drop_claw({"prize": "penguin"})``."""
    return f"{tool}({json.dumps(arguments, ensure_ascii=False, default=str)})"


@attrs.frozen
class Pending:
    run_id: str
    call_id: str
    tool: str
    arguments: dict[str, Any]
    shown: str
    reason: str
    asked_at: str
    digest: str = ""
    answer: dict[str, Any] | None = None
    #: Where the plugin that paused keeps its audit log: ``bandoneon human answer`` writes there.
    audit_log: str | None = None

    @property
    def is_answered(self) -> bool:
        return self.answer is not None

    @property
    def approved(self) -> bool:
        return bool(self.answer and self.answer.get("approved") is True)

    def matches(self, tool: str, arguments: dict[str, Any]) -> bool:
        return self.digest == call_digest(tool, arguments)

    def problem(self) -> str | None:
        """Why this file cannot be trusted, or None when call, rendering and answer agree."""
        expected = call_digest(self.tool, self.arguments)
        if self.digest != expected:
            return f"its call {shown_call(self.tool, self.arguments)} does not match the digest it was written with"
        if self.shown != shown_call(self.tool, self.arguments):
            return f"what it shows ({self.shown}) is not its call ({shown_call(self.tool, self.arguments)})"
        if self.answer is not None and self.answer.get("digest") != expected:
            return "its answer was given for another call (the answer's digest differs)"
        if self.answer is not None and not hmac.compare_digest(str(self.answer.get("seal", "")), seal(self.answer)):
            return "its answer does not carry the seal of `bandoneon human answer` (it was not given through it)"
        return None


#: The fields of an answer the seal covers: what the person said, for which call. What the
#: plugin adds later (``started_at``, ``result``) is progress, not the person's word.
_SEALED = ("approved", "by", "note", "answered_at", "digest", "nonce")


def _key_file() -> Path:
    if os.environ.get("BANDONEON_HUMAN_KEY"):
        return Path(os.environ["BANDONEON_HUMAN_KEY"])
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "bandoneon" / "human-approvals.key"


def _key() -> bytes:
    """The secret answers are sealed with, made on first use (readable by this user only)."""
    path = _key_file()
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    draft = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="ascii") as out:
        out.write(secrets.token_hex(32))
    try:
        os.link(draft, path)  # whole or not at all; a process that made one first wins
    except FileExistsError:
        pass
    finally:
        os.unlink(draft)
    return bytes.fromhex(path.read_text(encoding="ascii").strip())


def seal(answer: dict[str, Any]) -> str:
    """The HMAC of an answer's sealed fields under the user's key."""
    sealed = _canonical({field: answer.get(field) for field in _SEALED})
    return "hmac-sha256:" + hmac.new(_key(), sealed.encode(), hashlib.sha256).hexdigest()


def claim_once(answer: dict[str, Any]) -> bool:
    """Record that this approved answer is being used; False when it was used before (a copy
    of the file written back). The record is kept beside the key, out of the workspace."""
    used = _key_file().parent / "used-approvals"
    used.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        os.close(os.open(used / str(answer.get("seal", "")).removeprefix("hmac-sha256:"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return False
    return True


def now() -> str:
    """The time as the pending file writes it (UTC, ISO 8601)."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _write_atomically(path: Path, data: dict[str, Any]) -> None:
    bandoneon.write_atomically(path, json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def write_pending(path: str | Path, pending: Pending) -> None:
    _write_atomically(Path(path), {"version": VERSION, **attrs.asdict(pending)})


def read_pending(path: str | Path) -> Pending | None:
    """The pending request at ``path``, None if there is none; ``ConfigError`` if it is broken,
    ``PendingTampered`` if its call was changed after it was written."""
    file = Path(path)
    if not file.exists():
        return None
    try:
        data = bandoneon.loads_bounded(file.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.pop("version", None) != VERSION:
            raise ValueError(f"unknown version (expected {VERSION})")
        pending = Pending(**data)
    except (OSError, ValueError, TypeError) as exc:
        raise bandoneon.ConfigError(f"{file}: not a pending approval written by bandoneon-human: {exc}") from None
    problem = pending.problem()
    if problem is not None:
        raise PendingTampered(
            f"{file}: refused: {problem}; the file was changed after it was written, so nothing runs from it. "
            "Delete it and let the agent ask again."
        )
    return pending


def answer_pending(path: str | Path, approved: bool, *, by: str = "", note: str = "") -> Pending:
    """Record a person's answer in the pending file; the next process resumes with it.

    The answer is written to the audit log of the plugin that paused first: when that log
    cannot be written, ``ConfigError`` and the file keeps no answer (fail closed).
    """
    from .audit import AuditLog

    pending = read_pending(path)
    if pending is None:
        raise bandoneon.ConfigError(f"{path}: there is no pending approval to answer")
    answer: dict[str, Any] = {"approved": approved, "by": by, "note": note, "answered_at": now(), "digest": pending.digest}
    answer["nonce"] = secrets.token_hex(8)  # two answers alike are still two answers, each used once
    answer["seal"] = seal(answer)
    if pending.audit_log:
        try:
            AuditLog(pending.audit_log).write(
                "approval", run_id=pending.run_id, call_id=pending.call_id, tool=pending.tool, arguments=pending.arguments,
                shown=pending.shown, digest=pending.digest, reason=pending.reason, outcome="answered_later",
                approved=approved, by=by, note=note,
            )
        except OSError as exc:
            raise bandoneon.ConfigError(f"{path}: the answer was not recorded: the audit log {pending.audit_log} cannot be written ({exc})") from None
    answered = attrs.evolve(pending, answer=answer)
    write_pending(path, answered)
    return answered


def consume_pending(path: str | Path) -> None:
    """The answer was used: keep it beside the file as a record, so it is never used twice."""
    file = Path(path)
    if file.exists():
        os.replace(file, file.with_name(file.name + ".done"))
