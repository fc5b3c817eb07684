"""``subagent_event``: a child's event, delivered to its parent as an event of the parent run."""

from __future__ import annotations

from typing import ClassVar

import attrs

import bandoneon

__all__ = ["SubagentEvent"]


@attrs.frozen
class SubagentEvent(bandoneon.Event):
    """Something happened in a subagent's run.

    ``run_id`` is the *parent* run's, so the parent's listeners and ``on_event`` plugins see
    an event of the run they know; ``event`` is the child's own event (with the child's
    ``run_id``). Wrapping keeps plugins that are also active in the child (tracing, via
    ``inherited_by_subagents``) from seeing a child's event twice, once under the wrong run.
    A grandchild's events arrive wrapped twice.
    """

    name: ClassVar[str] = "subagent_event"
    subagent: str
    event: bandoneon.Event
