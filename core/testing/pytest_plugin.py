"""pytest fixtures of the testing kit (loaded through the ``pytest11`` entry point)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

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
