"""The unknown-window warning is said once per process; each test starts as a new process would."""

from __future__ import annotations

import pytest

import bandoneon_compaction.plugin


@pytest.fixture(autouse=True)
def _fresh_window_warning(monkeypatch):
    monkeypatch.setattr(bandoneon_compaction.plugin, "_unknown_window_warned", False)
