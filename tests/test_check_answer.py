"""The ``check_answer`` hook: the final answer accepted, rewritten or sent back (bounded), for
plain and typed runs and for a wrap-up."""

from __future__ import annotations

import attrs
import bandoneon
import pytest
from bandoneon import FinalAnswer, PluginError, SendBack, hookimpl
from bandoneon.testing import FunctionModel, ScriptedModel, assert_history_valid, call


@attrs.frozen
class Verdict:
    word: str


class Shout:
    """Rewrites every answer in capitals."""

    @hookimpl
    def check_answer(self, answer):
        return attrs.evolve(answer, text=answer.text.upper()) if answer.text else None


class NoSecrets:
    """Sends back any answer that mentions the secret, at most ``limit`` times per run."""

    def __init__(self):
        self.seen: list[FinalAnswer] = []

    @hookimpl
    def check_answer(self, run, answer):
        self.seen.append(answer)
        if "s3cret" in f"{answer.text} {answer.answer}":
            return SendBack("Do not repeat the password; answer without it.")
        return None


def make(model, *plugins, **kwargs):
    return bandoneon.Agent(model, plugins=list(plugins), context_files=False, **kwargs)


def test_an_accepted_answer_is_unchanged_and_seen_with_its_exit():
    guard = NoSecrets()
    result = make(ScriptedModel("All good."), guard).run_sync("hi")
    assert (result.stop, result.text) == ("end_turn", "All good.")
    assert guard.seen == [FinalAnswer("All good.", "All good.", "end_turn", None)]


def test_a_rewrite_reaches_the_result_and_the_history():
    agent = make(ScriptedModel("quiet answer"), Shout())
    result = agent.run_sync("hi")
    assert (result.text, result.output) == ("QUIET ANSWER", "QUIET ANSWER")
    assert agent.messages[-1].content == "QUIET ANSWER"
    assert agent.transcript[-1].content == "QUIET ANSWER"


def test_a_sent_back_answer_is_asked_again_with_the_reason():
    model = ScriptedModel("The password is s3cret.", "I can't share the password.")
    events = []
    agent = make(model, NoSecrets())
    agent.on("answer_sent_back", events.append)
    result = agent.run_sync("What is the password?")
    assert (result.stop, result.ok, result.text, result.turns) == ("end_turn", True, "I can't share the password.", 2)
    assert model.requests[1].messages[-1].content == "Do not repeat the password; answer without it."
    assert [e.reason for e in events] == ["Do not repeat the password; answer without it."]


def test_sending_back_is_bounded_and_ends_the_run_as_answer_refused():
    model = FunctionModel(lambda request: "s3cret again")
    agent = make(model, NoSecrets(), max_send_backs=1)
    result = agent.run_sync("?")
    assert (result.stop, result.ok, result.text) == ("answer_refused", False, None)
    assert "sent back 2 times" in result.detail and "Do not repeat the password" in result.detail
    assert len(model.requests) == 2
    with pytest.raises(bandoneon.NoAnswer, match="answer_refused"):
        result.unwrap()


def test_a_terminal_tool_answer_is_checked_too_and_the_history_stays_valid():
    pytest.importorskip("bandoneon_stop")

    @bandoneon.tool(terminal=True)
    def submit(text: str) -> str:
        """Hand in the answer."""
        return "ok"

    model = ScriptedModel(call("submit", text="s3cret"), call("submit", text="hidden"))
    guard = NoSecrets()
    agent = bandoneon.Agent(model, tools=[submit], plugins=["stop", guard], context_files=False)
    result = agent.run_sync("?")
    assert (result.stop, result.answer) == ("terminal_tool", {"text": "hidden"})
    assert [a.stop for a in guard.seen] == ["terminal_tool", "terminal_tool"]
    assert_history_valid(agent.messages)


def test_a_typed_answer_rewritten_is_checked_again():
    class Lower:
        @hookimpl
        def check_answer(self, answer):
            return attrs.evolve(answer, text=answer.text.replace("YES", "yes"))

    class Break:
        @hookimpl
        def check_answer(self, answer):
            return attrs.evolve(answer, text="not json")

    tool_agent = make(ScriptedModel(call("final_answer", word="YES")), Lower(), output_type=Verdict, output_mode="tool")
    tool_mode = tool_agent.run_sync("?")
    assert tool_mode.output == Verdict("yes")  # in tool mode the text is the answer call's JSON
    # ... and the rewrite is what the history (sent again, saved by sessions) holds too
    answer_calls = [c for m in tool_agent.messages for c in m.tool_calls if c.name == "final_answer"]
    assert [c.parsed_arguments() for c in answer_calls] == [{"word": "yes"}]
    native = FunctionModel(lambda request: '{"word": "YES"}')
    native.supports_output_schema = lambda *, with_tools: True
    assert make(native, Lower(), output_type=Verdict).run_sync("?").output == Verdict("yes")
    broken = make(native, Break(), output_type=Verdict).run_sync("?")
    assert broken.stop == "invalid_output" and "rewrote it does not fit" in broken.detail


def test_a_wrap_up_that_is_sent_back_is_withheld():
    stop = pytest.importorskip("bandoneon_stop").StopRules(wrap_up_on=("max_turns",))

    @bandoneon.tool
    def look() -> str:
        """Look around."""
        return "the password is s3cret"

    model = FunctionModel(lambda request: "It is s3cret." if not request.tools else call("look"))
    agent = bandoneon.Agent(model, tools=[look], plugins=[stop, NoSecrets()], context_files=False, max_turns=1)
    result = agent.run_sync("?")
    assert (result.stop, result.text) == ("max_turns", None)
    assert "the wrap-up was withheld: Do not repeat the password" in result.detail
    assert "s3cret" not in agent.messages[-1].content


def test_a_check_answer_that_returns_something_else_fails_the_run_naming_the_plugin():
    class Wrong:
        @hookimpl
        def check_answer(self, answer):
            return "fine"

    with pytest.raises(PluginError, match="check_answer must return None, a FinalAnswer or SendBack"):
        make(ScriptedModel("x"), Wrong()).run_sync("?")


def test_a_typed_answer_that_was_not_taken_never_reaches_the_result():
    native = FunctionModel(lambda request: '{"word": "s3cret"}')
    native.supports_output_schema = lambda *, with_tools: True
    refused = make(native, NoSecrets(), output_type=Verdict, max_send_backs=1).run_sync("?")
    assert (refused.stop, refused.text, refused.output) == ("answer_refused", None, None)
    limited = make(native, NoSecrets(), output_type=Verdict, max_turns=1).run_sync("?")
    assert (limited.stop, limited.text, limited.output) == ("max_turns", None, None)

    class Break:
        @hookimpl
        def check_answer(self, answer):
            return attrs.evolve(answer, text="not json")

    broken = make(native, Break(), output_type=Verdict).run_sync("?")
    assert (broken.stop, broken.output) == ("invalid_output", None)


class WaitingNoSecrets(NoSecrets):
    """NoSecrets whose check has to wait: a plain function answering a coroutine."""

    async def _later(self, run, answer):
        return NoSecrets.check_answer(self, run, answer)

    @hookimpl
    def check_answer(self, run, answer):
        return self._later(run, answer)


class AsyncShout:
    @hookimpl
    async def check_answer(self, answer):
        return attrs.evolve(answer, text=answer.text.upper()) if answer.text else None


@pytest.mark.parametrize("measured", [False, True], ids=["unmeasured", "measured"])
@pytest.mark.parametrize("checks", ["sync", "coroutine", "async"])
def test_checks_that_wait_or_not_rewrite_and_send_back_alike(checks, measured):
    """Answered on the spot (every check a plain function answering at once) or awaited (one
    waits), a send-back, an event listener that waits and a rewrite give the same run."""
    guard = NoSecrets() if checks == "sync" else WaitingNoSecrets()
    shout = AsyncShout() if checks == "async" else Shout()
    model = ScriptedModel("The password is s3cret.", "I can't share it.")
    agent = make(model, shout, guard)
    if measured:
        agent.profile_hooks()
    events = []

    async def waiting_listener(event):
        events.append(event.reason)

    agent.on("answer_sent_back", waiting_listener)
    result = agent.run_sync("What is the password?")
    assert (result.stop, result.text, result.turns) == ("end_turn", "I CAN'T SHARE IT.", 2)
    assert events == ["Do not repeat the password; answer without it."]
    assert [a.text for a in guard.seen] == ["The password is s3cret.", "I can't share it."]
