"""What ``bandoneon mcp list`` prints: each server, whether it starts, and its tools."""

from __future__ import annotations

from typing import Any

import bandoneon

from .config import servers_from_options
from .events import ServerUnavailable
from .hub import hub

__all__ = ["list_servers"]


def list_servers(options: dict[str, Any], *, source: str) -> str:
    """Start each configured server once, list its tools, close it again."""
    try:
        servers = servers_from_options(options.get("servers", {}))
    except bandoneon.ConfigError as exc:
        raise bandoneon.ConfigError(f"{source}: {exc}") from None
    if not servers:
        return f"no MCP servers configured in {source} (add [plugins.mcp.servers.NAME] tables)"
    lines = []
    lease = hub.new_lease()
    try:
        for name, server in servers.items():
            where = server.command and " ".join([server.command, *server.args]) or server.url
            try:
                connection = hub.wait(hub.acquire(lease, name, server))
            except ServerUnavailable as exc:
                lines.append(f"{name} ({server.transport}: {where}): does not start: {_shown(str(exc))}")
                continue
            trust = "trusted" if server.trusted else "untrusted results"
            lines.append(f"{name} ({server.transport}: {where}): starts, {len(connection.tools)} tools, {trust}")
            for tool in connection.tools:
                shown = "" if server.offers(tool.name) else "  [filtered out]"
                summary = (tool.description or "").strip().splitlines()[0][:90] if tool.description else ""
                lines.append(f"  {_shown(tool.name)}: {_shown(summary)}{shown}")
    finally:
        hub.wait(hub.release(lease))
    return "\n".join(lines)


def _shown(text: str) -> str:
    """A server's text on one line of the listing, shown and never obeyed by the terminal
    (a hostile server's description could carry escape sequences)."""
    return bandoneon.for_terminal(text).replace("\n", "\\n")
