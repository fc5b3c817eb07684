"""Notes in the prompt: one Markdown file per scope, one line per note, read at each run start.

A person can open the file, read what is stored about them and delete a line; the agent
appends with ``remember``. Appends go through ``bandoneon.append_durably``: a failed write
is cut back off, so a note whose ``append`` returned is on disk and the next note never
follows half of another; a line torn by a crash is closed before the next note, so it
cannot swallow it.

``append`` and ``forget`` hold an exclusive ``flock`` on a lock file beside the notes
(``.<name>.lock``): ``forget`` reads, edits and renames a new file over the old one, so a note
appended in between, by another agent or process, would otherwise be lost with the old file.

File names: an upper-case letter of the scope is written ``^`` and its lower-case letter
(``Alice`` -> ``^alice.md``), so two scopes that differ only in case never share a file on a
case-insensitive file system (macOS, Windows); lower-case scopes keep ``<scope>.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no lock (Linux and macOS are locked)
    fcntl = None  # type: ignore[assignment]

import bandoneon

from .store import check_scope

__all__ = ["NotesFile", "notes_file_name"]

log = logging.getLogger("bandoneon.memory")
_warned: set[Path] = set()  # old upper-case files already reported (once per process)

_LINE = re.compile(r"^- (\d{4}-\d{2}-\d{2}): (.*)$")
#: The start of a dated note, as far as a torn last line may have got (a hand-written last line
#: without a date is kept even when the file does not end with a newline).
_TORN = re.compile(r"^-( (\d{1,4}(-(\d{1,2}(-(\d{1,2}(:.*)?)?)?)?)?)?)?\Z")


def notes_file_name(scope: str) -> str:
    """``<scope>.md``, with each upper-case letter written ``^`` + its lower-case letter.

    Scopes are case-sensitive but macOS and Windows file names are not: ``Alice.md`` and
    ``alice.md`` would be one file there, and one customer would read another's notes. No scope
    contains ``^`` and the name has no upper-case letter left, so the name is unambiguous on
    any file system, and the file of an all-lower-case scope stays where it always was.
    """
    return "".join(f"^{char.lower()}" if "A" <= char <= "Z" else char for char in check_scope(scope)) + ".md"


class NotesFile:
    """The notes of one scope, in ``<folder>/<notes_file_name(scope)>``."""

    def __init__(self, folder: str | os.PathLike[str], scope: str):
        self.path = Path(folder) / notes_file_name(scope)
        self._lock_path = self.path.with_name(f".{self.path.name}.lock")
        if self.path.name != f"{scope}.md":
            self._adopt_old_file(Path(folder) / f"{scope}.md")

    def _adopt_old_file(self, old: Path) -> None:
        """Move a file an upper-case scope had under the old name (``Alice.md``) to its new one.

        Only on a case-sensitive file system: on one that is not, ``Alice.md`` is also
        ``alice.md`` and may hold both scopes' notes, so it is left alone (a warning says so).
        """
        try:
            found = os.lstat(old)
        except OSError:
            return
        try:
            if os.path.samestat(found, os.lstat(old.with_name(old.name.lower()))):
                # This file system ignores case. A file made as ``alice.md`` is the lower-case
                # scope's; one made as ``Alice.md`` may have taken both scopes' notes.
                if old.name in os.listdir(old.parent) and old not in _warned:
                    _warned.add(old)
                    log.warning("memory: %s may hold the notes of several scopes that differ only in case (this "
                                "file system ignores case); scope %r now reads %s: check that file and move its "
                                "lines by hand", old, old.stem, self.path)
                return
        except OSError:
            pass
        with self._locked():
            try:
                os.link(old, self.path)  # not rename: never over notes already at the new name
                os.unlink(old)
            except FileExistsError:
                log.warning("memory: both %s and %s exist; %s is read, merge the other by hand", old, self.path, self.path)
            except FileNotFoundError:
                pass  # another process moved it first

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
        record = f"- {time.strftime('%Y-%m-%d')}: {line}\n".encode()
        with self._locked():  # opened after the lock: never the old file a ``forget`` just replaced
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
        with self._locked():  # no append between the read and the rename, or it would be lost
            lines = self._lines()
            where = [index for index, line in enumerate(lines) if _note(line) is not None]
            if not 1 <= number <= len(where):
                raise IndexError(f"there is no note {number}; {self.path} holds {len(where)}")
            removed = _note(lines.pop(where[number - 1]))
            assert removed is not None
            bandoneon.write_atomically(self.path, "".join(f"{line}\n" for line in lines))
        return removed[1]

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the exclusive lock of this notes file (blocking; released when the block ends)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fcntl is None:
            yield
            return
        descriptor = bandoneon.open_lock_file(self._lock_path)
        if descriptor is None:
            raise bandoneon.ConfigError(f"memory: the lock file {self._lock_path} is a symbolic link; remove it")
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # drops the lock

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
