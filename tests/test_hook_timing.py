"""Level 6, hooks must be fast: what each plugin's hooks cost, and a limit for one that hangs."""

import asyncio
from typing import ClassVar

import attrs
import bandoneon
import pytest
from bandoneon.cli import main as cli
from bandoneon.testing import ScriptedModel, call


@bandoneon.tool
def reserve_table(time: str) -> str:
    """Reserve a table at the restaurant.

    Args:
        time: the time, like 21:00
    """
    return f"reserved at {time}"


@attrs.define
class SlowLedger(bandoneon.Plugin):
    """Asks a ledger before every tool call; the ledger never answers when ``hangs``."""

    name: ClassVar[str] = "ledger"
    hangs: bool = False
    asked: list[str] = attrs.field(factory=list)

    @bandoneon.hookimpl
    async def before_tool_execution(self, call):
        self.asked.append(call.name)
        if self.hangs:
            await asyncio.Event().wait()
        return None

    @bandoneon.hookimpl
    def after_turn(self, run):
        return None


def booking_agent(model, **options):
    return bandoneon.Agent(model, tools=[reserve_table], context_files=False, **options)


def test_a_hook_that_hangs_fails_the_run_naming_plugin_and_hook_and_the_history_stays_valid():
    ledger = SlowLedger(hangs=True)
    agent = booking_agent(ScriptedModel(call("reserve_table", time="21:00"), "booked", "hello again"), plugins=[ledger], hook_timeout=0.05)
    with pytest.raises(bandoneon.PluginError) as caught:
        agent.run_sync("Reserve a table.")
    assert "plugin 'ledger' hung in before_tool_execution" in str(caught.value) and "hook_timeout=0.05" in str(caught.value)
    assert (caught.value.plugin, caught.value.hook) == ("ledger", "before_tool_execution")
    calls = {c.id for m in agent.messages if m.role == "assistant" for c in m.tool_calls}
    answered = {m.tool_call_id for m in agent.messages if m.role == "tool"}
    assert calls and calls == answered, "every tool call of the history has its result"
    ledger.hangs = False
    assert agent.run_sync("Anything else?").ok


def test_without_hook_timeout_hooks_are_not_limited():
    ledger = SlowLedger()
    agent = booking_agent(ScriptedModel(call("reserve_table", time="21:00"), "booked"), plugins=[ledger])
    assert agent.run_sync("Reserve a table.").ok and ledger.asked == ["reserve_table"]
    assert agent.hook_timeout is None and agent.hook_profile is None


@pytest.mark.parametrize("value", [0, -1])
def test_hook_timeout_must_be_positive(value):
    with pytest.raises(bandoneon.ConfigError, match="hook_timeout must be above 0 seconds"):
        booking_agent(ScriptedModel(), plugins=[], hook_timeout=value)


def test_profile_hooks_sums_each_plugins_hook_time():
    ledger = SlowLedger()
    agent = booking_agent(ScriptedModel(call("reserve_table", time="21:00"), "booked"), plugins=[ledger])
    profile = agent.profile_hooks()
    assert agent.profile_hooks() is profile
    agent.run_sync("Reserve a table.")
    assert profile.counts["ledger"] == 3  # one tool call, two turns
    assert {key for key in profile.by_hook if key[0] == "ledger"} == {("ledger", "before_tool_execution"), ("ledger", "after_turn")}
    assert profile.totals["ledger"] == pytest.approx(sum(t for (plugin, _), t in profile.by_hook.items() if plugin == "ledger"))
    assert any(row.startswith("ledger ") for row in profile.table().splitlines()[1:])


def test_a_failing_hook_is_timed_and_still_fails_the_run():
    @attrs.define
    class Broken(bandoneon.Plugin):
        name: ClassVar[str] = "broken"

        @bandoneon.hookimpl
        def before_turn(self, run):
            raise RuntimeError("the budget database is down")

    agent = booking_agent(ScriptedModel("hi"), plugins=[Broken()])
    profile = agent.profile_hooks()
    with pytest.raises(bandoneon.PluginError, match="plugin 'broken' failed in before_turn"):
        agent.run_sync("hi")
    assert profile.counts["broken"] == 1 and ("broken", "before_turn") in profile.by_hook


def test_plugins_profile_prints_each_plugins_hook_time(capsys):
    assert cli(["plugins", "--profile", "Reserve a table.", "--with", "plan"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("hook time per plugin, one scripted run (2 turns, 1 tool call) of 'Reserve a table.':")
    header, *rows = out.splitlines()[1:]
    assert header.split() == ["plugin", "calls", "total", "ms", "slowest", "hook"]
    assert any(row.startswith("plan ") and "system_prompt_sections" in row for row in rows)


def test_plugins_profile_with_an_unknown_plugin_is_one_clear_line(capsys):
    assert cli(["plugins", "--profile", "hi", "--with", "no-such-plugin"]) == 1
    assert "no-such-plugin" in capsys.readouterr().err
