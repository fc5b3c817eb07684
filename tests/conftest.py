"""Shared fixtures of the core's tests (the testing kit's own fixtures come from its pytest plugin)."""

from __future__ import annotations

import bandoneon
import pytest


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A fresh working folder for a command, with no model or config chosen by the environment."""
    monkeypatch.chdir(tmp_path)
    for var in ("BANDONEON_MODEL", "BANDONEON_BASE_URL", "OPENAI_BASE_URL", "BANDONEON_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


@pytest.fixture
def bare_agent():
    """An agent factory with no plugins and no context files: the core alone."""

    def make(model, **kwargs):
        kwargs.setdefault("plugins", [])
        kwargs.setdefault("context_files", False)
        return bandoneon.Agent(model, **kwargs)

    return make


@pytest.fixture
def only_the_core(monkeypatch):
    """No installed plugin (defaults, policy packs) takes part: for tests about the core alone."""
    monkeypatch.setenv("BANDONEON_PLUGINS", "")
    bandoneon.refresh_plugins()
    yield
    monkeypatch.undo()
    bandoneon.refresh_plugins()
