"""One enforcement point: apply a ``Policy`` to a run's tool calls and results.

The guard plugin and every policy pack enforce through this class, so a rule means the
same thing wherever it is declared.
"""

from __future__ import annotations

import functools
import logging
import types
import warnings
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import bandoneon

from .marking import UNTRUSTED_PROMPT, mark_untrusted, wrapper_tags
from .policy import Policy
from .rules import Redaction, Rule
from .screen import Screen, screen_of
from .trifecta import TrifectaWarning, is_untrusted, trifecta_legs, trifecta_message

__all__ = ["Enforcer"]

log = logging.getLogger("bandoneon.guard")

# Shared by every enforcer in a run, so a result is wrapped once even when a pack and the
# agent's own guard both call its tool untrusted.
_MARKED = bandoneon.StashKey[set[str]]("guard.marked")  # tool calls whose results were marked untrusted
# Tool sets each agent was already warned about (a guard and a pack both check the trifecta).
_warned: weakref.WeakKeyDictionary[bandoneon.Agent, set[frozenset[str]]] = weakref.WeakKeyDictionary()


class Enforcer:
    """Refuses, asks for approval, redacts and marks, as ``policy`` says."""

    def __init__(self, policy: Policy, *, label: str):
        self._policy = policy
        self.label = label
        self._untrusted: dict[str, tuple[bandoneon.Tool, bool]] = {}  # per tool name, while the tool stays the same
        # Per tool name: keyed by the name alone (hashing the redaction table on every call
        # cost more than the scan), which holds because the policy never changes.
        self._plans: dict[tuple[str, ...] | None, tuple[tuple[Redaction, ...], Screen]] = {}
        # Per tool's names (``Tool.names``), the same way: the allow rules that apply to it.
        self._rules_by_tool: dict[tuple[str, ...], tuple[Rule, ...]] = {}
        # The tool set the last prompt was worked out for, and whether one of them is untrusted
        # (that depends on the tools alone, which _untrusted holds already).
        self._last_offer: tuple[tuple[bandoneon.Tool, ...], bool] = ((), False)

    @property
    def policy(self) -> Policy:
        """The policy enforced, fixed for the enforcer's life (its plans are worked out from it)."""
        return self._policy

    # ---------------------------------------------------------------- calls

    def rules_for(self, tool: bandoneon.Tool) -> tuple[Rule, ...]:
        """The allow rules that apply to ``tool`` by any of its names (a server's ``book_ticket``
        offered as ``rail_book_ticket`` is still ``book_ticket`` to a policy), in policy order,
        worked out once per set of names. Empty for most tools: the hooks then skip
        ``before_tool`` altogether."""
        names = tool.names
        found = self._rules_by_tool.get(names)
        if found is None:
            found = self._rules_by_tool[names] = tuple(rule for rule in self._policy.rules if any(rule.applies_to(name) for name in names))
        return found

    async def before_tool(self, run: bandoneon.RunContext, call: bandoneon.ToolCall, tool: bandoneon.Tool, arguments: dict[str, Any]) -> bandoneon.Refuse | bandoneon.Respond | None:
        """Deny rules first (a refused call never reaches a person), then approval rules."""
        cwd: Path | None = None
        denied: list[str] = []
        to_approve: list[str] = []
        for rule in self.rules_for(tool):
            if cwd is None:
                cwd = Path(run.agent.cwd) if run.agent.cwd is not None else Path.cwd()
            problem = rule.problem(arguments, cwd)
            if problem is None:
                continue
            sentence = f"{rule.message.rstrip('.')} ({problem})" if rule.message else problem
            (denied if rule.action == "deny" else to_approve).append(f"{rule.name}: {sentence}")
        if denied:
            log.info("%s refused %s: %s", self.label, tool.name, "; ".join(denied))
            return bandoneon.Refuse(f"Blocked by policy ({'; '.join(denied)}). {tool.name} did not run; nothing was done.")
        if to_approve:
            return await _ask_a_person(run, call, tool, arguments, "; ".join(to_approve))
        return None

    # ---------------------------------------------------------------- results

    def rewrite(self, run: bandoneon.RunContext, call: bandoneon.ToolCall, tool: bandoneon.Tool | None, result: bandoneon.ToolResult) -> str | None:
        """Redact, then mark as untrusted (once per call); None when nothing changed."""
        name = tool.name if tool is not None else call.name
        text = self.redact(result.content, tool_names=tool.names if tool is not None else (name,))
        marked = run.stash.get(_MARKED)
        if marked is not None and call.id in marked:
            # Wrapped already by an enforcer that ran first (a policy pack): this redaction ran
            # inside the wrapper, and removing text there can join the pieces of a tag
            # (``</untru[ref:1]sted>``). Wrapped again, so the model still reads one of each.
            if text != result.content and not _wrapped_once(text):
                text = mark_untrusted(text, name)
        elif tool is not None and self._is_untrusted(tool) and not result.was_refused and result.arguments is not None:
            run.stash.setdefault(_MARKED, set()).add(call.id)
            text = mark_untrusted(text, name)
        return None if text == result.content else text

    def redact(self, text: str, *, tool_names: tuple[str, ...] | None = None) -> str:
        """``text`` with the redactions for the tool of ``tool_names`` (``Tool.names``) applied;
        every redaction when None."""
        redactions, screen = self._plans.get(tool_names) or self._redactions_for(tool_names)
        # The common case: a glance (one call in C) or a quick scan finds no secret shape at all.
        if not redactions or screen.glance(text) is None or not screen.may_match(text):
            return text
        for redaction in redactions:
            text = redaction.apply(text)
        return text

    def _redactions_for(self, tool_names: tuple[str, ...] | None) -> tuple[tuple[Redaction, ...], Screen]:
        """The redactions that apply to a tool by any of ``tool_names`` and the screen in front
        of them, worked out once per set of names."""
        found = self._plans.get(tool_names)
        if found is None:
            chosen = tuple(r for r in self._policy.redactions if tool_names is None or any(r.applies_to(name) for name in tool_names))
            found = self._plans[tool_names] = (chosen, screen_of(chosen))
        return found

    def _is_untrusted(self, tool: bandoneon.Tool) -> bool:
        known = self._untrusted.get(tool.name)
        if known is None or known[0] is not tool:
            known = self._untrusted[tool.name] = (tool, is_untrusted(tool, (pattern for pattern, _ in self._policy.untrusted_tools)))
        return known[1]

    def prompt_section(self, agent: bandoneon.Agent) -> str | None:
        """Explain the wrapper, but only to an agent that has a tool whose results get it.

        Asked every turn: the answer depends on the tools alone, so it is kept for the last
        tool set asked about, whichever agent has it (compared one by one, by identity first,
        so a tool added, removed or replaced in place is seen)."""
        tools = tuple(agent.tools.values())
        known = self._last_offer
        if known[0] != tools:
            known = self._last_offer = (tools, any(self._is_untrusted(t) for t in tools))
        return UNTRUSTED_PROMPT if known[1] else None

    # ---------------------------------------------------------------- the agent

    def check_trifecta(self, agent: bandoneon.Agent, tools: Mapping[str, bandoneon.Tool], mode: str) -> None:
        """Warn, or raise ``ConfigError``, when ``tools`` (an agent's tool set, as built or as
        it is about to become) hold all three legs. One warning per agent and tool set, however
        many enforcers (a guard, the policy packs) check it."""
        if mode == "off":
            return
        legs = trifecta_legs(tools, (p for p, _ in self.policy.untrusted_tools))
        message = trifecta_message(agent.name, legs)
        if message is None:
            return
        if mode == "refuse":
            raise bandoneon.ConfigError(f"{self.label} refuses this tool set: {message}")
        warned = _warned.setdefault(agent, set())
        if frozenset(tools) in warned:
            return
        warned.add(frozenset(tools))
        log.warning("%s: %s", self.label, message)
        warnings.warn(f"{self.label}: {message}", TrifectaWarning, stacklevel=2)


def _wrapped_once(text: str) -> bool:
    """``text`` is one wrapper: an opening tag at the start, its closing tag at the end, no other."""
    return text.startswith("<untrusted source=") and text.endswith("\n</untrusted>") and wrapper_tags(text) == ["open", "close"]


async def _ask_a_person(run: bandoneon.RunContext, call: bandoneon.ToolCall, tool: bandoneon.Tool, arguments: dict[str, Any], reason: str) -> bandoneon.Refuse | bandoneon.Respond | None:
    """Ask through the approval hook the human plugin publishes; when nobody answers (the
    plugin is not installed or not active), nobody can approve: refuse."""
    hooks = run.agent.hooks
    approval = _approval_hooks()
    answer = None
    if approval is not None and hooks.implements(approval.request_approval):
        answer = await hooks.call(approval.request_approval, run=run, call=call, tool=tool, arguments=arguments, reason=reason)
    if answer is None:
        return bandoneon.Refuse(
            f"Needs a person's approval ({reason}), and no one can approve it in this agent "
            f"(no approval channel is active), so {tool.name} did not run. Do it another way or tell the user."
        )
    return None if isinstance(answer, approval.Approved) else answer  # type: ignore[union-attr]


@functools.cache
def _approval_hooks() -> types.ModuleType | None:
    """The human plugin's published hooks, if it is installed (the guard does not depend on it)."""
    try:
        from bandoneon_human import hookspecs
    except ImportError:
        return None
    return hookspecs
