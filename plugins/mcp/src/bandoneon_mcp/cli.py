"""``bandoneon mcp list`` and ``bandoneon mcp serve``."""

from __future__ import annotations

import argparse
from typing import Any

import bandoneon

__all__ = ["add_mcp_command"]


def add_mcp_command(subparsers: Any) -> None:
    parser = subparsers.add_parser("mcp", help="MCP: list the configured servers, or serve tools and agents to MCP clients")
    parser.set_defaults(handler=lambda args: _help(parser))
    commands = parser.add_subparsers(title="mcp commands", metavar="COMMAND")

    listing = commands.add_parser("list", help="the servers of [plugins.mcp.servers], whether each starts, and their tools")
    listing.add_argument("--config", help="the bandoneon.toml to read (default: the one found from here)")
    listing.set_defaults(handler=_list)

    serve = commands.add_parser("serve", help="serve bandoneon tools and/or an agent to MCP clients (stdio or streamable HTTP)")
    serve.add_argument("--tools", action="append", default=[], help="MODULE[:ATTR] whose tools are served (repeatable)")
    serve.add_argument("--agent", help="MODULE:FACTORY: a function returning the Agent served as one tool")
    serve.add_argument("--agent-tool", default="ask_agent", help="the name of the agent's tool (default: ask_agent)")
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    serve.add_argument("--host", default="127.0.0.1", help="where the HTTP transport listens (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765)
    serve.set_defaults(handler=_serve)



def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 1


def _list(args: argparse.Namespace) -> int:
    from .listing import list_servers

    config = bandoneon.load_config(args.config)
    options = dict((config.plugins or {}).get("mcp") or {})
    print(list_servers(options, source=config.source))
    return 0


def _serve(args: argparse.Namespace) -> int:
    from .serve import serve

    serve(tools=args.tools, agent=args.agent, agent_tool=args.agent_tool, transport=args.transport, host=args.host, port=args.port)
    return 0
