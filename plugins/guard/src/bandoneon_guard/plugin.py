"""The guard plugin: the walls in code for one agent (level 14)."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

import bandoneon

from .enforce import Enforcer
from .policy import TRIFECTA_MODES, Policy, load_policy, merge_policies
from .rules import Redaction, Rule, redaction_from_mapping, rule_from_mapping

__all__ = ["Guard"]

_PYTHON_SOURCE = "Guard(...)"


def _rules(items: Any) -> tuple[Rule, ...]:
    return tuple(item if isinstance(item, Rule) else rule_from_mapping(item, source=_PYTHON_SOURCE, index=i + 1) for i, item in enumerate(items))


def _redactions(items: Any) -> tuple[Redaction, ...]:
    return tuple(
        item if isinstance(item, Redaction) else redaction_from_mapping(item, source=_PYTHON_SOURCE, index=i + 1)
        for i, item in enumerate(items)
    )


@attrs.define
class Guard(bandoneon.Plugin):
    """Allow rules on every call, redaction and untrusted marking of results, the trifecta check.

    Rules come from ``rule_files`` (TOML, see ``bandoneon_guard.policy``) and from ``rules``
    (``Rule`` objects or tables); all of them apply. Refusals are results the model reads,
    never exceptions. Files are read when the plugin is built, so a broken file fails at once.
    """

    name: ClassVar[str] = "guard"
    #: A subagent obeys the same walls as the agent that started it.
    inherits_to_subagents: ClassVar[bool] = True

    rule_files: list[str] = attrs.Factory(list)
    rules: tuple[Rule, ...] = attrs.field(factory=tuple, converter=_rules)
    redactions: tuple[Redaction, ...] = attrs.field(factory=tuple, converter=_redactions)
    untrusted_tools: list[str] = attrs.Factory(list)
    trifecta: str = "warn"
    _enforcer: Enforcer = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.trifecta not in TRIFECTA_MODES:
            raise bandoneon.ConfigError(f"guard: 'trifecta' must be one of {', '.join(TRIFECTA_MODES)}, got {self.trifecta!r}")
        own = Policy(
            rules=self.rules,
            redactions=self.redactions,
            untrusted_tools=tuple((pattern, _PYTHON_SOURCE) for pattern in self.untrusted_tools),
            trifecta=self.trifecta,
            trifecta_source=_PYTHON_SOURCE,
            sources=(_PYTHON_SOURCE,),
        )
        policy = merge_policies([own, *(load_policy(path) for path in self.rule_files)])
        self._enforcer = Enforcer(policy, label="bandoneon-guard")

    @property
    def policy(self) -> Policy:
        """The effective policy: the Python rules and every rule file, merged."""
        return self._enforcer.policy

    def redact(self, text: str) -> str:
        """``text`` with every redaction applied, whatever tools each one is scoped to.

        For text that is not one tool's result (trace spans, logs): bandoneon-tracing calls
        this on every span attribute of an agent where the guard is active.
        """
        return self._enforcer.redact(text)

    @bandoneon.hookimpl
    def agent_created(self, agent: bandoneon.Agent) -> None:
        self._enforcer.check_trifecta(agent, self.policy.trifecta or "warn")

    @bandoneon.hookimpl(tryfirst=True)
    async def before_tool_execution(self, run: bandoneon.RunContext, call: bandoneon.ToolCall, tool: bandoneon.Tool, arguments: dict[str, Any]) -> bandoneon.Refuse | None:
        return await self._enforcer.before_tool(run, call, tool, arguments)

    # trylast: marking must be the last rewrite, after every redaction (other plugins' and
    # policy packs' run tryfirst); this one hook redacts first, then marks.
    @bandoneon.hookimpl(trylast=True)
    def after_tool_execution(self, run: bandoneon.RunContext, call: bandoneon.ToolCall, tool: bandoneon.Tool | None, result: bandoneon.ToolResult) -> str | None:
        return self._enforcer.rewrite(run, call, tool, result)

    @bandoneon.hookimpl
    def system_prompt_sections(self, run: bandoneon.RunContext) -> str | None:
        return self._enforcer.prompt_section(run.agent)

    @staticmethod
    @bandoneon.hookimpl
    def register_commands(subparsers: Any) -> None:
        from .cli import add_policy_command

        add_policy_command(subparsers)
