"""The audit log: one JSON object per line for every approval, question and correction.

Who approved what, when, what they were shown and what they answered: when something goes
wrong, "the agent did it" is never the whole story. Lines are appended and flushed one by
one under a lock, so a crash loses at most the line being written.
"""

from __future__ import annotations

import datetime
import json
import threading
from pathlib import Path
from typing import Any

__all__ = ["AuditLog"]


class AuditLog:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()

    def write(self, kind: str, **fields: Any) -> None:
        record = {"at": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"), "kind": kind, **fields}
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as file:
                file.write(line)
                file.flush()

    def records(self) -> list[dict[str, Any]]:
        """Every record so far (for tests and reports)."""
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line.strip()]
