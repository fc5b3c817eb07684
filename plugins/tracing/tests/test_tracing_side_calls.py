"""A model call a plugin makes for the run (``run.call_model``: compaction's summary, the stop
plugin's wrap-up) is a model span of its own, marked as a side call, that ends when the call
does, with its outcome: never left open, never closed by the run's end as cut short."""

from __future__ import annotations

from typing import ClassVar

import attrs
import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_tracing import Tracing


@bandoneon.tool
def putt(meters: int) -> str:
    """Putt the ball."""
    return "in the hole"


def by_kind(spans, kind):
    return [s for s in spans if s.kind == kind]


@attrs.define
class AsksOnTheSide(bandoneon.Plugin):
    """Before the second turn, asks the model something of its own (and keeps what it hears)."""

    name: ClassVar[str] = "asks-on-the-side"
    heard: list[str] = attrs.field(factory=list)

    @bandoneon.hookimpl
    async def before_turn(self, run: bandoneon.RunContext) -> None:
        if run.turn != 2:
            return
        try:
            reply = await run.call_model(bandoneon.ModelRequest(messages=(bandoneon.Message.user("How windy is it?"),)))
        except bandoneon.ProviderError as exc:
            self.heard.append(f"failed: {exc}")
        else:
            self.heard.append(reply.message.content)


def traced_with(model, *plugins):
    tracing = Tracing()
    agent = bandoneon.Agent(model, tools=[putt], plugins=[tracing, *plugins], context_files=False)
    return agent, tracing


def test_a_side_call_is_a_model_span_of_its_own_that_ends_with_its_reply():
    side = AsksOnTheSide()
    agent, tracing = traced_with(ScriptedModel(call("putt", meters=3), "Calm.", "Holed out in 1"), side)
    assert agent.run_sync("Hole 1").text == "Holed out in 1" and side.heard == ["Calm."]
    spans = tracing.memory.last
    turns, models = by_kind(spans, "turn"), by_kind(spans, "model")
    assert len(models) == 3 and all(s.end is not None and s.status == "ok" for s in spans)
    first, asked, second = models
    assert asked.attributes.get("bandoneon.side_call") is True
    assert "bandoneon.side_call" not in first.attributes and "bandoneon.side_call" not in second.attributes
    # Asked in before_turn, before the second turn began: under the run, between the turns.
    assert asked.parent_id == by_kind(spans, "run")[0].span_id and turns[0].end <= asked.start <= asked.end <= turns[1].start
    assert asked.attributes["bandoneon.output"] == "Calm."


def test_a_side_call_that_fails_ends_its_span_with_the_error_and_the_run_goes_on():
    side = AsksOnTheSide()
    model = ScriptedModel(call("putt", meters=3), bandoneon.AuthError("401 bad key"), "Holed out in 1")
    agent, tracing = traced_with(model, side)
    assert agent.run_sync("Hole 1").text == "Holed out in 1" and side.heard[0].startswith("failed")
    asked = by_kind(tracing.memory.last, "model")[1]
    assert asked.status == "error" and "401" in asked.error and asked.end is not None
    assert by_kind(tracing.memory.last, "run")[0].status == "ok"


def test_the_stop_plugins_wrap_up_call_is_an_ended_side_call_not_a_call_cut_short():
    stop_plugin = pytest.importorskip("bandoneon_stop", reason="needs bandoneon-stop (not in alone-tracing)")
    stop = stop_plugin.StopRules(wrap_up_on=["max_turns"])
    tracing = Tracing()
    agent = bandoneon.Agent(ScriptedModel(call("putt", meters=3), "Best so far: one putt."), tools=[putt], plugins=[tracing, stop], context_files=False, max_turns=1)
    result = agent.run_sync("Hole 1")
    assert result.stop == "max_turns" and result.text == "Best so far: one putt."
    wrap_up = by_kind(tracing.memory.last, "model")[-1]
    assert wrap_up.attributes.get("bandoneon.side_call") is True
    assert wrap_up.status == "ok" and wrap_up.end is not None
