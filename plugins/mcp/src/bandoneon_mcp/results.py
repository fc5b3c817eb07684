"""What an MCP result becomes in the history: the text the model reads.

Text parts are kept as they are. Structured content is given as JSON when there is no text
part (servers are asked to send the same object as text too, so with text it would be said twice). Images, audio and binary
resources cannot be shown to the model through a text result, so each becomes one line that
says what it was (type and size), never a wall of base64.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from typing import Any

import mcp.types as mcp_types

__all__ = ["content_text", "resource_text", "tool_result_text"]


def tool_result_text(result: mcp_types.CallToolResult) -> str:
    """The model's view of a ``tools/call`` result (errors included: ``is_error`` is the caller's)."""
    parts = content_text(result.content)
    structured = result.structured_content
    if structured is not None and not any(getattr(block, "type", None) == "text" for block in result.content):
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts) if parts else "(the tool returned no content)"


def content_text(blocks: Iterable[Any]) -> list[str]:
    """One string per content block."""
    parts = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {block.mime_type}, {_decoded_size(block.data)} bytes: not shown as text]")
        elif kind == "resource":
            parts.append(resource_text(block.resource))
        elif kind == "resource_link":
            description = f": {block.description}" if getattr(block, "description", None) else ""
            parts.append(f"[resource {block.uri} ({block.name}){description}]")
        else:
            parts.append(f"[{kind or type(block).__name__} content: not shown as text]")
    return parts


def resource_text(contents: Any) -> str:
    """One resource's contents: its text under a header naming it, or a line for a blob."""
    mime = f" ({contents.mime_type})" if getattr(contents, "mime_type", None) else ""
    text = getattr(contents, "text", None)
    if text is not None:
        return f"[resource {contents.uri}{mime}]\n{text}"
    return f"[resource {contents.uri}{mime}, {_decoded_size(getattr(contents, 'blob', ''))} bytes of binary data: not shown as text]"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)
