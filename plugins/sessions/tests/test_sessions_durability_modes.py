"""``durability``: how long a saved turn waits for the disk, and what each mode promises."""

from __future__ import annotations

import bandoneon
import pytest
from bandoneon.testing import FaultyDisk, FunctionModel, ScriptedModel, WriteLog, call, reply
from bandoneon_sessions import JsonlStore, Sessions


@bandoneon.tool
def weigh(grams: int) -> str:
    """Weigh a bag of coffee."""
    return f"{grams} g"


class CountingDisk(FaultyDisk):
    """A disk that never fails and counts the flushes asked of it."""

    def __init__(self) -> None:
        super().__init__(at_byte=10**12)
        self.fsyncs = 0

    def fsync(self, fd: int) -> None:
        self.fsyncs += 1
        super().fsync(fd)

    def datasync(self, fd: int) -> None:
        self.fsyncs += 1
        super().datasync(fd)


def agent_on(store: JsonlStore, model, durability: str = "turn") -> tuple[bandoneon.Agent, Sessions]:
    plugin = Sessions(session_id="s-1", store=store, durability=durability)
    return bandoneon.Agent(model, tools=[weigh], plugins=[plugin], context_files=False), plugin


@pytest.mark.parametrize(("durability", "fsyncs"), [("turn", 2), ("run", 1), ("os", 0)])
def test_each_mode_waits_for_the_disk_as_often_as_it_says_and_keeps_every_message(tmp_path, durability, fsyncs):
    store = JsonlStore(tmp_path)
    agent, plugin = agent_on(store, ScriptedModel(call("weigh", grams=250), "A quarter kilo."), durability)
    with CountingDisk() as disk:  # the session file exists already: only the run's saves count
        agent.run_sync("Weigh it.")
    plugin.close()
    assert disk.fsyncs == fsyncs
    loaded = store.load("s-1")
    assert [m.role for m in loaded.messages] == ["user", "assistant", "tool", "assistant"]
    assert loaded.usage.requests == 2  # the usage record rode along, synced or not


@pytest.mark.parametrize(("durability", "writes"), [("turn", 3), ("os", 3), ("run", 1)])
def test_the_answer_is_written_with_the_runs_usage_in_one_write_when_the_run_ends(tmp_path, durability, writes):
    store = JsonlStore(tmp_path)
    agent, plugin = agent_on(store, ScriptedModel(call("weigh", grams=250), "A quarter kilo."), durability)
    with WriteLog() as disk:
        agent.run_sync("Weigh it.")
    plugin.close()
    assert len(disk.calls) == writes  # the calls before the tool ran, its result, then the answer and the usage
    answer, usage = store.file("s-1").read_bytes().splitlines()[-2:]
    assert b'"A quarter kilo."' in answer and b'"type":"usage"' in usage
    start, end = disk.calls[-1]
    assert end - start > len(answer) + len(usage)


@pytest.mark.parametrize(("durability", "on_disk_at_second_call"), [("turn", 3), ("os", 3), ("run", 0)])
def test_turn_durability_saves_a_turn_before_the_next_starts_and_run_durability_at_the_end(tmp_path, durability, on_disk_at_second_call):
    store = JsonlStore(tmp_path)
    seen: list[int] = []

    def model(request):
        if len(request.messages) == 1:
            return call("weigh", grams=100)
        seen.append(len(store.load("s-1").messages))
        return "A hundred grams."

    agent, plugin = agent_on(store, FunctionModel(model), durability)
    agent.run_sync("Weigh it.")
    plugin.close()
    assert seen == [on_disk_at_second_call]
    assert len(store.load("s-1").messages) == 4


def test_an_unknown_durability_is_a_configuration_error_naming_the_choices(tmp_path):
    with pytest.raises(bandoneon.ConfigError, match="durability"):
        bandoneon.Agent(ScriptedModel(), plugins={"sessions": {"durability": "never", "path": str(tmp_path)}}, context_files=False)


def test_a_run_that_ends_right_after_its_tools_flushes_their_results_at_its_end(tmp_path):
    store = JsonlStore(tmp_path)
    plugin = Sessions(session_id="s-1", store=store)
    agent = bandoneon.Agent(ScriptedModel(call("weigh", grams=250)), tools=[weigh], plugins=[plugin], context_files=False, max_turns=1)
    with CountingDisk() as disk:
        result = agent.run_sync("Weigh it.")
    plugin.close()
    assert result.stop == "max_turns"
    assert disk.fsyncs == 2  # the calls before the tool ran; the result (written at once, unflushed) when the run ended
    assert [m.role for m in store.load("s-1").messages] == ["user", "assistant", "tool"]


def test_a_crash_loses_no_finished_call_in_os_mode_either(tmp_path):
    store = JsonlStore(tmp_path)
    seen: list[list[str]] = []

    def model(request):
        if len(request.messages) == 1:
            return call("weigh", grams=100)
        seen.append([m.content for m in store.load("s-1").messages])  # what a process killed now would leave
        return "A hundred grams."

    agent, plugin = agent_on(store, FunctionModel(model), "os")
    agent.run_sync("Weigh it.")
    plugin.close()
    assert seen == [["Weigh it.", "", "100 g"]]


class TimedDisk(FaultyDisk):
    """A disk that never fails, whose flushes take the given seconds in turn (then the last
    again), and which notes the thread each flush ran on."""

    def __init__(self, *seconds: float) -> None:
        super().__init__(at_byte=10**12)
        self.seconds = list(seconds)
        self.threads: list[str] = []

    def datasync(self, fd: int) -> None:
        import threading
        import time

        self.threads.append(threading.current_thread().name)
        time.sleep(self.seconds.pop(0) if len(self.seconds) > 1 else self.seconds[0])
        super().datasync(fd)


@pytest.fixture
def slow_is_20ms(monkeypatch):
    """A slow flush is one of 20 ms or more here (1 ms in use): a busy test machine's hiccups
    stay well under it, the slow flushes of these tests (50 ms) well over."""
    import bandoneon_sessions.plugin

    monkeypatch.setattr(bandoneon_sessions.plugin, "INLINE_SYNC_LIMIT", 0.02)


def test_flushes_wait_on_the_loop_while_the_disk_is_fast_and_one_slow_flush_does_not_change_that(tmp_path, slow_is_20ms):
    import threading

    model = FunctionModel(lambda request: call("weigh", grams=1) if request.messages[-1].role == "user" else "Done.")
    agent, plugin = agent_on(JsonlStore(tmp_path), model)
    # The first flush of a session goes to a thread (nothing is known of the disk yet); then
    # fast, fast, one slow (a busy moment), fast: every later flush waits on the loop itself.
    with TimedDisk(0, 0, 0, 0.05, 0) as disk:
        for _ in range(4):
            agent.run_sync("Weigh it.")
    plugin.close()
    loop_thread = threading.current_thread().name
    assert disk.threads[0] != loop_thread
    assert disk.threads[1:] == [loop_thread] * 7


def test_flushes_move_to_a_thread_when_the_disk_is_slow_and_one_fast_flush_does_not_change_that(tmp_path, slow_is_20ms):
    import threading

    model = FunctionModel(lambda request: call("weigh", grams=1) if request.messages[-1].role == "user" else "Done.")
    agent, plugin = agent_on(JsonlStore(tmp_path), model)
    with TimedDisk(0, 0, 0, 0.05, 0.05, 0, 0.05) as disk:  # fast at first, then slow but for one
        for _ in range(4):
            agent.run_sync("Weigh it.")
    plugin.close()
    loop_thread = threading.current_thread().name
    on_loop = [name == loop_thread for name in disk.threads]
    assert on_loop == [False, True, True, True, True, False, False, False]


def test_os_mode_leaves_after_turn_uncalled_and_turn_mode_calls_it():
    assert Sessions(durability="os").unused_hooks == frozenset({"after_turn"})
    assert Sessions(durability="turn").unused_hooks == frozenset()


class RefuseWeighing(bandoneon.Plugin):
    name = "refuse-weighing"

    @bandoneon.hookimpl
    def before_tool_execution(self, call):
        return bandoneon.Refuse("no weighing today") if call.name == "weigh" else None


def test_in_os_mode_a_refused_turn_is_in_the_file_as_soon_as_its_result_is_ready(tmp_path):
    store = JsonlStore(tmp_path)
    seen: list[list[str]] = []

    def model(request):
        if len(request.messages) == 1:
            return call("weigh", grams=100)
        seen.append([m.role for m in store.load("s-1").messages])  # what a process killed now would leave
        return "No scale."

    plugin = Sessions(session_id="s-1", store=store, durability="os")
    agent = bandoneon.Agent(FunctionModel(model), tools=[weigh], plugins=[plugin, RefuseWeighing()], context_files=False)
    agent.run_sync("Weigh it.")
    plugin.close()
    assert seen == [["user", "assistant", "tool"]]
    loaded = store.load("s-1")
    assert [m.role for m in loaded.messages] == ["user", "assistant", "tool", "assistant"] and loaded.damage is None


@pytest.mark.parametrize("durability", ["turn", "os"])
def test_a_call_id_given_again_in_a_later_turn_is_saved_both_times(tmp_path, durability):
    # A provider that numbers its calls per reply gives the same id again; the second call is
    # cut off (no tool runs, so nothing writes it early) and must still reach the file.
    same = bandoneon.ToolCall("call_0", "weigh", '{"grams": 1}')
    cut = bandoneon.ToolCall("call_0", "weigh", '{"grams"')
    store = JsonlStore(tmp_path)
    plugin = Sessions(session_id="s-1", store=store, durability=durability)
    model = ScriptedModel(same, reply("", cut, finish_reason="length"), "Done.")
    agent = bandoneon.Agent(model, tools=[weigh], plugins=[plugin], context_files=False)
    agent.run_sync("Weigh it.")
    plugin.close()
    loaded = store.load("s-1")
    assert [m.role for m in loaded.messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert loaded.messages[2].content == "1 g" and "cut off" in loaded.messages[4].content
    assert loaded.damage is None and loaded.interrupted == 0


@pytest.mark.parametrize("durability", ["turn", "run", "os"])
def test_a_cleared_history_as_long_as_the_last_and_ending_in_the_same_reply_is_saved_anew(tmp_path, durability):
    """A provider may answer with a message object it keeps: after ``clear()`` the next run's
    history is as long as the last one and ends with the same object, yet it is a new one."""
    kept = bandoneon.Message.assistant("Ready.")
    store = JsonlStore(tmp_path)
    agent, plugin = agent_on(store, FunctionModel(lambda request: kept), durability)
    agent.run_sync("First.")
    agent.clear()
    agent.run_sync("Second.")
    plugin.close()
    assert [(m.role, m.content) for m in store.load("s-1").messages] == [("user", "Second."), ("assistant", "Ready.")]


def test_a_loaded_history_of_the_same_length_replaces_the_saved_one(tmp_path):
    store = JsonlStore(tmp_path)
    agent, plugin = agent_on(store, ScriptedModel("One.", "Two."))
    agent.run_sync("First.")
    other = [bandoneon.Message.user("Elsewhere."), bandoneon.Message.assistant("Yes.")]
    agent.load_history(other)
    agent.run_sync("Then?")
    plugin.close()
    assert [m.content for m in store.load("s-1").messages] == ["Elsewhere.", "Yes.", "Then?", "Two."]


@pytest.mark.parametrize("durability", ["turn", "run", "os"])
def test_a_turns_results_come_back_in_the_order_of_its_calls_whichever_finished_first(tmp_path, durability):
    """A call answered without running (bad arguments) is written before the call that runs,
    which is earlier in the turn: the file keeps the order they finished in, the loaded
    history the order of the calls, as the agent's own history has it."""
    store = JsonlStore(tmp_path)
    turn = reply("", call("weigh", grams=250), call("weigh", grams="a lot"), call("no_such_tool"))
    agent, plugin = agent_on(store, ScriptedModel(turn, "Done."), durability)
    agent.run_sync("Weigh them.")
    plugin.close()
    assert list(store.load("s-1").messages) == agent.messages
    assert store.load("s-1").damage is None
