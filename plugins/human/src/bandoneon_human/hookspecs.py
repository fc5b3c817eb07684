"""The hooks the human plugin publishes: the approval channel other plugins ask through.

Rule engines (bandoneon-guard, policy packs) and reviewers (bandoneon-plan) reach a person
through these hooks instead of reaching into the human plugin; the human plugin implements
them, and another plugin (a chat-ops bridge, say) may implement them instead. When nobody
answers, the caller must treat it as a no: an approval nobody can give is never a yes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs
from bandoneon import Calls, hookspec

if TYPE_CHECKING:
    from bandoneon import Refuse, Respond, RunContext, Tool, ToolCall

    from .channels import Answer


@attrs.frozen
class Approved:
    """A person said yes to this exact call."""

    by: str = ""


@hookspec(Calls.FIRST)
def request_approval(run: RunContext, call: ToolCall, tool: Tool, arguments: dict[str, Any], reason: str) -> Approved | Refuse | Respond | None:
    """Ask a person whether this exact call may run. One call is asked about once per run.

    :param run: the run.
    :param call: the call as the model wrote it.
    :param tool: the tool that would run.
    :param arguments: the validated arguments.
    :param reason: why approval is needed, shown to the person.
    :return: ``Approved`` when a person said yes; a ``Refuse`` (its reason goes to the
        model) when they said no, did not answer in time, or the channel failed; a
        ``Respond`` when the call was already approved and ran in an earlier process that
        recorded its result (after a crash or a pause: the call is answered with that result
        and not run again); None when this implementation cannot ask (the next one is
        asked). First answer wins.

    .. versionadded:: 0.2
    .. versionchanged:: 0.3 may answer ``Respond`` (a result recorded before a crash).
    """


@hookspec(Calls.FIRST)
def review_exhausted(findings: Sequence[str], task: str, rounds: int, run_id: str) -> Answer | None:
    """Hand work whose review rounds ran out with ``findings`` open to a person.

    :param findings: what the reviewer still objects to.
    :param task: the task the work was for.
    :param rounds: how many fix rounds were made.
    :param run_id: the run that produced the work ("" when unknown).
    :return: the person's ``Answer`` (``approved`` accepts the work as it is; otherwise its
        ``note`` is their correction), or None when nobody answered: the work stays open.
        First answer wins.

    .. versionadded:: 0.2
    """
