"""Pause and resume: an approval that outlives the process, kept in a small JSON file.

When an approval times out and the plugin has a ``pause_file``, the request is written
there and the run ends with ``stop="paused"``. The person answers later by editing the
file's ``answer`` (``bandoneon human answer FILE --yes``, or ``answer_pending``); a later
process with the same ``pause_file`` honours the answer when the model asks for the very
same call again (same tool, same arguments), once.

What this is not: the run's memory. The history has to come back some other way (the
sessions plugin, or your app), and the model has to call the tool again; ``resume_prompt``
writes the message that asks it to.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import Any

import attrs

import bandoneon

__all__ = ["Pending", "answer_pending", "consume_pending", "now", "read_pending", "write_pending"]

VERSION = 1


@attrs.frozen
class Pending:
    run_id: str
    call_id: str
    tool: str
    arguments: dict[str, Any]
    shown: str
    reason: str
    asked_at: str
    answer: dict[str, Any] | None = None

    @property
    def is_answered(self) -> bool:
        return self.answer is not None

    @property
    def approved(self) -> bool:
        return bool(self.answer and self.answer.get("approved") is True)

    def matches(self, tool: str, arguments: dict[str, Any]) -> bool:
        return self.tool == tool and _canonical(self.arguments) == _canonical(arguments)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def now() -> str:
    """The time as the pending file writes it (UTC, ISO 8601)."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _write_atomically(path: Path, data: dict[str, Any]) -> None:
    bandoneon.write_atomically(path, json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def write_pending(path: str | Path, pending: Pending) -> None:
    _write_atomically(Path(path), {"version": VERSION, **attrs.asdict(pending)})


def read_pending(path: str | Path) -> Pending | None:
    """The pending request at ``path``, None if there is none; ``ConfigError`` if it is broken."""
    file = Path(path)
    if not file.exists():
        return None
    try:
        data = bandoneon.loads_bounded(file.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.pop("version", None) != VERSION:
            raise ValueError(f"unknown version (expected {VERSION})")
        return Pending(**data)
    except (OSError, ValueError, TypeError) as exc:
        raise bandoneon.ConfigError(f"{file}: not a pending approval written by bandoneon-human: {exc}") from None


def answer_pending(path: str | Path, approved: bool, *, by: str = "", note: str = "") -> Pending:
    """Record a person's answer in the pending file; the next process resumes with it."""
    pending = read_pending(path)
    if pending is None:
        raise bandoneon.ConfigError(f"{path}: there is no pending approval to answer")
    answered = attrs.evolve(pending, answer={"approved": approved, "by": by, "note": note, "answered_at": now()})
    write_pending(path, answered)
    return answered


def consume_pending(path: str | Path) -> None:
    """The answer was used: keep it beside the file as a record, so it is never used twice."""
    file = Path(path)
    if file.exists():
        os.replace(file, file.with_name(file.name + ".done"))
