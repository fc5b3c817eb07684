"""The real-server tier: llama-cpp-python's server and the in-process model, SmolLM2-135M.

Run with ``tox -e realserver`` (or ``pytest tests_realserver``); needs
``llama-cpp-python[server]`` and ``bandoneon-local`` (which brings the model).
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
    missing = [name for name in ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.fail(f"the real-server tier needs llama-cpp-python's server extra (missing: {', '.join(missing)}): pip install 'llama-cpp-python[server]'")
    server = LlamaServer(model_path, tmp_path_factory.mktemp("llama-server") / "server.log")
    server.wait(deadline=90.0)
    yield server
    server.stop()
