"""Every Python block of README.md and of each plugin's README runs, or says why it cannot.

The blocks of one file run in order in one namespace, offline: a model string in a block
(``"ollama:llama3.1"``, ``"openai:..."``, ``"anthropic:..."``, ``"local:"``) resolves to a
``ScriptedModel`` fed from the comment just above the block, and so does the name ``model``::

    <!-- doc: replies = [call("get_forecast", city="Buenos Aires", date="2026-09-26"), "It will rain."] -->

A block that cannot run here says so, with the reason, in the same place::

    <!-- doc: not runnable: needs bubblewrap and a Linux kernel with user namespaces -->

A block that defines ``test_*`` functions gets them called, with ``mock_llm`` when they ask for it.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any, Literal

import attrs
import pytest

import bandoneon
from bandoneon.testing import Fault, FunctionModel, Reply, ScriptedModel, call, reply

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "plugins" / "README.md", *sorted((ROOT / "plugins").glob("*/README.md"))]
BLOCK = re.compile(r"(?:<!--\s*doc:\s*(?P<note>.*?)\s*-->\s*\n)?```python\n(?P<code>.*?)```", re.S)
PREFIXES = ("ollama", "openai", "anthropic", "local", "vllm", "lmstudio", "llamacpp")


def python_blocks(path: Path) -> list[tuple[int, str, str]]:
    """(line of its first code line, note, code) of each Python block of ``path``."""
    text = path.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start("code")) + 1, m.group("note") or "", m.group("code")) for m in BLOCK.finditer(text)]


@pytest.fixture
def scripted_providers(monkeypatch):
    """Model strings resolve to the current block's ScriptedModel (the registry is restored after)."""
    from bandoneon.providers import base, openai  # noqa: F401  (the named servers register on import)

    current: dict[str, Any] = {}
    for prefix in PREFIXES:
        monkeypatch.setitem(base._factories, prefix, lambda rest, **options: current["model"])
    return current


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_every_python_block_runs_or_says_why_not(path, scripted_providers, mock_llm, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BANDONEON_MEMORY_PATH", str(tmp_path / "memory.sqlite3"))
    monkeypatch.setenv("HOME", str(tmp_path))  # sessions and memory default to ~/.bandoneon
    namespace: dict[str, Any] = {
        "__name__": f"doc_{path.parent.name}",
        "bandoneon": bandoneon,
        "attrs": attrs,
        "Literal": Literal,
        "call": call,
        "reply": reply,
        "Reply": Reply,
        "Fault": Fault,
        "ScriptedModel": ScriptedModel,
        "FunctionModel": FunctionModel,
    }
    for line, note, code in python_blocks(path):
        where = f"{path.relative_to(ROOT)}:{line}"
        if note.startswith("not runnable:"):
            assert len(note.removeprefix("not runnable:").strip()) > 10, f"{where}: say why the block cannot run"
            continue
        replies = eval(note.removeprefix("replies =").strip(), namespace) if note.startswith("replies =") else []
        assert not note or note.startswith("replies ="), f"{where}: unknown doc note {note!r}"
        model = ScriptedModel(*replies)
        scripted_providers["model"] = namespace["model"] = model
        before = set(namespace)
        exec(compile(code, where, "exec", dont_inherit=True), namespace)
        for name in sorted(set(namespace) - before):
            if name.startswith("test_") and callable(namespace[name]):
                wanted = inspect.signature(namespace[name]).parameters
                namespace[name](**({"mock_llm": mock_llm} if "mock_llm" in wanted else {}))
        model.assert_all_used()


def test_the_doc_runner_finds_the_blocks_and_fails_on_a_broken_one(tmp_path, scripted_providers, mock_llm, monkeypatch):
    doc = tmp_path / "README.md"
    doc.write_text("text\n\n<!-- doc: not runnable: needs a GPU we do not have here -->\n```python\nimport nothing_here\n```\n\n```python\nx = 1 +\n```\n")
    blocks = python_blocks(doc)
    assert [(line, note) for line, note, _ in blocks] == [(5, "not runnable: needs a GPU we do not have here"), (9, "")]
    with pytest.raises(SyntaxError):
        compile(blocks[1][2], "README.md:9", "exec")
