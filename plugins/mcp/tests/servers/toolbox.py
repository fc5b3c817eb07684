"""A small MCP server for the tests, on the official SDK: every kind of result, a slow tool
that records whether it was cancelled, a tool that adds a tool (``tools/list_changed``),
a resource and a prompt. Run: ``python toolbox.py [--http PORT]``."""

from __future__ import annotations

import asyncio
import base64
import os
import sys

import mcp.types as mcp_types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("toolbox")

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 24).decode()


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
async def slow(seconds: float, marker: str) -> str:
    """Sleep, writing to the marker file when it starts and when it is cancelled."""
    with open(marker, "a") as f:
        f.write("started\n")
    try:
        await asyncio.sleep(seconds)
    except BaseException:
        with open(marker, "a") as f:
            f.write("cancelled\n")
        raise
    return "slept"


@server.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(reason)


@server.tool()
def weather(city: str) -> dict[str, object]:
    """Structured content."""
    return {"city": city, "celsius": 21}


@server.tool()
def mixed() -> list[mcp_types.ContentBlock]:
    """Text, an image and an embedded resource."""
    return [
        mcp_types.TextContent(type="text", text="a picture follows"),
        mcp_types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        mcp_types.EmbeddedResource(
            type="resource",
            resource=mcp_types.TextResourceContents(uri="notes://attached", mime_type="text/plain", text="attached note"),
        ),
    ]


@server.tool()
async def grow(ctx: Context) -> str:
    """Add a tool named 'extra' and tell the client the tool list changed."""

    def extra() -> str:
        """A tool that appeared later."""
        return "extra here"

    server.add_tool(extra)
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool()
async def vanish(ctx: Context) -> str:
    """Remove this very tool and tell the client the tool list changed."""
    server.remove_tool("vanish")
    await ctx.session.send_tool_list_changed()
    return "gone"


@server.resource("notes://today", mime_type="text/plain", description="Today's note")
def today() -> str:
    return "Milonga at nine."


@server.prompt()
def greet(name: str) -> str:
    """A greeting prompt."""
    return f"Greet {name} warmly."


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
