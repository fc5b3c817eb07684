"""Review of the `bandoneon` command (issue 2, CLI): chat, plugins, tools check and run's edges,
through the console script's entry point and a loopback server."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap

import pytest

import bandoneon
from bandoneon.cli import main as cli
from bandoneon.testing import Fault, Reply, ScriptedModel, call, install_distribution


@pytest.fixture(autouse=True)
def here(tmp_path, monkeypatch):
    """A clean working folder, no model configured, and only the core's plugins (none)."""
    monkeypatch.chdir(tmp_path)
    for variable in ("BANDONEON_MODEL", "BANDONEON_BASE_URL", "OPENAI_BASE_URL", "BANDONEON_CONFIG"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("BANDONEON_PLUGINS", "")
    bandoneon.refresh_plugins()
    yield tmp_path
    monkeypatch.undo()
    bandoneon.refresh_plugins()


PING_TOOLS = '''
import bandoneon

@bandoneon.tool
def ping_server(host: str) -> str:
    """Ping one server by its host name and say whether it answered.

    Args:
        host: the host name, like db1.internal
    """
    return "pong"
'''


# ---------------------------------------------------------------- chat


def test_chat_keeps_the_history_between_prompts_and_an_empty_line_sends_nothing(mock_llm, monkeypatch, capsys):
    mock_llm.add(Reply(text="Hello Ana."), Reply(text="You are Ana."))
    monkeypatch.setattr(sys, "stdin", io.StringIO("I am Ana\n\nwho am I?\n\n"))
    assert cli(["chat", "--base-url", mock_llm.base_url, "--system", "Be brief."]) == 0
    out = capsys.readouterr().out
    assert "Hello Ana." in out and "You are Ana." in out
    second = mock_llm.requests[1].json["messages"]
    assert [m["content"] for m in second] == ["Be brief.", "I am Ana", "Hello Ana.", "who am I?"]
    assert len(mock_llm.requests) == 2


def test_chat_ends_on_end_of_input_and_shows_a_run_without_an_answer(mock_llm, monkeypatch, capsys, here):
    (here / "ping_tools.py").write_text(PING_TOOLS)
    mock_llm.respond_with(lambda request: Reply(tool_calls=[("ping_server", {"host": "db1"})]))
    monkeypatch.setattr(sys, "stdin", io.StringIO("ping forever"))
    assert cli(["chat", "--base-url", mock_llm.base_url, "--tools", "ping_tools.py", "--max-turns", "2"]) == 2  # piped: as `run` says it
    assert "(the run ended without an answer: max_turns)" in capsys.readouterr().err


# ---------------------------------------------------------------- run


def test_run_with_a_provider_model_and_a_base_url_sends_the_bare_model_name(mock_llm):
    mock_llm.add(Reply(text="hi"))
    assert cli(["run", "hi", "--model", "ollama:llama3.1", "--base-url", mock_llm.base_url]) == 0
    assert mock_llm.requests[0].json["model"] == "llama3.1"


def test_run_json_without_an_answer_exits_2_and_keeps_the_work(mock_llm, here, capsys):
    (here / "ping_tools.py").write_text(PING_TOOLS)
    mock_llm.respond_with(lambda request: Reply(tool_calls=[("ping_server", {"host": "db1"})]))
    assert cli(["run", "go", "--base-url", mock_llm.base_url, "--tools", "ping_tools.py", "--max-turns", "2", "--json"]) == 2
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert (data["stop"], data["ok"], data["text"], data["turns"]) == ("max_turns", False, None, 2)
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "tool", "assistant", "tool"]
    assert "max_turns" in captured.err


def test_run_sends_the_system_prompt_and_max_turns(mock_llm):
    mock_llm.add(Reply(text="ok"))
    assert cli(["run", "hi", "--base-url", mock_llm.base_url, "--system", "You are Nimbus."]) == 0
    assert mock_llm.requests[0].json["messages"][0] == {"role": "system", "content": "You are Nimbus."}


@pytest.mark.parametrize(
    "fault, words",
    [(Fault(status=500, body="upstream exploded"), ["HTTP 500", "upstream exploded"]),
     (Fault(status=200, body="<html>"), ["not JSON"]),
     (Fault(drop=True), ["cannot reach"])],
    ids=["500", "not-json", "dropped"],
)
def test_run_exits_1_with_one_line_on_a_server_failure(mock_llm, capsys, fault, words):
    mock_llm.add(fault)
    assert cli(["run", "hello", "--base-url", mock_llm.base_url]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bandoneon: ") and all(word in err for word in words) and "Traceback" not in err


def test_run_with_a_typo_in_bandoneon_toml_exits_1_naming_the_file_and_the_key(mock_llm, here, capsys):
    (here / "bandoneon.toml").write_text("max_turn = 3\n")
    assert cli(["run", "hi", "--base-url", mock_llm.base_url]) == 1
    err = capsys.readouterr().err
    assert "bandoneon.toml" in err and "max_turn" in err


def test_run_with_a_missing_config_file_exits_1_naming_it(mock_llm, capsys):
    assert cli(["run", "hi", "--base-url", mock_llm.base_url, "--config", "nowhere.toml"]) == 1
    assert "nowhere.toml" in capsys.readouterr().err


def test_run_with_a_missing_tools_file_exits_1_naming_it(mock_llm, capsys):
    assert cli(["run", "hi", "--base-url", mock_llm.base_url, "--tools", "nowhere.py"]) == 1
    assert "nowhere.py" in capsys.readouterr().err


def test_run_without_any_model_configured_and_no_local_plugin_says_how_to_configure_one(capsys, monkeypatch):
    from bandoneon.providers import base  # the registry is process-wide: make sure 'local' is not in it

    monkeypatch.delitem(base._factories, "local", raising=False)
    monkeypatch.setattr(base, "_plugins_loaded", True)
    code = cli(["run", "hi"])
    err = capsys.readouterr().err
    assert code == 1 and "BANDONEON_MODEL" in err and "bandoneon-local" in err


# ---------------------------------------------------------------- tools check


def test_tools_check_reads_the_tools_of_an_agent_or_a_list_by_attribute(here, capsys):
    (here / "crew.py").write_text(PING_TOOLS + textwrap.dedent('''
        from bandoneon.testing import ScriptedModel

        agent = bandoneon.Agent(ScriptedModel(), tools=[ping_server], plugins=[], context_files=False)
        toolbox = [ping_server]
        '''))
    assert cli(["tools", "check", "crew:agent"]) == 0
    assert cli(["tools", "check", "crew.py:toolbox"]) == 0
    assert capsys.readouterr().out.count("1 tool checked: 0 errors, 0 warnings") == 2


def test_tools_check_warns_about_too_many_tools_and_missing_formats(here, capsys):
    (here / "many.py").write_text(textwrap.dedent('''
        import bandoneon

        @bandoneon.tool
        def find_trains(to: str, departure_date: str) -> str:
            """List the trains to one destination on one day, with their times and fares.

            Args:
                to: the destination station
                departure_date: the day of the trip
            """
            return ""

        @bandoneon.tool
        def book_ticket(train: int) -> str:
            """Book one seat on a train found with find_trains; returns the seat."""
            return ""

        @bandoneon.tool
        def cancel_ticket(seat: str) -> str:
            """Cancel a booked seat; returns the refund in pesos."""
            return ""
        '''))
    assert cli(["tools", "check", "many.py", "--max-tools", "2"]) == 0
    out = capsys.readouterr().out
    assert "WARNING *: 3 tools" in out
    assert "find_trains: parameter 'departure_date' looks like it needs a format" in out
    assert "book_ticket: parameter 'train' has no description" in out
    assert cli(["tools", "check", "many.py", "--max-tools", "2", "--strict"]) == 1


def test_tools_check_of_an_unknown_module_exits_1_with_one_line(capsys):
    assert cli(["tools", "check", "no_such_module_here"]) == 1
    assert "cannot import 'no_such_module_here'" in capsys.readouterr().err


@pytest.mark.parametrize("source", ["def broken(:\n", "raise RuntimeError('the database is down')\n"], ids=["syntax", "raises"])
def test_tools_check_of_a_module_that_fails_to_load_exits_1_with_one_line(here, capsys, source):
    (here / "broken_tools.py").write_text(source)
    assert cli(["tools", "check", "broken_tools.py"]) == 1
    assert "broken_tools.py" in capsys.readouterr().err


# ---------------------------------------------------------------- plugins


PLUGIN = '''
import attrs
import bandoneon
from typing import ClassVar

@attrs.define
class {cls}:
    name: ClassVar[str] = "{name}"
    is_default: ClassVar[bool] = {is_default}
    is_policy_pack: ClassVar[bool] = {is_policy_pack}

    @bandoneon.hookimpl
    def before_turn(self, run):
        return None

    @bandoneon.hookimpl
    def after_turn(self, run, turn):
        return None
'''


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """Install distributions for real (dist-info + module on sys.path) and allow only them."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    names: list[str] = []

    def install(name: str, source: str, *, version: str = "1.2.3") -> None:
        module = f"fake_review_{name.replace('-', '_')}"
        install_distribution(site, f"bandoneon-{name}", {name: f"{module}:Plugin"}, files={f"{module}.py": source}, version=version)
        names.append(name)
        monkeypatch.setenv("BANDONEON_PLUGINS", ",".join(names))
        bandoneon.refresh_plugins()

    yield install
    for module in [m for m in sys.modules if m.startswith("fake_review_")]:
        del sys.modules[module]


def plugin_source(name: str, *, is_default: bool = False, is_policy_pack: bool = False) -> str:
    return PLUGIN.format(cls="Plugin", name=name, is_default=is_default, is_policy_pack=is_policy_pack)


def test_plugins_lists_version_status_hooks_and_import_cost_and_flags_a_broken_one(installed, capsys):
    installed("stamp", plugin_source("stamp", is_default=True))
    installed("rules", plugin_source("rules", is_policy_pack=True))
    installed("extra", plugin_source("extra"))
    installed("broken", "raise ImportError('needs numpy 9')\n")
    assert cli(["plugins"]) == 0  # the broken row says it; no warning on top
    lines = capsys.readouterr().out.splitlines()
    row = {line.split()[0]: line for line in lines[1:-1]}
    assert "bandoneon-stamp" in row["stamp"] and "1.2.3" in row["stamp"] and "active (default)" in row["stamp"] and " ms " in row["stamp"]
    assert "policy pack" in row["rules"] and "installed" in row["extra"]
    assert "broken: ImportError: needs numpy 9" in row["broken"]
    assert row["stamp"].endswith("after_turn, before_turn")


def test_plugins_the_operator_allowed_none_of_are_listed_disabled(capsys):
    assert cli(["plugins", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(row["state"].startswith("disabled (env: BANDONEON_") for row in rows)


def test_a_plugin_asked_for_by_name_that_failed_to_import_is_a_config_error_naming_the_cause(installed):
    installed("broken", "raise ImportError('needs numpy 9')\n")
    with pytest.warns(bandoneon.PluginImportWarning):
        with pytest.raises(bandoneon.ConfigError, match="'broken'.*could not be imported.*needs numpy 9"):
            bandoneon.Agent(ScriptedModel(), plugins=["broken"], context_files=False)


# ---------------------------------------------------------------- init


def test_init_writes_the_file_where_asked_and_the_commented_plugins_stay_comments(here):
    assert cli(["init", "--path", "conf/bandoneon.toml", "--model", "vllm:qwen"]) == 0
    text = (here / "conf" / "bandoneon.toml").read_text()
    assert "# [plugins.retry]" in text
    config = bandoneon.load_config(here / "conf" / "bandoneon.toml")
    assert (config.model, config.max_turns, config.plugins) == ("vllm:qwen", 25, None)


POLICY = '''
import bandoneon
from typing import ClassVar

class Plugin:
    name: ClassVar[str] = "house-rules"
    is_policy_pack: ClassVar[bool] = True

    @bandoneon.hookimpl
    def before_tool_execution(self, call):
        return bandoneon.Refuse("House rule: no deleting.")
'''


def test_an_installed_policy_pack_answers_before_the_agents_own_plugins(installed):
    """Policy packs are registered last, so first-answer hooks ask them first."""
    installed("house-rules", POLICY)

    class Lenient:
        name = "lenient"

        @bandoneon.hookimpl
        def before_tool_execution(self, call):
            return bandoneon.Respond("deleted (simulated)")

    @bandoneon.tool
    def delete_branch(name: str) -> str:
        """Delete one git branch by name."""
        return "deleted"

    model = ScriptedModel(call("delete_branch", name="main"), "ok")
    agent = bandoneon.Agent(model, tools=[delete_branch], plugins=[Lenient()], context_files=False)
    agent.run_sync("delete main")
    assert [bandoneon.plugin_name(p) for p in agent.plugins] == ["lenient", "house-rules"]
    assert model.requests[1].messages[-1].content == "House rule: no deleting."


PROVIDER = '''
import bandoneon
from bandoneon.testing import ScriptedModel
from typing import ClassVar

class Plugin:
    name: ClassVar[str] = "{prefix}"

    @staticmethod
    @bandoneon.hookimpl
    def register_providers(register):
        register("{prefix}", lambda rest, **options: ScriptedModel(f"{prefix} {{rest}}", model=rest))
'''


def test_an_installed_plugin_registers_a_provider_prefix(installed, tmp_path):
    """In a fresh process (the provider registry is process-wide): the hook makes 'echo:' resolve."""
    installed("echo", PROVIDER.format(prefix="echo"))
    code = "import bandoneon; print(bandoneon.Agent('echo:hello', plugins=[], context_files=False).run_sync('hi').text)"
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "BANDONEON_PLUGINS": "echo"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.stdout.strip() == "echo hello", done.stderr


def test_a_provider_plugin_installed_later_is_found_after_refresh_plugins(installed):
    with pytest.raises(bandoneon.ConfigError):
        bandoneon.resolve_model("nosuchprefix:x")
    installed("shout", PROVIDER.format(prefix="shout"))
    assert bandoneon.resolve_model("shout:later").model == "later"
