"""bandoneon-sandbox: run the code the agent writes in a box (level 14, "the bunker").

``run_code`` executes Python in a fresh bubblewrap sandbox per call: no network, no host
environment, no host files except one folder mounted read-only when asked, caps on memory,
time, processes and output. Without bubblewrap the tool fails saying what to install; it
never runs the code unsandboxed.
"""

from __future__ import annotations

from ._box import Box, check_sandbox
from ._limits import Limits, SandboxUnavailable
from .plugin import Sandbox
from ._runner import BoxResult
from ._tool import format_result, run_code_tool

__all__ = ["Box", "BoxResult", "Limits", "Sandbox", "SandboxUnavailable", "check_sandbox", "format_result", "run_code_tool"]
