"""A tools module that also imports tools from another (``served``) for its own use: serving
this module serves only the tool it defines."""

from __future__ import annotations

import bandoneon
from served import add, book_ticket  # noqa: F401  # used here, not served from here


@bandoneon.tool
def multiply(a: int, b: int) -> int:
    """Multiply two whole numbers."""
    return a * b
