"""Resolve ``"package.module:attribute"`` strings from configuration files."""

from __future__ import annotations

import importlib
from typing import Any

import bandoneon


def import_object(path: str, *, what: str) -> Any:
    """The object named by ``"module:attribute"``; ``ConfigError`` saying which part is wrong."""
    module_name, colon, attribute = path.partition(":")
    if not colon or not module_name or not attribute:
        raise bandoneon.ConfigError(f"{what} {path!r} must be written as 'package.module:name'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise bandoneon.ConfigError(f"{what} {path!r}: module {module_name!r} cannot be imported: {exc}") from None
    found: Any = module
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise bandoneon.ConfigError(f"{what} {path!r}: module {module_name!r} has no {attribute!r}") from None
    return found
