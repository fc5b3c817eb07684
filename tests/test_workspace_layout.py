"""Review of issue 2's workspace: the layout of DESIGN.md §1, the README's two commands, CI and tox
kept in step with the plugins folder. Read from the files, so a new plugin that is not wired in fails here."""

from __future__ import annotations

import configparser
import os
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_DIRS = sorted(p.name for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").is_file())


def tox() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "tox.ini")
    return parser


def readme_commands() -> list[str]:
    return re.findall(r"```sh\n(.+?)\n```", (ROOT / "README.md").read_text())


def test_the_root_distribution_is_bandoneon_built_from_core_with_a_console_script_and_pytest_fixtures():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["name"] == "bandoneon"
    assert project["tool"]["setuptools"]["package-dir"] == {"bandoneon": "core"}
    assert project["project"]["scripts"]["bandoneon"] == "bandoneon.cli:main"
    assert project["project"]["entry-points"]["pytest11"]["bandoneon"] == "bandoneon.testing.pytest_plugin"
    for folder in ("core", "plugins/_template", "examples", "tests", "benchmarks"):
        assert (ROOT / folder).is_dir(), folder
    assert (ROOT / "plugins" / "README.md").is_file()


def test_the_readme_opens_with_the_two_commands():
    first, second = readme_commands()[:2]
    assert "pip install -e ." in first and "plugins/local" in first and first.endswith("python examples/quickstart.py")
    assert second.endswith("python -m tox")
    assert (ROOT / "README.md").read_text().index(first) < 400


def test_ci_runs_the_readmes_test_command():
    ci = ROOT / ".ci" / "run"
    assert os.access(ci, os.X_OK)
    run_tests = readme_commands()[1].split("&&")[-1].strip()
    assert run_tests == "python -m tox"
    assert ci.read_text().rstrip().endswith(run_tests)


def test_the_first_command_installs_the_plugins_quickstart_gets_by_default():
    """The quickstart agent has no plugins=: it gets the recommended defaults, which the command installs."""
    first = readme_commands()[0]
    for name in ("local", "retry", "stop", "compaction"):
        assert f"-e plugins/{name}" in first


@pytest.mark.parametrize("plugin", PLUGIN_DIRS)
def test_every_plugin_folder_is_installed_by_tox_and_tested_alone(plugin):
    config = tox()
    env = "template" if plugin == "_template" else plugin
    if plugin != "_template":
        assert f"-e plugins/{plugin}" in config["testenv:py"]["deps"], f"the py env does not install plugins/{plugin}"
    (alone,) = [section for section in config.sections() if section.startswith("testenv:alone-")]
    assert re.search(rf"[{{,]{re.escape(env)}[,}}]", config["tox"]["env_list"]), f"alone-{env} is not in env_list"
    assert re.search(rf"^{re.escape(env)}: .*-e plugins/{re.escape(plugin)}$", config[alone]["deps"], re.M)
    assert re.search(rf"^{re.escape(env)}: .*plugins/{re.escape(plugin)}/tests", config[alone]["commands"], re.M)


def declares_a_plugin(folder: str) -> bool:
    project = tomllib.loads((ROOT / "plugins" / folder / "pyproject.toml").read_text())["project"]
    return "bandoneon" in project.get("entry-points", {})


@pytest.mark.parametrize("plugin", [p for p in PLUGIN_DIRS if p != "_template" and declares_a_plugin(p)])
def test_every_plugin_has_the_same_shape(plugin):
    folder = ROOT / "plugins" / plugin
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["bandoneon"] == {plugin: project["entry-points"]["bandoneon"][plugin]}
    assert project["name"] == f"bandoneon-{plugin}"
    assert any(dep.replace(" ", "").startswith("bandoneon>=") for dep in project["dependencies"])
    assert (folder / "README.md").is_file() and (folder / "tests").is_dir()
    assert (folder / "src" / f"bandoneon_{plugin.replace('-', '_')}").is_dir()
