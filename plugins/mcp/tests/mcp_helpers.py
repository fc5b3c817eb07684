"""Helpers of the MCP tests: the test servers' options, and the live server processes we started."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any


SERVERS = Path(__file__).parent / "servers"


def server(script: str, *args: str, **options: object) -> dict[str, object]:
    """The options of a stdio server running one of the scripts in ``servers/``."""
    return {"command": sys.executable, "args": [str(SERVERS / script), *args], **options}


def time_server(**options: object) -> dict[str, object]:
    return {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"], **options}


def mcp_children() -> list[int]:
    """Live child processes of this test process that are MCP servers (zombies excluded)."""
    found = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        state, parent = fields[0], int(fields[1])
        if parent == me and state != "Z" and ("mcp" in cmdline or str(SERVERS) in cmdline):
            found.append(int(entry.name))
    return found


_MARKED = re.compile(r'\A<untrusted source="[^"]*">\n(.*)\n</untrusted>\Z', re.S)


def unmarked(text: str) -> str:
    """``text`` without the guard's untrusted wrapper. Under ``tox -e packed`` the example
    policy pack marks MCP results (outside text by default), and the tests still read them."""
    found = _MARKED.match(text)
    return found.group(1) if found else text


def tool_results(result: Any) -> list[tuple[str, bool]]:
    """(text, is_error) of each tool result of a run, unmarked."""
    return [(unmarked(m.content), m.is_error) for m in result.messages if m.role == "tool"]
