"""The MCP tests: no test leaves a connection open or a server process running.

Starting a server costs seconds on a busy machine, so the two servers most tests use are
kept warm for the session by one lease of our own (agents share live servers, as in any
process). Tests about starting and stopping use servers with their own options (another
``env``), which are not kept warm, and the check after each test covers them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import bandoneon
import pytest
from bandoneon_mcp import Server
from bandoneon_mcp.hub import hub

sys.path.insert(0, str(Path(__file__).parent))  # the tests import mcp_helpers (pytest runs with importmode=importlib)

from mcp_helpers import mcp_children, server, time_server  # noqa: E402

WARM = {"box": server("toolbox.py"), "time": time_server()}


@pytest.fixture(scope="session", autouse=True)
def warm_servers():
    lease = hub.new_lease()
    keys = {bandoneon.structure(options, Server).key for options in WARM.values()}
    for name, options in WARM.items():
        hub.wait(hub.acquire(lease, name, bandoneon.structure(options, Server)))
    warm = set(mcp_children())
    yield keys, warm
    hub.wait(hub.release(lease))
    assert hub.connections() == []
    assert mcp_children() == [], f"MCP server processes left running: {mcp_children()}"


@pytest.fixture(autouse=True)
def no_leaked_servers(warm_servers):
    """After each test: only the warm servers are open and alive."""
    keys, warm = warm_servers
    yield
    left = [c.name for c in hub.connections() if c.server.key not in keys]
    assert left == [], f"MCP connections left open: {left}"
    extra = set(mcp_children()) - warm
    assert not extra, f"MCP server processes left running: {sorted(extra)}"
