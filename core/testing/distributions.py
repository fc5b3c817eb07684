"""Distributions written into a folder as pip leaves them: for tests of plugin discovery.

A plugin is found through its distribution's entry points, so a test of discovery (a policy
pack installed beside the agent, a broken third-party plugin, ``bandoneon plugins``) needs a
real one: a module and a ``*.dist-info`` folder on ``sys.path``. ``install_distribution`` writes
both; the test puts the folder on ``sys.path`` (``monkeypatch.syspath_prepend``) and calls
``bandoneon.refresh_plugins()``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

__all__ = ["install_distribution"]


def install_distribution(
    site: str | Path,
    name: str,
    entry_points: Mapping[str, str],
    *,
    files: Mapping[str, str] | None = None,
    version: str = "1.0",
    group: str = "bandoneon",
) -> Path:
    """Write distribution ``name`` into ``site``: each of ``files`` (a path relative to ``site``,
    such as ``"my_pack/__init__.py"``, and its text, dedented), then its dist-info with its
    ``entry_points`` (``{"my-pack": "my_pack:Pack"}``) in ``group`` (``bandoneon``: plugins;
    ``bandoneon.skills``: skill packs). Returns the dist-info folder."""
    site = Path(site)
    for relative, text in (files or {}).items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    lines = "".join(f"{entry} = {target}\n" for entry, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}", encoding="utf-8")
    return info
