"""MCP · Two servers from PyPI, one agent: what time is it in Tokyo, and what changed here?

The agent gets its tools from two Model Context Protocol servers it did not write:
``mcp-server-time`` (time zones) and ``mcp-server-git`` (a repository, read-only: the allow
list leaves out the tools that change it). The servers start when the agent is built, are
shared by every agent of the process, and stop when the agent is closed. Their results are
outside text: with ``bandoneon-guard`` active they are marked as such.

Run it against any model (``pip install mcp-server-time mcp-server-git`` first):
``BANDONEON_MODEL=ollama:llama3.1 python examples/mcp_time_and_git.py [REPOSITORY]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import bandoneon
from bandoneon_mcp import McpPlugin

READ_ONLY_GIT = ["git_status", "git_log", "git_diff*", "git_show", "git_branch"]


def build_agent(model: str | bandoneon.Provider | None, repository: Path) -> bandoneon.Agent:
    mcp = McpPlugin(
        servers={
            "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "America/Argentina/Buenos_Aires"]},
            "git": {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(repository)], "allow": READ_ONLY_GIT},
        }
    )
    return bandoneon.Agent(
        model,
        plugins=[mcp],
        system_prompt=f"You help a tango school's developer. The repository is at {repository}. Answer in two sentences.",
        context_files=False,
    )


def main(model: str | bandoneon.Provider | None = None, repository: Path | None = None) -> bandoneon.RunResult:
    agent = build_agent(model, (repository or Path.cwd()).resolve())
    try:
        print("tools from MCP:", ", ".join(sorted(agent.tools)))
        result = agent.run_sync("What time is it in Tokyo now, and what was the last commit in the repository?")
    finally:
        agent.close()
    print(result.text)
    print(f"[{result.stop}, {result.turns} turns]")
    return result


if __name__ == "__main__":
    main(repository=Path(sys.argv[1]) if len(sys.argv) > 1 else None)
