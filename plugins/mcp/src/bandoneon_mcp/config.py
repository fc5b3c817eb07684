"""One MCP server as the user describes it: how to reach it and how far to trust it.

In Python (``Server(command="python", args=[...])``) or in ``bandoneon.toml``
(``[plugins.mcp.servers.NAME]``); both are checked the same way, when the plugin is built.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any

import attrs

import bandoneon

__all__ = ["DEFAULT_CALL_TIMEOUT", "Server", "servers_from_options"]

#: Seconds a request waits when neither ``call_timeout`` nor the agent's ``tool_timeout`` is
#: set: a server that never answers must not hold an agent for ever (MCP's TypeScript SDK
#: waits as long by default).
DEFAULT_CALL_TIMEOUT = 60.0

_SERVER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
_RANGES = {
    "startup_timeout": bandoneon.in_range(above=0, unit="seconds"),
    "call_timeout": bandoneon.in_range(above=0, unit="seconds", optional=True),
}


@attrs.frozen
class Server:
    """How to reach one MCP server, and what its tools may do in an agent.

    Exactly one of ``command`` (stdio: a program, its ``args``, extra ``env``, ``cwd``) and
    ``url`` (streamable HTTP, with ``headers``) is given.

    :param trusted: its results are our own text; by default they are outside text
        (``untrusted_output``), which the guard marks and counts as a trifecta leg.
    :param allow: globs of the server's tool names to offer (empty: all).
    :param deny: globs of tool names never offered (wins over ``allow``).
    :param needs_approval: globs of tool names a person approves first (``["*"]``: every tool).
    :param capabilities: bandoneon capabilities its tools declare (``reads_private``, ``sends_out``...).
    :param prefix: put before every tool name (``git_``); without it a name is prefixed with
        ``<server>_`` only when it clashes (see the README's naming rule).
    :param resources: also offer ``list_resources`` / ``read_resource`` tools for this server.
    :param startup_timeout: seconds to start and initialize before giving up.
    :param call_timeout: seconds one request may take (None: the agent's ``tool_timeout`` for
        a tool call, else ``DEFAULT_CALL_TIMEOUT``; no request waits for ever).
    :param required: an agent cannot be built while this server fails to start (otherwise:
        a warning, and its tools are missing).
    """

    command: str | None = None
    args: list[str] = attrs.Factory(list)
    env: dict[str, str] = attrs.Factory(dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = attrs.Factory(dict)
    trusted: bool = False
    allow: list[str] = attrs.Factory(list)
    deny: list[str] = attrs.Factory(list)
    needs_approval: list[str] = attrs.Factory(list)
    capabilities: list[str] = attrs.Factory(list)
    prefix: str | None = None
    resources: bool = False
    startup_timeout: float = 20.0
    call_timeout: float | None = None
    required: bool = False

    def check(self, name: str) -> None:
        """Raise ``ConfigError`` naming the server and the field on a mistake."""
        where = f"MCP server {name!r}"
        if not _SERVER_NAME.match(name):
            raise bandoneon.ConfigError(f"{where}: a server name is 1-32 letters, digits, '_' or '-', starting with a letter")
        if (self.command is None) == (self.url is None):
            raise bandoneon.ConfigError(f"{where}: give exactly one of 'command' (stdio) or 'url' (streamable HTTP)")
        if self.command is not None and not self.command.strip():
            raise bandoneon.ConfigError(f"{where}: 'command' is empty")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise bandoneon.ConfigError(f"{where}: 'url' must start with http:// or https://, got {self.url!r}")
        if self.url is not None and (self.args or self.env or self.cwd):
            raise bandoneon.ConfigError(f"{where}: 'args', 'env' and 'cwd' are for stdio servers ('command'), not 'url'")
        if self.command is not None and self.headers:
            raise bandoneon.ConfigError(f"{where}: 'headers' are for HTTP servers ('url'), not 'command'")
        unknown = set(self.capabilities) - bandoneon.CAPABILITIES
        if unknown:
            raise bandoneon.ConfigError(f"{where}: unknown capabilities {sorted(unknown)}; known: {sorted(bandoneon.CAPABILITIES)}")
        for option, allowed in _RANGES.items():
            allowed.check(option, getattr(self, option), owner=where)

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    @property
    def key(self) -> tuple[Any, ...]:
        """What makes two configurations the same server process (shared by their agents)."""
        return (self.command, tuple(self.args), tuple(sorted(self.env.items())), self.cwd, self.url, tuple(sorted(self.headers.items())))

    def call_limit(self) -> float:
        """Seconds one request may take when nothing else bounds it: ``call_timeout``, else
        ``DEFAULT_CALL_TIMEOUT`` (a tool call in a run is bounded by the loop: see ``tools``)."""
        return self.call_timeout or DEFAULT_CALL_TIMEOUT

    def offers(self, tool_name: str) -> bool:
        """Does the allow/deny filter let this tool through?"""
        if any(fnmatch.fnmatchcase(tool_name, pattern) for pattern in self.deny):
            return False
        return not self.allow or any(fnmatch.fnmatchcase(tool_name, pattern) for pattern in self.allow)

    def approval_needed(self, tool_name: str) -> bool:
        return any(fnmatch.fnmatchcase(tool_name, pattern) for pattern in self.needs_approval)


def servers_from_options(servers: Any) -> dict[str, Server]:
    """Plain mappings (code or bandoneon.toml) or ``Server`` objects, each checked."""
    if not isinstance(servers, dict):
        raise bandoneon.ConfigError(f"options of plugin 'mcp': 'servers' must be a table of servers, got {type(servers).__name__}")
    made: dict[str, Server] = {}
    for name, spec in servers.items():
        if isinstance(spec, Server):
            server = spec
        else:
            try:
                server = bandoneon.structure(spec, Server)
            except bandoneon.StructureError as exc:
                raise bandoneon.ConfigError(f"options of plugin 'mcp': server {name!r}: {' '.join(exc.problems)}") from None
        server.check(name)
        made[name] = server
    return made
