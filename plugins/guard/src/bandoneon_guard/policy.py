"""A policy: the rules, redactions, untrusted tools and trifecta mode that one guard enforces.

Policies come from TOML files (a guard's ``rule_files``, a policy pack's package data) or
from Python, and several merge into one. Merging never weakens anything: every rule of
every source applies (a call must pass them all, and ``deny`` beats ``approve``), every
redaction applies, every untrusted tool stays untrusted, and the strictest trifecta mode
wins. That is what "conflicts resolve to the stricter rule" means here, for any two rules,
including two checks no single rule could express.

The file format::

    [[rule]]                        # any number; see ``Rule``
    name = "ravens-to-allies"
    tool = "send_raven"
    argument = "to"
    one_of = ["riverhold", "highcliff"]
    message = "Ravens only fly to allies."

    [[redact]]                      # any number; see ``Redaction``
    name = "dni"
    pattern = 'DNI [\\d.]+'
    replacement = "DNI ***"

    [untrusted]
    tools = ["read_scroll", "fetch_*"]

    [trifecta]
    mode = "refuse"                 # "off", "warn" or "refuse"
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

import bandoneon

from .rules import Redaction, Rule, redaction_from_mapping, rule_from_mapping

__all__ = ["TRIFECTA_MODES", "Policy", "load_policy", "merge_policies", "policy_from_mapping", "policy_from_text"]

#: From the weakest to the strictest.
TRIFECTA_MODES = ("off", "warn", "refuse")
_TOP_KEYS = ("rule", "redact", "untrusted", "trifecta")


@attrs.frozen
class Policy:
    """What one enforcement point applies. ``untrusted_tools`` pairs a glob with its source."""

    rules: tuple[Rule, ...] = ()
    redactions: tuple[Redaction, ...] = ()
    untrusted_tools: tuple[tuple[str, str], ...] = ()
    trifecta: str | None = None
    trifecta_source: str | None = None
    sources: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.rules or self.redactions or self.untrusted_tools or self.trifecta)

    def as_document(self) -> dict[str, Any]:
        """The policy as a TOML document, each entry naming where it came from."""
        document: dict[str, Any] = {"sources": list(self.sources)}
        if self.trifecta is not None:
            document["trifecta"] = {"mode": self.trifecta, "source": self.trifecta_source or ""}
        if self.untrusted_tools:
            document["untrusted"] = [{"tool": pattern, "source": source} for pattern, source in self.untrusted_tools]
        if self.rules:
            document["rule"] = [rule.as_table() for rule in self.rules]
        if self.redactions:
            document["redact"] = [redaction.as_table() for redaction in self.redactions]
        conflicts = self.conflicts()
        if conflicts:
            document["conflict"] = conflicts
        return document

    def conflicts(self) -> list[dict[str, Any]]:
        """Rules of different sources that govern the same tool and argument, and how that resolves."""
        groups: dict[tuple[str, str], list[Rule]] = {}
        for rule in self.rules:
            groups.setdefault((rule.tool, rule.argument or ""), []).append(rule)
        found = []
        for (tool, argument), rules in groups.items():
            if len({rule.source for rule in rules}) < 2:
                continue
            actions = {rule.action for rule in rules}
            resolution = "every rule applies: a call must pass all of them"
            if actions == {"deny", "approve"}:
                resolution += "; where both would act, deny wins over asking a person"
            found.append(
                {
                    "tool": tool,
                    "argument": argument,
                    "rules": [f"{rule.name} ({rule.source})" for rule in rules],
                    "resolution": resolution,
                }
            )
        return found


def _strictest(modes: Iterable[tuple[str, str]]) -> tuple[str | None, str | None]:
    best: tuple[str | None, str | None] = (None, None)
    for mode, source in modes:
        if best[0] is None or TRIFECTA_MODES.index(mode) > TRIFECTA_MODES.index(best[0]):
            best = (mode, source)
    return best


def merge_policies(policies: Iterable[Policy]) -> Policy:
    """One policy that is at least as strict as each of ``policies``."""
    policies = list(policies)
    trifecta, trifecta_source = _strictest((p.trifecta, p.trifecta_source or "") for p in policies if p.trifecta is not None)
    return Policy(
        rules=tuple(rule for p in policies for rule in p.rules),
        redactions=tuple(redaction for p in policies for redaction in p.redactions),
        untrusted_tools=tuple(dict.fromkeys(item for p in policies for item in p.untrusted_tools)),
        trifecta=trifecta,
        trifecta_source=trifecta_source,
        sources=tuple(dict.fromkeys(source for p in policies for source in p.sources)),
    )


def policy_from_mapping(data: Mapping[str, Any], *, source: str) -> Policy:
    """A policy from parsed TOML; every key checked, every error naming ``source`` and the entry."""
    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise bandoneon.ConfigError(
            f"{source}: unknown key {unknown[0]!r}; a policy file may have [[rule]], [[redact]], [untrusted] and [trifecta]"
        )
    rules_data = data.get("rule", [])
    if not isinstance(rules_data, list):
        raise bandoneon.ConfigError(f"{source}: 'rule' must be an array of tables: write each rule as [[rule]]")
    rules = tuple(rule_from_mapping(item, source=source, index=i + 1) for i, item in enumerate(rules_data))
    names = [rule.name for rule in rules]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise bandoneon.ConfigError(f"{source}: rule {duplicates[0]!r}: two rules have this name; names must be unique in one file")
    redact_data = data.get("redact", [])
    if not isinstance(redact_data, list):
        raise bandoneon.ConfigError(f"{source}: 'redact' must be an array of tables: write each one as [[redact]]")
    redactions = tuple(redaction_from_mapping(item, source=source, index=i + 1) for i, item in enumerate(redact_data))
    untrusted: tuple[tuple[str, str], ...] = ()
    if "untrusted" in data:
        table = data["untrusted"]
        if not isinstance(table, Mapping) or set(table) - {"tools"}:
            raise bandoneon.ConfigError(f"{source}: [untrusted] may only have 'tools' (a list of tool names or globs)")
        tools = table.get("tools", [])
        if not (isinstance(tools, list) and all(isinstance(t, str) and t for t in tools)):
            raise bandoneon.ConfigError(f"{source}: [untrusted] 'tools' must be a list of tool names or globs")
        untrusted = tuple((tool, source) for tool in tools)
    trifecta = None
    if "trifecta" in data:
        table = data["trifecta"]
        if not isinstance(table, Mapping) or set(table) - {"mode"}:
            raise bandoneon.ConfigError(f"{source}: [trifecta] may only have 'mode'")
        trifecta = table.get("mode")
        if trifecta not in TRIFECTA_MODES:
            raise bandoneon.ConfigError(f"{source}: [trifecta] 'mode' must be one of {', '.join(TRIFECTA_MODES)}, got {trifecta!r}")
    return Policy(rules, redactions, untrusted, trifecta, source if trifecta else None, (source,))


def policy_from_text(text: str, *, source: str) -> Policy:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise bandoneon.ConfigError(f"{source}: not valid TOML: {exc}") from None
    return policy_from_mapping(data, source=source)


def load_policy(path: str | Path) -> Policy:
    """The policy in the TOML file at ``path``."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise bandoneon.ConfigError(f"{file}: the policy file cannot be read: {exc}") from None
    return policy_from_text(text, source=str(file))
