"""The guard plugin: the walls in code for one agent (level 14)."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from typing import Any, ClassVar

import attrs

import bandoneon

from .answers import clean_answer
from .enforce import Enforcer
from .links import off_list_links
from .policy import TRIFECTA_MODES, Policy, load_policy, merge_policies
from .rules import Redaction, Rule, redaction_from_mapping, rule_from_mapping
from .secrets import secret_redactions

__all__ = ["LINK_ACTIONS", "Guard"]

_PYTHON_SOURCE = "Guard(...)"
#: What happens to a final answer that links to a host off the allowlist.
LINK_ACTIONS = ("remove", "refuse")


def _rules(items: Any) -> tuple[Rule, ...]:
    return tuple(item if isinstance(item, Rule) else rule_from_mapping(item, source=_PYTHON_SOURCE, index=i + 1) for i, item in enumerate(items))


def _redactions(items: Any) -> tuple[Redaction, ...]:
    return tuple(
        item if isinstance(item, Redaction) else redaction_from_mapping(item, source=_PYTHON_SOURCE, index=i + 1)
        for i, item in enumerate(items)
    )


#: What a guard whose policy has no allow rules leaves uncalled (``Plugin.unused_hooks``).
_WITHOUT_RULES = frozenset({"before_tool_execution"})


@attrs.define
class Guard(bandoneon.Plugin):
    """Allow rules on every call, redaction and untrusted marking of results, the trifecta check.

    Well-known secret shapes (``DEFAULT_SECRETS``) are masked in every result unless
    ``unmasked_secrets`` names them (``["*"]``: none). Rules come from ``rule_files`` (TOML, see ``bandoneon_guard.policy``) and from ``rules``
    (``Rule`` objects or tables); all of them apply. Refusals are results the model reads,
    never exceptions. Files are read when the plugin is built, so a broken file fails at once.

    The final answer is checked too (``check_answer``): every redaction applies to its text,
    and with ``link_hosts`` set, links and images to other hosts are removed
    (``off_list_links="remove"``) or the answer is sent back to the model (``"refuse"``).
    """

    name: ClassVar[str] = "guard"
    #: A subagent obeys the same walls as the agent that started it.

    rule_files: list[str] = attrs.Factory(list)
    rules: tuple[Rule, ...] = attrs.field(factory=tuple, converter=_rules)
    redactions: tuple[Redaction, ...] = attrs.field(factory=tuple, converter=_redactions)
    untrusted_tools: list[str] = attrs.Factory(list)
    trifecta: str = "warn"
    link_hosts: tuple[str, ...] | None = attrs.field(default=None, converter=attrs.converters.optional(tuple))
    off_list_links: str = "remove"
    unmasked_secrets: list[str] = attrs.Factory(list)
    _enforcer: Enforcer = attrs.field(init=False, repr=False, on_setattr=attrs.setters.NO_OP)  # state: set without the options' checks

    def __attrs_post_init__(self) -> None:
        if self.trifecta not in TRIFECTA_MODES:
            raise bandoneon.ConfigError(f"guard: 'trifecta' must be one of {', '.join(TRIFECTA_MODES)}, got {self.trifecta!r}")
        if self.off_list_links not in LINK_ACTIONS:
            raise bandoneon.ConfigError(f"guard: 'off_list_links' must be one of {', '.join(LINK_ACTIONS)}, got {self.off_list_links!r}")
        if self.link_hosts is not None and not all(isinstance(host, str) and host.strip() for host in self.link_hosts):
            raise bandoneon.ConfigError(f"guard: 'link_hosts' must list host names such as 'docs.example.com' or '*.example.com', got {self.link_hosts!r}")
        own = Policy(
            rules=self.rules,
            redactions=(*self.redactions, *secret_redactions(self.unmasked_secrets)),
            untrusted_tools=tuple((pattern, _PYTHON_SOURCE) for pattern in self.untrusted_tools),
            trifecta=self.trifecta,
            trifecta_source=_PYTHON_SOURCE,
            sources=(_PYTHON_SOURCE,),
        )
        policy = merge_policies([own, *(load_policy(path) for path in self.rule_files)])
        self._enforcer = Enforcer(policy, label="bandoneon-guard")

    @property
    def unused_hooks(self) -> frozenset[str]:  # type: ignore[override]
        """Without allow rules, before_tool_execution could only answer None: no call per tool call."""
        return frozenset() if self.policy.rules else _WITHOUT_RULES

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

    @bandoneon.hookimpl(optionalhook=True)  # bandoneon-subagents' hook; it may not be installed
    def inherited_by_subagents(self) -> object:
        """Subagents get this very instance (the same rules, one trace)."""
        return self

    @bandoneon.hookimpl
    def redact_text(self, text: str) -> str:
        """What stores keep (sessions, memory, traces, eval reports, audit): every redaction
        (``redact``'s, asked of the enforcer directly: traces call this for every attribute)."""
        return self._enforcer.redact(text)

    @bandoneon.hookimpl
    def check_tools(self, agent: bandoneon.Agent, tools: Mapping[str, bandoneon.Tool]) -> None:
        self._enforcer.check_trifecta(agent, tools, self.policy.trifecta or "warn")

    @bandoneon.hookimpl(tryfirst=True)
    def before_tool_execution(
        self, run: bandoneon.RunContext, call: bandoneon.ToolCall, tool: bandoneon.Tool, arguments: dict[str, Any]
    ) -> Coroutine[Any, Any, bandoneon.Refuse | bandoneon.Respond | None] | None:
        if not self._enforcer.rules_for(tool):  # most tools: no rule, answered at once
            return None
        return self._enforcer.before_tool(run, call, tool, arguments)  # a rule may ask a person: waits

    # trylast: marking must be the last rewrite, after every redaction (other plugins' and
    # policy packs' run tryfirst); this one hook redacts first, then marks.
    @bandoneon.hookimpl(trylast=True)
    def after_tool_execution(self, run: bandoneon.RunContext, call: bandoneon.ToolCall, tool: bandoneon.Tool | None, result: bandoneon.ToolResult) -> str | None:
        return self._enforcer.rewrite(run, call, tool, result)

    # tryfirst: the answer is made safe before any other plugin (a logger, a policy) sees it.
    @bandoneon.hookimpl(tryfirst=True)
    def check_answer(self, run: bandoneon.RunContext, answer: bandoneon.FinalAnswer) -> bandoneon.FinalAnswer | bandoneon.SendBack | None:
        if not answer.text:
            return None
        link_hosts = self.link_hosts
        if link_hosts is None:  # cleaning is redaction alone: no closure to build per answer
            redact = self._enforcer.redact
            text = redact(answer.text) if run.output is None else clean_answer(answer.text, redact, is_typed=True)
            return None if text == answer.text else attrs.evolve(answer, text=text)
        hosts: list[str] = []

        def clean(text: str) -> str:
            checked = off_list_links(self._enforcer.redact(text), link_hosts)
            hosts.extend(host for host in checked.hosts if host not in hosts)
            return checked.text

        text = clean_answer(answer.text, clean, is_typed=run.output is not None)
        if hosts and self.off_list_links == "refuse":
            allowed = ", ".join(self.link_hosts or ()) or "none"
            return bandoneon.SendBack(
                f"Your answer links to {', '.join(hosts)}, which this agent may not link to (allowed hosts: {allowed}). "
                "Answer again without links or images to other hosts."
            )
        return None if text == answer.text else attrs.evolve(answer, text=text)

    @bandoneon.hookimpl
    def system_prompt_sections(self, run: bandoneon.RunContext) -> str | None:
        return self._enforcer.prompt_section(run.agent)

    @staticmethod
    @bandoneon.hookimpl
    def register_commands(subparsers: Any) -> None:
        from .cli import add_policy_command

        add_policy_command(subparsers)

