"""Loggers that import ``logging`` on first use.

The core logs only on rare paths (a failing listener or observer, an unreadable context
file), so ``import bandoneon`` does not pay for the logging package and the traceback,
string and threading modules it pulls in (issue #19). A run imports it anyway, through
asyncio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import logging

__all__ = ["deferred_logger"]


class _DeferredLogger:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        import logging

        return getattr(logging.getLogger(self._name), attribute)

    def __repr__(self) -> str:
        return f"<deferred logger {self._name}>"


def deferred_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)``, looked up each time one of its methods is used."""
    return cast("logging.Logger", _DeferredLogger(name))
