"""One agent's skills: the layered sources, the merged catalog, and what the history has loaded.

Layers, lowest precedence first (a later layer overrides an earlier one, with a warning):

1. installed skill packs (entry-point group ``bandoneon.skills``);
2. sources other plugins register through the ``register_skills`` hook;
3. the plugin's ``folders``, in the order given (a later folder overrides an earlier one);
4. the plugin's in-memory ``skills``.

Two sources *in the same layer* defining one name (two packs, two plugins) is a problem, not
an override: nothing says which should win. The first one registered is kept.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

import bandoneon

from .files import resolve_request
from .skill import Skill, SkillError, SkillWarning
from .sources import FolderSource, MemorySource, SkillSource

__all__ = ["Layer", "Library", "as_source"]

log = logging.getLogger("bandoneon_skills")


def as_source(item: object, *, label: str | None = None, base: Path | None = None) -> SkillSource:
    """What ``register`` accepts, as a source: a folder path, a ``Skill``, skills, or a source."""
    if isinstance(item, str | os.PathLike):
        path = Path(item).expanduser()
        if not path.is_absolute() and base is not None:
            path = base / path
        return FolderSource(path, label)
    if isinstance(item, Skill):
        return MemorySource([item], label or f"in-memory skill {item.name!r}")
    if isinstance(item, SkillSource):
        return item
    if isinstance(item, Iterable):
        return MemorySource(list(item), label or "in-memory skills")
    raise SkillError(
        [f"register() got {item!r}; pass a folder path, a Skill, a list of Skills, or an object with label and scan()"]
    )


@attrs.define
class Layer:
    name: str
    sources: list[SkillSource] = attrs.Factory(list)


@attrs.define(eq=False)
class Library:
    """The merged catalog of one agent, rebuilt from its sources on every ``refresh()``."""

    layers: Sequence[Layer]
    setup_problems: list[str] = attrs.Factory(list)
    _skills: dict[str, Skill] = attrs.field(factory=dict, init=False)
    _problems: list[str] = attrs.field(factory=list, init=False)
    _reported: set[str] = attrs.field(factory=set, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    _scans: list[tuple[list[Skill], list[str]]] | None = attrs.field(default=None, init=False)
    _limits_tools: bool = attrs.field(default=False, init=False)

    def refresh(self, *, report_problems: bool = True) -> dict[str, Skill]:
        """Re-scan every source (unchanged files come from cache) and merge the layers.

        Overrides are warned about (each distinct one once per library); problems too, unless
        ``report_problems`` is False (the caller raises them instead).
        """
        with self._lock:
            scans = [source.scan() for layer in self.layers for source in layer.sources]
            # Sources hand back the very same result object when nothing changed: then so do we.
            # One list comparison (each item by identity first, in C: this runs at the start of
            # every run); a result equal to the last, though new, makes the same catalog too.
            if scans == self._scans:
                self._scans = scans
                if report_problems:
                    for problem in self._problems:
                        self._report(problem + " (left out until it is fixed)")
                return self._skills
            self._scans = scans
            results = iter(scans)
            merged: dict[str, Skill] = {}
            problems: list[str] = list(self.setup_problems)
            notices: list[str] = []
            for layer in self.layers:
                in_layer: dict[str, Skill] = {}
                for source in layer.sources:
                    found, source_problems = next(results)
                    problems.extend(source_problems)
                    for skill in found:
                        if skill.path is None and skill.source == "in memory":
                            skill = attrs.evolve(skill, source=source.label)
                        earlier = in_layer.get(skill.name)
                        if earlier is not None:
                            problems.append(
                                f"two {layer.name} define the skill {skill.name!r}: {_where(earlier)} and "
                                f"{_where(skill)}; nothing says which wins, so the first is kept; remove or rename one"
                            )
                            continue
                        in_layer[skill.name] = skill
                for name, skill in in_layer.items():
                    below = merged.get(name)
                    if below is not None:
                        notices.append(f"skill {name!r} from {_where(skill)} overrides the one from {_where(below)}")
                    merged[name] = skill
            self._skills = dict(sorted(merged.items()))
            self._limits_tools = any(skill.allowed_tools is not None for skill in merged.values())
            self._problems = problems
            for notice in notices:
                self._report(notice)
            if report_problems:
                for problem in problems:
                    self._report(problem + " (left out until it is fixed)")
            return self._skills

    def _report(self, message: str) -> None:
        if message in self._reported:
            return
        self._reported.add(message)
        log.warning("%s", message)
        warnings.warn(message, SkillWarning, stacklevel=2)

    @property
    def skills(self) -> dict[str, Skill]:
        """The catalog as of the last refresh, by name, sorted (a stable prompt caches well)."""
        return self._skills

    @property
    def limits_tools(self) -> bool:
        """Whether any skill of the catalog sets ``allowed-tools`` (if none does, nothing is limited)."""
        return self._limits_tools  # known once per catalog: asked before every tool call

    @property
    def problems(self) -> list[str]:
        return list(self._problems)

    def broken_reason(self, name: str) -> str | None:
        """The problem that keeps a skill called ``name`` out of the catalog, if one names it."""
        marker = f"/{name}/"
        for problem in self._problems:
            if marker in problem.replace(os.sep, "/") or f"{name!r}" in problem:
                return problem
        return None

    def loaded(self, messages: Iterable[bandoneon.Message], tool_names: dict[str, str]) -> list[Skill]:
        """Skills whose bodies the history holds: a successful ``load_skill`` (or a read of a
        SKILL.md in filesystem mode) whose result is still in the working history.

        ``tool_names`` maps this plugin's tool names to "load" or "read". Loaded skills thus
        persist across runs of one agent, exactly as long as the body is in front of the model.
        """
        calls: dict[str, bandoneon.ToolCall] = {}
        names: list[str] = []
        for message in messages:  # asked before every tool call: plain loops, no generator each
            if message.role == "assistant":
                for c in message.tool_calls:
                    if c.name in tool_names:
                        calls[c.id] = c
            elif calls and message.role == "tool" and not message.is_error and message.tool_call_id in calls:
                call = calls[message.tool_call_id]
                name = self._loaded_name(call, tool_names[call.name])
                if name is not None and name not in names:
                    names.append(name)
        if not names:  # the usual answer
            return []
        return [self._skills[n] for n in names if n in self._skills]

    def _loaded_name(self, call: bandoneon.ToolCall, kind: str) -> str | None:
        try:
            arguments = bandoneon.loads_bounded(call.arguments or "{}")  # the model's: it may nest without end
        except ValueError:
            return None
        if not isinstance(arguments, dict):
            return None
        if kind == "load":
            name = arguments.get("name")
            return name if isinstance(name, str) else None
        path = arguments.get("path")
        if not isinstance(path, str):
            return None
        try:
            target = resolve_request(path, self._skills)
        except (bandoneon.ToolError, OSError, ValueError):
            return None
        for skill in self._skills.values():
            if target is skill or target == skill.path:
                return skill.name
        return None


def _where(skill: Skill) -> str:
    return f"{skill.source} ({skill.path})" if skill.path is not None else skill.source
