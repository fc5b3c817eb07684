"""``bandoneon mcp list``: each configured server, whether it starts, and its tools."""

from __future__ import annotations

import json
import sys

from bandoneon.cli import main
from mcp_helpers import SERVERS


def _server(name: str, args: list[str], extra: str = "") -> str:
    """A ``[plugins.mcp.servers.NAME]`` table running this Python with ``args``."""
    return f"\n[plugins.mcp.servers.{name}]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n{extra}\n"


def test_mcp_list_shows_servers_tools_and_the_ones_that_do_not_start(tmp_path, capsys):
    config = tmp_path / "bandoneon.toml"
    config.write_text(
        _server("time", ["-m", "mcp_server_time", "--local-timezone", "UTC"], 'deny = ["convert_time"]')
        + _server("broken", [str(SERVERS / "exits.py")])
    )
    assert main(["mcp", "list", "--config", str(config)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("time (stdio: ") and out[0].endswith("starts, 2 tools, untrusted results")
    assert "  get_current_time: Get current time in a specific timezone" in out
    assert "  convert_time: Convert time between timezones  [filtered out]" in out
    [broken] = [line for line in out if line.startswith("broken")]
    assert "does not start" in broken and "permission denied" in broken


def test_mcp_list_without_servers_says_how_to_add_one(tmp_path, capsys):
    config = tmp_path / "bandoneon.toml"
    config.write_text('model = "ollama:llama3.1"\n')
    assert main(["mcp", "list", "--config", str(config)]) == 0
    assert "[plugins.mcp.servers.NAME]" in capsys.readouterr().out


def test_mcp_list_shows_a_servers_control_sequences_written_out_never_obeyed(tmp_path, capsys):
    config = tmp_path / "bandoneon.toml"
    config.write_text(_server("hostile", [str(SERVERS / "hostile.py")]))
    assert main(["mcp", "list", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\x07\r\u202e")
    assert "  lookup: \\x1b]52;c;cm0gLXJmIH4=\\x07Reads \\x1b[2Kfiles\\u202etxt.exe" in out.splitlines()
