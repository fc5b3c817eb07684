"""Hostile variants of a JSON document, for property tests of whatever reads one from outside
(a trace, a session, a dataset, a server's reply): every place a value sits, and the document
with another value put there."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

__all__ = ["json_paths", "replaced_at"]

Path = tuple[str | int, ...]


def json_paths(document: Any, path: Path = ()) -> Iterator[Path]:
    """Every place in ``document`` that holds a value: a key of an object or an index of an
    array, as the path of keys and indexes that leads there, outermost first."""
    if isinstance(document, dict):
        for key, inner in document.items():
            yield (*path, key)
            yield from json_paths(inner, (*path, key))
    elif isinstance(document, list):
        for index, inner in enumerate(document):
            yield (*path, index)
            yield from json_paths(inner, (*path, index))


def replaced_at(document: Any, path: Path, value: Any) -> Any:
    """A copy of ``document`` with ``value`` where ``path`` leads (the original is left as it was)."""
    document = copy.deepcopy(document)
    where = document
    for step in path[:-1]:
        where = where[step]
    where[path[-1]] = value
    return document
