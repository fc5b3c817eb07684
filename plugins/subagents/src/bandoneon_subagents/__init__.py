"""bandoneon-subagents: a whole agent, handed to its parent as one tool (level 15)."""

from ._events import SubagentEvent
from .plugin import SubagentSpec, Subagents
from ._tool import DEFAULT_MAX_DEPTH, subagent

__all__ = ["DEFAULT_MAX_DEPTH", "SubagentEvent", "SubagentSpec", "Subagents", "subagent"]
