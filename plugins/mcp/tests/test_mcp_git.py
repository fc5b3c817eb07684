"""mcp-server-git (from PyPI) on a repository the test creates: reading and changing it."""

from __future__ import annotations

import subprocess
import sys

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_mcp import McpPlugin
from mcp_helpers import tool_results


@pytest.fixture
def repository(tmp_path):
    repo = tmp_path / "milongas"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=test@example.org"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (repo / "program.txt").write_text("La Viruta, Thursday\n")
    subprocess.run([*git, "add", "program.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "First programme"], check=True)
    (repo / "program.txt").write_text("La Viruta, Thursday\nSalon Canning, Friday\n")
    return repo


def git_server(repo, **options):
    return {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(repo)], **options}


def test_an_agent_reads_the_status_log_and_diff_of_a_repository(repository):
    where = str(repository)
    model = ScriptedModel(
        [call("git_status", repo_path=where), call("git_log", repo_path=where), call("git_diff_unstaged", repo_path=where)],
        "One change.",
    )
    mcp = McpPlugin(servers={"git": git_server(repository, allow=["git_status", "git_log", "git_diff_unstaged"])})
    agent = bandoneon.Agent(model, plugins=[mcp], context_files=False)
    try:
        assert sorted(agent.tools) == ["git_diff_unstaged", "git_log", "git_status"]
        result = agent.run_sync("What changed?")
    finally:
        agent.close()
    status, log, diff = (text for text, _ in tool_results(result))
    assert "modified:   program.txt" in status
    assert "First programme" in log
    assert "+Salon Canning, Friday" in diff


def test_a_path_outside_the_repository_is_an_error_result(repository, tmp_path):
    model = ScriptedModel(call("git_status", repo_path=str(tmp_path / "elsewhere")), "Cannot.")
    agent = bandoneon.Agent(model, plugins=[McpPlugin(servers={"git": git_server(repository, allow=["git_status"])})], context_files=False)
    try:
        result = agent.run_sync("status of elsewhere")
    finally:
        agent.close()
    [message] = [m for m in result.messages if m.role == "tool"]
    assert message.is_error and result.ok
