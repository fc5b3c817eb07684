"""The hook the skills plugin publishes: other plugins contribute skills through it.

It belongs here, not in the core: only the skills plugin calls it, and it is declared only
when bandoneon-skills is installed (``Skills.hookspecs`` names this module).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bandoneon import Calls, hookspec

if TYPE_CHECKING:
    from bandoneon import Agent


@hookspec(Calls.COLLECTING, sync=True)
def register_skills(agent: Agent, register: Callable[..., None]) -> None:
    """Contribute skills. Called synchronously by the skills plugin, once per agent.

    :param agent: the agent the skills are for.
    :param register: ``register(source, *, label=None)``; ``source`` is a folder of
        ``<name>/SKILL.md``, a ``Skill``, a list of them, or an object with ``label`` and
        ``scan() -> (skills, problems)`` (see bandoneon-skills).
    :return: nothing; every implementation is called.

    .. versionadded:: 0.1
    """
