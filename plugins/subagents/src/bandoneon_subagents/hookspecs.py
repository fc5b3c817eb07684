"""The hook the subagents plugin publishes: which of the parent's plugins follow it into a child.

Only the subagents plugin calls it (``Subagents.hookspecs`` names this module). Plugins that
implement it without depending on bandoneon-subagents mark it ``optionalhook=True``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bandoneon import Calls, hookspec

if TYPE_CHECKING:
    from bandoneon import Agent


@hookspec(Calls.COLLECTING, sync=True)
def inherited_by_subagents(parent: Agent[Any, Any]) -> object | None:
    """A subagent is being built for ``parent``: the plugin instance the child gets too.

    :param parent: the agent starting the subagent.
    :return: None, or the plugin instance the child should have (usually ``self``: the same
        rules, one trace). Installed policy packs need no answer: every agent has them.

    .. versionadded:: 0.2
    """
