"""examples/mcp_time_and_git.py runs end to end against a scripted model and the real servers."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bandoneon.testing import ScriptedModel, call, load_script
from mcp_helpers import tool_results

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "mcp_time_and_git.py"


def test_the_example_asks_both_servers_and_answers(tmp_path, capsys):
    repo = tmp_path / "school"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=test@example.org"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (repo / "classes.txt").write_text("Beginners: Tuesday\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Add the class schedule"], check=True)
    model = ScriptedModel(
        [call("get_current_time", timezone="Asia/Tokyo"), call("git_log", repo_path=str(repo), max_count=1)],
        "It is evening in Tokyo; the last commit added the class schedule.",
    )
    result = load_script(EXAMPLE).main(model, repo)
    out = capsys.readouterr().out
    assert result.ok
    assert "tools from MCP: convert_time, get_current_time, git_branch, git_diff, git_diff_staged, git_diff_unstaged, git_log, git_show, git_status" in out
    tokyo, log = (text for text, _ in tool_results(result))
    assert '"timezone": "Asia/Tokyo"' in tokyo
    assert "Add the class schedule" in log
