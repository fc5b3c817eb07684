"""pytest fixtures of the testing kit (loaded through the ``pytest11`` entry point)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .disk import sweep_folder
from .models import ScriptedModel
from .server import MockLLMServer


@pytest.fixture
def mock_llm() -> Iterator[MockLLMServer]:
    """A running loopback OpenAI/Anthropic-compatible server; stopped after the test."""
    with MockLLMServer() as server:
        yield server


@pytest.fixture
def scripted() -> Iterator[ScriptedModel]:
    """A ``ScriptedModel``; the test fails if replies queued on it were never used."""
    model = ScriptedModel()
    yield model
    model.assert_all_used()


@pytest.fixture
def sweep_dir(tmp_path: Path) -> Iterator[Path]:
    """A folder for a fault sweep's many small files: in memory (tmpfs) when there is one."""
    with sweep_folder(tmp_path) as folder:
        yield folder
