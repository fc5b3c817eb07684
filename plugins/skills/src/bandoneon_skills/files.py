"""The filesystem mode's file tool: read-only, and confined to the skill folders.

Every path is resolved (``..`` collapsed, every symlink followed) before it is checked, so
neither ``custom-cake-order/../../etc/passwd`` nor a symlink inside a skill folder that
points elsewhere can read anything outside. On Linux the opened file descriptor is checked
again through ``/proc/self/fd``, so swapping a symlink between check and open does not help.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import bandoneon

from .skill import Skill

__all__ = ["read_confined", "resolve_request"]

MEMORY_PREFIX = "skill:"


def resolve_request(raw: str, skills: Mapping[str, Skill]) -> Skill | Path:
    """What a path from the model points at: an in-memory skill, or a resolved filesystem path.

    Relative paths are tried against each skills folder's root ("custom-cake-order/SKILL.md").
    """
    raw = raw.strip()
    if raw.startswith(MEMORY_PREFIX):
        name = raw.removeprefix(MEMORY_PREFIX).removesuffix("/SKILL.md").strip("/")
        skill = skills.get(name)
        if skill is None:
            raise bandoneon.ToolError(f"There is no skill named {name!r}. Available skills: {_names(skills)}.")
        return skill if skill.path is None else skill.path
    path = Path(raw).expanduser()
    if not path.is_absolute():
        roots = list(dict.fromkeys(s.folder.parent for s in skills.values() if s.folder is not None))
        candidates = [root / path for root in roots]
        path = next((c for c in candidates if os.path.lexists(c)), candidates[0] if candidates else path)
    return Path(os.path.realpath(path))


def read_confined(raw: str, skills: Mapping[str, Skill], *, max_chars: int) -> str:
    """The text of a file inside a skill folder (or a folder's listing); ``ToolError`` otherwise."""
    if not raw.strip():
        raise bandoneon.ToolError("Give a path from the skills catalog, e.g. the SKILL.md path listed there.")
    target = resolve_request(raw, skills)
    if isinstance(target, Skill):
        return _as_file(target)
    folders = [s.folder for s in skills.values() if s.folder is not None]
    if not any(target.is_relative_to(folder) for folder in folders):
        raise bandoneon.ToolError(
            f"{raw} is outside the skill folders (it resolves to {target}); this tool only reads files inside "
            f"the skills listed in the catalog: {', '.join(str(f) for f in folders) or 'none'}."
        )
    if target.is_dir():
        entries = sorted(p.name + ("/" if p.is_dir() else "") for p in target.iterdir() if not p.name.startswith("."))
        return f"{target}/ contains: {', '.join(entries) or 'nothing'}"
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise bandoneon.ToolError(f"{raw} does not exist. Use a path listed in the skills catalog.") from None
    except OSError as exc:
        raise bandoneon.ToolError(f"{raw} cannot be read: {exc.strerror or exc}.") from None
    with os.fdopen(fd, "rb") as handle:
        opened = Path(f"/proc/self/fd/{fd}")
        if opened.exists() and not any(Path(os.readlink(opened)).is_relative_to(f) for f in folders):
            raise bandoneon.ToolError(f"{raw} changed while it was being opened and now points outside the skill folders.")
        limit = max_chars * 4 + 4  # enough bytes for max_chars characters of UTF-8
        data = handle.read(limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A read cut in the middle of a character is not a binary file.
        if len(data) < limit or exc.start < len(data) - 3:
            raise bandoneon.ToolError(f"{raw} is not a text file; this tool reads text only.") from None
        text = data[: exc.start].decode("utf-8")
    if len(text) > max_chars:
        return text[:max_chars] + f"\n[... cut at {max_chars} characters; the file is longer]"
    return text


def _as_file(skill: Skill) -> str:
    """An in-memory skill shown as the SKILL.md it would be."""
    lines = ["---", f"name: {skill.name}", f"description: {skill.description}"]
    if skill.allowed_tools is not None:
        lines.append(f"allowed-tools: {' '.join(skill.allowed_tools)}")
    return "\n".join([*lines, "---", "", skill.body])


def _names(skills: Mapping[str, Skill]) -> str:
    return ", ".join(skills) or "none"
