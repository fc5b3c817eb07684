"""``list_resources`` / ``read_resource``: a server's resources on demand, as two tools.

The model sees a short catalogue and reads only what it needs, the skill-like pattern of
level 8 with an MCP server as the source. Names follow the tool naming rule of ``tools``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Annotated

import bandoneon

from .descriptions import server_words
from .results import resource_text
from .tools import bandoneon_name

if TYPE_CHECKING:
    from .plugin import McpPlugin

__all__ = ["resource_tools"]


def resource_tools(plugin: McpPlugin, server_name: str, taken: Collection[str]) -> list[bandoneon.Tool]:
    server = plugin.servers[server_name]

    async def list_resources() -> str:
        """List the resources this MCP server offers: one line each, its URI first."""
        found = (await plugin.list_resources(server_name))[server_name]
        if not found:
            return f"MCP server {server_name!r} lists no resources."
        lines = []
        for resource in found:
            about = f": {_one_line(resource.description)}" if resource.description else ""
            mime = f" ({resource.mime_type})" if resource.mime_type else ""
            lines.append(f"{resource.uri} — {_one_line(resource.name)}{mime}{about}")
        return "\n".join(lines)

    async def read_resource(uri: Annotated[str, "The resource's URI, as list_resources gives it."]) -> str:
        """Read one resource of this MCP server."""
        contents = await plugin.read_resource(uri, server=server_name)
        return "\n".join(resource_text(c) for c in contents) or f"The resource {uri} is empty."

    made = []
    names = set(taken)
    for function in (list_resources, read_resource):
        name = bandoneon_name(server_name, server, function.__name__, names)
        names.add(name)
        made.append(
            bandoneon.tool(
                name=name,
                description=f"{function.__doc__} (MCP server {server_name!r})",
                needs_approval=server.approval_needed(function.__name__),
                untrusted_output=not server.trusted,
                capabilities=server.capabilities,
                timeout=server.call_timeout,
            )(function)
        )
    return made


def _one_line(said: str) -> str:
    """A server's words on one line of the catalogue (``server_words``, white space runs as one space)."""
    return " ".join(server_words(said).split())
