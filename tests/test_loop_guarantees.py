"""Review of the core loop (issue 2, levels 0-2): the guarantees the existing tests leave open,
through the public API with in-process models."""

from __future__ import annotations

import asyncio
import threading

import bandoneon
import pytest
from bandoneon import hookimpl, tool
from bandoneon.testing import FunctionModel, ScriptedModel, assert_history_valid, call, reply


pytestmark = pytest.mark.usefixtures("only_the_core")


def make_agent(model, **kwargs) -> bandoneon.Agent:
    kwargs.setdefault("plugins", [])
    kwargs.setdefault("context_files", False)
    return bandoneon.Agent(model, **kwargs)


@tool
def ping() -> str:
    """Ping the server and return pong."""
    return "pong"


# ---------------------------------------------------------------- tools of one message


async def test_results_are_in_call_order_when_the_first_call_finishes_last():
    second_done = asyncio.Event()

    @tool
    async def fetch(page: int) -> str:
        """Fetch one page of results."""
        if page == 1:
            await second_done.wait()
        else:
            second_done.set()
        return f"page {page}"

    finished: list[str] = []
    agent = make_agent(ScriptedModel([call("fetch", page=1), call("fetch", page=2)], "ok"), tools=[fetch])
    agent.on("tool_end", lambda event: finished.append(event.output))
    await agent.run("go")
    assert finished == ["page 2", "page 1"]
    assert [m.content for m in agent.messages if m.role == "tool"] == ["page 1", "page 2"]


def test_sync_tools_of_one_message_run_concurrently():
    meeting = threading.Barrier(2, timeout=1)

    @tool
    def wait_for_partner(name: str) -> str:
        """Blocks until the other call of the same message is running too."""
        meeting.wait()
        return f"{name} met"

    model = ScriptedModel([call("wait_for_partner", name="a"), call("wait_for_partner", name="b")], "ok")
    agent = make_agent(model, tools=[wait_for_partner])
    agent.run_sync("go")
    assert [m.content for m in agent.messages if m.role == "tool"] == ["a met", "b met"]


async def test_when_a_hook_fails_the_other_running_tools_are_cancelled():
    gate = asyncio.Event()
    slow_cancelled = asyncio.Event()

    @tool
    async def transfer_funds() -> str:
        """Move the money (slow)."""
        try:
            await gate.wait()
        except asyncio.CancelledError:
            slow_cancelled.set()
            raise
        return "moved"

    class Audit:
        name = "audit"

        @hookimpl
        def after_tool_execution(self, call):
            if call.name == "ping":
                raise RuntimeError("audit store down")

    agent = make_agent(ScriptedModel([call("transfer_funds"), call("ping")]), tools=[transfer_funds, ping], plugins=[Audit()])
    try:
        with pytest.raises(bandoneon.PluginError, match="audit store down"):
            await agent.run("go")
        await asyncio.sleep(0)
        assert slow_cancelled.is_set(), "transfer_funds still runs after the run failed"
    finally:
        gate.set()
        await asyncio.sleep(0)


def test_a_tool_timeout_on_the_tool_overrides_the_agent_tool_timeout():
    release = threading.Event()

    @tool(timeout=0.05)
    def slow_lookup() -> str:
        """Look it up in the slow archive."""
        release.wait(5)
        return "found"

    model = ScriptedModel(call("slow_lookup"), "ok")
    make_agent(model, tools=[slow_lookup], tool_timeout=60).run_sync("go")
    release.set()
    assert "longer than 0.05 seconds" in model.requests[1].messages[-1].content


# ---------------------------------------------------------------- limits, cancellation, time


async def test_run_timeout_during_a_tool_keeps_the_history_valid_and_the_next_run_works():
    @tool
    async def sleep_forever() -> str:
        """Never returns."""
        await asyncio.sleep(30)
        return ""

    agent = make_agent(ScriptedModel(call("sleep_forever"), "next run"), tools=[sleep_forever], run_timeout=0.05)
    result = await agent.run("go")
    assert (result.stop, result.ok) == ("timeout", False)
    assert "did not run" in agent.messages[-1].content and agent.messages[-1].is_error
    assert_history_valid(agent.messages)
    assert len(result.messages) == 3  # the prompt, the call and its answer: the work is kept
    assert (await agent.run("again")).text == "next run"


async def test_breaking_out_of_stream_cancels_the_run_and_its_tool():
    tool_cancelled = asyncio.Event()

    @tool
    async def dig() -> str:
        """Dig a very deep hole."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            tool_cancelled.set()
            raise
        return "deep"

    agent = make_agent(ScriptedModel(call("dig"), "after"), tools=[dig])
    events = agent.stream("dig")
    async for event in events:
        if event.name == "tool_start":
            break
    await events.aclose()
    assert tool_cancelled.is_set()
    assert_history_valid(agent.messages)
    assert (await agent.run("again")).text == "after"


class WrapUpWithTheModel:
    """A wrap-up that asks the model once more, tools off."""

    @hookimpl
    async def wrap_up(self, run, stop):
        reply = await run.call_model(bandoneon.ModelRequest(messages=tuple(run.messages)))
        return reply.message


def hangs_on_the_wrap_up(started: asyncio.Event, gate: asyncio.Event):
    async def answer(request):
        if request.tools:
            return call("ping")
        started.set()
        await gate.wait()
        return "best guess"

    return FunctionModel(answer)


async def test_agent_cancel_during_a_wrap_up_returns_a_result_and_ends_the_run():
    started, gate = asyncio.Event(), asyncio.Event()
    agent = make_agent(hangs_on_the_wrap_up(started, gate), tools=[ping], plugins=[WrapUpWithTheModel()], max_turns=1)
    ends = []
    agent.on("run_end", ends.append)
    task = asyncio.create_task(agent.run("go"))
    await asyncio.wait_for(started.wait(), 5)
    agent.cancel()
    (outcome,) = await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 5)
    gate.set()
    assert isinstance(outcome, bandoneon.RunResult), f"run() raised {outcome!r}"
    assert outcome.stop in ("cancelled", "max_turns") and [e.reason for e in ends] == [outcome.stop]


async def test_run_timeout_also_bounds_the_wrap_up():
    started, gate = asyncio.Event(), asyncio.Event()
    agent = make_agent(hangs_on_the_wrap_up(started, gate), tools=[ping], plugins=[WrapUpWithTheModel()], max_turns=1, run_timeout=0.1)
    task = asyncio.create_task(agent.run("go"))
    done, _ = await asyncio.wait({task}, timeout=1)
    gate.set()
    outcome = await task
    assert task in done, "the run outlived run_timeout by ten times"
    assert not outcome.ok


# ---------------------------------------------------------------- the result and the events


def test_run_result_messages_are_this_runs_new_messages_and_run_id_matches_the_events():
    agent = make_agent(ScriptedModel("first", call("ping"), "second"), tools=[ping])
    agent.run_sync("one")
    starts = []
    agent.on("run_start", starts.append)
    result = agent.run_sync("two")
    assert [(m.role, m.content) for m in result.messages] == [("user", "two"), ("assistant", ""), ("tool", "pong"), ("assistant", "second")]
    assert (result.turns, result.ok, result.text, result.answer, result.detail) == (2, True, "second", None, "")
    assert starts[0].run_id == result.run_id and starts[0].prompt == "two"
    assert len(agent.messages) == 6


def test_event_payloads_say_what_happened():
    usage = bandoneon.Usage(input_tokens=11, output_tokens=3, requests=1)
    model = ScriptedModel(reply("", call("ping"), usage=usage), reply("done", usage=usage))
    agent = make_agent(model, tools=[ping])
    seen: dict[str, list] = {}
    agent.on("*", lambda event: seen.setdefault(event.name, []).append(event))
    agent.run_sync("go")
    (start,) = seen["tool_start"]
    (end,) = seen["tool_end"]
    assert start.call.name == "ping" and start.arguments == {}
    assert (end.output, end.is_error) == ("pong", False) and end.duration >= 0
    assert [e.finish_reason for e in seen["assistant_message"]] == ["tool_calls", "stop"]
    assert [e.turn for e in seen["turn_start"]] == [1, 2] and [e.usage.input_tokens for e in seen["turn_end"]] == [11, 11]
    assert [e.attempt for e in seen["provider_request"]] == [1, 1]
    (run_end,) = seen["run_end"]
    assert (run_end.reason, run_end.turns, run_end.usage.input_tokens, run_end.error) == ("end_turn", 2, 22, None)


def test_tool_end_output_is_what_the_model_reads_after_every_hook():
    class Redact:
        @hookimpl
        def after_tool_execution(self, result):
            return result.content.replace("pong", "p***")

    agent = make_agent(ScriptedModel(call("ping"), "ok"), tools=[ping], plugins=[Redact()])
    outputs = []
    agent.on("tool_end", lambda event: outputs.append(event.output))
    agent.run_sync("go")
    assert outputs == ["p***"] and agent.messages[2].content == "p***"


def test_a_tool_error_is_reported_in_tool_end_as_an_error():
    @tool
    def fail() -> str:
        """Always fails on purpose."""
        raise bandoneon.ToolError("try another way")

    agent = make_agent(ScriptedModel(call("fail"), "ok"), tools=[fail])
    ends = []
    agent.on("tool_end", ends.append)
    agent.run_sync("go")
    assert (ends[0].output, ends[0].is_error) == ("try another way", True)


def test_on_works_as_a_decorator_and_off_removes_the_listener():
    agent = make_agent(ScriptedModel("a", "b"))
    seen = []

    @agent.on("run_end")
    def record(event):
        seen.append(event.reason)

    agent.run_sync("one")
    agent.off("run_end", record)
    agent.run_sync("two")
    assert seen == ["end_turn"]


# ---------------------------------------------------------------- context files


def test_claude_md_is_appended_after_agents_md_and_both_are_reread(tmp_path):
    (tmp_path / "AGENTS.md").write_text("Use metric units.")
    (tmp_path / "CLAUDE.md").write_text("Answer in one line.")
    model = ScriptedModel("a", "b")
    agent = make_agent(model, system_prompt="You are Nimbus.", context_files=True, cwd=tmp_path)
    agent.run_sync("one")
    (tmp_path / "CLAUDE.md").unlink()
    agent.run_sync("two")
    first, second = (r.system_prompt for r in model.requests)
    assert first.index("You are Nimbus.") < first.index("Use metric units.") < first.index("Answer in one line.")
    assert "Use metric units." in second and "Answer in one line." not in second


def test_context_files_default_to_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "AGENTS.md").write_text("House rule: no spoilers.")
    model = ScriptedModel("ok")
    bandoneon.Agent(model, plugins=[]).run_sync("hi")
    assert "House rule: no spoilers." in model.requests[0].system_prompt


# ---------------------------------------------------------------- a hook that raises, at every loop point


class Flaky:
    """Implements every loop hook; the one named ``hook`` raises while ``broken`` is true."""

    name = "flaky"

    def __init__(self, hook: str):
        self.hook, self.broken = hook, True

    def _maybe_fail(self, hook: str) -> None:
        if self.broken and hook == self.hook:
            raise KeyError("lost the ledger")

    @hookimpl
    def before_run(self, run):
        self._maybe_fail("before_run")

    @hookimpl
    def before_turn(self, run):
        self._maybe_fail("before_turn")

    @hookimpl
    def system_prompt_sections(self, run):
        self._maybe_fail("system_prompt_sections")

    @hookimpl
    def compact_history(self, run):
        self._maybe_fail("compact_history")

    @hookimpl
    def before_provider_call(self, request):
        self._maybe_fail("before_provider_call")

    @hookimpl
    def before_tool_execution(self, call):
        self._maybe_fail("before_tool_execution")

    @hookimpl
    def after_tool_execution(self, result):
        self._maybe_fail("after_tool_execution")

    @hookimpl
    def after_turn(self, turn):
        self._maybe_fail("after_turn")

    @hookimpl
    def should_stop(self, turn):
        self._maybe_fail("should_stop")


LOOP_HOOKS = ["before_run", "before_turn", "system_prompt_sections", "compact_history", "before_provider_call",
              "before_tool_execution", "after_tool_execution", "after_turn", "should_stop"]


@pytest.mark.parametrize("hook", LOOP_HOOKS)
def test_a_hook_that_raises_at_any_point_fails_the_run_naming_it_and_the_next_run_works(hook):
    plugin = Flaky(hook)
    model = ScriptedModel(call("ping"), "done", "next run")
    agent = make_agent(model, tools=[ping], plugins=[plugin], context_window=1000)
    ends = []
    agent.on("run_end", ends.append)
    with pytest.raises(bandoneon.PluginError, match=f"'flaky' failed in {hook}: KeyError") as caught:
        agent.run_sync("go")
    assert (caught.value.plugin, caught.value.hook) == ("flaky", hook)
    assert ends[-1].reason == "error" and "lost the ledger" in ends[-1].error
    assert_history_valid(agent.messages)
    plugin.broken = False
    model.add("spare", "spare")  # the failed run may have used fewer replies
    assert agent.run_sync("again").ok
    assert_history_valid(agent.messages)


async def test_a_run_cancelled_while_one_call_runs_keeps_the_results_the_other_calls_already_had():
    """A call refused, or answered without running (bad arguments), has its final result before
    the turn's other calls run; a run cancelled meanwhile answers it with that result (as a
    plugin that took it at ``tool_result_ready`` has it), and only the unfinished call with
    "did not run"."""

    @tool
    async def dig() -> str:
        """Dig a very deep hole."""
        await asyncio.sleep(30)
        return "deep"

    @tool
    def fill(cubic_meters: int) -> str:
        """Fill a hole."""
        return "filled"

    class NoFilling(bandoneon.Plugin):
        name = "no-filling"

        @hookimpl
        def before_tool_execution(self, run: bandoneon.RunContext, tool: bandoneon.Tool) -> bandoneon.Refuse | None:
            return bandoneon.Refuse("Filling is not allowed today.") if tool.name == "fill" else None

    turn = reply("", call("fill", cubic_meters=2), call("fill", cubic_meters="lots"), call("dig"))
    agent = make_agent(ScriptedModel(turn, "after"), tools=[dig, fill], plugins=[NoFilling()])
    events = agent.stream("dig")
    async for event in events:
        if event.name == "tool_start":
            break
    await events.aclose()
    refused, invalid, cut = agent.messages[2:5]
    assert refused.content == "Filling is not allowed today." and refused.is_error
    assert invalid.content.startswith("Invalid arguments for fill") and invalid.is_error
    assert "dig did not run" in cut.content
    assert_history_valid(agent.messages)
