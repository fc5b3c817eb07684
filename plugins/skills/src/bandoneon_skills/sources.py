"""Where skills come from: a folder of ``<name>/SKILL.md``, skills in memory, installed packs.

A source is anything with a ``label`` and a ``scan()`` that returns the skills it has *now*
and the problems it found. Sources are scanned at the start of every run, so a folder source
keeps a cache keyed by each file's stat: an unchanged SKILL.md is never read twice, and when
no stat changed at all the last scan's result object is returned as is, so the library can skip
its merge. An unchanged folder costs one ``stat`` per SKILL.md plus one for the root (a skill
folder added, removed or renamed); a skill folder is watched itself only while it has no
SKILL.md (one added there is seen), as a SKILL.md's own stat already shows it edited, replaced
or gone.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol, runtime_checkable

from .skill import Skill, SkillError, parse_skill_md

__all__ = ["FolderSource", "MemorySource", "PACK_GROUP", "SkillSource", "installed_packs"]

#: Entry-point group in which skill packs declare their folder of skills.
PACK_GROUP = "bandoneon.skills"


@runtime_checkable
class SkillSource(Protocol):
    """What the skills plugin asks of a source. Implement it to serve skills from anywhere."""

    label: str

    def scan(self) -> tuple[list[Skill], list[str]]:
        """The skills this source has now, and one sentence per problem found."""
        ...


class MemorySource:
    """Skills built in code. Duplicate names are an error at once: nothing says which wins."""

    def __init__(self, skills: Iterable[Skill], label: str = "in-memory skills"):
        self.label = label
        self._skills = list(skills)
        seen: set[str] = set()
        for skill in self._skills:
            if not isinstance(skill, Skill):
                raise SkillError([f"{label}: expected Skill objects, got {skill!r}"])
            if skill.name in seen:
                raise SkillError([f"{label}: two skills are named {skill.name!r}; skill names must be unique"])
            seen.add(skill.name)
        # The same object every time: the library sees that nothing changed and skips its merge.
        self._scanned: tuple[list[Skill], list[str]] = (self._skills, [])

    def scan(self) -> tuple[list[Skill], list[str]]:
        return self._scanned


_StatKey = tuple[int, int, int]


def _stat_key(path: str) -> _StatKey | None:
    """What changes when a file or folder changes (None: it is gone)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size)


class FolderSource:
    """Every ``<root>/<name>/SKILL.md``. Folders starting with '.' are ignored.

    A skill folder or SKILL.md that is a symlink resolving outside ``root`` is refused: the
    file tool promises to read nothing outside the skill folders, and a link that leaves the
    root would break that promise through the back door.
    """

    def __init__(self, root: str | os.PathLike[str], label: str | None = None):
        self.root = Path(root)
        self.label = label or f"folder {self.root}"
        self._cache: dict[Path, tuple[_StatKey, Skill | str]] = {}
        self._lock = threading.Lock()
        self._last: tuple[list[Skill], list[str]] | None = None
        # What the last scan saw: each watched path that existed with its stat, and those
        # that did not exist (a missing root, a SKILL.md removed while being scanned).
        self._watched: tuple[tuple[str, _StatKey], ...] = ()
        self._absent: tuple[str, ...] = ()
        self._folders: list[str] = []

    def scan(self) -> tuple[list[Skill], list[str]]:
        with self._lock:
            if self._last is not None and self._unchanged():
                return self._last
            self._last = self._scan()
            # What a change would show in: the root (a folder added, removed or renamed), each
            # SKILL.md (edited, replaced or removed), and each skill folder without one (added).
            root = str(self.root)
            with_skill_md = {path.parent.name for path in self._cache}
            bare = [os.path.join(root, name) for name in self._folders if name not in with_skill_md]
            keys = [(path, _stat_key(path)) for path in (root, *bare, *(str(path) for path in self._cache))]
            self._watched = tuple((path, key) for path, key in keys if key is not None)
            self._absent = tuple(path for path, key in keys if key is None)
            return self._last

    def _unchanged(self) -> bool:
        """Whether every watched path still has the stat it had after the last scan (one
        ``stat`` each, stopping at the first that changed), and every absent one is still absent.

        Asked at the start of every run: one loop of stats and tuple comparisons, with the
        paths that did not exist (rare) in a loop of their own."""
        stat = os.stat
        try:
            for path, key in self._watched:
                found = stat(path)
                if key != (found.st_mtime_ns, found.st_ctime_ns, found.st_size):
                    return False
        except OSError:  # gone since
            return False
        exists = os.access
        for path in self._absent:
            if exists(path, os.F_OK):  # a bool, not a stat's OSError per run
                return False
        return True

    def _scan(self) -> tuple[list[Skill], list[str]]:
        self._folders = []
        try:
            root = self.root.resolve(strict=True)
            entries = sorted(os.scandir(root), key=lambda e: e.name)
        except FileNotFoundError:
            return [], [f"{self.label}: the skills folder {self.root} does not exist"]
        except NotADirectoryError:
            return [], [f"{self.label}: {self.root} is a file, not a folder of skill folders"]
        except OSError as exc:
            return [], [f"{self.label}: the skills folder {self.root} cannot be read: {exc.strerror or exc}"]
        skills: list[Skill] = []
        problems: list[str] = []
        self._folders = [entry.name for entry in entries if not entry.name.startswith(".") and entry.is_dir()]
        # A fresh cache per scan, filled from the old one: deleted skills do not linger.
        fresh: dict[Path, tuple[_StatKey, Skill | str]] = {}
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            outcome = self._read_folder(root, Path(entry.path), fresh)
            if isinstance(outcome, str):
                problems.append(outcome)
            elif outcome is not None:
                skills.append(outcome)
        self._cache = fresh
        return skills, problems

    def _read_folder(self, root: Path, folder: Path, fresh: dict[Path, tuple[_StatKey, Skill | str]]) -> Skill | str | None:
        real_folder = folder.resolve()
        if not real_folder.is_relative_to(root):
            return (
                f"{folder}: the skill folder is a symlink to {real_folder}, outside {root}; "
                "copy the skill in, or add its own parent folder as a source"
            )
        skill_md = folder / "SKILL.md"
        if not os.path.lexists(skill_md):
            variants = [p.name for p in folder.iterdir() if p.name.lower() == "skill.md"]
            if variants:
                return f"{folder / variants[0]}: the file must be named exactly SKILL.md"
            return None
        real_md = skill_md.resolve()
        if not real_md.is_relative_to(real_folder):
            return f"{skill_md}: SKILL.md is a symlink to {real_md}, outside its skill folder; it is not read"
        try:
            stat = real_md.stat()
        except OSError as exc:
            return f"{skill_md}: cannot be read: {exc.strerror or exc}"
        key = (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size)
        cached = self._cache.get(skill_md)
        outcome = cached[1] if cached is not None and cached[0] == key else self._parse(real_md, folder.name)
        fresh[skill_md] = (key, outcome)
        return outcome

    def _parse(self, real_md: Path, folder_name: str) -> Skill | str:
        try:
            text = real_md.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            return f"{real_md}: is not UTF-8 text (byte {exc.start}); save it as UTF-8"
        except OSError as exc:
            return f"{real_md}: cannot be read: {exc.strerror or exc}"
        try:
            return parse_skill_md(text, path=real_md, folder_name=folder_name, source=self.label)
        except SkillError as exc:
            return exc.problems[0]


def _disabled_packs() -> set[str]:
    value = os.environ.get("BANDONEON_DISABLED_SKILLPACKS", "")
    return {name.strip() for name in value.split(",") if name.strip()}


def installed_packs() -> dict[str, importlib.metadata.EntryPoint]:
    """Skill packs declared in the ``bandoneon.skills`` entry-point group, minus disabled ones."""
    disabled = _disabled_packs()
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=PACK_GROUP) if ep.name not in disabled}


def pack_source(entry_point: importlib.metadata.EntryPoint) -> FolderSource:
    """The folder source a pack's entry point points at; ``SkillError`` naming the pack if broken.

    The entry point's object is a folder path (``importlib.resources.files(__name__) / "skills"``)
    or a function without arguments that returns one.
    """
    dist = entry_point.dist
    label = f"skill pack {entry_point.name!r}" + (f" ({dist.name} {dist.version})" if dist else "")
    try:
        target = entry_point.load()
        if callable(target) and not isinstance(target, os.PathLike | str):
            target = target()
    except Exception as exc:  # a third-party package failing to import must not hide the others
        raise SkillError([f"{label}: could not be loaded: {type(exc).__name__}: {exc}"]) from None
    if not isinstance(target, os.PathLike | str):
        raise SkillError(
            [
                f"{label}: entry point {entry_point.value!r} gives {target!r}; it must give a folder path, "
                "e.g. importlib.resources.files(__name__) / 'skills' (installed unzipped)"
            ]
        )
    return FolderSource(target, label)
