"""Policy packs: pip-installable distributions whose rules bind every agent of the environment.

A pack is a subclass of ``PolicyPack`` that names the TOML file it ships as package data,
declared in the ``bandoneon`` entry-point group. The core activates every installed policy
pack in every agent (``plugins=[]`` included); only the operator's
``BANDONEON_DISABLED_PLUGINS`` removes one.

With several packs installed, the first one in the agent enforces the merge of all of them,
and the others stay silent: one enforcement point, so a call needing approval is asked once,
and what is enforced is exactly what ``bandoneon policy show`` prints.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Coroutine, Mapping
from typing import Any, ClassVar

import attrs
import bandoneon

from .answers import clean_answer
from .enforce import Enforcer
from .policy import Policy, merge_policies, policy_from_text

__all__ = ["PolicyPack", "installed_pack_policies"]

_policies: dict[type, Policy] = {}


class PolicyPack(bandoneon.Plugin):
    """Base class of a policy pack. Set ``name``, ``policy_package`` and (optionally) ``policy_file``."""

    is_policy_pack: ClassVar[bool] = True
    policy_package: ClassVar[str] = ""
    policy_file: ClassVar[str] = "policy.toml"

    def __init__(self) -> None:
        self._enforcer: Enforcer | None = None

    @classmethod
    def policy(cls) -> Policy:
        """The pack's own policy, read once per process from its package data."""
        if cls not in _policies:
            if not cls.policy_package:
                raise bandoneon.ConfigError(f"policy pack {bandoneon.plugin_name(cls)!r} does not say which package holds its policy (policy_package)")
            source = f"{bandoneon.plugin_name(cls)} ({cls.policy_package}/{cls.policy_file})"
            try:
                text = importlib.resources.files(cls.policy_package).joinpath(cls.policy_file).read_text(encoding="utf-8")
            except (OSError, ModuleNotFoundError, UnicodeDecodeError) as exc:
                raise bandoneon.ConfigError(f"{source}: the policy pack's rules cannot be read: {exc}") from None
            _policies[cls] = policy_from_text(text, source=source)
        return _policies[cls]

    @property
    def enforced_policy(self) -> Policy | None:
        """The merged policy this instance enforces, or None when another pack leads."""
        return self._enforcer.policy if self._enforcer is not None else None

    def _packs(self, agent: bandoneon.Agent) -> list[PolicyPack]:
        return [p for p in agent.plugins if isinstance(p, PolicyPack)]

    def _lead(self, agent: bandoneon.Agent) -> Enforcer | None:
        """The enforcer of the merged policy when this pack is the agent's first; None otherwise.

        Every pack in an agent was installed by the operator (the core refuses packs passed by
        agent code), so whichever leads enforces all of them.
        """
        if self._enforcer is None:
            packs = [p for p in agent.plugins if isinstance(p, PolicyPack)]
            if packs and packs[0] is self:
                merged = merge_policies(type(pack).policy() for pack in packs)
                self._enforcer = Enforcer(merged, label="policy packs (" + ", ".join(bandoneon.plugin_name(p) for p in packs) + ")")
        return self._enforcer

    @bandoneon.hookimpl
    def check_tools(self, agent: bandoneon.Agent, tools: Mapping[str, bandoneon.Tool]) -> None:
        enforcer = self._lead(agent)
        if enforcer is not None:
            enforcer.check_trifecta(agent, tools, enforcer.policy.trifecta or "off")

    @bandoneon.hookimpl
    def redact_text(self, text: str) -> str | None:
        """What stores keep (sessions, memory, traces, eval reports, audit): the packs' redactions.

        A rule of the text alone (the lead was found by ``check_tools``, which every agent calls
        when it is built), so a store may keep it to redact later without the agent
        (``Agent.text_redaction``)."""
        enforcer = self._enforcer
        return enforcer.redact(text) if enforcer is not None else None

    # tryfirst: a policy refuses before a person is asked and before any other plugin decides.
    @bandoneon.hookimpl(tryfirst=True)
    def before_tool_execution(
        self, run: bandoneon.RunContext, call: bandoneon.ToolCall, tool: bandoneon.Tool, arguments: dict[str, Any]
    ) -> Coroutine[Any, Any, bandoneon.Refuse | bandoneon.Respond | None] | None:
        if self._enforcer is None or not self._enforcer.rules_for(tool):
            return None  # most tools: no rule, answered at once
        return self._enforcer.before_tool(run, call, tool, arguments)  # a rule may ask a person: waits

    # tryfirst: redaction before anything else rewrites or marks the text.
    @bandoneon.hookimpl(tryfirst=True)
    def after_tool_execution(self, run: bandoneon.RunContext, call: bandoneon.ToolCall, tool: bandoneon.Tool | None, result: bandoneon.ToolResult) -> str | None:
        if self._enforcer is None:
            return None
        return self._enforcer.rewrite(run, call, tool, result)

    # tryfirst: the answer is masked before any other plugin (a logger, a policy) sees it.
    @bandoneon.hookimpl(tryfirst=True)
    def check_answer(self, run: bandoneon.RunContext, answer: bandoneon.FinalAnswer) -> bandoneon.FinalAnswer | None:
        """The caller gets the final answer with the packs' redactions applied, as stores do."""
        enforcer = self._lead(run.agent)
        if enforcer is None or not answer.text:
            return None
        text = clean_answer(answer.text, enforcer.redact, is_typed=run.output is not None)
        return None if text == answer.text else attrs.evolve(answer, text=text)

    @bandoneon.hookimpl
    def system_prompt_sections(self, run: bandoneon.RunContext) -> str | None:
        if self._enforcer is None:
            return None
        return self._enforcer.prompt_section(run.agent)


def installed_pack_policies() -> tuple[list[Policy], list[str]]:
    """The policies of every installed ``PolicyPack``, and the names of other policy packs
    (plugins flagged ``is_policy_pack`` that carry no readable policy file)."""
    policies: list[Policy] = []
    opaque: list[str] = []
    for entry in bandoneon.installed_plugins().values():
        cls = entry.load()
        if cls is None or not getattr(cls, "is_policy_pack", False):
            continue
        if isinstance(cls, type) and issubclass(cls, PolicyPack):
            policies.append(cls.policy())
        else:
            opaque.append(entry.name)
    return policies, opaque
