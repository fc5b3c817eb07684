"""Review tools the way the model sees them (level 3, "Check your tools like the model would").

Only the card is read: name, description, schema. Errors are things a model cannot work
around (no description, a schema that accepts anything); warnings are things that make it guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from .tools import Tool

__all__ = ["Finding", "check_tools"]

VAGUE_NAMES = frozenset(
    {"do", "do_stuff", "stuff", "run", "execute", "process", "handle", "tool", "helper", "func", "function",
     "action", "misc", "util", "utils", "data", "get", "query", "call", "thing", "doit", "main", "test"}
)
_VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_FORMAT_HINTS = ("date", "time", "email", "url", "uri", "id", "phone", "path", "currency", "country", "code")


@attrs.frozen
class Finding:
    severity: str  # "error" or "warning"
    tool: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity.upper():7} {self.tool}: {self.message}"


def check_tools(tools: Iterable[Tool], *, max_tools: int = 20) -> list[Finding]:
    """Every finding for ``tools``, errors first within each tool."""
    tools = list(tools)
    findings: list[Finding] = []
    if len(tools) > max_tools:
        findings.append(Finding("warning", "*", f"{len(tools)} tools: every one is read on every turn; fewer, sharper tools work better (limit {max_tools})"))
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            findings.append(Finding("error", tool.name, "two tools share this name"))
        seen.add(tool.name)
        findings.extend(_check_one(tool))
    return findings


def _check_one(tool: Tool) -> list[Finding]:
    found: list[Finding] = []

    def error(message: str) -> None:
        found.append(Finding("error", tool.name, message))

    def warn(message: str) -> None:
        found.append(Finding("warning", tool.name, message))

    if not _VALID_NAME.match(tool.name):
        error("the name must be 1-64 letters, digits, '_' or '-'")
    if tool.name.lower() in VAGUE_NAMES or len(tool.name) < 4:
        warn("vague name: use a verb and a noun that say what it does (like check_matchup)")
    description = tool.description.strip()
    if not description:
        error("no description: it is the only documentation the model gets")
    elif len(description) < 25:
        warn(f"short description ({len(description)} characters): say what it does, when to use it and what it returns")
    schema: Mapping[str, Any] = tool.parameters
    if schema.get("type") != "object":
        error("the parameters schema must be an object")
    properties: Mapping[str, Any] = schema.get("properties") or {}
    if properties and "required" not in schema:
        error("the schema has no 'required' list: the model cannot tell what it must send")
    if schema.get("additionalProperties") is not False:
        error("the schema allows extra fields (set additionalProperties: false) so wrong input fails fast")
    for name, prop in properties.items():
        if len(name) <= 1:
            warn(f"parameter {name!r}: a one-letter name tells the model nothing")
        if not prop.get("description") and "enum" not in prop:
            warn(f"parameter {name!r} has no description")
        if prop.get("type") == "string" and "enum" not in prop and "format" not in prop and "pattern" not in prop:
            if any(hint in name.lower() for hint in _FORMAT_HINTS) and not _mentions_format(prop.get("description", "")):
                warn(f"parameter {name!r} looks like it needs a format (e.g. YYYY-MM-DD); spell it out in its description")
    return found


def _mentions_format(description: str) -> bool:
    return bool(re.search(r"YYYY|ISO|format|like |e\.g\.|such as|\d", description))
