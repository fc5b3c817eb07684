"""The loop's exits and guarantees, through the public API with an in-process model."""

from __future__ import annotations

import asyncio

import bandoneon
import pytest
from bandoneon import Message, NoAnswer, RunInProgress, tool
from bandoneon.testing import FunctionModel, ScriptedModel, assert_history_valid, call, reply


@tool
def get_forecast(city: str, date: str) -> str:
    """Daily forecast for one city: rain chance and min/max temp. date is YYYY-MM-DD."""
    return f"{city} {date}: rain 80%, 12-18C"


def test_a_text_reply_ends_the_run_with_an_answer(bare_agent):
    agent = bare_agent(ScriptedModel("Hello!"))
    result = agent.run_sync("Hi")
    assert (result.stop, result.ok, result.text, result.turns) == ("end_turn", True, "Hello!", 1)
    assert result.unwrap() == "Hello!"


def test_the_loop_runs_the_tool_and_feeds_the_result_back(bare_agent):
    model = ScriptedModel(call("get_forecast", city="Buenos Aires", date="2026-09-26"), "Rain tomorrow.")
    agent = bare_agent(model, tools=[get_forecast])
    result = agent.run_sync("Will it rain tomorrow?")
    assert result.text == "Rain tomorrow."
    second_request = model.requests[1]
    assert second_request.messages[-1].role == "tool"
    assert "rain 80%" in second_request.messages[-1].content
    assert [t.name for t in second_request.tools] == ["get_forecast"]


def test_history_is_kept_across_runs_and_resent(bare_agent):
    model = ScriptedModel("Got it.", "Buenos Aires.")
    agent = bare_agent(model)
    agent.run_sync("I'm in Buenos Aires.")
    agent.run_sync("Where am I?")
    assert [m.content for m in model.requests[1].messages] == ["I'm in Buenos Aires.", "Got it.", "Where am I?"]
    assert len(agent.messages) == 4


def test_fork_copies_the_history_and_then_diverges(bare_agent):
    agent = bare_agent(ScriptedModel("one", "two"))
    agent.run_sync("first")
    other = agent.fork()
    assert other.messages == agent.messages
    other.provider = agent.provider  # share the script for the test
    agent.run_sync("second")
    assert len(agent.messages) == 4 and len(other.messages) == 2


def test_max_turns_is_a_stated_failure_and_keeps_the_work(bare_agent):
    model = FunctionModel(lambda request: call("get_forecast", city="X", date="2026-01-01"))
    agent = bare_agent(model, tools=[get_forecast], max_turns=3)
    ends = []
    agent.on("run_end", ends.append)
    result = agent.run_sync("loop forever")
    assert (result.stop, result.ok, result.text, result.turns) == ("max_turns", False, None, 3)
    assert ends[0].reason == "max_turns"
    assert sum(1 for m in result.messages if m.role == "tool") == 3
    assert_history_valid(agent.messages)
    with pytest.raises(NoAnswer, match="max_turns"):
        result.unwrap()


async def test_a_second_concurrent_run_is_refused(bare_agent):
    gate = asyncio.Event()

    async def slow(request):
        await gate.wait()
        return "done"

    agent = bare_agent(FunctionModel(slow))
    first = asyncio.create_task(agent.run("one"))
    await asyncio.sleep(0)
    with pytest.raises(RunInProgress):
        await agent.run("two")
    gate.set()
    assert (await first).text == "done"


async def test_tools_of_one_message_run_concurrently_and_answer_in_call_order(bare_agent):
    both_started = asyncio.Event()
    started: list[str] = []

    @tool
    async def wait_for_partner(name: str) -> str:
        """Wait until both calls are running at the same time."""
        started.append(name)
        if len(started) == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), 2)
        return f"{name} done"

    model = ScriptedModel([call("wait_for_partner", name="a"), call("wait_for_partner", name="b")], "ok")
    agent = bare_agent(model, tools=[wait_for_partner])
    result = await agent.run("go")
    assert result.ok
    tool_messages = [m.content for m in agent.messages if m.role == "tool"]
    assert tool_messages == ["a done", "b done"]


async def test_max_tool_concurrency_bounds_the_parallel_calls(bare_agent):
    running = 0
    peak = 0

    @tool
    async def work(n: int) -> str:
        """Pretend to work."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        running -= 1
        return str(n)

    model = ScriptedModel([call("work", n=i) for i in range(5)], "ok")
    agent = bare_agent(model, tools=[work], max_tool_concurrency=2)
    await agent.run("go")
    assert peak == 2


def test_tool_calls_run_even_when_the_server_says_stop(bare_agent):
    model = ScriptedModel(reply("", call("get_forecast", city="A", date="2026-01-01"), finish_reason="stop"), "fine")
    agent = bare_agent(model, tools=[get_forecast])
    result = agent.run_sync("go")
    assert result.text == "fine"
    assert "rain 80%" in model.requests[1].messages[-1].content


def test_a_call_cut_off_by_length_is_not_run_and_the_model_is_told(bare_agent):
    ran = []

    @tool
    def book(seat: str) -> str:
        """Book a seat."""
        ran.append(seat)
        return "booked"

    model = ScriptedModel(reply("", call("book", '{"seat": "1'), finish_reason="length"), "sorry")
    agent = bare_agent(model, tools=[book])
    agent.run_sync("book")
    assert ran == []
    told = model.requests[1].messages[-1]
    assert told.is_error and "cut off" in told.content
    assert_history_valid(agent.messages)


async def test_cancel_stops_the_run_and_the_running_tool(bare_agent):
    tool_started = asyncio.Event()
    tool_cancelled = asyncio.Event()

    @tool
    async def dig(depth: int) -> str:
        """Dig a hole."""
        tool_started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            tool_cancelled.set()
            raise
        return "deep"

    agent = bare_agent(ScriptedModel(call("dig", depth=3), "after", "next run works"), tools=[dig])
    task = asyncio.create_task(agent.run("dig"))
    await tool_started.wait()
    agent.cancel()
    result = await task
    assert result.stop == "cancelled" and not result.ok
    assert tool_cancelled.is_set()
    assert_history_valid(agent.messages)
    assert (await agent.run("again")).text == "after"


async def test_asyncio_cancellation_propagates_and_leaves_the_history_valid(bare_agent):
    started = asyncio.Event()

    @tool
    async def wait_forever() -> str:
        """Never returns."""
        started.set()
        await asyncio.sleep(30)
        return ""

    agent = bare_agent(ScriptedModel(call("wait_forever"), "ok"), tools=[wait_forever])
    task = asyncio.create_task(agent.run("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_history_valid(agent.messages)
    assert (await agent.run("again")).text == "ok"


async def test_run_timeout_ends_the_run_as_a_timeout(bare_agent):
    async def never(request):
        await asyncio.sleep(30)

    agent = bare_agent(FunctionModel(never), run_timeout=0.05)
    result = await agent.run("hello")
    assert result.stop == "timeout" and "run_timeout" in result.detail


async def test_turn_timeout_cuts_a_model_call_that_never_ends(bare_agent):
    async def never(request):
        await asyncio.sleep(30)

    agent = bare_agent(FunctionModel(never), turn_timeout=0.05)
    result = await agent.run("hello")
    assert result.stop == "timeout" and "turn_timeout" in result.detail


async def test_a_tool_that_hangs_is_stopped_by_tool_timeout(bare_agent):
    @tool
    async def hang() -> str:
        """Hangs."""
        await asyncio.sleep(30)
        return ""

    model = ScriptedModel(call("hang"), "gave up")
    agent = bare_agent(model, tools=[hang], tool_timeout=0.05)
    result = await agent.run("go")
    told = model.requests[1].messages[-1]
    assert told.is_error and "longer than 0.05 seconds" in told.content
    assert result.text == "gave up"


def test_a_sync_tool_that_hangs_is_abandoned_after_tool_timeout(bare_agent):
    import threading

    release = threading.Event()

    @tool
    def block() -> str:
        """Blocks its thread."""
        release.wait(5)
        return "late"

    model = ScriptedModel(call("block"), "ok")
    agent = bare_agent(model, tools=[block], tool_timeout=0.05)
    agent.run_sync("go")
    release.set()
    assert "longer than" in model.requests[1].messages[-1].content


def test_a_hook_that_raises_fails_the_run_naming_the_plugin_and_the_history_stays_valid(bare_agent):
    class Broken:
        name = "broken-plugin"

        @bandoneon.hookimpl
        def after_tool_execution(self, result):
            raise RuntimeError("boom")

    model = ScriptedModel(call("get_forecast", city="A", date="2026-01-01"), "next run works")
    agent = bare_agent(model, tools=[get_forecast], plugins=[Broken()])
    with pytest.raises(bandoneon.PluginError, match="broken-plugin.*after_tool_execution.*boom"):
        agent.run_sync("go")
    assert_history_valid(agent.messages)


def test_a_broken_event_listener_is_isolated(bare_agent, caplog):
    agent = bare_agent(ScriptedModel("fine"))
    agent.on("turn_start", lambda event: 1 / 0)
    assert agent.run_sync("hi").text == "fine"
    assert "listener" in caplog.text


def test_a_listener_added_during_a_run_hears_the_next_run(bare_agent):
    # Tracing-like observer present (events are built), and no listener when the run starts.
    class Observer:
        @bandoneon.hookimpl
        def on_event(self, event):
            pass

    heard: list[str] = []

    @tool
    def listen() -> str:
        """Start listening."""
        agent.on("run_start", lambda event: heard.append(event.run_id))
        return "listening"

    agent = bare_agent(ScriptedModel(call("listen"), "first", "second"), tools=[listen], plugins=[Observer()])
    agent.run_sync("one")
    second = agent.run_sync("two")
    assert heard[-1] == second.run_id


def test_on_rejects_an_unknown_event_name(bare_agent):
    agent = bare_agent(ScriptedModel())
    with pytest.raises(ValueError, match="unknown event 'tool_finish'"):
        agent.on("tool_finish", print)


def test_events_follow_the_loop_in_order(bare_agent):
    agent = bare_agent(ScriptedModel(call("get_forecast", city="A", date="2026-01-01"), "done"), tools=[get_forecast])
    names: list[str] = []
    agent.on("*", lambda event: names.append(event.name))
    agent.run_sync("go")
    assert names == [
        "run_start",
        "turn_start", "provider_request", "tool_call_delta", "assistant_message", "tool_start", "tool_end", "turn_end",
        "turn_start", "provider_request", "text_delta", "assistant_message", "turn_end",
        "run_end",
    ]


def test_refused_calls_get_tool_refused_and_no_tool_start(bare_agent):
    class Policy:
        @bandoneon.hookimpl
        def before_tool_execution(self, call):
            return bandoneon.Refuse("Blocked by policy: book tourist instead.")

    agent = bare_agent(ScriptedModel(call("get_forecast", city="A", date="2026-01-01"), "ok"), tools=[get_forecast], plugins=[Policy()])
    names: list[str] = []
    agent.on("*", lambda event: names.append(event.name))
    agent.run_sync("go")
    assert "tool_refused" in names and "tool_start" not in names and "tool_end" not in names
    assert agent.messages[2].content == "Blocked by policy: book tourist instead." and agent.messages[2].is_error


def test_calls_answered_without_running_get_tool_answered(bare_agent):
    class Answers:
        @bandoneon.hookimpl
        def before_tool_execution(self, call):
            return bandoneon.Respond("cached: rain") if call.name == "get_forecast" else None

    model = ScriptedModel([call("get_forecast", city="A", date="2026-01-01"), call("no_such_tool"), call("get_forecast", city=3)], "ok")
    agent = bare_agent(model, tools=[get_forecast], plugins=[Answers()])
    seen: list[bandoneon.Event] = []
    agent.on("*", seen.append)
    agent.run_sync("go")
    answered = [event for event in seen if isinstance(event, bandoneon.ToolAnswered)]
    assert [(event.call.name, event.output, event.is_error) for event in answered[:1]] == [("get_forecast", "cached: rain", False)]
    assert [event.call.name for event in answered] == ["get_forecast", "no_such_tool", "get_forecast"]
    assert answered[1].is_error and "There is no tool named" in answered[1].output and answered[2].is_error
    assert not [event for event in seen if event.name in ("tool_start", "tool_end", "tool_refused")]


async def test_stream_yields_text_deltas_then_run_end(bare_agent):
    agent = bare_agent(ScriptedModel("It will rain tomorrow."))
    deltas: list[str] = []
    last = None
    async for event in agent.stream("rain?"):
        if event.name == "text_delta":
            deltas.append(event.text)
        last = event
    assert "".join(deltas) == "It will rain tomorrow." and len(deltas) > 1
    assert last.name == "run_end" and last.reason == "end_turn"


def test_context_files_are_appended_and_reread_on_each_run(bare_agent, tmp_path):
    (tmp_path / "AGENTS.md").write_text("Always answer in Spanish.")
    model = ScriptedModel("uno", "dos")
    agent = bare_agent(model, system_prompt="You are Nimbus.", context_files=True, cwd=tmp_path)
    agent.run_sync("one")
    (tmp_path / "AGENTS.md").write_text("Always answer in French, now.")
    agent.run_sync("two")
    assert "Spanish" in model.requests[0].system_prompt and model.requests[0].system_prompt.startswith("You are Nimbus.")
    assert "French, now" in model.requests[1].system_prompt


def test_a_context_file_added_or_removed_between_runs_is_seen_in_the_current_folder(bare_agent, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no cwd given: the process's folder, as it is at each run
    model = ScriptedModel("uno", "dos", "tres")
    agent = bare_agent(model, system_prompt="You are Nimbus.", context_files=True)
    agent.run_sync("one")
    (tmp_path / "CLAUDE.md").write_text("Answer in haiku.")
    agent.run_sync("two")
    (tmp_path / "CLAUDE.md").unlink()
    agent.run_sync("three")
    prompts = [request.system_prompt for request in model.requests]
    assert prompts[0] == prompts[2] == "You are Nimbus."
    assert prompts[1] == "You are Nimbus.\n\n# CLAUDE.md\n\nAnswer in haiku."


def test_context_files_can_be_switched_off(bare_agent, tmp_path):
    (tmp_path / "AGENTS.md").write_text("secret rules")
    model = ScriptedModel("ok")
    bare_agent(model, context_files=False, cwd=tmp_path).run_sync("hi")
    assert "secret rules" not in model.requests[0].system_prompt


def test_append_system_prompt_follows_the_system_prompt(bare_agent):
    model = ScriptedModel("ok")
    bare_agent(model, system_prompt="A.", append_system_prompt="B.").run_sync("hi")
    assert model.requests[0].system_prompt == "A.\n\nB."


def test_bad_limits_are_configuration_errors(bare_agent):
    with pytest.raises(bandoneon.ConfigError, match="max_turns"):
        bare_agent(ScriptedModel(), max_turns=0)
    with pytest.raises(bandoneon.ConfigError, match="tool_timeout"):
        bare_agent(ScriptedModel(), tool_timeout=-1)


def test_usage_adds_up_over_turns_and_runs(bare_agent):
    usage = bandoneon.Usage(input_tokens=10, output_tokens=2, cached_input_tokens=4, requests=1)
    model = ScriptedModel(reply("", call("get_forecast", city="A", date="2026-01-01"), usage=usage), reply("ok", usage=usage))
    agent = bare_agent(model, tools=[get_forecast])
    result = agent.run_sync("go")
    assert result.usage.input_tokens == 20 and result.usage.cached_input_tokens == 8 and result.usage.requests == 2
    assert agent.usage == result.usage


def test_run_sync_refuses_to_run_inside_an_event_loop(bare_agent):
    agent = bare_agent(ScriptedModel("x"))

    async def inside():
        agent.run_sync("hi")

    with pytest.raises(RuntimeError, match="await agent.run"):
        asyncio.run(inside())


def test_load_history_replaces_the_history_and_the_next_run_continues_it(bare_agent):
    model = ScriptedModel("Welcome back.")
    agent = bare_agent(model)
    saved = [Message.user("I'm in Buenos Aires."), Message.assistant("Noted.")]
    agent.load_history(saved, usage=bandoneon.Usage(input_tokens=7))
    agent.run_sync("Where am I?")
    assert [m.content for m in model.requests[0].messages] == ["I'm in Buenos Aires.", "Noted.", "Where am I?"]
    assert agent.usage.input_tokens == 7


def test_history_resets_counts_each_replacement_of_the_history_and_nothing_else(bare_agent):
    agent = bare_agent(ScriptedModel("One.", "Two."))
    agent.run_sync("Hi.")
    assert agent.history_resets == 0  # a run adds to the history: not a reset
    agent.clear()
    agent.load_history([Message.user("Back.")])
    assert agent.history_resets == 2
    agent.run_sync("Again.")
    assert agent.history_resets == 2
    assert agent.fork().history_resets == 0  # a new agent with a copy: nothing of its own replaced


def test_fork_gives_the_copy_its_own_plugin_instances(bare_agent):
    import attrs

    @attrs.define
    class Counter:
        name = "counter"
        limit: int = 3

    agent = bare_agent(ScriptedModel(), plugins=[Counter(limit=5)])
    other = agent.fork()
    assert other.plugin("counter") is not agent.plugin("counter")
    assert other.plugin("counter").limit == 5


async def test_an_agent_closed_with_aclose_reconnects_when_used_again(mock_llm):
    from bandoneon.testing import Reply

    mock_llm.add(Reply(text="hi"), Reply(text="again"))
    async with bandoneon.Agent(f"openai-compatible:m@{mock_llm.base_url}", plugins=[], context_files=False) as agent:
        assert (await agent.run("hi")).text == "hi"
    assert (await agent.run("more")).text == "again"
    await agent.aclose()


def test_a_tool_that_needs_approval_is_refused_when_nobody_can_approve(bare_agent):
    ran = []

    @tool(needs_approval=True)
    def drop_claw() -> str:
        """Drop the claw. Cannot be undone."""
        ran.append(True)
        return "prize"

    model = ScriptedModel(call("drop_claw"), "ok")
    bare_agent(model, tools=[drop_claw]).run_sync("drop it")
    told = model.requests[1].messages[-1]
    assert ran == [] and told.is_error and "needs a person's approval" in told.content


def test_a_side_call_is_announced_as_a_request_marked_side_then_its_end(bare_agent):
    """``run.call_model`` (a plugin's summary, a wrap-up): listeners see its request, marked
    ``side``, and a ``side_call_end`` with its outcome, so whoever opened something for the
    request (a trace's span) can close it; a failure's end carries the error."""

    class AsksOnTheSide(bandoneon.Plugin):
        name = "asks-on-the-side"

        @bandoneon.hookimpl
        async def before_turn(self, run: bandoneon.RunContext) -> None:
            for _ in range(2):
                try:
                    await run.call_model(bandoneon.ModelRequest(messages=(bandoneon.Message.user("Side question"),)))
                except bandoneon.AuthError:
                    pass

    agent = bare_agent(ScriptedModel("Side answer.", bandoneon.AuthError("401 bad key"), "The answer."), plugins=[AsksOnTheSide()])
    seen: list[bandoneon.Event] = []
    for name in ("provider_request", "side_call_end", "assistant_message"):
        agent.on(name, seen.append)
    assert agent.run_sync("Question").text == "The answer."
    assert [(e.name, getattr(e, "side", None)) for e in seen] == [
        ("provider_request", True),
        ("side_call_end", None),
        ("provider_request", True),
        ("side_call_end", None),
        ("provider_request", False),
        ("assistant_message", None),
    ]
    answered, failed = seen[1], seen[3]
    assert answered.error is None and answered.finish_reason == "stop" and answered.message.content == "Side answer."
    assert failed.error is not None and "401" in failed.error and failed.message is None
