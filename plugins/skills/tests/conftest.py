from __future__ import annotations

from pathlib import Path

import pytest


def _write(root: Path, name: str, description: str = "", body: str = "Do the job.", extra: str = "", folder: str | None = None) -> Path:
    folder_path = root / (folder or name)
    folder_path.mkdir(parents=True, exist_ok=True)
    description = description or f"Use when the customer asks about {name}."
    text = f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n{body}\n"
    path = folder_path / "SKILL.md"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def skills_dir(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    root.mkdir()
    return root


@pytest.fixture
def write_skill():
    """write_skill(root, name, description="", body="...", extra="allowed-tools: x\\n") -> SKILL.md path."""
    return _write
