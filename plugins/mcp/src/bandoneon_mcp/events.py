"""Events of the MCP plugin, and its one error type."""

from __future__ import annotations

from typing import ClassVar

import attrs

import bandoneon

__all__ = ["McpServerRestarted", "McpToolsChanged", "ServerUnavailable"]


class ServerUnavailable(bandoneon.BandoneonError):
    """An MCP server could not be started, or stopped; the message says which and why.

    ``was_sent`` is False when the request never left (the server was already gone), so
    repeating it after a restart cannot do the work twice.
    """

    def __init__(self, message: str, *, generation: int = 0, was_sent: bool = True):
        super().__init__(message)
        self.generation = generation
        self.was_sent = was_sent


@attrs.frozen(eq=False)
class McpServerRestarted(bandoneon.Event):
    """A server stopped during a run and was started again (once per run at most)."""

    name: ClassVar[str] = "mcp_server_restarted"
    server: str
    reason: str


@attrs.frozen(eq=False)
class McpToolsChanged(bandoneon.Event):
    """A server said its tools changed (``tools/list_changed``); the agent's tools were refreshed."""

    name: ClassVar[str] = "mcp_tools_changed"
    server: str
    added: tuple[str, ...]
    removed: tuple[str, ...]
