"""Spans of real HTTP model calls (the server's answering model, cached tokens from the wire),
subagents that inherit tracing from their parent, and one instance shared by agents with
different guards."""

from typing import ClassVar

import attrs
import bandoneon
import pytest
from bandoneon.testing import Reply, ScriptedModel, call
from bandoneon_tracing import Tracing


@bandoneon.tool
def putt(meters: int) -> str:
    """Putt the ball.

    Args:
        meters: distance to the hole
    """
    return "in the hole"


def by_kind(spans, kind):
    return [s for s in spans if s.kind == kind]


def test_model_spans_name_the_model_that_answered_and_price_it(mock_llm):
    mock_llm.add(Reply("Holed out", usage=(1000, 100), cached_tokens=800, model="caddie-2025-01-01"))
    prices = {"caddie": {"input": 100.0, "output": 100.0}, "caddie-2025*": {"input": 10.0, "output": 20.0, "cached_input": 1.0}}
    tracing = Tracing(prices=prices)
    agent = bandoneon.Agent(f"openai-compatible:caddie@{mock_llm.base_url}", plugins=[tracing], context_files=False)
    agent.run_sync("Hole 1")
    (span,) = by_kind(tracing.memory.last, "model")
    assert span.attributes["gen_ai.request.model"] == "caddie"
    assert span.attributes["gen_ai.response.model"] == "caddie-2025-01-01"
    assert span.attributes["gen_ai.usage.input_tokens"] == 1000
    assert span.attributes["gen_ai.usage.cache_read.input_tokens"] == 800
    # The dated model's price: 200 uncached at 10, 800 cached at 1, 100 out at 20 — per million.
    assert span.attributes["bandoneon.cost"] == pytest.approx((200 * 10 + 800 * 1 + 100 * 20) / 1e6)


def test_an_unpriced_answering_model_falls_back_to_the_requested_models_price(mock_llm):
    mock_llm.add(Reply("Holed out", usage=(1000, 0), model="caddie-preview"))
    tracing = Tracing(prices={"caddie": {"input": 2.0, "output": 4.0}})
    agent = bandoneon.Agent(f"openai-compatible:caddie@{mock_llm.base_url}", plugins=[tracing], context_files=False)
    agent.run_sync("Hole 1")
    (span,) = by_kind(tracing.memory.last, "model")
    assert span.attributes["gen_ai.response.model"] == "caddie-preview"
    assert span.attributes["bandoneon.cost"] == pytest.approx(1000 * 2.0 / 1e6)


def test_tracing_answers_that_subagents_inherit_this_instance():
    tracing = Tracing()
    assert tracing.inherited_by_subagents() is tracing


def test_a_subagent_run_nests_under_the_parents_tool_call_when_only_the_parent_lists_tracing():
    subagents = pytest.importorskip("bandoneon_subagents", reason="bandoneon-subagents is not installed")
    scout = subagents.subagent("scout", "Walks the hole and reports the distance.", model=ScriptedModel("330 m, water at 180 m"), plugins=[])
    tracing = Tracing()
    parent = bandoneon.Agent(ScriptedModel(call("scout", task="Measure hole 3 and the water."), "Iron off the tee."), tools=[scout], plugins=[tracing], context_files=False)
    assert parent.run_sync("Hole 3").text == "Iron off the tee."
    spans = tracing.memory.last
    (tool,) = by_kind(spans, "tool")
    runs = by_kind(spans, "run")
    child_runs = [s for s in runs if s.parent_id is not None]
    assert len(child_runs) == 1, "the child agent did not get the parent's tracing (inherited_by_subagents)"
    (child,) = child_runs
    assert child.parent_id == tool.span_id
    assert child.attributes["gen_ai.agent.name"].endswith("/scout")
    child_models = [s for s in by_kind(spans, "model") if s.attributes.get("bandoneon.output") == "330 m, water at 180 m"]
    (child_turn,) = [s for s in by_kind(spans, "turn") if s.parent_id == child.span_id]
    assert [m.parent_id for m in child_models] == [child_turn.span_id]
    assert {s.trace_id for s in spans} == {spans[0].trace_id}
    assert len(tracing.traces) == 1  # one trace for the parent and its child


def test_one_instance_shared_by_agents_redacts_each_run_with_its_own_agents_guard():
    @attrs.define
    class Guard(bandoneon.Plugin):
        name: ClassVar[str] = "guard"
        secret: str = ""

        @bandoneon.hookimpl
        def redact_text(self, text: str) -> str:
            return text.replace(self.secret, "[HIDDEN]")

    tracing = Tracing()
    alice = bandoneon.Agent(ScriptedModel("ok"), plugins=[tracing, Guard("Alice")], context_files=False)
    bob = bandoneon.Agent(ScriptedModel("ok"), plugins=[tracing, Guard("Bob")], context_files=False)
    alice.run_sync("Alice and Bob tee off")
    bob.run_sync("Alice and Bob tee off")
    prompts = [by_kind(trace, "run")[0].attributes["bandoneon.prompt"] for trace in tracing.traces]
    assert prompts == ["[HIDDEN] and Bob tee off", "Alice and [HIDDEN] tee off"]


def test_a_childs_events_forwarded_raw_to_the_parent_run_do_not_disturb_the_parents_trace():
    tracing = Tracing()

    @bandoneon.tool
    async def ask_caddie(question: str, run: bandoneon.RunContext) -> str:
        """Ask the caddie.

        Args:
            question: what to ask
        """
        child = bandoneon.Agent(ScriptedModel("use an iron"), plugins=[tracing], context_files=False, name="caddie")
        child.on("*", run.emit)  # every child event also reaches the parent run's plugins
        return (await child.run(question, parent=run)).text

    parent = bandoneon.Agent(ScriptedModel(call("ask_caddie", question="club?"), "Holed out"), tools=[ask_caddie], plugins=[tracing], context_files=False)
    parent.run_sync("Hole 3")
    (trace,) = tracing.traces
    runs = by_kind(trace, "run")
    (tool,) = by_kind(trace, "tool")
    assert [(r.attributes["gen_ai.agent.name"], r.parent_id) for r in runs] == [("agent", None), ("caddie", tool.span_id)]
    assert len(by_kind(trace, "turn")) == 3 and all(s.end is not None for s in trace)
