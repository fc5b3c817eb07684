"""Small pieces every plugin that keeps state on disk or reads import paths needs, once.

- ``write_atomically``: a crash halfway through never leaves a half-written file behind.
- ``append_durably``: an append that is on disk when it returns, and leaves nothing behind
  when it fails (a failed write is cut off again, so the next append never follows garbage);
  ``AppendFile`` is the same held open, for a writer that appends often.
- ``import_object``: ``"package.module:name"`` strings from configuration files.
- ``stat_if_present``: the stat of a file every agent or run looks for and most folders lack
  (``bandoneon.toml``, ``AGENTS.md``), without raising an ``OSError`` for the usual answer.

Every byte they write goes through ``DISK`` (``os.write``, ``os.fsync``/``os.fdatasync``, ``os.ftruncate``),
the one seam where ``bandoneon.testing.FaultyDisk`` fails, tears or shortens writes at any
byte to prove that the stores built on these functions lose nothing they said was saved.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
import weakref
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["DISK", "AppendFile", "append_durably", "import_object", "open_lock_file", "unusable_sqlite", "write_atomically"]


class Disk:
    """The system calls that put bytes on disk. Replaced in tests, never in use."""

    def write(self, fd: int, data: bytes) -> int:
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def datasync(self, fd: int) -> None:
        """The file's data and what is needed to read it back (its size), not its times."""
        _fdatasync(fd)

    def truncate(self, fd: int, size: int) -> None:
        os.ftruncate(fd, size)


_fdatasync = getattr(os, "fdatasync", os.fsync)  # macOS has no fdatasync


class _DiskSeam:
    """Forwards to the current ``Disk`` (``bandoneon.testing.FaultyDisk`` swaps it)."""

    __slots__ = ("current",)

    def __init__(self) -> None:
        self.current: Disk = Disk()


DISK = _DiskSeam()

#: Files whose last append failed and could not be cut back: the offset to cut them to before
#: the next append (in this process; another process's reader finds the torn tail itself).
_cut_before_next: dict[str, int] = {}


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte: ``os.write`` may write fewer than asked (a short write) without error."""
    if not data:
        return
    written = DISK.current.write(fd, data)
    if written != len(data):  # nearly always one call, no view
        _write_rest(fd, data, written)


def _write_rest(fd: int, data: bytes, written: int) -> None:
    """The bytes of ``data`` after the ``written`` first (a short write), however many calls it takes."""
    view = memoryview(data)
    while True:
        if written <= 0:
            raise OSError(f"the disk accepted no bytes ({len(view)} still to write)")
        view = view[written:]
        if not view:
            return
        written = DISK.current.write(fd, view.tobytes())


def write_atomically(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write to a temporary file in the same folder, flush it to disk, then rename it over
    ``path`` and flush the folder. A failure at any byte leaves the old file as it was."""
    import tempfile  # here, not at the top: ``import bandoneon`` skips it and shutil (issue #19)

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        try:
            _write_all(fd, data.encode("utf-8") if isinstance(data, str) else data)
            DISK.current.datasync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _sync_folder(target.parent)


class AppendFile:
    """An append-only file held open: ``append_durably`` without an open, a stat and a close
    per write, for a writer that appends often (a session, under its writer lock).

    Each ``append`` has ``append_durably``'s promise: every byte written (short writes are
    finished), flushed to disk before it returns when ``sync`` (``fdatasync``), and cut back
    off when any byte fails, so a failed append leaves nothing the next one would follow. The
    end of the file is tracked here rather than asked of the OS each time: while this object
    is open, nobody else may append to the file (the caller holds a lock that says so).
    """

    __slots__ = ("__weakref__", "_closer", "_end", "_fd", "_key")

    def __init__(self, path: str | os.PathLike[str], *, create: bool = False):
        self._key = os.fspath(path)
        self._fd: int | None = os.open(self._key, os.O_WRONLY | os.O_APPEND | (os.O_CREAT if create else 0), 0o644)
        # An owner that forgets close() (an agent dropped without closing) does not leak the descriptor.
        self._closer = weakref.finalize(self, os.close, self._fd)
        try:
            pending_cut = _cut_before_next.get(self._key)
            if pending_cut is not None:
                DISK.current.truncate(self._fd, pending_cut)
                DISK.current.datasync(self._fd)
                del _cut_before_next[self._key]
            self._end = os.fstat(self._fd).st_size
        except BaseException:
            self.close()
            raise

    def append(self, data: bytes, *, sync: bool = True) -> None:
        """Append ``data`` in one go; on disk when it returns if ``sync``, else when the OS
        writes it back (it survives the process, not a power loss)."""
        fd = self._fd
        if fd is None:
            raise ValueError(f"{self._key} was closed")
        if _cut_before_next:  # an earlier append (of some file) failed and could not be cut back then
            self._cut_pending(fd)
        start = self._end
        disk = DISK.current
        try:
            # The usual disk is the system call itself, a call with nothing in between (this is
            # a session's hot path); a test's disk is asked through its methods.
            written = os.write(fd, data) if disk.__class__ is Disk else disk.write(fd, data)
            if written != len(data):  # a short write: the rest
                _write_rest(fd, data, written)
            if sync:
                disk.datasync(fd)
        except BaseException:
            try:
                disk.truncate(fd, start)
                disk.datasync(fd)
            except OSError:
                _cut_before_next[self._key] = start
            raise
        self._end = start + len(data)

    def _cut_pending(self, fd: int) -> None:
        pending_cut = _cut_before_next.get(self._key)
        if pending_cut is not None:
            DISK.current.truncate(fd, pending_cut)
            DISK.current.datasync(fd)
            del _cut_before_next[self._key]
            self._end = pending_cut

    def sync(self) -> None:
        """Flush what earlier ``sync=False`` appends wrote (``fdatasync``)."""
        if self._fd is not None:
            DISK.current.datasync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            self._fd = None
            self._closer()

    def __enter__(self) -> AppendFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def append_durably(path: str | os.PathLike[str], data: bytes, *, create: bool = False, sync: bool = True) -> None:
    """Append ``data`` to ``path`` in one go and flush it to disk before returning.

    If any byte fails, what this call wrote is cut off again before the error goes up, so the
    file ends where it ended before; if even that fails, the cut is made before the next
    append to the file. ``create``: make the file if it does not exist (else it must).
    ``sync=False`` leaves the flush to the operating system: the append survives the process
    crashing but not the machine losing power (it costs a write, not a disk round trip).
    A writer that appends often keeps an ``AppendFile`` open instead.
    """
    with AppendFile(path, create=create) as file:
        file.append(data, sync=sync)


def _import_here_too(module_name: str) -> Any:
    """Import a module, also from the current folder (as ``python -m`` would): a console
    script's ``sys.path`` starts with its own folder, so ``golf:make_golfer`` next to the
    user would not be found otherwise."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        here = os.getcwd()
        if exc.name != module_name.partition(".")[0] or here in sys.path:
            raise
    sys.path.insert(0, here)
    try:
        return importlib.import_module(module_name)
    finally:
        sys.path.remove(here)


def _sync_folder(folder: Path) -> None:
    """Flush a folder's entries (the rename) to disk; some systems cannot, and that is fine."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        DISK.current.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def open_lock_file(path: str | os.PathLike[str]) -> int | None:
    """A descriptor of the lock file at ``path`` for reading and writing (made, readable by this
    user only, when missing); None when ``path`` is a symbolic link. Whoever holds a lock file
    writes to it: one planted as a link in a shared folder would have that done to its target."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise


def stat_if_present(path: str | os.PathLike[str]) -> os.stat_result | None:
    """``os.stat(path)``, or None when there is nothing there (or it cannot be read).

    ``os.access`` answers the common case, no file, with a bool: a failed stat raises an
    ``OSError``, which costs more than the system call itself, and this is asked for every new
    agent (its configuration) and every run (its context files)."""
    if not os.access(path, os.F_OK):
        return None
    try:
        return os.stat(path)
    except OSError:  # gone since, or not ours to read
        return None


def import_object(path: str, *, what: str = "import path") -> Any:
    """The object named by ``"module:attribute"``; ``ConfigError`` saying which part is wrong."""
    module_name, colon, attribute = path.partition(":")
    if not colon or not module_name or not attribute:
        raise ConfigError(f"{what} {path!r} must be written as 'package.module:name'")
    try:
        module = _import_here_too(module_name)
    except ImportError as exc:
        raise ConfigError(f"{what} {path!r}: module {module_name!r} cannot be imported: {exc}") from None
    found: Any = module
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ConfigError(f"{what} {path!r}: module {module_name!r} has no {attribute!r}") from None
    return found


def unusable_sqlite(what: str, path: str | os.PathLike[str], exc: Exception) -> str:
    """One line for a SQLite file that cannot be used: ``what`` it is, the file, what is wrong
    and what to do (stores of every plugin word it the same way)."""
    detail = str(exc) or type(exc).__name__
    if "locked" in detail or "busy" in detail:
        return f"the {what} {os.fspath(path)} is busy ({detail}); another process holds it: try again when it is done"
    return (
        f"the {what} {os.fspath(path)} is damaged or is not a SQLite file ({detail}); move it aside "
        "(restore it from a backup, or try `sqlite3 FILE .recover`), and a new store is made there"
    )
