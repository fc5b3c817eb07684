"""The ``skills`` plugin: presents skills to the model as a catalog, bodies, or files (level 8)."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
import weakref
from fnmatch import fnmatchcase
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, ClassVar, Literal
from weakref import WeakKeyDictionary

import attrs

import bandoneon

from . import hookspecs as skill_hooks
from .files import read_confined
from .library import Layer, Library, as_source
from .prompt import render_all, render_catalog, skill_result
from .skill import Skill, SkillError
from .sources import FolderSource, MemorySource, installed_packs, pack_source

__all__ = ["LOAD_TOOL", "MODES", "READ_TOOL", "Skills"]

MODES = ("all", "on-demand", "filesystem")
LOAD_TOOL = "load_skill"
READ_TOOL = "read_skill_file"
Mode = Literal["all", "on-demand", "filesystem"]
#: What each of this plugin's tools does to a skill, for ``Library.loaded``.
_LOADING_TOOLS = {LOAD_TOOL: "load", READ_TOOL: "read"}


# This run's section of the system prompt (in a tuple: None is a section too).
_SECTION = bandoneon.StashKey[tuple[str | None]]("skills.section")


class _RenderCache:
    """The rendered section of the last few catalogs, by catalog identity (a refresh that finds
    nothing changed returns the same dict, so a run costs no rendering)."""

    def __init__(self, size: int = 8):
        self._size = size
        self._entries: dict[int, tuple[dict[str, Skill], tuple[str | None]]] = {}

    def get(self, skills: dict[str, Skill]) -> tuple[str | None] | None:
        entry = self._entries.get(id(skills))
        return entry[1] if entry is not None and entry[0] is skills else None

    def __setitem__(self, skills: dict[str, Skill], rendered: tuple[str | None]) -> None:
        if len(self._entries) >= self._size:
            self._entries.pop(next(iter(self._entries)))
        self._entries[id(skills)] = (skills, rendered)


def _as_strings(values: Any) -> list[str]:
    return [os.fspath(v) for v in values]


@attrs.define
class Skills(bandoneon.Plugin):
    """Skills from folders, memory, installed packs and other plugins, shown the way ``mode`` says.

    ``all``: every body in the system prompt. ``on-demand``: the catalog in the system prompt
    and a ``load_skill`` tool. ``filesystem``: the catalog with each SKILL.md's path and a
    read-only ``read_skill_file`` tool confined to the skill folders.
    """

    name: ClassVar[str] = "skills"
    #: ``register_skills``: how other plugins contribute skills (this plugin calls it).
    hookspecs: ClassVar[ModuleType] = skill_hooks

    mode: Mode = attrs.field(default="on-demand", validator=attrs.validators.in_(MODES))
    folders: list[str] = attrs.field(factory=list, converter=_as_strings)
    skills: list[Skill] = attrs.field(factory=list)
    packs: list[str] | None = None
    strict: bool = True
    always_allowed: list[str] = attrs.field(factory=list)
    max_file_chars: int = attrs.field(default=20_000, validator=bandoneon.in_range(at_least=1, integer=True))
    _libraries: WeakKeyDictionary[Any, Library] = attrs.field(factory=WeakKeyDictionary, init=False, repr=False)
    #: The last agent asked about and its library: most plugin instances serve one agent, and
    #: a weak reference's call is cheaper than a weak-keyed lookup (twice a run).
    _last: tuple[weakref.ref[Any], Library] | None = attrs.field(default=None, init=False, repr=False, on_setattr=attrs.setters.NO_OP)
    _rendered: _RenderCache = attrs.field(factory=lambda: _RenderCache(), init=False, repr=False)

    # ---------------------------------------------------------------- building the library

    def library(self, agent: bandoneon.Agent) -> Library:
        """This agent's skills (sources are collected once per agent, scanned on every refresh)."""
        last = self._last
        if last is not None and last[0]() is agent:
            return last[1]
        found = self._libraries.get(agent)
        if found is None:
            found = self._libraries[agent] = self._build_library(agent)
        self._last = (weakref.ref(agent), found)
        return found

    def _build_library(self, agent: bandoneon.Agent) -> Library:
        base = Path(agent.cwd) if agent.cwd is not None else Path.cwd()
        packs, pack_problems = self._pack_layer()
        registered = Layer("sources registered by plugins")

        def register(source: object, *, label: str | None = None) -> None:
            registered.sources.append(as_source(source, label=label, base=base))

        agent.hooks.call_sync(skill_hooks.register_skills, agent=agent, register=register)
        folders = [Layer(f"folder option {f!r}", [as_source(f, base=base)]) for f in self.folders]
        memory = [Layer("in-memory skills", [MemorySource(self.skills, "the skills option")])] if self.skills else []
        return Library([packs, registered, *folders, *memory], setup_problems=pack_problems)

    def _pack_layer(self) -> tuple[Layer, list[str]]:
        installed = installed_packs()
        if self.packs is None:
            chosen = list(installed)
        else:
            unknown = [name for name in self.packs if name not in installed]
            if unknown:
                raise SkillError(
                    [f"skills option packs: no skill pack named {n!r} is installed; installed: {', '.join(installed) or 'none'}" for n in unknown]
                )
            chosen = list(self.packs)
        layer = Layer("skill packs")
        problems: list[str] = []
        for name in chosen:
            try:
                layer.sources.append(pack_source(installed[name]))
            except SkillError as exc:
                problems.extend(exc.problems)
        return layer, problems

    # ---------------------------------------------------------------- hooks

    @bandoneon.hookimpl
    def agent_created(self, agent: bandoneon.Agent) -> None:
        library = self.library(agent)
        library.refresh(report_problems=not self.strict)
        if self.strict and library.problems:
            raise SkillError(library.problems)

    @bandoneon.hookimpl
    def register_tools(self, agent: bandoneon.Agent) -> list[bandoneon.Tool]:
        if self.mode == "on-demand":
            return [self._load_tool()]
        if self.mode == "filesystem":
            return [self._read_tool()]
        return []

    @bandoneon.hookimpl
    def system_prompt_sections(self, run: bandoneon.RunContext) -> str | None:
        # Re-scanned once per run: an edited SKILL.md is seen by the next run, and the turns of
        # one run (and the prompt cache) see one stable catalog.
        section = run.stash.get(_SECTION)
        if section is None:
            skills = self.library(run.agent).refresh()
            section = self._rendered.get(skills)
            if section is None:  # the catalog changed (a new dict): render it once
                section = self._rendered[skills] = (self._render(skills),)
            run.stash[_SECTION] = section
        return section[0]

    def _render(self, skills: dict[str, Skill]) -> str | None:
        if self.mode == "all":
            return render_all(skills)
        if self.mode == "filesystem":
            return render_catalog(skills, tool_name=READ_TOOL, with_paths=True)
        return render_catalog(skills, tool_name=LOAD_TOOL, with_paths=False)

    @bandoneon.hookimpl(tryfirst=True)
    def before_tool_execution(self, run: bandoneon.RunContext, tool: bandoneon.Tool) -> bandoneon.Refuse | None:
        """Enforce ``allowed-tools``: while skills that set it are loaded, only their tools run.

        The union of the loaded skills' lists applies (each needs its own tools); a loaded skill
        without the field adds no limit and lifts none. The plugin's own tools and
        ``always_allowed`` always run, so the model can still load the next manual.
        """
        if tool.name in (LOAD_TOOL, READ_TOOL) or tool.name in self.always_allowed:
            return None
        library = self.library(run.agent)
        if not library.limits_tools:
            return None
        if self.mode == "all":
            loaded = list(library.skills.values())
        else:
            loaded = library.loaded(run.messages, _LOADING_TOOLS)
        limits = [skill for skill in loaded if skill.allowed_tools is not None]
        if not limits:
            return None
        if any(fnmatchcase(tool.name, pattern) for skill in limits for pattern in skill.allowed_tools or ()):
            return None
        detail = "; ".join(f"{s.name} allows {', '.join(s.allowed_tools or ()) or 'no tools'}" for s in limits)
        return bandoneon.Refuse(
            f"{tool.name} is not allowed while the loaded skills limit the tools ({detail}). "
            "Use one of the allowed tools, or tell the user this needs something the skill does not allow."
        )

    @staticmethod
    @bandoneon.hookimpl
    def register_commands(subparsers: Any) -> None:
        parser = subparsers.add_parser("skills", help="list skills and check their SKILL.md files")
        parser.add_argument("folders", nargs="*", help="folders of <name>/SKILL.md to check")
        parser.add_argument("--no-packs", action="store_true", help="leave out installed skill packs")
        parser.set_defaults(handler=_skills_command)

    # ---------------------------------------------------------------- tools

    # The tools find their agent through the run: a closure over the agent would hold it in a
    # reference cycle (agent -> tool -> agent), left to the cyclic collector when dropped.
    def _load_tool(self) -> bandoneon.Tool:
        plugin = self

        @bandoneon.tool(name=LOAD_TOOL)
        def load_skill(name: Annotated[str, "the skill's name, as listed in <available-skills>"], run: bandoneon.RunContext) -> str:
            """Load a skill's full instructions by name. Skills are listed in <available-skills> in the system prompt."""
            library = plugin.library(run.agent)
            skills = library.refresh()
            skill = skills.get(name.strip())
            if skill is None:
                raise bandoneon.ToolError(_unknown(name, library))
            return skill_result(skill)

        return load_skill

    def _read_tool(self) -> bandoneon.Tool:
        plugin = self

        @bandoneon.tool(name=READ_TOOL)
        def read_skill_file(path: Annotated[str, "a SKILL.md path from <available-skills>, or a file inside a skill's folder"], run: bandoneon.RunContext) -> str:
            """Read a skill's SKILL.md, or a file next to it. Read-only; only the skill folders can be read."""
            skills = plugin.library(run.agent).refresh()
            return read_confined(path, skills, max_chars=plugin.max_file_chars)

        return read_skill_file


def _unknown(name: str, library: Library) -> str:
    available = ", ".join(library.skills) or "none"
    broken = library.broken_reason(name.strip())
    if broken is not None:
        return f"The skill {name!r} cannot be loaded: {broken}. Available skills: {available}."
    return f"There is no skill named {name!r}. Available skills: {available}."


def _skills_command(args: argparse.Namespace) -> int:
    """``bandoneon skills [FOLDER...]``: the merged catalog and every problem; exit 1 if any."""
    layers: list[Layer] = []
    problems: list[str] = []
    if not args.no_packs:
        packs, pack_problems = Skills()._pack_layer()
        layers.append(packs)
        problems.extend(pack_problems)
    layers += [Layer(f"folder {f!r}", [FolderSource(Path(f))]) for f in args.folders]
    library = Library(layers, setup_problems=problems)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        skills = library.refresh(report_problems=False)
    # Descriptions, allowed-tools and file names come from the skills being checked (a pull
    # request, a third-party pack): shown through for_terminal, so an escape in them is drawn,
    # not obeyed by the terminal (and a lone surrogate YAML decoded cannot crash the print).
    for skill in skills.values():
        limit = f" [allowed-tools: {' '.join(skill.allowed_tools)}]" if skill.allowed_tools is not None else ""
        print(bandoneon.for_terminal(f"{skill.name}  ({skill.location}){limit}\n    {skill.description}"))
    for problem in library.problems:
        print(bandoneon.for_terminal(f"problem: {problem}"), file=sys.stderr)
    print(f"{bandoneon.plural(len(skills), 'skill')}, {bandoneon.plural(len(library.problems), 'problem')}")
    return 1 if library.problems else 0
