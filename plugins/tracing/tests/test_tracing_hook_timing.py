"""Tracing with hook_timing: each plugin hook call is a `hook` event on its turn's span."""

from typing import ClassVar

import attrs
import bandoneon
from bandoneon.testing import ScriptedModel, call
from bandoneon_tracing import Tracing, read_jsonl


@bandoneon.tool
def putt(meters: int) -> str:
    """Putt the ball.

    Args:
        meters: distance to the hole
    """
    return "in the hole"


@attrs.define
class Caddie(bandoneon.Plugin):
    name: ClassVar[str] = "caddie"

    @bandoneon.hookimpl
    async def before_tool_execution(self, call):
        return None

    @bandoneon.hookimpl
    def after_turn(self, run):
        return None


def test_each_hook_call_is_an_event_on_its_turn_with_the_plugins_name(tmp_path):
    tracing = Tracing(hook_timing=True, jsonl=str(tmp_path / "t.jsonl"))
    agent = bandoneon.Agent(ScriptedModel(call("putt", meters=3), "Holed out in 1"), tools=[putt], plugins=[Caddie(), tracing], context_files=False)
    agent.run_sync("Hole 1")
    spans = read_jsonl(tmp_path / "t.jsonl")
    run = next(s for s in spans if s.kind == "run")
    first_turn, second_turn = (s for s in spans if s.kind == "turn")
    hooks_in_first = [(e.attributes["bandoneon.plugin"], e.attributes["bandoneon.hook"]) for e in first_turn.events if e.name == "hook"]
    assert ("caddie", "before_tool_execution") in hooks_in_first and ("caddie", "after_turn") in hooks_in_first
    assert ("tracing", "on_event") in hooks_in_first
    assert ("caddie", "after_turn") in [(e.attributes["bandoneon.plugin"], e.attributes["bandoneon.hook"]) for e in second_turn.events if e.name == "hook"]
    assert all(e.attributes["bandoneon.duration_ms"] >= 0 for e in first_turn.events if e.name == "hook")
    assert run.attributes["bandoneon.hook_ms.caddie"] >= 0 and "bandoneon.hook_ms.tracing" in run.attributes
    assert agent.hook_profile.totals["caddie"] > 0


def test_without_hook_timing_nothing_is_timed():
    tracing = Tracing()
    agent = bandoneon.Agent(ScriptedModel("hi"), plugins=[Caddie(), tracing], context_files=False)
    agent.run_sync("Hole 1")
    assert agent.hook_profile is None
    assert not [e for s in tracing.memory.last for e in s.events if e.name == "hook"]
    assert not [k for s in tracing.memory.last for k in s.attributes if k.startswith("bandoneon.hook_ms")]
