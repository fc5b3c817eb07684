"""The hook the sessions plugin publishes: other plugins offer session stores by name.

Only the sessions plugin calls it (``Sessions.hookspecs`` names this module), once per agent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bandoneon import Calls, hookspec

if TYPE_CHECKING:
    from bandoneon import Agent


@hookspec(Calls.COLLECTING, sync=True)
def register_session_stores(agent: Agent, register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Offer session stores by name: ``Sessions(store="NAME")`` then uses them.

    :param agent: the agent being built.
    :param register: ``register(name, factory)``; ``factory(path)`` returns a ``SessionStore``
        (``path`` is the plugin's ``path`` option, or None).
    :return: nothing; every implementation is called.

    .. versionadded:: 0.2
    """
