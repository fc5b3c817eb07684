"""The `bandoneon` command and bandoneon.toml, through the CLI entry point and a loopback server."""

from __future__ import annotations

import json
import tomllib

import bandoneon
import pytest
from bandoneon.cli import main as cli
from bandoneon.testing import Fault, Reply, ScriptedModel


def test_run_prints_the_answer_and_exits_0(mock_llm, here, capsys):
    mock_llm.add(Reply(text="Rain tomorrow."))
    assert cli(["run", "rain?", "--base-url", mock_llm.base_url, "--model", "mock"]) == 0
    assert capsys.readouterr().out.strip() == "Rain tomorrow."


def test_run_without_an_answer_exits_2_with_the_reason_on_stderr(mock_llm, here, capsys):
    (here / "tools.py").write_text("import bandoneon\n@bandoneon.tool\ndef ping() -> str:\n    '''Ping the server.'''\n    return 'pong'\n")
    mock_llm.respond_with(lambda request: Reply(tool_calls=[("ping", {})]))
    assert cli(["run", "go", "--base-url", mock_llm.base_url, "--max-turns", "2", "--tools", "tools.py"]) == 2
    assert "max_turns" in capsys.readouterr().err


def test_run_json_prints_the_run_result(mock_llm, here, capsys):
    mock_llm.add(Reply(text="hi", usage=(5, 1)))
    assert cli(["run", "hello", "--base-url", mock_llm.base_url, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["stop"], data["ok"], data["text"], data["usage"]["input_tokens"]) == ("end_turn", True, "hi", 5)


def test_run_exits_1_on_an_error(mock_llm, here, capsys):
    mock_llm.add(Fault(status=401))
    assert cli(["run", "hello", "--base-url", mock_llm.base_url]) == 1
    assert "401" in capsys.readouterr().err


def test_init_writes_a_commented_config_that_loads(here, capsys):
    assert cli(["init", "--model", "ollama:llama3.1"]) == 0
    text = (here / "bandoneon.toml").read_text()
    assert text.startswith("# bandoneon configuration")
    assert tomllib.loads(text)["model"] == "ollama:llama3.1"
    assert bandoneon.load_config().model == "ollama:llama3.1"
    assert cli(["init"]) == 1 and "already exists" in capsys.readouterr().err


def test_a_config_typo_names_the_file_and_the_key(here):
    (here / "bandoneon.toml").write_text('modle = "ollama:llama3.1"\n')
    with pytest.raises(bandoneon.ConfigError, match=r"bandoneon.toml.*Unknown field 'modle'"):
        bandoneon.Agent(ScriptedModel())


def test_a_config_value_of_the_wrong_type_says_what_is_expected(here):
    (here / "bandoneon.toml").write_text('max_turns = "ten"\n')
    with pytest.raises(bandoneon.ConfigError, match=r"'max_turns' must be an integer, got \"ten\""):
        bandoneon.Agent(ScriptedModel())


def test_broken_toml_is_a_config_error(here):
    (here / "bandoneon.toml").write_text("model = \n")
    with pytest.raises(bandoneon.ConfigError, match="not valid TOML"):
        bandoneon.load_config()


def test_the_model_comes_from_the_config_file(mock_llm, here):
    (here / "bandoneon.toml").write_text(f'model = "openai-compatible:cfg@{mock_llm.base_url}"\nmax_turns = 3\n')
    agent = bandoneon.Agent(plugins=[], context_files=False)
    assert (agent.provider.model, agent.max_turns) == ("cfg", 3)


def test_the_model_comes_from_environment_variables(mock_llm, here, monkeypatch):
    monkeypatch.setenv("BANDONEON_BASE_URL", mock_llm.base_url)
    monkeypatch.setenv("BANDONEON_MODEL", "openai-compatible:envmodel")
    mock_llm.add(Reply(text="from env"))
    agent = bandoneon.Agent(plugins=[], context_files=False)
    assert agent.run_sync("hi").text == "from env"
    assert mock_llm.requests[0].json["model"] == "envmodel"


def test_a_model_without_a_prefix_is_explained(here):
    with pytest.raises(bandoneon.ConfigError, match="has no provider prefix"):
        bandoneon.Agent("gpt-4o-mini", plugins=[])


def test_an_unknown_provider_prefix_lists_the_known_ones(here):
    with pytest.raises(bandoneon.ConfigError, match="no provider registered for 'acme'.*ollama"):
        bandoneon.Agent("acme:model", plugins=[])


def test_plugins_lists_installed_plugins(here, capsys):
    assert cli(["plugins"]) == 0
    out = capsys.readouterr().out
    assert out.strip()


def test_an_edited_configuration_is_read_by_the_next_agent(tmp_path, monkeypatch):
    """The parsed bandoneon.toml is cached per file, and an edit (even of the same size) is seen."""
    import os

    import bandoneon

    monkeypatch.chdir(tmp_path)
    config = tmp_path / "bandoneon.toml"
    config.write_text("max_turns = 7\n")
    old = 1_000_000_000_000_000_000
    os.utime(config, ns=(old, old))  # still for long enough to be cached
    assert bandoneon.load_config().max_turns == 7
    assert bandoneon.load_config().max_turns == 7
    config.write_text("max_turns = 8\n")
    assert bandoneon.load_config().max_turns == 8
