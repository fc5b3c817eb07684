"""`bandoneon plugins`, `--version` and the small things a new user meets first on the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import bandoneon
from bandoneon.cli import main
from bandoneon.testing import install_distribution

SERVER = 'model = "openai-compatible:m@http://127.0.0.1:9/v1"\n'


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("BANDONEON_CONFIG", "BANDONEON_MODEL", "BANDONEON_BASE_URL", "OPENAI_BASE_URL", "BANDONEON_DISABLED_PLUGINS", "BANDONEON_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
    bandoneon.refresh_plugins()
    yield tmp_path
    monkeypatch.undo()
    bandoneon.refresh_plugins()


def listing(capsys) -> dict[str, dict]:
    assert main(["plugins", "--json"]) == 0
    return {row["name"]: row for row in json.loads(capsys.readouterr().out)}


def test_the_state_is_what_an_agent_built_here_gets(folder, capsys):
    (folder / "bandoneon.toml").write_text(SERVER + "[plugins.tracing]\n")
    rows = listing(capsys)
    assert rows["tracing"]["state"] == "active (bandoneon.toml)"
    assert rows["retry"]["state"] == "active (default)"
    assert rows["policy-example"]["state"] == "policy pack"
    assert rows["memory"]["state"] == "installed"
    agent = bandoneon.Agent(context_files=False)
    active = {name for name, row in rows.items() if row["state"].startswith("active") or row["state"] == "policy pack"}
    assert active == {bandoneon.plugin_name(p) for p in agent.plugins}
    agent.close()


def test_the_default_model_makes_its_provider_plugin_active(folder, capsys):
    rows = listing(capsys)
    assert rows["local"]["state"] == "active (default)"
    assert rows["anthropic"]["state"] == "installed"
    (folder / "bandoneon.toml").write_text('model = "anthropic:claude-sonnet-4-5"\n')
    rows = listing(capsys)
    assert rows["anthropic"]["state"] == "active (bandoneon.toml)"
    assert rows["local"]["state"] == "installed"


def test_a_plugin_the_operator_disabled_says_by_which_variable(folder, capsys, monkeypatch):
    monkeypatch.setenv("BANDONEON_DISABLED_PLUGINS", "memory")
    bandoneon.refresh_plugins()
    assert listing(capsys)["memory"]["state"] == "disabled (env: BANDONEON_DISABLED_PLUGINS)"


def test_the_table_has_a_header_and_one_line_per_plugin(folder, capsys):
    (folder / "bandoneon.toml").write_text(SERVER)
    assert main(["plugins"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "DISTRIBUTION", "VERSION", "STATE", "IMPORT", "PUBLISHES", "HOOKS"]
    names = {line.split()[0] for line in lines[1:-1]}
    assert names == set(bandoneon.installed_plugins())
    retry = next(line for line in lines if line.startswith("retry "))
    assert "bandoneon-retry" in retry and "active (default)" in retry and " ms " in retry and "retry_delay" in retry
    assert lines[-1].endswith("active in an Agent() here")


def test_the_hooks_a_plugin_publishes_are_listed_with_their_calling_style(folder, capsys):
    rows = listing(capsys)
    assert rows["skills"]["publishes"] == [{"name": "register_skills", "style": "collecting, sync"}]
    assert rows["sessions"]["publishes"] == [{"name": "register_session_stores", "style": "collecting, sync"}]
    assert rows["memory"]["publishes"] == [{"name": "register_memory", "style": "collecting, sync"}]
    assert rows["subagents"]["publishes"] == [{"name": "inherited_by_subagents", "style": "collecting, sync"}]
    assert rows["mcp"]["publishes"] == [{"name": "mcp_server_allowed", "style": "first answer, sync"}]
    assert [hook["name"] for hook in rows["human"]["publishes"]] == ["request_approval", "review_exhausted"]
    assert rows["retry"]["publishes"] == []
    # An implementation is listed by the hook it implements (human's answer_approval_request
    # is @hookimpl(specname="request_approval")), and a published hook's implementers too.
    assert "request_approval" in rows["human"]["hooks"] and "answer_approval_request" not in rows["human"]["hooks"]
    assert "inherited_by_subagents" in rows["tracing"]["hooks"]
    assert main(["plugins"]) == 0
    human = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("human "))
    assert "request_approval (first answer), review_exhausted (" in human


def test_a_third_party_module_plugin_lists_the_hooks_it_publishes(tmp_path):
    site = tmp_path / "site"
    hooks = '''
        import bandoneon

        @bandoneon.hookspec(bandoneon.Calls.CHAINED, chains="tune", sync=True)
        def bell_tune(agent, tune):
            """Change the tune the bell rings."""

        @bandoneon.hookspec(bandoneon.Calls.OBSERVING)
        def bell_rung(run):
            """The bell rang."""
    '''
    plugin = '''
        import bandoneon
        import bandoneon_bell_hooks as hookspecs

        @bandoneon.hookimpl
        def before_turn(run):
            return None
    '''
    files = {"bandoneon_bell_hooks.py": hooks, "bandoneon_bell.py": plugin}
    install_distribution(site, "bandoneon-bell", {"bell": "bandoneon_bell"}, files=files, version="0.1")
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-m", "bandoneon.cli", "plugins", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    bell = next(row for row in json.loads(done.stdout) if row["name"] == "bell")
    assert bell["publishes"] == [{"name": "bell_tune", "style": "chained on tune, sync"}, {"name": "bell_rung", "style": "observing"}]
    assert bell["hooks"] == ["before_turn"]
    done = subprocess.run([sys.executable, "-m", "bandoneon.cli", "plugins"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("bell "))
    assert "bell_tune (chained on tune, sync), bell_rung (observing)" in line and line.endswith("before_turn")


def test_a_plugin_that_fails_to_import_is_listed_broken_with_the_reason(tmp_path):
    site = tmp_path / "site"
    broken = {"bandoneon_oops.py": "raise RuntimeError('the oops plugin needs a licence file')\n"}
    install_distribution(site, "bandoneon-oops", {"oops": "bandoneon_oops:Oops"}, files=broken, version="0.1")
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-m", "bandoneon.cli", "plugins", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    oops = next(row for row in json.loads(done.stdout) if row["name"] == "oops")
    assert oops["state"] == "broken: RuntimeError: the oops plugin needs a licence file"
    assert oops["distribution"] == "bandoneon-oops" and oops["version"] == "0.1"


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"bandoneon {bandoneon.__version__} (Python ")


@pytest.mark.parametrize(
    ("command", "plugin"),
    [("memory", "memory"), ("sessions", "sessions"), ("eval", "evals"), ("policy", "guard"), ("trace", "tracing"), ("human", "human"), ("tools", None)],
)
def test_a_command_with_commands_prints_its_help_when_called_alone(command, plugin, capsys):
    if plugin is not None and plugin not in bandoneon.installed_plugins():
        pytest.skip(f"bandoneon-{plugin}, which gives `{command}`, is not installed")
    assert main([command]) != 0  # help is not the command working
    captured = capsys.readouterr()
    assert f"usage: bandoneon {command}" in captured.out + captured.err and "error:" not in captured.err


def test_init_refuses_to_overwrite_and_says_how_to_write_elsewhere(folder, capsys):
    (folder / "bandoneon.toml").write_text("# mine\n")
    assert main(["init"]) == 1
    assert "--path" in capsys.readouterr().err
    assert (folder / "bandoneon.toml").read_text() == "# mine\n"
    assert main(["init", "--path", "other.toml"]) == 0 and (folder / "other.toml").exists()


def test_tools_check_says_one_tool_not_one_tools(folder, capsys):
    (folder / "one_tool.py").write_text(
        textwrap.dedent(
            '''
            import bandoneon

            @bandoneon.tool
            def get_forecast(city: str) -> str:
                """Daily forecast for one city."""
                return city
            '''
        )
    )
    main(["tools", "check", "one_tool"])
    assert "1 tool checked: 0 errors" in capsys.readouterr().out


def test_memory_list_does_not_create_the_database_it_reads(folder, capsys):
    pytest.importorskip("bandoneon_memory")
    store = folder / "nothing-yet.sqlite3"
    assert main(["memory", "list", "--db", str(store)]) == 0
    assert "no memory store at" in capsys.readouterr().out
    assert not store.exists()
