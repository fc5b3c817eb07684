"""Allow rules and redactions: what a call's arguments must satisfy, what a result must hide.

A ``Rule`` names a tool (or a glob of tool names), optionally one argument, and one check.
A call the rule applies to must pass the check; when it does not, the rule's ``action``
happens: ``deny`` (the call never runs, the model reads why) or ``approve`` (a person is
asked first). A rule with no check always takes its action: ``tool = "delete_*"`` with
``action = "deny"`` forbids those tools outright.

Every check fails closed: a missing argument, a value of the wrong type, a path that cannot
be resolved, a command that cannot be parsed are all refusals, never a pass.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs

import bandoneon

__all__ = ["CHECKS", "Redaction", "Rule", "redaction_from_mapping", "rule_from_mapping"]

#: The kinds of check a rule may carry (``min`` and ``max`` may be combined).
CHECKS = ("one_of", "matches", "under", "commands", "min", "max")
ACTIONS = ("deny", "approve")
_RULE_KEYS = frozenset({"name", "tool", "argument", "action", "message", *CHECKS})
_REDACTION_KEYS = frozenset({"name", "pattern", "replacement", "tools"})
# Characters that let one shell command line run another one: a command rule refuses them
# outright instead of trying to parse shell grammar.
_SHELL_OPERATORS = frozenset(";|&`$<>(){}\n\r")


def _problem(source: str, what: str, name: str | None, message: str) -> bandoneon.ConfigError:
    label = f"{what} {name!r}" if name else what
    return bandoneon.ConfigError(f"{source}: {label}: {message}")


@attrs.frozen
class Rule:
    """One allow rule. Declare it in Python, or as a ``[[rule]]`` table in a TOML policy file.

    ``tool`` is a tool name or a glob (``"fetch_*"``); ``argument`` names the argument to
    check (``"to"``, or a dotted path into an object argument, ``"order.amount"``).
    Checks: ``one_of`` (values allowed), ``matches`` (a regex the whole value must match),
    ``under`` (folders a path must resolve into, after ``..`` and symlinks), ``commands``
    (command lines allowed, matched word by word, never by prefix), ``min`` / ``max``
    (numeric bounds). ``message`` is what the model reads when the rule stops a call.
    """

    name: str
    tool: str = "*"
    argument: str | None = None
    one_of: tuple[Any, ...] | None = attrs.field(default=None, converter=lambda v: None if v is None else tuple(v))
    matches: str | None = None
    under: tuple[str, ...] | None = attrs.field(default=None, converter=lambda v: None if v is None else tuple(v))
    commands: tuple[str, ...] | None = attrs.field(default=None, converter=lambda v: None if v is None else tuple(v))
    min: float | None = None
    max: float | None = None
    action: Literal["deny", "approve"] = "deny"
    message: str = ""
    source: str = "python"
    _pattern: re.Pattern[str] | None = attrs.field(default=None, init=False, repr=False, eq=False)
    _command_words: tuple[tuple[str, ...], ...] = attrs.field(default=(), init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        def fail(message: str) -> bandoneon.ConfigError:
            return _problem(self.source, "rule", self.name, message)

        if not isinstance(self.name, str) or not self.name:
            raise _problem(self.source, "rule", None, "every rule needs a non-empty 'name'")
        if not isinstance(self.tool, str) or not self.tool:
            raise fail("'tool' must be a tool name or a glob such as 'fetch_*'")
        if self.action not in ACTIONS:
            raise fail(f"'action' must be one of {', '.join(ACTIONS)}, got {self.action!r}")
        kinds = [kind for kind in ("one_of", "matches", "under", "commands") if getattr(self, kind) is not None]
        if self.min is not None or self.max is not None:
            kinds.append("min/max")
        if len(kinds) > 1:
            raise fail(f"a rule carries one check, this one has {' and '.join(kinds)}; split it into several rules")
        if kinds and self.argument is None:
            raise fail(f"the check {kinds[0]!r} needs 'argument' (the name of the argument it checks)")
        if self.matches is not None:
            if not isinstance(self.matches, str):
                raise fail("'matches' must be a regular expression (a string)")
            try:
                object.__setattr__(self, "_pattern", re.compile(self.matches))
            except re.error as exc:
                raise fail(f"'matches' is not a valid regular expression ({exc}): {self.matches!r}") from None
        for bound in ("min", "max"):
            value = getattr(self, bound)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise fail(f"{bound!r} must be a number, got {value!r}")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise fail(f"'min' ({self.min}) is greater than 'max' ({self.max}); no value could pass")
        if self.under is not None and (not self.under or not all(isinstance(f, str) and f for f in self.under)):
            raise fail("'under' must be a non-empty list of folders")
        if self.commands is not None:
            words = []
            for command in self.commands:
                try:
                    split = tuple(shlex.split(command)) if isinstance(command, str) else ()
                except ValueError as exc:
                    raise fail(f"command {command!r} cannot be parsed: {exc}") from None
                if not split:
                    raise fail(f"'commands' must hold non-empty command lines, got {command!r}")
                words.append(split)
            object.__setattr__(self, "_command_words", tuple(words))

    @property
    def check(self) -> str | None:
        """The kind of check this rule carries, or None for a rule that always acts."""
        for kind in ("one_of", "matches", "under", "commands"):
            if getattr(self, kind) is not None:
                return kind
        return "min/max" if self.min is not None or self.max is not None else None

    def applies_to(self, tool_name: str) -> bool:
        return fnmatch.fnmatchcase(tool_name, self.tool)

    def problem(self, arguments: Mapping[str, Any], cwd: Path) -> str | None:
        """Why the call breaks this rule, in a sentence for the model; None when it passes."""
        if self.check is None:
            return f"{self.tool} is not allowed" if self.action == "deny" else f"{self.tool} needs a person's approval"
        assert self.argument is not None
        found, value = _lookup(arguments, self.argument)
        if not found or value is None:
            return f"the argument {self.argument!r} is missing, and this rule cannot be checked without it"
        what = f"{self.argument!r}"
        if self.one_of is not None:
            if not any(type(allowed) is type(value) and allowed == value for allowed in self.one_of):
                return f"{what} must be one of {', '.join(map(_show, self.one_of))}; got {_show(value)}"
        elif self._pattern is not None:
            if not isinstance(value, str) or self._pattern.fullmatch(value) is None:
                return f"{what} must match {self.matches!r}; got {_show(value)}"
        elif self.under is not None:
            return _path_problem(what, value, self.under, cwd)
        elif self.commands is not None:
            return _command_problem(what, value, self._command_words)
        else:
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                return f"{what} must be a number; got {_show(value)}"
            if self.min is not None and value < self.min:
                return f"{what} must be at least {_show(self.min)}; got {_show(value)}"
            if self.max is not None and value > self.max:
                return f"{what} must be at most {_show(self.max)}; got {_show(value)}"
        return None

    def as_table(self) -> dict[str, Any]:
        """The rule as a TOML table (``bandoneon policy show``)."""
        table: dict[str, Any] = {"name": self.name, "tool": self.tool}
        for key in ("argument", *CHECKS):
            value = getattr(self, key)
            if value is not None:
                table[key] = list(value) if isinstance(value, tuple) else value
        table["action"] = self.action
        if self.message:
            table["message"] = self.message
        table["source"] = self.source
        return table


@attrs.frozen
class Redaction:
    """Mask what ``pattern`` matches in the results of ``tools`` (globs) before the model reads them."""

    name: str
    pattern: str
    replacement: str = "[redacted]"
    tools: tuple[str, ...] = attrs.field(default=("*",), converter=tuple)
    source: str = "python"
    _compiled: re.Pattern[str] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise _problem(self.source, "redaction", None, "every redaction needs a non-empty 'name'")
        if not isinstance(self.pattern, str) or not self.pattern:
            raise _problem(self.source, "redaction", self.name, "'pattern' must be a non-empty regular expression")
        try:
            compiled = re.compile(self.pattern)
        except re.error as exc:
            raise _problem(self.source, "redaction", self.name, f"'pattern' is not a valid regular expression ({exc}): {self.pattern!r}") from None
        if compiled.match(""):
            raise _problem(self.source, "redaction", self.name, f"'pattern' {self.pattern!r} matches the empty string; it would mask between every character")
        if not isinstance(self.replacement, str):
            raise _problem(self.source, "redaction", self.name, "'replacement' must be a string")
        object.__setattr__(self, "_compiled", compiled)

    def applies_to(self, tool_name: str) -> bool:
        return any(fnmatch.fnmatchcase(tool_name, pattern) for pattern in self.tools)

    def apply(self, text: str) -> str:
        return self._compiled.sub(self.replacement, text)

    def as_table(self) -> dict[str, Any]:
        return {"name": self.name, "pattern": self.pattern, "replacement": self.replacement, "tools": list(self.tools), "source": self.source}


# ---------------------------------------------------------------- from TOML tables


def _checked_table(data: Any, kind: str, keys: frozenset[str], *, source: str, index: int) -> tuple[Any, str]:
    """The table's ``name`` and the label errors use for it; ``ConfigError`` if it is not a
    table or has a key a ``kind`` may not have."""
    if not isinstance(data, Mapping):
        raise bandoneon.ConfigError(f"{source}: {kind} #{index}: must be a table, got {data!r}")
    name = data.get("name")
    label = name if isinstance(name, str) and name else f"#{index}"
    unknown = sorted(set(data) - keys)
    if unknown:
        raise bandoneon.ConfigError(f"{source}: {kind} {label!r}: unknown key {unknown[0]!r}; a {kind} may have {', '.join(sorted(keys))}")
    return name, label


def rule_from_mapping(data: Any, *, source: str, index: int) -> Rule:
    """A rule from a ``[[rule]]`` table; ``ConfigError`` naming the file and the rule."""
    name, label = _checked_table(data, "rule", _RULE_KEYS, source=source, index=index)
    for key in ("name", "tool", "argument", "message", "matches", "action"):
        if key in data and not isinstance(data[key], str):
            raise bandoneon.ConfigError(f"{source}: rule {label!r}: {key!r} must be a string, got {data[key]!r}")
    for key in ("one_of", "under", "commands"):
        if key in data and not isinstance(data[key], list):
            raise bandoneon.ConfigError(f"{source}: rule {label!r}: {key!r} must be a list, got {data[key]!r}")
    if not isinstance(name, str) or not name:
        raise bandoneon.ConfigError(f"{source}: rule {label!r}: every rule needs a 'name' (it names the rule in refusals and errors)")
    return Rule(**dict(data), source=source)


def redaction_from_mapping(data: Any, *, source: str, index: int) -> Redaction:
    """A redaction from a ``[[redact]]`` table; ``ConfigError`` naming the file and the redaction."""
    name, label = _checked_table(data, "redaction", _REDACTION_KEYS, source=source, index=index)
    if "tools" in data and not (isinstance(data["tools"], list) and all(isinstance(t, str) for t in data["tools"])):
        raise bandoneon.ConfigError(f"{source}: redaction {label!r}: 'tools' must be a list of tool names or globs")
    if not isinstance(name, str) or not name:
        raise bandoneon.ConfigError(f"{source}: redaction {label!r}: every redaction needs a 'name'")
    return Redaction(**dict(data), source=source)


# ---------------------------------------------------------------- the checks


def _lookup(arguments: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    value: Any = arguments
    for part in dotted.split("."):
        if isinstance(value, Mapping):
            if part not in value:
                return False, None
            value = value[part]
        elif attrs.has(type(value)) and hasattr(value, part):
            value = getattr(value, part)
        else:
            return False, None
    return True, value


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _path_problem(what: str, value: Any, folders: Sequence[str], cwd: Path) -> str | None:
    """Resolve ``..`` and every symlink first, then compare exactly (case-sensitively).

    Comparing the *resolved* path is what stops ``allowed/../secret`` and a symlink inside
    the folder that points out of it. The comparison is case-sensitive on purpose: on a
    case-sensitive file system ``/srv/PUBLIC`` is a different folder from ``/srv/public``;
    on a case-insensitive one this may refuse a path that is really inside (the safe way).
    """
    if not isinstance(value, str) or not value:
        return f"{what} must be a path; got {_show(value)}"
    if "\x00" in value:
        return f"{what} contains a NUL character"
    if value.startswith("~"):
        return f"{what} starts with '~'; write the full path"
    candidate = Path(value)
    if not candidate.is_absolute():
        candidate = cwd / candidate
    try:
        resolved = Path(os.path.realpath(candidate))
    except (OSError, ValueError) as exc:
        return f"{what} cannot be resolved ({exc})"
    for folder in folders:
        root = Path(os.path.realpath(Path(folder).expanduser() if Path(folder).expanduser().is_absolute() else cwd / folder))
        if resolved == root or resolved.is_relative_to(root):
            return None
    shown = ", ".join(folders)
    return f"{what} must be a path inside {shown}; {_show(value)} resolves to {str(resolved)!r}, which is outside"


def _command_problem(what: str, value: Any, allowed: Sequence[tuple[str, ...]]) -> str | None:
    """The command line's first words must equal one allowed command's words exactly.

    ``ls`` allows ``ls -la`` but not ``lsblk``; any shell operator (``;``, ``|``, ``&&``,
    ``$( )``, redirections, backquotes) is refused, since it would start a second command.
    """
    if not isinstance(value, str) or not value.strip():
        return f"{what} must be a command line; got {_show(value)}"
    try:
        words = shlex.split(value)
    except ValueError as exc:
        return f"{what} cannot be parsed as a command line ({exc})"
    operators = sorted({c for word in words for c in word if c in _SHELL_OPERATORS})
    if operators:
        return f"{what} contains shell operators ({' '.join(repr(c) for c in operators)}); run one plain command at a time"
    for command in allowed:
        if tuple(words[: len(command)]) == command:
            return None
    return f"{what} must start with one of the allowed commands ({', '.join(' '.join(c) for c in allowed)}); got {_show(value)}"
