"""Every installed plugin active at once (and the example policy pack when the suite runs with
it), under what users do to agents: a run cancelled at any step, agents on several threads.
The agents keep working, their histories stay well formed (every tool call answered once, in
order), and the plugins that keep state agree with them: each session holds its history, each
trace is whole."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import bandoneon
import pytest
from bandoneon.testing import Fault, FunctionModel, MockLLMServer, Reply, ScriptedModel, assert_history_valid, call, reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@bandoneon.tool
async def weigh(grams: int) -> str:
    """Weigh a bag of coffee."""
    for _ in range(3):  # a few steps of the loop: a cancellation may land inside the tool
        await asyncio.sleep(0)
    return f"{grams} g"


async def answer(request: bandoneon.ModelRequest) -> bandoneon.Message:
    """Weighs a bag for each request, and has a scout (a subagent, with this same model) weigh
    another at the same time; then says it is done."""
    await asyncio.sleep(0)
    if not request.tools:  # compaction asking for a summary of what it drops
        return bandoneon.Message.assistant("Summary: bags weighed.")
    if request.messages[-1].role == "user":
        calls = [call("weigh", grams=len(request.messages))]
        if any(tool.name == "scout" for tool in request.tools):
            calls.append(call("scout", task="Weigh the bag by the door."))
        return bandoneon.Message.assistant("", calls)
    return bandoneon.Message.assistant("Done.")


def scout(model: bandoneon.Provider | None = None) -> bandoneon.Tool:
    """A subagent that weighs; on the parent run's model unless given one."""
    from bandoneon_subagents import subagent

    return subagent("scout", "Weighs a bag somewhere else.", tools=[weigh], max_turns=4, model=model)


def every_installed_plugin(sessions_folder, **session_options: str) -> dict[str, dict[str, Any] | None]:
    """Every installed plugin by name, with its defaults, but the session's (a folder, an id)
    and memory's (a notes folder beside the sessions', and a scope: it has none by default)."""
    names = sorted(bandoneon.installed_plugins())
    if not {"memory", "sessions", "subagents", "tracing"} <= set(names):
        pytest.skip("needs the memory, sessions, subagents and tracing plugins installed")
    options: dict[str, dict[str, Any] | None] = dict.fromkeys(names)
    options["sessions"] = {"session_id": "s-1", "path": str(sessions_folder), **session_options}
    options["memory"] = {"mode": "notes", "scope": "roastery", "path": str(sessions_folder.parent / "notes")}
    return options


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=st.integers(1, 3), steps=st.integers(0, 80), durability=st.sampled_from(["turn", "run", "os"]), on_worker=st.booleans())
def test_a_run_cancelled_at_any_step_with_every_plugin_leaves_a_working_agent(tmp_path_factory, monkeypatch, before, steps, durability, on_worker):
    """Cancelled while the model answers, a tool runs, compaction summarises (a window that the
    history outgrows by the third run), or a session's flush waits on the disk or on one of its
    worker threads (a slow disk: ``INLINE_SYNC_LIMIT`` 0), in each durability mode."""
    import bandoneon_sessions.plugin

    monkeypatch.setattr(bandoneon_sessions.plugin, "INLINE_SYNC_LIMIT", 0.0 if on_worker else 1e9)
    folder = tmp_path_factory.mktemp("composed")
    plugins = every_installed_plugin(folder / "sessions", durability=durability)
    plugins["compaction"] = {"window": 1500, "summarize": True, "keep_recent_turns": 1}
    agent = bandoneon.Agent(FunctionModel(answer), tools=[weigh, scout()], plugins=plugins, context_files=False, cwd=folder)
    tracing = agent.plugin("tracing")

    async def main() -> bandoneon.RunResult:
        for number in range(before):
            await agent.run(f"Weigh bag {number}.")
        cancelled = asyncio.ensure_future(agent.run("Weigh the bag to cancel."))
        for _ in range(steps):
            await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.gather(cancelled, return_exceptions=True)
        result = await agent.run("Weigh the last bag.")
        await agent.aclose()
        return result

    result = asyncio.run(main())
    assert result.ok and result.output == "Done."
    assert_history_valid(agent.messages)
    from bandoneon_sessions import JsonlStore

    assert list(JsonlStore(folder / "sessions").load("s-1").messages) == agent.transcript  # every message, compacted or not
    roots = [trace[0] for trace in tracing.traces]
    assert len(roots) >= 2 and all(span.end is not None for trace in tracing.traces for span in trace)


def test_agents_with_every_plugin_on_threads_of_their_own_do_not_disturb_each_other(tmp_path):
    """Plugins share state across agents (caches, the trace writer, the session workers): agents
    on several threads at once, each with every installed plugin, each get their own answers."""
    import threading

    from bandoneon_sessions import JsonlStore

    errors: list[BaseException] = []
    histories: dict[int, list[bandoneon.Message]] = {}

    def work(number: int) -> None:
        try:
            plugins = every_installed_plugin(tmp_path / "sessions", session_id=f"s-{number}")
            agent = bandoneon.Agent(FunctionModel(answer), tools=[weigh, scout()], plugins=plugins, context_files=False, cwd=tmp_path)
            for run in range(4):
                result = agent.run_sync(f"Weigh bag {run} of worker {number}.")
                assert result.ok and result.output == "Done."
            histories[number] = agent.messages
            agent.close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not any(w.is_alive() for w in workers), "an agent never finished"
    assert errors == []
    store = JsonlStore(tmp_path / "sessions")
    for number, history in histories.items():
        assert [m.content for m in history if m.role == "user"] == [f"Weigh bag {run} of worker {number}." for run in range(4)]
        assert list(store.load(f"s-{number}").messages) == history


#: What a model may ask of an agent with every plugin: each plugin's tools with good, wrong and
#: broken arguments, tools that do not exist. (Not run_code, which starts a sandbox per call,
#: nor ask_human, which waits for a person: each has tests of its own.)
_CALL_ARGUMENTS = st.one_of(
    st.builds(lambda grams: ("weigh", {"grams": grams}), st.one_of(st.integers(-5, 10**6), st.text(max_size=8), st.none())),
    st.builds(lambda name: ("load_skill", {"name": name}), st.one_of(st.sampled_from(["allergen-info", "catering-quote"]), st.text(max_size=30))),
    st.builds(lambda text: ("add_plan_item", {"description": text}), st.text(max_size=60)),
    st.builds(lambda item, status: ("update_plan_item", {"item": item, "status": status}), st.integers(0, 4), st.sampled_from(["completed", "in_progress", "bogus"])),
    st.just(("read_progress", {})),
    st.builds(lambda note: ("write_progress", {"note": note}), st.text(max_size=80)),
    st.builds(lambda task: ("scout", {"task": task}), st.text(max_size=40)),
    st.builds(lambda note: ("remember", {"note": note}), st.text(max_size=80)),
    st.builds(lambda name: (name, {}), st.sampled_from(["no_such_tool", "", "weigh\u202e", "../weigh"])),
)
_CALL = st.one_of(
    _CALL_ARGUMENTS.map(lambda pair: call(pair[0], pair[1])),
    st.builds(lambda name, raw: call(name, raw), st.sampled_from(["weigh", "add_plan_item", "load_skill"]), st.sampled_from(['{"grams": ', "[]", "null", '{"grams": 1e999}', '"{}"', "{" * 200])),
)
_SCRIPT = st.lists(st.lists(_CALL, min_size=1, max_size=3), max_size=4)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=_SCRIPT, answer_text=st.text(max_size=200))
def test_whatever_tools_the_model_calls_an_agent_with_every_plugin_answers_and_its_records_agree(tmp_path_factory, script, answer_text):
    folder = tmp_path_factory.mktemp("called")
    replies = [reply("", *calls) for calls in script] + [reply(answer_text or "Done.")]
    tools = [weigh, scout(FunctionModel(answer))]  # the scout has a model of its own: the script is the parent's
    agent = bandoneon.Agent(ScriptedModel(*replies), tools=tools, plugins=every_installed_plugin(folder / "sessions"), context_files=False, cwd=folder)
    tracing = agent.plugin("tracing")
    result = agent.run_sync("Weigh the bags and plan the day.")
    agent.close()
    # The answer, or a stop rule seeing the same calls again (a policy pack may switch it on).
    assert result.stop == "end_turn" or (result.stop == "no_progress" and script)
    assert_history_valid(agent.messages)
    from bandoneon_sessions import JsonlStore

    assert list(JsonlStore(folder / "sessions").load("s-1").messages) == agent.transcript
    resumed = bandoneon.Agent(ScriptedModel("Resumed."), tools=tools, plugins=every_installed_plugin(folder / "sessions"), context_files=False, cwd=folder)
    assert resumed.messages == agent.messages  # the same conversation, to go on with
    assert resumed.run_sync("Go on.").text == "Resumed."
    resumed.close()
    (trace,) = tracing.traces
    assert all(span.end is not None for span in trace)
    traced = Counter(s.attributes.get("gen_ai.tool.call.id") for s in trace if s.kind == "tool")
    assert all(traced[c.id] == 1 for m in agent.messages for c in m.tool_calls)  # a span each (the scouts' calls too)


_SERVER_ITEM = st.one_of(
    st.builds(lambda text: Reply(text=text), st.text(max_size=40)),
    st.builds(lambda arguments: Reply(tool_calls=[("weigh", arguments)]), st.sampled_from([{"grams": 3}, {"grams": "x"}, '{"grams": ', "[]"])),
    st.builds(lambda status: Fault(status=status), st.sampled_from([400, 401, 404, 429, 500, 503])),
    st.builds(lambda body: Fault(status=200, body=body), st.sampled_from(["", "{", "[]", '{"choices": []}', '{"choices": [{"message": null}]}', "\x00\xff"])),
    st.just(Fault(drop=True)),
    st.just(Fault(stream_error="overloaded")),
    st.builds(lambda after: Reply(text="a reply that breaks off", cut_stream_after=after), st.integers(0, 3)),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(_SERVER_ITEM, max_size=6), stream=st.booleans())
def test_whatever_the_server_sends_an_agent_with_every_plugin_ends_cleanly_and_goes_on(tmp_path_factory, items, stream):
    """Over loopback HTTP: replies, bad arguments, error statuses, bodies that are not what the
    client expects, dropped connections, broken streams. The run answers or raises a bandoneon
    error (never another exception), leaves a valid history and matching records, and the next
    run works."""
    folder = tmp_path_factory.mktemp("served")
    plugins = every_installed_plugin(folder / "sessions")
    plugins["retry"] = {"base_delay": 0, "max_delay": 0.01}
    with MockLLMServer() as server:
        server.add(*items, Reply(text="Done."))
        agent = bandoneon.Agent(f"openai-compatible:mock@{server.base_url}", tools=[weigh], plugins=plugins, context_files=False, cwd=folder)
        tracing = agent.plugin("tracing")

        async def main() -> None:
            try:
                if stream:
                    async for _ in agent.stream("Weigh the bag."):
                        pass
                else:
                    await agent.run("Weigh the bag.")
            except bandoneon.BandoneonError:
                pass  # a typed error, named: what a caller can handle
            server.reset()
            server.add(Reply(text="Still here."))
            assert (await agent.run("Are you there?")).text == "Still here."
            await agent.aclose()

        asyncio.run(main())
    assert_history_valid(agent.messages)
    from bandoneon_sessions import JsonlStore

    assert list(JsonlStore(folder / "sessions").load("s-1").messages) == agent.transcript
    assert all(span.end is not None for trace in tracing.traces for span in trace)


def test_many_agents_with_every_plugin_on_one_loop_at_once_each_keep_their_own_records(tmp_path):
    """Runs of agents with sessions at the same time on one loop send their flushes to the
    session workers (several runs writing), and traces to the writer thread, all interleaved."""
    from bandoneon_sessions import JsonlStore

    agents = []
    for number in range(12):
        plugins = every_installed_plugin(tmp_path / "sessions", session_id=f"s-{number}")
        agents.append(bandoneon.Agent(FunctionModel(answer), tools=[weigh, scout()], plugins=plugins, context_files=False, cwd=tmp_path))

    async def main() -> None:
        for round_ in range(3):
            results = await asyncio.gather(*(agent.run(f"Round {round_} for agent {number}.") for number, agent in enumerate(agents)))
            assert all(result.ok and result.output == "Done." for result in results)
        for agent in agents:
            await agent.aclose()

    asyncio.run(main())
    store = JsonlStore(tmp_path / "sessions")
    for number, agent in enumerate(agents):
        assert [m.content for m in agent.messages if m.role == "user"] == [f"Round {r} for agent {number}." for r in range(3)]
        assert list(store.load(f"s-{number}").messages) == agent.transcript
        assert_history_valid(agent.messages)
