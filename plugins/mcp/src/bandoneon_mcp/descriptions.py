"""A server's words about its tools and resources, as the model reads them.

Descriptions reach the model on every request, beside our own instructions, and a server
may send anything: megabytes, terminal control sequences, invisible text. So each
description (a tool's, every ``description`` and ``title`` in its input schema, a
resource's) is cut at ``MAX_DESCRIPTION`` characters with a note saying so, loses the
characters that draw nothing or act instead of drawing, and a tool's description ends by
naming the server it comes from.
"""

from __future__ import annotations

from typing import Any

import mcp.types as mcp_types

import bandoneon

__all__ = ["MAX_DESCRIPTION", "schema_of", "server_words", "tool_description"]

#: Characters a description keeps at most (real servers write a few hundred; some, a page).
MAX_DESCRIPTION = 4000
#: Only this much of a description is looked at: enough for ``MAX_DESCRIPTION`` characters
#: that show, whatever number of dropped ones come between them in a fair description.
_READ = 4 * MAX_DESCRIPTION
_ANNOTATIONS = ("description", "title")


def server_words(text: str) -> str:
    """``text`` from a server, as the model may read it: what shows, at most ``MAX_DESCRIPTION``."""
    shown = bandoneon.visible_text(text[:_READ]).strip()
    if len(shown) <= MAX_DESCRIPTION and len(text) <= _READ:
        return shown
    return f"{shown[:MAX_DESCRIPTION].rstrip()}… (cut: the server's text is longer)"


def tool_description(server_name: str, tool: mcp_types.Tool) -> str:
    """The description the model reads for ``tool``: the server's words (or the tool's name, when
    they show nothing), and whose they are."""
    words = server_words(tool.description or tool.title or "") or server_words(tool.name)
    return f"{words} (from MCP server {server_name!r})"


def schema_of(tool: mcp_types.Tool) -> dict[str, Any]:
    """The input schema the model reads: the server's, with its descriptions and titles as
    ``server_words`` (arguments are still checked against the server's own schema)."""
    return _with_server_words(dict(tool.input_schema))


def _with_server_words(node: Any) -> Any:
    if isinstance(node, dict):
        return {key: server_words(value) if key in _ANNOTATIONS and isinstance(value, str) else _with_server_words(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_with_server_words(item) for item in node]
    return node
