"""What a strict server checks of a history before it answers, for tests of agents, plugins
and stores: a history that breaks it fails the next request, so every exit of a run (an
answer, an error, a cancellation, a resumed session) must leave one that keeps it."""

from __future__ import annotations

from collections.abc import Iterable

from ..messages import Message

__all__ = ["assert_history_valid", "history_problems"]


def history_problems(messages: Iterable[Message]) -> list[str]:
    """Each way ``messages`` breaks the rules (empty: none). Every tool call is answered by
    exactly one result, among the results right after its call's message (before the next
    user or assistant message); a message's call ids are unique; no result answers an unknown
    or already answered call."""
    problems: list[str] = []
    pending: set[str] = set()
    for index, message in enumerate(messages):
        if message.role == "tool":
            if message.tool_call_id not in pending:
                problems.append(f"message {index}: a result for {message.tool_call_id!r}, which no call right before it is waiting for")
            pending.discard(message.tool_call_id or "")
            continue
        if pending:
            problems.append(f"message {index} ({message.role}) comes while calls {sorted(pending)} have no result")
        pending = set()
        if message.role == "assistant":
            ids = [call.id for call in message.tool_calls]
            if len(ids) != len(set(ids)):
                problems.append(f"message {index}: call ids {ids} are not unique")
            pending = set(ids)
    if pending:
        problems.append(f"the history ends while calls {sorted(pending)} have no result")
    return problems


def assert_history_valid(messages: Iterable[Message]) -> None:
    """``AssertionError`` naming every problem ``history_problems`` finds, if any."""
    problems = history_problems(messages)
    assert not problems, "the history breaks a strict server's rules: " + "; ".join(problems)
