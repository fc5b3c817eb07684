"""Small pieces every plugin that keeps state on disk or reads import paths needs, once.

- ``write_atomically``: a crash halfway through never leaves a half-written file behind.
- ``import_object``: ``"package.module:name"`` strings from configuration files.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["import_object", "write_atomically"]


def write_atomically(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write to a temporary file in the same folder, flush it to disk, then rename it over ``path``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data.encode("utf-8") if isinstance(data, str) else data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def import_object(path: str, *, what: str = "import path") -> Any:
    """The object named by ``"module:attribute"``; ``ConfigError`` saying which part is wrong."""
    module_name, colon, attribute = path.partition(":")
    if not colon or not module_name or not attribute:
        raise ConfigError(f"{what} {path!r} must be written as 'package.module:name'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{what} {path!r}: module {module_name!r} cannot be imported: {exc}") from None
    found: Any = module
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ConfigError(f"{what} {path!r}: module {module_name!r} has no {attribute!r}") from None
    return found
