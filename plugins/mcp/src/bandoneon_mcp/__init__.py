"""bandoneon-mcp: tools, resources and prompts from MCP servers; bandoneon served over MCP."""

from .config import Server
from .events import McpServerRestarted, McpToolsChanged, ServerUnavailable
from .plugin import McpPlugin, McpServerWarning

__all__ = ["McpPlugin", "McpServerRestarted", "McpServerWarning", "McpToolsChanged", "Server", "ServerUnavailable"]
