"""Plugins' command lines under bad input (issue 13): a configuration error is one line and
exit 2 at once; --base-url everywhere a model is chosen; modules are found in the current
folder; a broken plugin is skipped with one line, never the end of every command."""

from __future__ import annotations

import json
import sys
import textwrap

import bandoneon
import pytest
from bandoneon.cli import main
from bandoneon.testing import Reply, install_distribution


@pytest.fixture
def site(tmp_path, monkeypatch):
    """'Install' a distribution for real: a module and its dist-info on sys.path."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))

    def install(dist: str, module: str, source: str, entry_points: dict[str, str], allowed: str) -> None:
        install_distribution(folder, dist, entry_points, files={f"{module}.py": source})
        monkeypatch.setenv("BANDONEON_PLUGINS", allowed)
        bandoneon.refresh_plugins()

    yield install
    sys.modules.pop("fake_broken", None)
    monkeypatch.delenv("BANDONEON_PLUGINS")
    bandoneon.refresh_plugins()


BROKEN = '''
import bandoneon

class Broken(bandoneon.Plugin):
    name = "broken"

    @staticmethod
    @bandoneon.hookimpl
    def register_commands(subparsers):
        raise RuntimeError("the plugin's author made a mistake")

    @staticmethod
    @bandoneon.hookimpl
    def register_providers(register):
        raise RuntimeError("the plugin's author made a mistake")
'''


def test_a_plugin_whose_class_level_hooks_raise_is_skipped_with_one_line(site, tmp_path, capsys):
    site("bandoneon-broken", "fake_broken", BROKEN, {"broken": "fake_broken:Broken"}, "broken,sessions")
    with pytest.warns(bandoneon.PluginImportWarning) as caught:
        assert main(["sessions", "list", "--path", str(tmp_path / "none")]) == 0
    captured = capsys.readouterr()
    assert "no saved sessions" in captured.out and "Traceback" not in captured.err
    messages = [str(w.message) for w in caught]
    assert any(m.startswith("plugin 'broken' skipped: its register_commands raised RuntimeError") for m in messages)
    assert all("\n" not in m for m in messages)
    with pytest.warns(bandoneon.PluginImportWarning, match="register_providers"):
        with pytest.raises(bandoneon.ConfigError, match="nosuch"):  # model strings still resolve, with a clear error
            bandoneon.resolve_model("nosuch:x")


def test_an_unknown_plugin_in_bandoneon_toml_names_the_file(tmp_path):
    config = tmp_path / "bandoneon.toml"
    config.write_text("[plugins.nosuch]\n")
    with pytest.raises(bandoneon.ConfigError) as caught:
        bandoneon.Agent(bandoneon.testing.ScriptedModel("x"), config=config, context_files=False)
    assert str(config) in str(caught.value) and "nosuch" in str(caught.value)


def test_laps_with_a_model_that_cannot_be_resolved_exits_2_at_once(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["laps", "Build it.", "--until", "false", "--max-laps", "3", "--model", "nosuch:model"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.count("\n") == 1 and "nosuch" in captured.err and "Traceback" not in captured.err
    assert "lap 1" not in captured.out
    state = json.loads((tmp_path / ".bandoneon" / "laps.json").read_text())
    assert state["laps"] == 0 and not state["in_progress"]


def test_laps_takes_base_url(mock_llm, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    mock_llm.add(Reply(text="worked on it"))
    code = main(["laps", "Build it.", "--until", "false", "--max-laps", "1", "--model", "mock", "--base-url", mock_llm.base_url])
    assert code == 1  # the fuse blew: the check said not done
    assert "lap 1: end_turn" in capsys.readouterr().out
    assert [r.json["model"] for r in mock_llm.requests if r.path.endswith("/chat/completions")] == ["mock"]


def test_heartbeat_takes_model_and_base_url(mock_llm, tmp_path, capsys):
    config = tmp_path / "beat.toml"
    config.write_text('interval = 60\ncheck_prompt = "Check."\nmodel = "ollama:unreachable"\n')
    mock_llm.add(Reply(text="all fine"))
    assert main(["heartbeat", str(config), "--once", "--model", "mock", "--base-url", mock_llm.base_url]) == 0
    assert "tick 1: woken" in capsys.readouterr().out
    assert [r.json["model"] for r in mock_llm.requests if r.path.endswith("/chat/completions")] == ["mock"]


def test_heartbeat_with_a_model_that_cannot_be_resolved_exits_2(tmp_path, capsys):
    config = tmp_path / "beat.toml"
    config.write_text('interval = 60\ncheck_prompt = "Check."\nmodel = "nosuch:model"\n')
    assert main(["heartbeat", str(config), "--once"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nosuch" in err


def test_eval_run_finds_the_agent_module_in_the_current_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "golfcourse.py").write_text(
        textwrap.dedent(
            """
            import bandoneon
            from bandoneon.testing import ScriptedModel

            def make_golfer():
                return bandoneon.Agent(ScriptedModel("Holed out in one."), plugins=[], context_files=False)
            """
        )
    )
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "hole-1", "input": "Play hole 1.", "expected": "Holed out"}) + "\n")
    assert str(tmp_path) not in sys.path
    try:
        assert main(["eval", "run", "cases.jsonl", "--agent", "golfcourse:make_golfer", "--no-progress"]) == 0
    finally:
        sys.modules.pop("golfcourse", None)
    assert "hole-1" in capsys.readouterr().out
    assert str(tmp_path) not in sys.path
