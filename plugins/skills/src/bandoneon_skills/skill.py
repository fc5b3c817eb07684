"""A skill, and the SKILL.md format it is read from.

A skill is a manual for one kind of job: a ``name`` and a ``description`` (the trigger the
model reads in the catalog) in YAML frontmatter, and a body (the instructions) below it.
The checks follow the Agent Skills format used by Claude Code, Codex and Gemini CLI, so the
same folder works there and here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

import bandoneon

__all__ = ["Skill", "SkillError", "SkillWarning", "parse_skill_md"]

NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*\Z")
MAX_NAME = 64
MAX_DESCRIPTION = 1024


class SkillError(bandoneon.ConfigError):
    """A skill or a skill source is wrong: bad frontmatter, a folder that escapes, a duplicate.

    ``problems`` holds one sentence per problem, each naming the file or source.
    """

    def __init__(self, problems: Iterable[str]):
        self.problems = list(problems)
        lines = "\n".join(f"- {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} problem(s) with skills:\n{lines}")


class SkillWarning(UserWarning):
    """A skill was overridden by a later source, or a changed SKILL.md is broken and left out."""


def check_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not name:
        raise SkillError([f"{where}: 'name' must be a non-empty string, got {name!r}"])
    if len(name) > MAX_NAME or not NAME_PATTERN.match(name):
        raise SkillError(
            [
                f"{where}: name {name!r} is not valid: use 1 to {MAX_NAME} lowercase letters, digits and "
                "single hyphens, not starting or ending with a hyphen (e.g. 'custom-cake-order')"
            ]
        )
    return name


def check_description(description: object, where: str) -> str:
    if not isinstance(description, str) or not description.strip():
        raise SkillError(
            [f"{where}: 'description' must be a non-empty string that says when to use the skill, got {description!r}"]
        )
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        raise SkillError(
            [f"{where}: the description has {len(description)} characters; keep it under {MAX_DESCRIPTION} (it goes in every request)"]
        )
    return description


def parse_allowed_tools(value: object, where: str) -> tuple[str, ...] | None:
    """``allowed-tools`` as a tuple of tool names or globs; None when the skill sets no limit.

    Accepts a YAML list or a string separated by spaces or commas ("check_calendar, read_file").
    """
    if value is None:
        return None
    if isinstance(value, str):
        return tuple(item for item in re.split(r"[\s,]+", value) if item)
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return tuple(item.strip() for item in value if item.strip())
    raise SkillError([f"{where}: 'allowed-tools' must be a list of tool names or a string of them, got {value!r}"])


def _allowed_tools_converter(value: Any) -> tuple[str, ...] | None:
    return parse_allowed_tools(value, "skill")


@attrs.frozen
class Skill:
    """One skill. Build in-memory skills directly: ``Skill("allergen-info", "Use when...", body)``.

    ``path`` is the resolved SKILL.md for skills read from a folder (None in memory);
    ``source`` names where it came from, for warnings and errors.
    ``allowed_tools``: None sets no limit; a tuple limits the agent's tools while it is loaded.
    """

    name: str
    description: str
    body: str
    allowed_tools: tuple[str, ...] | None = attrs.field(default=None, converter=_allowed_tools_converter)
    path: Path | None = None
    source: str = "in memory"
    frontmatter: Mapping[str, Any] = attrs.field(factory=dict, repr=False)

    def __attrs_post_init__(self) -> None:
        where = f"skill {self.name!r} ({self.source})"
        check_name(self.name, where)
        object.__setattr__(self, "description", check_description(self.description, where))
        if not self.body.strip():
            raise SkillError([f"{where}: the body is empty; write the instructions below the frontmatter"])

    @property
    def folder(self) -> Path | None:
        return self.path.parent if self.path is not None else None

    @property
    def location(self) -> str:
        """What the catalog shows as the skill's path (``skill:<name>`` for in-memory skills)."""
        return str(self.path) if self.path is not None else f"skill:{self.name}"


_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?(.*)\Z", re.S | re.M)


def parse_skill_md(text: str, *, path: Path, folder_name: str | None, source: str) -> Skill:
    """A SKILL.md's text as a ``Skill``; ``SkillError`` with one clear sentence otherwise.

    ``folder_name``: the name of the folder that holds the file; the frontmatter ``name`` must
    equal it, as the format requires (it is how tools that only list folders find a skill).
    """
    import yaml  # lazily: only agents that read skill files pay for PyYAML

    where = str(path)
    text = text.removeprefix("\ufeff")
    match = _FRONTMATTER.match(text)
    if match is None:
        raise SkillError(
            [f"{where}: no frontmatter; the file must start with a '---' line, then 'name:' and 'description:', then '---'"]
        )
    front_text, body = match.groups()
    try:
        front = yaml.safe_load(front_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (frontmatter line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SkillError([f"{where}: the frontmatter is not valid YAML{line}: {problem}"]) from None
    if not isinstance(front, dict):
        raise SkillError([f"{where}: the frontmatter must be 'key: value' lines with name and description"])
    for key in ("name", "description"):
        if key not in front:
            raise SkillError([f"{where}: the frontmatter has no '{key}'"])
    name = check_name(front["name"], where)
    if folder_name is not None and name != folder_name:
        raise SkillError([f"{where}: name {name!r} does not match its folder {folder_name!r}; rename one so they are equal"])
    description = check_description(front["description"], where)
    allowed = parse_allowed_tools(front.get("allowed-tools"), where)
    if not body.strip():
        raise SkillError([f"{where}: the body is empty; write the instructions below the frontmatter"])
    return Skill(name, description, body.strip(), allowed, path=path, source=source, frontmatter=front)
