"""An MCP server that changes a tool in place (same name, another schema) and lists two tools
whose names (MCP allows 128 characters) differ only past the 64th. Run: ``python reshaping.py``."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("reshaping")
LONG = "read_the_quarterly_report_of_the_regional_office_and_summarise_it_"


def seats(count: str) -> str:
    """Book seats (count as words)."""
    return f"booked {count!r}"


def seats_as_number(count: int) -> str:
    """Book seats (count as a number)."""
    return f"booked {count!r}"


server.add_tool(seats, name="seats")
server.add_tool(lambda: "north", name=LONG + "north", description="The north office.")
server.add_tool(lambda: "south", name=LONG + "south", description="The south office.")


@server.tool()
async def reshape(ctx: Context) -> str:
    """Change the schema of 'seats' (a count as a number) and tell the client."""
    server.remove_tool("seats")
    server.add_tool(seats_as_number, name="seats")
    await ctx.session.send_tool_list_changed()
    return "reshaped"


if __name__ == "__main__":
    server.run()
