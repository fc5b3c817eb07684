"""The lethal trifecta: private data, outside text and a way out, in one agent.

With all three, one injected order is enough to leak. The guard reads the tools'
declared ``capabilities`` at agent creation and warns (or refuses to build the agent).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping

import bandoneon

__all__ = ["TrifectaWarning", "is_untrusted", "trifecta_legs", "trifecta_message"]


class TrifectaWarning(UserWarning):
    """An agent combines private data, outside text and a way to send things out."""


def is_untrusted(tool: bandoneon.Tool, patterns: Iterable[str]) -> bool:
    """Does ``tool`` return outside text: flagged ``untrusted_output``, or named (by any of its
    ``names``) by a glob in ``patterns``?"""
    return tool.untrusted_output or "untrusted_output" in tool.capabilities or any(fnmatch.fnmatchcase(name, p) for p in patterns for name in tool.names)


def trifecta_legs(tools: Mapping[str, bandoneon.Tool], untrusted_patterns: Iterable[str] = ()) -> dict[str, list[str]]:
    """Which tools supply each leg. ``runs_code`` counts as a way out: code can send anything
    anywhere unless its box has no network, and the guard cannot see the box."""
    patterns = tuple(untrusted_patterns)
    legs: dict[str, list[str]] = {"private data": [], "outside text": [], "a way out": []}
    for name, tool in tools.items():
        if "reads_private" in tool.capabilities:
            legs["private data"].append(name)
        if is_untrusted(tool, patterns):
            legs["outside text"].append(name)
        if "sends_out" in tool.capabilities or "runs_code" in tool.capabilities:
            legs["a way out"].append(name)
    return legs


def trifecta_message(agent_name: str, legs: Mapping[str, list[str]]) -> str | None:
    """A sentence naming the tools of each leg, or None when a leg is missing."""
    if not all(legs.values()):
        return None
    parts = "; ".join(f"{leg}: {', '.join(sorted(names))}" for leg, names in legs.items())
    return (
        f"agent {agent_name!r} has the lethal trifecta ({parts}). One injected order in outside text "
        "could send the private data out. Cut a leg: give the reading and the sending to different "
        "agents, or restrict the way out with an allow rule (for example recipients one_of a list)."
    )
