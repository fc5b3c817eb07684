"""Review tools the way the model sees them (level 3, "Check your tools like the model would").

The card is read: name, description, schema. Errors are things a model cannot work around (no
description, a schema that accepts anything); warnings are things that make it guess.

Then the output is measured ("Measure the output"): a tool run on sample arguments (its
``examples=``, or ``--sample``) has its result counted in characters and estimated tokens, and a
result above a share of the context window is a warning that says how to shrink it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from .errors import ToolError
from .tools import ArgumentsError, Tool

__all__ = ["DEFAULT_MAX_SHARE", "DEFAULT_WINDOW", "Finding", "check_tools", "estimate_tokens", "measure_examples", "measure_tool", "run_sample"]

#: The window results are measured against, in tokens (tell it your model's real one: --window).
DEFAULT_WINDOW = 32_000
#: The share of that window one result may take before it is a warning.
DEFAULT_MAX_SHARE = 0.05
#: Four characters a token: the level's estimate, fine for deciding whether a result is too big.
CHARACTERS_PER_TOKEN = 4
SHRINK_ADVICE = (
    "shrink it: paginate (return one page and a cursor for the next), summarise (return the lines "
    "the model needs, not the whole record), or return a handle (keep the data, return an id a second "
    "tool reads a part of)"
)

VAGUE_NAMES = frozenset(
    {"do", "do_stuff", "stuff", "run", "execute", "process", "handle", "tool", "helper", "func", "function",
     "action", "misc", "util", "utils", "data", "get", "query", "call", "thing", "doit", "main", "test"}
)
_VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
_FORMAT_HINTS = ("date", "time", "email", "url", "uri", "id", "phone", "path", "currency", "country", "code")


@attrs.frozen
class Finding:
    severity: str  # "error", "warning" or "size" (a measurement, neither good nor bad)
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


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARACTERS_PER_TOKEN)


def run_sample(tool: Tool, arguments: Mapping[str, Any]) -> tuple[str, bool]:
    """Run ``tool`` on ``arguments`` as the loop would (validated, no run context) and return the
    text the model would read and whether it is an error. Arguments that do not fit the tool
    raise ``ArgumentsError``; any other failure of the tool raises as is."""
    import asyncio  # kept out of `import bandoneon`; checking tools is a command, not the hot path

    validated = tool.validate(json.dumps(dict(arguments)))
    try:
        return asyncio.run(tool.invoke(validated, None)), False
    except ToolError as exc:
        return str(exc), True


def measure_tool(tool: Tool, arguments: Mapping[str, Any], *, window: int = DEFAULT_WINDOW, max_share: float = DEFAULT_MAX_SHARE) -> list[Finding]:
    """The size of ``tool``'s result on ``arguments``: a ``size`` finding, plus a warning saying how
    to shrink it when it takes more than ``max_share`` of a ``window``-token context."""
    label = f"{tool.name}({json.dumps(dict(arguments), ensure_ascii=False, default=str)})"
    try:
        text, is_error = run_sample(tool, arguments)
    except ArgumentsError as exc:
        return [Finding("error", label, f"the sample arguments do not fit the tool: {exc}")]
    except Exception as exc:
        return [Finding("error", label, f"the tool raised {type(exc).__name__}: {exc} (a model would get an error, not a result)")]
    tokens = estimate_tokens(text)
    share = tokens / window
    kind = "error result" if is_error else "result"
    found = [Finding("size", label, f"{kind} of {len(text):,} characters, ~{tokens:,} tokens ({share:.1%} of a {window:,}-token window)")]
    if share > max_share:
        found.append(Finding("warning", label, f"one result takes {share:.1%} of the window (limit {max_share:.0%}), and the model reads it again every turn; {SHRINK_ADVICE}"))
    return found


def measure_examples(tools: Iterable[Tool], *, window: int = DEFAULT_WINDOW, max_share: float = DEFAULT_MAX_SHARE) -> list[Finding]:
    """``measure_tool`` on every example every tool declares (``@tool(examples=[...])``)."""
    return [finding for tool in tools for example in tool.examples for finding in measure_tool(tool, example, window=window, max_share=max_share)]
