"""``assert_history_valid`` / ``history_problems``: the testing kit's check of what a strict
server refuses in a history."""

from __future__ import annotations

import pytest
from bandoneon import Message, ToolCall
from bandoneon.testing import assert_history_valid, history_problems

CALL_A, CALL_B = ToolCall("a", "weigh", "{}"), ToolCall("b", "weigh", "{}")


def test_a_history_with_every_call_answered_right_after_it_has_no_problems():
    history = [Message.user("hi"), Message.assistant("", [CALL_A, CALL_B]), Message.tool(CALL_B, "2"), Message.tool(CALL_A, "1"), Message.assistant("done")]
    assert history_problems(history) == []
    assert_history_valid(history)


@pytest.mark.parametrize(
    ("history", "problem"),
    [
        ([Message.assistant("", [CALL_A])], "ends while calls ['a'] have no result"),
        ([Message.assistant("", [CALL_A]), Message.user("and?"), Message.tool(CALL_A, "1")], "message 1 (user) comes while calls ['a']"),
        ([Message.user("hi"), Message.tool(CALL_A, "1")], "message 1: a result for 'a'"),
        ([Message.assistant("", [CALL_A]), Message.tool(CALL_A, "1"), Message.tool(CALL_A, "1")], "message 2: a result for 'a'"),
        ([Message.assistant("", [CALL_A, CALL_A]), Message.tool(CALL_A, "1")], "call ids ['a', 'a'] are not unique"),
    ],
)
def test_each_thing_a_strict_server_refuses_is_named(history, problem):
    assert any(problem in found for found in history_problems(history))
    with pytest.raises(AssertionError, match="breaks a strict server's rules"):
        assert_history_valid(history)
