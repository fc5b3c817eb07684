"""Datasets: the cases of an eval, in JSONL (one case a line) or TOML (``[[cases]]`` tables).

A case has an ``id``, an ``input`` (the prompt), an optional ``expected`` (a string, or a
table such as ``{output = "...", tools = ["iron", "putt"], par = 3}``), ``tags``, and
``attachments``: image or document files sent with the prompt (paths relative to the dataset
file, and inside its folder; ``.png``/``.jpg``/``.gif``/``.webp`` are images, anything else a file).
Errors name the file and the line (JSONL) or the case (TOML); a dataset with one bad case
is refused whole, so no eval silently runs on part of its cases.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

import bandoneon

__all__ = ["Case", "DatasetError", "load_dataset"]


_IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})


class DatasetError(ValueError):
    """A dataset file cannot be read; the message says where."""


def jsonl_lines(path: Path) -> list[str]:
    """The lines of a JSONL file, split on "\\n" only: ``str.splitlines`` also splits on U+2028,
    U+2029, U+0085 (and \\x1c...), which JSON written with ``ensure_ascii=False`` (``add_case``,
    recordings, traces) keeps raw inside its strings. Bytes that are not UTF-8 name their line."""
    lines = []
    for number, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        try:
            lines.append(raw.removesuffix(b"\r").decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{path}:{number}: not UTF-8 (byte {exc.start + 1})") from None
    return lines


def json_problem(error: ValueError) -> str:
    """Why a line is not JSON, in a few words: the decoder's message and column, or the limit
    ``bandoneon.loads_bounded`` refused it by (nested too deeply, too long)."""
    if isinstance(error, json.JSONDecodeError):
        return f"{error.msg} at column {error.colno}"
    return str(error)


def _strings(items: Iterable[str]) -> tuple[str, ...]:
    """The converter of a case's string lists (the builtin ``tuple`` has no item type for mypy)."""
    return tuple(items)


@attrs.frozen
class Case:
    id: str
    input: str
    expected: Any = None
    tags: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    attachments: tuple[str, ...] = attrs.field(default=(), converter=_strings)

    def prompt(self) -> bandoneon.Prompt:
        """What the agent is asked: the input, with the attachments read from disk after it."""
        if not self.attachments:
            return self.input
        parts: list[Any] = [self.input]
        for path in self.attachments:
            if Path(path).suffix.lower() in _IMAGE_SUFFIXES:
                parts.append(bandoneon.ImagePart.from_path(path))
            else:
                parts.append(bandoneon.FilePart.from_path(path))
        return parts

    def expected_value(self, key: str) -> Any:
        """``expected`` itself when it is a plain value, else ``expected[key]`` (None if absent)."""
        if isinstance(self.expected, Mapping):
            return self.expected.get(key)
        return self.expected

    def to_json(self) -> dict[str, Any]:
        data = {"id": self.id, "input": self.input, "expected": self.expected, "tags": list(self.tags), "metadata": dict(self.metadata)}
        if self.attachments:
            data["attachments"] = list(self.attachments)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "case", *, folder: Path | None = None) -> Case:
        """A case from a table; relative ``attachments`` resolve against ``folder`` (the
        dataset file's), and each must exist."""
        if not isinstance(data, Mapping):
            raise DatasetError(f"{where}: a case must be an object/table, got {type(data).__name__}")
        unknown = set(data) - {"id", "input", "expected", "tags", "metadata", "attachments"}
        if unknown:
            raise DatasetError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; a case has id, input, expected, tags, metadata, attachments")
        if "input" not in data or not isinstance(data["input"], str):
            raise DatasetError(f"{where}: 'input' (the prompt, a string) is missing")
        if "id" not in data:
            raise DatasetError(f"{where}: 'id' is missing")
        # Lists only: a number would crash the checks below, and an object's keys pass as strings.
        tags = data.get("tags") or ()
        if not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) for t in tags):
            raise DatasetError(f"{where}: 'tags' must be a list of strings")
        attachments = data.get("attachments") or ()
        if not isinstance(attachments, (list, tuple)) or not all(isinstance(a, str) for a in attachments):
            raise DatasetError(f"{where}: 'attachments' must be a list of file paths")
        if not isinstance(data.get("metadata") or {}, Mapping):
            raise DatasetError(f"{where}: 'metadata' must be an object/table")
        resolved = tuple(str((folder or Path.cwd()) / a) if not Path(a).is_absolute() else a for a in attachments)
        for path in resolved:
            if not Path(path).is_file():
                raise DatasetError(f"{where}: attachment {path} does not exist")
            if folder is not None and not Path(path).resolve().is_relative_to(folder.resolve()):
                # A dataset file is data, often someone else's: it must not send the model a file
                # from anywhere on the machine. Cases built in code attach what the code says.
                raise DatasetError(
                    f"{where}: attachment {path} is outside the dataset's folder {folder} (after following links); "
                    "copy the file next to the dataset, or build the case in Python"
                )
        return cls(str(data["id"]), data["input"], data.get("expected"), tags, dict(data.get("metadata") or {}), resolved)


def load_dataset(source: str | os.PathLike[str] | Iterable[Case | Mapping[str, Any]]) -> list[Case]:
    """Cases from a ``.jsonl`` / ``.toml`` file, or from an iterable of cases or dicts."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise DatasetError(f"{path}: no such dataset file")
        if path.suffix == ".toml":
            cases = _from_toml(path)
        elif path.suffix in (".jsonl", ".ndjson"):
            cases = _from_jsonl(path)
        else:
            raise DatasetError(f"{path}: unknown dataset format; use .jsonl (one case a line) or .toml ([[cases]] tables)")
    else:
        cases = [c if isinstance(c, Case) else Case.from_json(c, f"case #{n}") for n, c in enumerate(source, 1)]
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise DatasetError(f"two cases have the id {case.id!r}; ids must be unique (reports and comparisons key on them)")
        seen.add(case.id)
    if not cases:
        raise DatasetError(f"{source}: the dataset has no cases")
    return cases


def _from_jsonl(path: Path) -> list[Case]:
    cases = []
    for number, line in enumerate(jsonl_lines(path), 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        try:
            data = bandoneon.loads_bounded(line)  # a hostile line may nest without end
        except ValueError as exc:
            raise DatasetError(f"{path}:{number}: not JSON ({json_problem(exc)})") from None
        cases.append(Case.from_json(data, f"{path}:{number}", folder=path.parent))
    return cases


def _from_toml(path: Path) -> list[Case]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise DatasetError(f"{path}: not valid TOML: {exc}") from None
    tables = data.get("cases")
    if not isinstance(tables, list):
        raise DatasetError(f"{path}: expected [[cases]] tables")
    return [
        Case.from_json(table, f"{path}: case #{n} ({table.get('id', '?') if isinstance(table, dict) else '?'})", folder=path.parent)
        for n, table in enumerate(tables, 1)
    ]
