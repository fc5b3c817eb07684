"""A third party's plugins, written from plugins/README.md in a scratch folder and installed into a
fresh virtual environment with the core: installed is not active, activation by name, a module
entry point, one name (the entry point's; a mismatch or a clash is a warning naming both), and a hook one plugin publishes and another implements."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _uv() -> list[str]:
    found = shutil.which("uv")
    if found:
        return [found]
    return [sys.executable, "-m", "uv"]  # tox installs the uv package in the test environment


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return folder


GREETER = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=69"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "bandoneon-greeter"
        version = "1.0"
        dependencies = ["bandoneon"]

        [project.entry-points.bandoneon]
        greeter = "bandoneon_greeter.plugin"

        [tool.setuptools.package-data]
        "*" = ["py.typed"]
    """,
    "src/bandoneon_greeter/__init__.py": '"""A module plugin that greets, with greetings other plugins contribute."""\n',
    "src/bandoneon_greeter/py.typed": "",
    "src/bandoneon_greeter/hookspecs.py": '''
        """The hook this plugin publishes."""
        from bandoneon import Calls, hookspec

        @hookspec(Calls.COLLECTING)
        def greetings(run):
            """Names to greet in the system prompt.

            :param run: the run.
            :return: a name, or None.

            .. versionadded:: 1.0
            """
    ''',
    "src/bandoneon_greeter/plugin.py": '''
        """The plugin is this module: its functions are the hook implementations."""
        import bandoneon

        from . import hookspecs  # published: other plugins implement greetings(run)

        @bandoneon.hookimpl
        async def system_prompt_sections(run):
            names = await run.agent.hooks.call(hookspecs.greetings, run=run)
            return "Greet: " + ", ".join(names) if names else None
    ''',
}

POLITE = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=69"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "bandoneon-polite"
        version = "1.0"
        dependencies = ["bandoneon"]

        [project.entry-points.bandoneon]
        polite = "bandoneon_polite:PolitePlugin"
    """,
    "src/bandoneon_polite/__init__.py": "from .plugin import PolitePlugin\n\n__all__ = ['PolitePlugin']\n",
    "src/bandoneon_polite/plugin.py": '''
        """Implements the greeter's hook (without importing the greeter)."""
        from typing import ClassVar

        import attrs
        import bandoneon

        @attrs.define
        class PolitePlugin(bandoneon.Plugin):
            name: ClassVar[str] = "courteous"  # disagrees with the entry point: a warning, not a failure
            title: str = "Ms."

            @bandoneon.hookimpl
            def greetings(self, run):
                return f"{self.title} Ana"
    ''',
}

IMPOSTOR = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=69"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "bandoneon-impostor"
        version = "1.0"
        dependencies = ["bandoneon"]

        [project.entry-points.bandoneon]
        polite = "bandoneon_impostor:ImpostorPlugin"
    """,
    "src/bandoneon_impostor/__init__.py": "class ImpostorPlugin:\n    pass\n",
}

CHECK = '''
import warnings

import bandoneon
from bandoneon.testing import ScriptedModel

# installed is not active (discovering and importing the installed plugins says which name counts)
model = ScriptedModel("hi")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    installed = bandoneon.installed_plugins()
    assert {"greeter", "polite"} <= set(installed), installed
    assert bandoneon.Agent(model, context_files=False).plugins == ()
names = [str(w.message) for w in caught if issubclass(w.category, bandoneon.PluginNameWarning)]

# activated by name, with options; the entry point's name is the one name
agent = bandoneon.Agent(model, plugins={"greeter": None, "polite": {"title": "Dr."}}, context_files=False)
assert any("'courteous'" in n and "'polite'" in n for n in names), names
assert agent.plugin("polite").title == "Dr."
assert agent.plugin("greeter").__name__ == "bandoneon_greeter.plugin"

# the greeter's own hook, implemented by the polite plugin
agent.run_sync("hello")
assert model.requests[-1].system_prompt == "Greet: Dr. Ana", model.requests[-1].system_prompt

# a typo in the options is an error naming the key and the plugin
try:
    bandoneon.Agent(model, plugins={"polite": {"titel": "Dr."}}, context_files=False)
except bandoneon.ConfigError as exc:
    assert "titel" in str(exc) and "polite" in str(exc), exc
else:
    raise AssertionError("an unknown option was accepted")

import importlib.resources
assert importlib.resources.files("bandoneon").joinpath("py.typed").is_file()
assert importlib.resources.files("bandoneon_greeter").joinpath("py.typed").is_file()
print("ok")
'''

CLASH = '''
import warnings

import bandoneon
from bandoneon.testing import ScriptedModel

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    used = bandoneon.installed_plugins()["polite"].value
    bandoneon.Agent(ScriptedModel("hi"), context_files=False).run_sync("hello")  # never a broken Agent()
clash = [str(w.message) for w in caught if str(w.message).startswith("two installed plugins are named 'polite'")]
assert len(clash) == 1, [str(w.message) for w in caught]
assert "bandoneon_polite:PolitePlugin" in clash[0] and "bandoneon_impostor:ImpostorPlugin" in clash[0], clash
assert clash[0].endswith(f"using {used}"), clash
print("ok")
'''


@pytest.mark.slow
def test_a_third_party_plugin_from_the_guide_works_in_a_fresh_environment(tmp_path):
    greeter = write(tmp_path / "greeter", GREETER)
    polite = write(tmp_path / "polite", POLITE)
    impostor = write(tmp_path / "impostor", IMPOSTOR)
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "BANDONEON_PLUGINS", "BANDONEON_DISABLED_PLUGINS", "PYTHONPATH")}
    subprocess.run([*_uv(), "venv", "-q", "--python", sys.executable, str(venv)], check=True, env=env)
    env["VIRTUAL_ENV"] = str(venv)
    subprocess.run([*_uv(), "pip", "install", "-q", str(ROOT), str(greeter), str(polite)], check=True, env=env)
    checked = subprocess.run([str(venv / "bin" / "python"), "-c", CHECK], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == "ok"

    # one name for two plugins: another distribution also installs "polite"
    subprocess.run([*_uv(), "pip", "install", "-q", str(impostor)], check=True, env=env)
    clashed = subprocess.run([str(venv / "bin" / "python"), "-c", CLASH], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert clashed.returncode == 0, clashed.stderr
    assert clashed.stdout.strip() == "ok"
