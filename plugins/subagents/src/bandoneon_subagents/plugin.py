"""The ``subagents`` plugin: subagents declared in options (``[plugins.subagents.agents.NAME]``).

In code, ``subagent(...)`` is all you need; the plugin is for agents configured from
``bandoneon.toml``, where tools are named as ``"package.module:function"``.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, ClassVar

import attrs

import bandoneon

from bandoneon import import_object

from . import hookspecs as subagent_hooks
from ._tool import DEFAULT_MAX_DEPTH, RANGES, subagent

__all__ = ["SubagentSpec", "Subagents"]


@attrs.frozen
class SubagentSpec:
    """One subagent as a configuration file describes it (see ``subagent`` for each field)."""

    name: ClassVar[str] = "subagent"

    description: str
    system_prompt: str = ""
    model: str | None = None
    tools: list[str] = attrs.field(factory=list)
    plugins: list[str] | None = None
    max_turns: int = attrs.field(default=10, validator=RANGES["max_turns"])
    max_depth: int = attrs.field(default=DEFAULT_MAX_DEPTH, validator=RANGES["max_depth"])
    run_timeout: float | None = attrs.field(default=None, validator=RANGES["run_timeout"])


def _specs(agents: dict[str, SubagentSpec | dict[str, Any]]) -> dict[str, SubagentSpec]:
    """Accept plain mappings in code too (configuration files are structured by the core)."""
    try:
        return {name: spec if isinstance(spec, SubagentSpec) else bandoneon.structure(spec, SubagentSpec) for name, spec in agents.items()}
    except bandoneon.StructureError as exc:
        raise bandoneon.ConfigError(f"options of plugin 'subagents': {' '.join(exc.problems)}") from None


@attrs.define
class Subagents(bandoneon.Plugin):
    """Adds one subagent tool per entry of ``agents`` to the agent."""

    name: ClassVar[str] = "subagents"
    #: ``inherited_by_subagents``: which of the parent's plugins a child gets too.
    hookspecs: ClassVar[ModuleType] = subagent_hooks
    agents: dict[str, SubagentSpec] = attrs.field(factory=dict, converter=_specs)

    @bandoneon.hookimpl
    def register_tools(self, agent: bandoneon.Agent) -> list[bandoneon.Tool]:
        made = []
        for agent_name, spec in self.agents.items():
            tools = [import_object(path, what=f"subagent {agent_name!r}: tool") for path in spec.tools]
            made.append(
                subagent(
                    agent_name,
                    spec.description,
                    model=spec.model,
                    system_prompt=spec.system_prompt,
                    tools=tools,
                    max_turns=spec.max_turns,
                    plugins=spec.plugins,
                    max_depth=spec.max_depth,
                    run_timeout=spec.run_timeout,
                )
            )
        return made
