"""The human plugin's events: what a UI needs to show a person, and a record of what they said."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

import bandoneon

__all__ = ["ApprovalAnswered", "ApprovalRequested", "Steering"]


@attrs.frozen
class Steering(bandoneon.Event):
    """A person's correction cancelled ``call``; the model reads ``text`` instead of its result."""

    name: ClassVar[str] = "steering"
    text: str
    call: bandoneon.ToolCall


@attrs.frozen
class ApprovalRequested(bandoneon.Event):
    """A call waits for a person. ``shown`` is exactly what they are shown."""

    name: ClassVar[str] = "approval_requested"
    request_id: str
    call: bandoneon.ToolCall
    shown: str
    reason: str
    arguments: Any = None


@attrs.frozen
class ApprovalAnswered(bandoneon.Event):
    """How the wait ended: ``outcome`` is approved, denied, timeout, error, steered, paused or resumed."""

    name: ClassVar[str] = "approval_answered"
    request_id: str
    call: bandoneon.ToolCall
    outcome: str
    by: str = ""
    note: str = ""
