"""Shared fixtures of the core's tests (the testing kit's own fixtures come from its pytest plugin)."""

from __future__ import annotations

import bandoneon
import pytest


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
