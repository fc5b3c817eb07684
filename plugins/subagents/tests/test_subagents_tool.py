import asyncio
import socket
from typing import ClassVar

import attrs
import bandoneon
import pytest
from bandoneon.testing import FunctionModel, ScriptedModel, call, reply
from bandoneon_subagents import Subagents, subagent

SCOUT_PROMPT = "You are the scout."


def by_role(parent, child):
    """A model that answers the parent and the child from separate scripts (told apart by system prompt)."""
    parent, child = list(parent), list(child)

    def answer(request):
        script = child if request.system_prompt.startswith(SCOUT_PROMPT) else parent
        return script.pop(0)

    return FunctionModel(answer)


def scout(**options):
    options.setdefault("system_prompt", SCOUT_PROMPT)
    return subagent("scout", "Finds things.", **options)


def tool_messages(agent):
    return [m for m in agent.messages if m.role == "tool"]


def test_the_parent_reads_only_the_childs_final_text():
    @bandoneon.tool
    def read_listings() -> str:
        """All the listings."""
        return "LISTING " * 500

    model = by_role(
        parent=[call("scout", task="Find a milonga in San Telmo on Saturday."), "Go to La Catedral."],
        child=[call("read_listings"), "La Catedral, Defensa 1200, 22:00."],
    )
    agent = bandoneon.Agent(model, tools=[scout(tools=[read_listings])], plugins=[], context_files=False)
    result = agent.run_sync("Plan my evening.")
    assert result.text == "Go to La Catedral."
    assert [m.content for m in tool_messages(agent)] == ["La Catedral, Defensa 1200, 22:00."]
    parent_requests = [r for r in model.requests if not r.system_prompt.startswith(SCOUT_PROMPT)]
    assert all("LISTING" not in m.content for r in parent_requests for m in r.messages)


def test_every_call_starts_a_fresh_child_with_only_the_brief():
    model = by_role(
        parent=[call("scout", task="first errand"), call("scout", task="second errand"), "done"],
        child=["one", "two"],
    )
    agent = bandoneon.Agent(model, tools=[scout()], plugins=[], context_files=False)
    agent.run_sync("go")
    child_requests = [r for r in model.requests if r.system_prompt.startswith(SCOUT_PROMPT)]
    assert [[m.content for m in r.messages] for r in child_requests] == [["first errand"], ["second errand"]]


async def test_two_subagent_calls_in_one_message_run_in_parallel():
    started = {"milonga": asyncio.Event(), "food": asyncio.Event()}

    def errand(mine: str, other: str):
        async def wait_for_the_other() -> str:
            """Waits until the other scout is out too."""
            started[mine].set()
            # Deadlocks (and fails on the guard timeout) unless both scouts are out at once.
            await asyncio.wait_for(started[other].wait(), timeout=5)
            return f"{mine} ok"

        return bandoneon.tool(wait_for_the_other)

    def answer(request):
        if request.system_prompt in ("milonga", "food"):
            last = request.messages[-1]
            return f"read: {last.content}" if last.role == "tool" else call("wait_for_the_other")
        if request.messages[-1].role == "tool":
            return "both back"
        return [call("milonga_scout", task="a milonga"), call("food_scout", task="a dinner")]

    tools = [
        subagent("milonga_scout", "Finds milongas.", system_prompt="milonga", tools=[errand("milonga", "food")]),
        subagent("food_scout", "Finds food.", system_prompt="food", tools=[errand("food", "milonga")]),
    ]
    agent = bandoneon.Agent(FunctionModel(answer), tools=tools, plugins=[], context_files=False)
    result = await agent.run("Plan my evening.")
    assert result.text == "both back"
    assert [(m.content, m.is_error) for m in tool_messages(agent)] == [("read: milonga ok", False), ("read: food ok", False)]


def _child_that_hangs(state):
    async def hang() -> str:
        """Never returns."""
        state["started"].set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            state["child_cancelled"] = True
            raise
        return "unreachable"

    model = by_role(parent=[call("scout", task="hang around")], child=[call("hang")])
    return model, scout(tools=[bandoneon.tool(hang)])


async def test_agent_cancel_on_the_parent_cancels_the_child():
    state = {"started": asyncio.Event(), "child_cancelled": False}
    model, tool = _child_that_hangs(state)
    agent = bandoneon.Agent(model, tools=[tool], plugins=[], context_files=False)
    task = asyncio.create_task(agent.run("go"))
    await state["started"].wait()
    agent.cancel()
    result = await task
    assert result.stop == "cancelled"
    assert state["child_cancelled"] is True
    assert tool_messages(agent)[-1].is_error  # the history stays valid: the call has a result


async def test_asyncio_cancellation_of_the_parent_reaches_the_child():
    state = {"started": asyncio.Event(), "child_cancelled": False}
    model, tool = _child_that_hangs(state)
    agent = bandoneon.Agent(model, tools=[tool], plugins=[], context_files=False)
    task = asyncio.create_task(agent.run("go"))
    await state["started"].wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert state["child_cancelled"] is True


def test_the_depth_limit_stops_nesting_with_a_result_the_child_reads():
    depths = []

    @bandoneon.tool
    def note_depth(run: bandoneon.RunContext) -> str:
        """Notes how deep this run is."""
        depths.append(run.depth)
        return "noted"

    def answer(request):
        last = request.messages[-1]
        if last.role == "user":
            return call("inner", task="go deeper") if request.system_prompt == "outer" else call("outer", task="errand") if request.system_prompt == "" else call("note_depth")
        return f"{request.system_prompt or 'parent'} saw: {last.content}"

    def build(max_depth):
        inner = subagent("inner", "Innermost.", system_prompt="inner", tools=[note_depth], max_depth=max_depth)
        outer = subagent("outer", "Outer.", system_prompt="outer", tools=[inner], max_depth=max_depth)
        return bandoneon.Agent(FunctionModel(answer), tools=[outer], plugins=[], context_files=False)

    result = build(max_depth=1).run_sync("go")
    assert depths == []
    assert "inner was not started: subagents may nest 1 level(s) deep and this call would be level 2" in result.text
    result = build(max_depth=2).run_sync("go")
    assert depths == [2]
    assert result.text == "parent saw: outer saw: inner saw: noted"


@attrs.define
class Guard(bandoneon.Plugin):
    name: ClassVar[str] = "guard"
    blocked: str = "send_email"

    @bandoneon.hookimpl
    def before_tool_execution(self, call):
        if call.name == self.blocked:
            return bandoneon.Refuse(f"guard: {call.name} is not allowed")
        return None

    @bandoneon.hookimpl
    def inherited_by_subagents(self):
        return self  # the child gets these very rules (as bandoneon-guard does)


@pytest.mark.parametrize(("plugin", "tool_name", "reason"), [(Guard(), "send_email", "guard: send_email is not allowed")])
def test_the_parents_guard_applies_inside_the_child(plugin, tool_name, reason):
    ran = []

    def act() -> str:
        """Does something risky."""
        ran.append(True)
        return "done"

    risky = bandoneon.tool(act, name=tool_name)
    model = by_role(parent=[call("scout", task="do it"), "ok"], child=[call(tool_name), "I was refused."])
    agent = bandoneon.Agent(model, tools=[scout(tools=[risky], plugins=[])], plugins=[plugin], context_files=False)
    agent.run_sync("go")
    assert ran == []
    child_requests = [r for r in model.requests if r.system_prompt.startswith(SCOUT_PROMPT)]
    refusal = child_requests[1].messages[-1]
    assert refusal.is_error and refusal.content == reason


def test_children_usage_is_added_to_the_parents():
    spend = lambda tokens: bandoneon.Usage(input_tokens=tokens, output_tokens=1, requests=1)  # noqa: E731
    model = by_role(
        parent=[reply("", call("scout", task="x"), usage=spend(10)), reply("done", usage=spend(20))],
        child=[reply("found", usage=spend(1000))],
    )
    agent = bandoneon.Agent(model, tools=[scout()], plugins=[], context_files=False)
    result = agent.run_sync("go")
    assert result.usage.input_tokens == 1030
    assert result.usage.requests == 3
    assert agent.usage.input_tokens == 1030


def test_the_usage_of_a_child_that_failed_is_still_counted():
    model = by_role(
        parent=[call("scout", task="x"), "done"],
        child=[reply("", call("nothing"), usage=bandoneon.Usage(input_tokens=500, requests=1))],
    )
    agent = bandoneon.Agent(model, tools=[scout(max_turns=1)], plugins=[], context_files=False)
    assert agent.run_sync("go").usage.input_tokens == 500


def test_child_events_reach_the_parents_listeners_linked_to_the_parent_run():
    model = by_role(parent=[call("scout", task="x"), "done"], child=["found"])
    agent = bandoneon.Agent(model, tools=[scout()], plugins=[], context_files=False)
    starts, forwarded = [], []
    agent.on("run_start", starts.append)
    agent.on("subagent_event", forwarded.append)
    result = agent.run_sync("go")
    (parent_start,) = starts  # the child's run_start is not passed off as the parent's own
    assert parent_start.run_id == result.run_id and parent_start.parent_run_id is None
    assert {(f.run_id, f.subagent) for f in forwarded} == {(result.run_id, "scout")}
    child_start = forwarded[0].event
    assert child_start.name == "run_start" and child_start.parent_run_id == result.run_id and child_start.prompt == "x"
    assert forwarded[-1].event.name == "run_end" and forwarded[-1].event.run_id == child_start.run_id


@attrs.define
class Recorder(bandoneon.Plugin):
    """An observer that asks to follow the parent into its subagents (as tracing does)."""

    name: ClassVar[str] = "recorder"
    runs: list = attrs.field(factory=list)
    events: list = attrs.field(factory=list)

    @bandoneon.hookimpl
    def inherited_by_subagents(self):
        return self

    @bandoneon.hookimpl
    def before_run(self, run):
        self.runs.append((run.depth, run.agent.name))

    @bandoneon.hookimpl
    def on_event(self, run, event):
        self.events.append((run.run_id, event.run_id, event.name))


@attrs.define
class Homebody(bandoneon.Plugin):
    name: ClassVar[str] = "homebody"
    runs: list = attrs.field(factory=list)

    @bandoneon.hookimpl
    def before_run(self, run):
        self.runs.append(run.depth)


def test_plugins_answering_inherited_by_subagents_follow_the_parent_into_every_child():
    recorder, homebody = Recorder(), Homebody()
    model = by_role(parent=[call("scout", task="x"), "done"], child=["found"])
    agent = bandoneon.Agent(model, tools=[scout(plugins=[])], plugins=[recorder, homebody], context_files=False)
    agent.run_sync("go")
    assert recorder.runs == [(0, "agent"), (1, "agent/scout")]  # the same instance, in the child
    assert homebody.runs == [0]  # a plugin that does not answer stays home


def test_an_inherited_observer_sees_each_child_event_once_under_the_childs_run():
    recorder = Recorder()
    model = by_role(parent=[call("scout", task="x"), "done"], child=["found"])
    agent = bandoneon.Agent(model, tools=[scout()], plugins=[recorder], context_files=False)
    agent.on("*", lambda event: None)  # the parent has listeners, so child events are forwarded
    agent.run_sync("go")
    assert all(run_id == event_run_id for run_id, event_run_id, _ in recorder.events)
    starts = [event_run_id for _, event_run_id, name in recorder.events if name == "run_start"]
    assert len(starts) == len(set(starts)) == 2
    assert any(name == "subagent_event" for *_, name in recorder.events)


def test_a_child_that_runs_out_of_turns_returns_an_error_the_parent_reads():
    model = by_role(parent=[call("scout", task="loop forever"), "the scout gave up"], child=[call("scout_again")] * 2)
    agent = bandoneon.Agent(model, tools=[scout(max_turns=2)], plugins=[], context_files=False)
    result = agent.run_sync("go")
    (message,) = tool_messages(agent)
    assert message.is_error
    assert message.content.startswith("scout ended without an answer (stop=max_turns")
    assert result.text == "the scout gave up"


def test_an_empty_brief_is_an_error_result_and_no_child_starts():
    model = by_role(parent=[call("scout", task="   "), "ok"], child=[])
    agent = bandoneon.Agent(model, tools=[scout()], plugins=[], context_files=False)
    agent.run_sync("go")
    (message,) = tool_messages(agent)
    assert message.is_error and "The brief for scout is empty" in message.content
    assert all(not r.system_prompt.startswith(SCOUT_PROMPT) for r in model.requests)


def test_a_child_whose_model_is_unreachable_returns_an_error_result():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    unreachable = f"openai-compatible:m@http://127.0.0.1:{port}/v1"
    model = ScriptedModel(call("scout", task="x"), "the scout is unreachable")
    agent = bandoneon.Agent(model, tools=[scout(model=unreachable, plugins=[])], plugins=[], context_files=False)
    result = agent.run_sync("go")
    (message,) = tool_messages(agent)
    assert message.is_error and message.content.startswith("scout failed before it could answer:")
    assert result.text == "the scout is unreachable"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": "two words"}, "must be 1-64 letters"),
        ({"description": " "}, "needs a description"),
        ({"max_turns": 0}, "max_turns must be a whole number of at least 1, got 0"),
        ({"max_depth": 0}, "max_depth must be a whole number of at least 1, got 0"),
        ({"run_timeout": 0}, "run_timeout must be above 0 seconds, got 0"),
    ],
)
def test_bad_options_are_refused_when_the_tool_is_made(options, message):
    arguments = {"name": "scout", "description": "Finds things."} | options
    with pytest.raises(bandoneon.ConfigError, match=message):
        subagent(arguments.pop("name"), arguments.pop("description"), **arguments)


def test_the_plugin_builds_subagents_from_options():
    model = by_role(parent=[call("namer", task="/a/b/c.txt"), "done"], child=[call("basename", p="/a/b/c.txt"), "c.txt"])
    plugin = Subagents(agents={"namer": {"description": "Names files.", "system_prompt": SCOUT_PROMPT, "tools": ["os.path:basename"]}})
    agent = bandoneon.Agent(model, plugins=[plugin], context_files=False)
    assert "namer" in agent.tools
    agent.run_sync("go")
    assert tool_messages(agent)[0].content == "c.txt"


def test_the_plugin_names_a_tool_path_that_does_not_import():
    with pytest.raises(bandoneon.ConfigError, match="module 'no_such_module' cannot be imported"):
        bandoneon.Agent(ScriptedModel(), plugins=[Subagents(agents={"x": {"description": "d", "tools": ["no_such_module:f"]}})], context_files=False)


def test_the_plugin_is_found_by_its_entry_point_and_checks_its_options():
    assert bandoneon.load_plugin("subagents") is Subagents
    with pytest.raises(bandoneon.ConfigError, match="subagents"):
        bandoneon.Agent(ScriptedModel(), plugins={"subagents": {"agents": {"x": {"descripton": "typo"}}}}, context_files=False)


def test_a_child_inherits_the_parents_fallback_models():
    def primary(request):
        if request.system_prompt.startswith(SCOUT_PROMPT):
            raise bandoneon.ServerError("primary: HTTP 503", status=503)
        return "Done." if request.messages[-1].role == "tool" else call("scout", task="Look around.")

    backup = FunctionModel(lambda request: "Found it, from the backup.", model="backup")
    agent = bandoneon.Agent([FunctionModel(primary, model="primary"), backup], tools=[scout()], plugins=[], context_files=False)
    result = agent.run_sync("Go.")
    assert result.text == "Done."
    assert [m.content for m in tool_messages(agent)] == ["Found it, from the backup."]
    assert [r.system_prompt.startswith(SCOUT_PROMPT) for r in backup.requests] == [True]  # the parent stayed on its model


def test_an_installed_policy_pack_governs_the_child_with_no_error(example_pack):
    booked = []

    @bandoneon.tool
    def book_ticket(train: int, seat_class: str) -> str:
        """Book one seat."""
        booked.append(seat_class)
        return "booked"

    model = by_role(parent=[call("scout", task="book first class on train 7"), "ok"], child=[call("book_ticket", train=7, seat_class="first"), "I was refused."])
    agent = bandoneon.Agent(model, tools=[scout(tools=[book_ticket], plugins=[])], plugins=[], context_files=False)
    result = agent.run_sync("go")
    assert result.ok and booked == []
    child_requests = [r for r in model.requests if r.system_prompt.startswith(SCOUT_PROMPT)]
    refusal = child_requests[1].messages[-1]
    assert refusal.is_error and "First class needs a manager's approval" in refusal.content
    parent_result = [r for r in model.requests if not r.system_prompt.startswith(SCOUT_PROMPT)][1].messages[-1]
    assert "could not be started" not in parent_result.content and "I was refused." in parent_result.content
