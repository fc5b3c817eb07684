"""The hook bandoneon-mcp publishes: policy packs (or any plugin) decide which servers an
agent may use. Implement it with ``@bandoneon.hookimpl`` in the pack's plugin class."""

from __future__ import annotations

import bandoneon

from .config import Server

__all__ = ["mcp_server_allowed"]


@bandoneon.hookspec(bandoneon.Calls.FIRST, sync=True)
def mcp_server_allowed(agent: bandoneon.Agent, name: str, server: Server) -> bandoneon.Refuse | None:
    """May ``agent`` use the MCP server ``name``? Asked before the server is started for it.

    :param agent: the agent being built.
    :param name: the server's name in the configuration.
    :param server: how it is reached (``command``/``args`` or ``url``) and its options.
    :return: None: no objection; ``Refuse(reason)``: the server is not started for this agent
        and none of its tools is added (a ``McpServerWarning`` gives the reason; a ``required``
        server makes building the agent fail). The first answer wins; policy packs run first.

    .. versionadded:: 0.1
    """
