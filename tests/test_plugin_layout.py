"""One shape for every distribution (plugins/README.md): the plugin class in ``plugin.py``,
``py.typed`` shipped, an entry point whose name is the plugin's name."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = sorted(p.parent for p in [*ROOT.glob("plugins/*/pyproject.toml"), *ROOT.glob("examples/*/pyproject.toml")])


def _project(folder: Path) -> dict:
    return tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("folder", DISTRIBUTIONS, ids=lambda p: p.name)
def test_every_distribution_ships_py_typed(folder):
    project = _project(folder)
    packages = [p for p in (folder / "src").iterdir() if p.is_dir() and not p.name.endswith(".egg-info") and p.name != "__pycache__"]
    assert packages
    for package in packages:
        assert (package / "py.typed").is_file(), f"{package} has no py.typed"
        assert "py.typed" in project["tool"]["setuptools"]["package-data"][package.name]


@pytest.mark.parametrize("folder", [f for f in DISTRIBUTIONS if "bandoneon" in _project(f)["project"].get("entry-points", {})], ids=lambda p: p.name)
def test_every_plugin_class_lives_in_plugin_py(folder):
    for name, value in _project(folder)["project"]["entry-points"]["bandoneon"].items():
        module_name, _, attribute = value.partition(":")
        try:
            plugin = getattr(importlib.import_module(module_name), attribute)
        except ImportError as exc:
            pytest.skip(f"{name}: {exc}")
        assert plugin.__module__.endswith(".plugin"), f"{name}: {plugin.__module__}.{plugin.__qualname__} is not in plugin.py"
