"""bandoneon-compaction: shrink the history before it overflows the model's window (level 7).

Before each model call, when the request passes ``threshold × window`` tokens, old tool
results become one-line notes, then old exchanges go whole, then (optionally) the model
summarises what went. A tool result no request could hold is cut when it arrives, to its
start and its end. The working history (``agent.messages``) is the compacted one;
``agent.transcript`` keeps everything that happened.
"""

from ._shrink import Shrunk, is_note, shrink_history
from ._summary import SUMMARY_PREFIX, SUMMARY_PROMPT
from ._tokens import estimate_tokens, fixed_tokens, message_tokens
from .plugin import Compaction, WindowUnknownWarning

__all__ = [
    "SUMMARY_PREFIX",
    "SUMMARY_PROMPT",
    "Compaction",
    "Shrunk",
    "WindowUnknownWarning",
    "estimate_tokens",
    "fixed_tokens",
    "is_note",
    "message_tokens",
    "shrink_history",
]
