"""run_code as an agent sees it: the plugin, the factory, the errors, and the level 14 example."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call, load_script
from bandoneon_sandbox import Sandbox, check_sandbox, run_code_tool

UNAVAILABLE = asyncio.run(check_sandbox())
needs_box = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no sandbox on this machine: {UNAVAILABLE}")
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "level_14_sandbox.py"


def tool_result(model: ScriptedModel, request: int = 1) -> bandoneon.Message:
    return model.requests[request].messages[-1]


@needs_box
def test_the_plugin_gives_the_agent_run_code_and_the_output_comes_back():
    model = ScriptedModel(call("run_code", code="print(6 * 7)"), "It is 42.")
    agent = bandoneon.Agent(model, plugins=[Sandbox()], context_files=False)
    result = agent.run_sync("What is 6 times 7?")
    assert result.ok
    assert tool_result(model).content == "Exit code: 0.\nstdout:\n42\n"


@needs_box
def test_the_factory_tool_reports_stderr_exit_code_and_truncation():
    tool = run_code_tool(max_output_bytes=100)
    code = "import sys\nprint('y' * 500)\nprint('oops', file=sys.stderr)\nsys.exit(2)"
    model = ScriptedModel(call("run_code", code=code), "It failed.")
    bandoneon.Agent(model, tools=[tool], plugins=[], context_files=False).run_sync("go")
    content = tool_result(model).content
    assert content.startswith("Exit code: 2.") and "stderr:\noops" in content
    assert "[stdout truncated: 401 more bytes were not kept (limit 100 bytes)]" in content


def test_run_code_declares_that_it_runs_code():
    tool = run_code_tool()
    assert tool.capabilities == frozenset({"runs_code"}) and tool.name == "run_code"
    assert tool.timeout == 15.0  # the box's 10 s plus a margin, so the box's own report wins


def test_the_plugin_is_discovered_by_its_entry_point():
    agent = bandoneon.Agent(ScriptedModel(), plugins={"sandbox": {"timeout": 3}}, context_files=False)
    assert "run_code" in agent.tools and isinstance(agent.plugin("sandbox"), Sandbox)


def test_without_bubblewrap_the_tool_says_what_to_install_and_never_runs_the_code(tmp_path, caplog):
    sentinel = tmp_path / "ran.txt"
    model = ScriptedModel(call("run_code", code=f"open({str(sentinel)!r}, 'w').write('unsandboxed')"), "ok")
    agent = bandoneon.Agent(model, plugins=[Sandbox(bwrap_path=str(tmp_path / "no-such-bwrap"))], context_files=False)
    agent.run_sync("go")
    result = tool_result(model)
    assert result.is_error
    assert "apt-get install bubblewrap" in result.content and "The code was not run." in result.content
    assert not sentinel.exists()
    assert "bubblewrap" in caplog.text  # the operator is told too


def test_with_no_bwrap_on_path_the_default_tool_says_what_to_install(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no bwrap anywhere on PATH
    sentinel = tmp_path / "ran.txt"
    model = ScriptedModel(call("run_code", code=f"open({str(sentinel)!r}, 'w').write('unsandboxed')"), "ok")
    agent = bandoneon.Agent(model, plugins=[Sandbox()], context_files=False)
    assert "is not installed" in caplog.text  # warned when the agent is built, before any call
    agent.run_sync("go")
    result = tool_result(model)
    assert result.is_error and "bubblewrap is not installed" in result.content and "apt-get install bubblewrap" in result.content
    assert not sentinel.exists()


def test_a_bwrap_that_cannot_build_namespaces_is_refused_not_bypassed(tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    sentinel = tmp_path / "ran.txt"
    model = ScriptedModel(call("run_code", code=f"open({str(sentinel)!r}, 'w').write('unsandboxed')"), "ok")
    agent = bandoneon.Agent(model, tools=[run_code_tool(bwrap_path=str(fake))], plugins=[], context_files=False)
    agent.run_sync("go")
    result = tool_result(model)
    assert result.is_error and "cannot build a box" in result.content and "No permissions" in result.content
    assert "user namespaces" in result.content and not sentinel.exists()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"mount": "/no/such/folder"}, "mount"),
        ({"mount_at": "/usr/share"}, "mount_at"),
        ({"mount_at": "relative"}, "mount_at"),
        ({"timeout": 0}, "timeout"),
        ({"memory_mb": 16}, "memory_mb"),
        ({"max_processes": 1}, "max_processes"),
    ],
)
def test_bad_options_are_a_config_error_naming_the_option(options, named):
    with pytest.raises(bandoneon.ConfigError, match=named):
        run_code_tool(**options)
    with pytest.raises(bandoneon.ConfigError, match=named):
        bandoneon.Agent(ScriptedModel(), plugins={"sandbox": options}, context_files=False)


def test_an_unknown_plugin_option_is_a_config_error():
    with pytest.raises(bandoneon.ConfigError, match="memory_gb"):
        bandoneon.Agent(ScriptedModel(), plugins={"sandbox": {"memory_gb": 1}}, context_files=False)


@needs_box
def test_the_level_14_example_computes_in_the_box(capsys):
    code = (
        "import csv\n"
        "rows = list(csv.DictReader(open('/data/granary.csv')))\n"
        "print(min(int(r['sacks']) // int(r['sacks_per_day']) for r in rows))"
    )
    model = ScriptedModel(call("run_code", code=code), "The granary lasts 15 days.")
    example = load_script(EXAMPLE)
    result = example.main(model)
    assert result.ok and result.text == "The granary lasts 15 days."
    assert tool_result(model).content == "Exit code: 0.\nstdout:\n15\n"  # computed in the box from the mounted file
    assert "stop=end_turn" in capsys.readouterr().out
