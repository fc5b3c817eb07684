"""Notes in the prompt: one Markdown file per scope, one line per note, read at each run start.

A person can open the file, read what is stored about them and delete a line; the agent
appends with ``remember``. Appends go through ``bandoneon.append_durably``: a failed write
is cut back off, so a note whose ``append`` returned is on disk and the next note never
follows half of another; a line torn by a crash is closed before the next note, so it
cannot swallow it.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path

import bandoneon

from .store import check_scope

__all__ = ["NotesFile"]

_LINE = re.compile(r"^- (\d{4}-\d{2}-\d{2}): (.*)$")
#: The start of a dated note, as far as a torn last line may have got (a hand-written last line
#: without a date is kept even when the file does not end with a newline).
_TORN = re.compile(r"^-( (\d{1,4}(-(\d{1,2}(-(\d{1,2}(:.*)?)?)?)?)?)?)?\Z")


class NotesFile:
    """The notes of one scope, in ``<folder>/<scope>.md``."""

    def __init__(self, folder: str | os.PathLike[str], scope: str):
        self.path = Path(folder) / f"{check_scope(scope)}.md"

    def read(self) -> list[tuple[str, str]]:
        """(date, text) of every note, oldest first. A missing file is no notes."""
        return [note for note in map(_note, self._lines()) if note is not None]

    def _lines(self) -> list[str]:
        """The file's lines, without a note cut short by a crash (every append ends its line)."""
        try:
            content = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        lines = content.splitlines()
        if lines and not content.endswith("\n") and _TORN.match(lines[-1]):
            lines.pop()
        return lines

    def append(self, text: str) -> int:
        """Add a note (newlines folded into spaces); returns how many notes there are now."""
        line = " ".join(text.split())
        if not line:
            raise ValueError("a note cannot be empty")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = f"- {time.strftime('%Y-%m-%d')}: {line}\n".encode()
        descriptor = os.open(self.path, os.O_RDONLY | os.O_CREAT, 0o600)
        try:
            size = os.fstat(descriptor).st_size
            if size and os.pread(descriptor, 1, size - 1) != b"\n":
                record = b"\n" + record  # a line torn by a crash (or typed by hand) stays alone on its line
        finally:
            os.close(descriptor)
        bandoneon.append_durably(self.path, record)  # all of it, or nothing of it
        return len(self.read())

    def forget(self, number: int) -> str:
        """Delete note ``number`` (1-based, as ``read`` lists them); rewritten atomically."""
        # Only that note's line goes: the headings, blank lines and hand-written lines a person
        # put in the file (``read`` skips all but the notes) are written back as they were.
        lines = self._lines()
        where = [index for index, line in enumerate(lines) if _note(line) is not None]
        if not 1 <= number <= len(where):
            raise IndexError(f"there is no note {number}; {self.path} holds {len(where)}")
        removed = _note(lines.pop(where[number - 1]))
        assert removed is not None
        bandoneon.write_atomically(self.path, "".join(f"{line}\n" for line in lines))
        return removed[1]

    async def aread(self) -> list[tuple[str, str]]:
        return await asyncio.to_thread(self.read)

    async def aappend(self, text: str) -> int:
        return await asyncio.to_thread(self.append, text)


def _note(line: str) -> tuple[str, str] | None:
    """The (date, text) of a line of the file; None for a heading (``#``) or a blank line."""
    match = _LINE.match(line)
    if match:
        return match.group(1), match.group(2)
    if line.strip() and not line.startswith("#"):
        return "", line.strip().removeprefix("- ")  # a line a person wrote by hand
    return None
