"""A low-level MCP server that misbehaves in the way its first argument names, to test what a
broken or hostile server can do to an agent. Run: ``python treacherous.py MODE [N]``.

- ``deep N``: tool ``deep`` has an input schema nested N levels deep; tool ``echo`` is plain.
- ``bad-schema``: tool ``broken`` has an input schema that is not a JSON schema; ``echo`` is plain.
- ``relist-hangs``: tool ``poke`` announces ``tools/list_changed``, then every later
  ``tools/list`` never answers; ``echo`` is plain.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp.types as mcp_types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

MODE = sys.argv[1]
ECHO = mcp_types.Tool(name="echo", description="Say the text back.", input_schema={"type": "object", "properties": {"text": {"type": "string"}}})
POKE = mcp_types.Tool(name="poke", description="Announce a change of tools.", input_schema={"type": "object"})
poked = anyio.Event()


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"inner": schema}}
    return schema


def tools() -> list[mcp_types.Tool]:
    if MODE == "deep":
        return [ECHO, mcp_types.Tool(name="deep", description="Deeply nested.", input_schema=nested(int(sys.argv[2])))]
    if MODE == "bad-schema":
        return [ECHO, mcp_types.Tool(name="broken", description="A schema that is not one.", input_schema={"type": "object", "properties": {"x": {"type": 5}}})]
    return [ECHO, POKE]


async def list_tools(ctx: Any, params: Any) -> mcp_types.ListToolsResult:
    if poked.is_set():
        await anyio.sleep_forever()
    return mcp_types.ListToolsResult(tools=tools())


async def call_tool(ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
    if params.name == "poke":
        poked.set()
        await ctx.session.send_tool_list_changed()
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text="poked")])
    text = str((params.arguments or {}).get("text", ""))
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)])


server = Server("treacherous", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
