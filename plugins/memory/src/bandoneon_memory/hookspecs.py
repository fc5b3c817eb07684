"""The hook the memory plugin publishes: other plugins contribute embedders and stores.

Only the memory plugin calls it (``Memory.hookspecs`` names this module). Session stores are
the sessions plugin's: it publishes ``register_session_stores`` for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bandoneon import Calls, hookspec

if TYPE_CHECKING:
    from bandoneon import Agent


@hookspec(Calls.COLLECTING, sync=True)
def register_memory(agent: Agent, register: Callable[[str, str, Callable[..., Any]], None]) -> None:
    """Contribute memory stores and embedders. Called synchronously by the memory plugin, once
    per agent.

    :param agent: the agent they are for.
    :param register: ``register(kind, name, factory)`` with kind ``"embedder"`` or ``"store"``
        (see bandoneon-memory).
    :return: nothing; every implementation is called.

    .. versionadded:: 0.1
    """
